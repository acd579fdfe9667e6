#!/usr/bin/env bash
# ncu_slowest.sh -- Nsight Compute summary (SpeedOfLight, MemoryWorkloadAnalysis, plus launch
# statistics and occupancy) of one kernel record, for the GPU machine.
#
#   bash benchmarks/ncu_slowest.sh RESULTS.json     # the lowest fraction of copy at >= 64 MiB
#   bash benchmarks/ncu_slowest.sh CASE DTYPE BYTES  # e.g. Pool-avg int8 67108864
#
# Writes $OUT/ncu-<case>-<dtype>-<bytes>.txt (default OUT: ./bench-out). Clocks are left alone
# (--clock-control none); only the enqueue between cuProfilerStart/Stop is profiled
# (--profile-from-start off; benchmarks/profile_case.py).
set -u -o pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYPLUGINS_TRT=emulator
if [ $# -eq 1 ]; then
    read -r case dtype bytes < <(python3 -m benchmarks slowest "$1") || exit 2
elif [ $# -eq 3 ]; then
    case=$1 dtype=$2 bytes=$3
else
    echo "usage: ncu_slowest.sh RESULTS.json | CASE DTYPE BYTES" >&2
    exit 2
fi
ncu=$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | tail -1)
if [ -z "$ncu" ]; then
    echo "ncu not found" >&2
    exit 2
fi
sections=()
available=$("$ncu" --list-sections 2>/dev/null)
for s in SpeedOfLight MemoryWorkloadAnalysis LaunchStats Occupancy; do
    if grep -qw "$s" <<<"$available"; then sections+=(--section "$s"); else echo "ncu has no section $s" >&2; fi
done
out="${OUT:-$PWD/bench-out}"
mkdir -p "$out"
file="$out/ncu-${case}-${dtype}-${bytes}.txt"
echo "ncu ($("$ncu" --version | tail -1)) on $case $dtype $bytes bytes -> $file"
"$ncu" --clock-control none --profile-from-start off --target-processes all "${sections[@]}" \
    --page details \
    python3 -m benchmarks.profile_case "$case" "$dtype" "$bytes" 2>&1 | tee "$file"
exit "${PIPESTATUS[0]}"
