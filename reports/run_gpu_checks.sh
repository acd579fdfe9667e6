#!/usr/bin/env bash
# Runs the whole test suite and `pyplugins check --fresh-process` on the shipped plugins on a GPU
# machine, writing a dated report named after the device into the folder given (default: reports/).
#   bash reports/run_gpu_checks.sh [OUT_DIR]
set -uo pipefail
out="${1:-reports}"
mkdir -p "$out"
device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
slug=$(echo "${device%%,*}" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')
stem="$out/gpu-tests-$(date -u +%F)-$slug"
export PYTHONUNBUFFERED=1 PYPLUGINS_TRT=emulator
{
    echo "# pyplugins GPU test report"
    echo "date: $(date -u +%FT%TZ)"
    echo "device: $device"
    echo "commit: ${PYPLUGINS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    python3 -c "import sys, numpy, cupy; print('python', sys.version.split()[0], '| numpy', numpy.__version__, '| cupy', cupy.__version__, '| CUDA runtime', cupy.cuda.runtime.runtimeGetVersion())"
    echo
    echo "## python3 -m pytest -q -rs (GPU tests included; TensorRT tests skip: no TensorRT here)"
} > "$stem.txt"
python3 -m pytest -q -rs -p no:cacheprovider 2>&1 | tail -n 60 >> "$stem.txt"
status=${PIPESTATUS[0]}
echo "pytest exit status: $status" >> "$stem.txt"

check() {  # name, then pyplugins check arguments
    local name=$1; shift
    echo >> "$stem.txt"
    echo "## pyplugins check $* --fresh-process" >> "$stem.txt"
    python3 -m pyplugins.cli check "$@" --fresh-process --json > "$stem-check-$name.json" 2>>"$stem.txt"
    echo "exit status: $? ($(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); r=r.get('report', r); print('ok' if r.get('ok') else 'violations: ' + ', '.join(v['check'] for v in r.get('violations', [])), '| enqueue ran:', r.get('enqueue_ran'))" "$stem-check-$name.json"))" >> "$stem.txt"
}
# a plugin written for real TensorRT with raw CuPy (NVIDIA's sample, without its bugs)
check raw-cupy-circpad tests/emulator/plugins/circ_pad.py --plugin PPTestCircPad --input 2x3x8x8:float32 --attr pads=1,2,3,1
check CircPad-fp32 pyplugins.ops.circ_pad --plugin CircPad --input 1-2-4x3x16x20:float32 --attr pads=1,2,2,1
check CircPad-fp16 pyplugins.ops.circ_pad --plugin CircPad --input 2x3x9x33:float16 --attr pads=3,3
check LReLU_TRT-fp32 pyplugins.ops.leaky_relu --plugin LReLU_TRT --input 1-8-64x1000:float32 --attr neg_slope=0.1
check LReLU_TRT-fp16 pyplugins.ops.leaky_relu --plugin LReLU_TRT --input 3x5x7:float16 --attr neg_slope=0.2
tail -n 3 "$stem.txt"
exit "$status"
