#!/usr/bin/env bash
# ncu_slowest.sh -- Nsight Compute capture of one kernel record, and a plain copy kernel of the
# same bytes beside it, for the GPU machine; then what limits the kernel
# (benchmarks/profile_summary.py).
#
#   bash benchmarks/ncu_slowest.sh RESULTS.json     # the lowest fraction of copy at >= 64 MiB
#   bash benchmarks/ncu_slowest.sh CASE DTYPE BYTES  # e.g. Pool-avg int8 67108864
#
# Writes $OUT/<date>-<device>-ncu-<case>-<dtype>-<bytes>.txt (default OUT: ./bench-out), whose
# first line records the device, commit ($PYPLUGINS_COMMIT, else git), source digest, case and
# date; copy it to benchmarks/results/ and `python -m benchmarks report` shows its summary and
# checks that it profiles the slowest record of the same sources. Clocks are left alone
# (--clock-control none); only the enqueue and the copy between cuProfilerStart/Stop are
# profiled (--profile-from-start off; benchmarks/profile_case.py).
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
for s in SpeedOfLight MemoryWorkloadAnalysis ComputeWorkloadAnalysis SchedulerStats \
         WarpStateStats InstructionStats LaunchStats Occupancy; do
    if grep -qw "$s" <<<"$available"; then sections+=(--section "$s"); else echo "ncu has no section $s" >&2; fi
done
out="${OUT:-$PWD/bench-out}"
mkdir -p "$out"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
slug=$(python3 -c 'import sys; from benchmarks.env import slug; print(slug(sys.argv[1]))' "$device")
commit="${PYPLUGINS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
file="$out/$(date -u +%F)-$slug-ncu-${case}-${dtype}-${bytes}.txt"
echo "# pyplugins profile: device=$device; commit=$commit; digest=$(python3 -m benchmarks digest); case=$case; dtype=$dtype; bytes=$bytes; date=$(date -u +%FT%TZ); ncu=$("$ncu" --version | tail -1)" > "$file"
echo "ncu on $case $dtype $bytes bytes -> $file"
"$ncu" --clock-control none --profile-from-start off --target-processes all "${sections[@]}" \
    --page details \
    python3 -m benchmarks.profile_case "$case" "$dtype" "$bytes" >> "$file" 2>&1
rc=$?
python3 -m benchmarks profile "$file"
exit $rc
