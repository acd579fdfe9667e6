#!/usr/bin/env bash
# device_run.sh -- the full benchmark run for one GPU, for the GPU machine.
#
#   bash benchmarks/device_run.sh COMMIT [extra harness options]
#
# COMMIT is the commit of this tree ("HASH" or "HASH+dirty"): the machine's copy has no .git.
# Writes into $OUT (default: ./bench-out) at most 7 files: <date>-<device>.json, .md and the five
# plots; copy them to benchmarks/results/ and run `python -m benchmarks report`. The harness
# stops starting new kernel records after 420 s so that the whole run ends inside ~8 minutes;
# it exits 3 (after writing) when a fraction of copy bandwidth exceeds 1.02. The short summary
# table is printed last. A run longer than one device command splits in two on the same device
# and commit: `device_run.sh COMMIT --sections overhead,graph,aot,threads,numba,coldstart,model`,
# then `device_run.sh COMMIT --sections bandwidth,torch --resume FIRST.json` (the first run's
# JSON, carried back to the machine), which measures into a copy of it.
set -u -o pipefail
cd "$(dirname "$0")/.."
commit="${1:?usage: device_run.sh COMMIT [harness options]}"
shift
out="${OUT:-$PWD/bench-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYPLUGINS_TRT=emulator
echo "device_run: commit $commit, source digest $(python3 -m benchmarks digest), out $out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
python3 -c 'import cupy, torch; print("cupy", cupy.__version__, "torch", torch.__version__)' || true
start=$(date +%s)
python3 -m benchmarks --out "$out" --commit "$commit" --budget-s 420 "$@"
rc=$?
echo "device_run: harness exit $rc after $(( $(date +%s) - start )) s; files in $out:"
ls -la "$out"
exit $rc
