#!/usr/bin/env bash
# Runs the whole test suite and `pyplugins check --fresh-process` on the shipped plugins, the numba
# variant and (when present) plugin modules written for real TensorRT, on a GPU machine. Writes a
# dated report named after the device into the folder given (default: reports/).
#   bash reports/run_gpu_checks.sh [OUT_DIR] [SAMPLES_DIR] [QDP_SAMPLES_DIR]
# SAMPLES_DIR (optional) holds plugin modules written for real TensorRT (NVIDIA's Python plugin
# samples: never committed here); each is checked as a user would check it.
# Missing Python packages travel as wheels in .whl/ (installed into /tmp/site first).
set -uo pipefail
out="${1:-reports}"
samples="${2:-}"
qdp_samples="${3:-}"  # NVIDIA's samples/python/quickly_deployable_plugins (qdp_defs.py): never committed
mkdir -p "$out"
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}" \
        PATH="/tmp/site/bin:$PATH"  # the wheels' commands (polygraphy)
fi
device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
slug=$(echo "${device%%,*}" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')
stem="$out/gpu-tests-$(date -u +%F)-$slug"
export PYTHONUNBUFFERED=1 PYPLUGINS_TRT=emulator
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
{
    echo "# pyplugins GPU test report"
    echo "date: $(date -u +%FT%TZ)"
    echo "device: $device"
    echo "commit: ${PYPLUGINS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    python3 - <<'EOF'
import importlib, sys
names = ["numpy", "cupy", "numba", "numba_cuda", "llvmlite", "onnx", "onnxruntime", "polygraphy",
         "onnx_graphsurgeon", "torch"]
found = []
for n in names:
    try:
        found.append(f"{n} {importlib.import_module(n).__version__}")
    except Exception as err:  # noqa: BLE001 - a report line, not a failure
        found.append(f"{n} unavailable ({type(err).__name__})")
print("python", sys.version.split()[0], "|", " | ".join(found))
EOF
    echo
    echo "## python3 -m pytest -q -rfEs (GPU tests included; TensorRT tests skip: no TensorRT here)"
} > "$stem.txt"
workers=""
python3 -c "import xdist" 2>/dev/null && workers="-n 6"
python3 -c "import pytest_timeout" 2>/dev/null && workers="$workers --timeout 600"
python3 -m pytest -q -rfEs -p no:cacheprovider $workers > "$stem-pytest.log" 2>&1
status=$?
grep -E "^(FAILED|ERROR) " "$stem-pytest.log" >> "$stem.txt"
grep -E "^SKIPPED" "$stem-pytest.log" | sed 's/\[[0-9]*\] //' | cut -d: -f3- | sort | uniq -c >> "$stem.txt"
tail -n 1 "$stem-pytest.log" >> "$stem.txt"
echo "pytest exit status: $status (the whole log: $(basename "$stem-pytest.log"))" >> "$stem.txt"

check() {  # name, then pyplugins check arguments
    local name=$1; shift
    echo >> "$stem.txt"
    echo "## pyplugins check $*" >> "$stem.txt"
    timeout 300 python3 -m pyplugins check "$@" --json > "$stem-check-$name.json" 2>>"$stem.txt"
    echo "exit status: $? ($(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); r=r.get('report', r); print('ok' if r.get('ok') else 'violations: ' + ', '.join(sorted({v['check'] for v in r.get('violations', [])})), '| enqueue ran:', r.get('enqueue_ran'))" "$stem-check-$name.json" 2>&1 | tail -1))" >> "$stem.txt"
}
checks_json="$stem-checks.jsonl"
: > "$checks_json"
summarize() {  # fold each check's JSON into one file (few files come back from the machine)
    for f in "$stem"-check-*.json; do
        [ -e "$f" ] || continue
        python3 -c "import json,sys; print(json.dumps({'name': sys.argv[2], 'report': json.load(open(sys.argv[1]))}))" "$f" "$(basename "$f" .json)" >> "$checks_json" 2>/dev/null
        rm -f "$f"
    done
}
# a plugin written for real TensorRT with raw CuPy (NVIDIA's sample's style, without its bugs)
check raw-cupy-circpad tests/emulator/plugins/circ_pad.py --plugin PPTestCircPad --input 2x3x8x8:float32 --attr pads=1,2,3,1 --fresh-process
check CircPad-fp32 pyplugins.ops.circ_pad --plugin CircPad --input 1-2-4x3x16x20:float32 --attr pads=1,2,2,1 --fresh-process
check CircPad-fp16 pyplugins.ops.circ_pad --plugin CircPad --input 2x3x9x33:float16 --attr pads=3,3 --fresh-process
check CircPad-bf16 pyplugins.ops.circ_pad --plugin CircPad --input 2x3x9x33:bfloat16 --attr pads=3,3
check LReLU_TRT-fp32 pyplugins.ops.leaky_relu --plugin LReLU_TRT --input 1-8-64x1000:float32 --attr neg_slope=0.1 --fresh-process
check LReLU_TRT-fp16 pyplugins.ops.leaky_relu --plugin LReLU_TRT --input 3x5x7:float16 --attr neg_slope=0.2 --fresh-process
check LReLU_TRT-numba pyplugins.ops.leaky_relu --plugin LReLU_TRT:1:numba --input 4x1000:float32 --attr neg_slope=0.2
if [ -n "$samples" ] && [ -d "$samples" ]; then
    for s in circ_pad_plugin_cupy circ_pad_plugin_numba circ_pad_plugin_torch circ_pad_plugin_triton; do
        [ -e "$samples/$s.py" ] && check "sample-$s" "$samples/$s.py" --input 10x3x32x32:float32 --attr pads=1,1,1,1 --fresh-process
    done
    for s in circ_pad_plugin_cuda_python circ_pad_plugin_inetdef_cuda_python; do [ -e "$samples/$s.py" ] && check "sample-$s" "$samples/$s.py" --input 10x3x32x32:float32 --attr pads=1,1,1,1 --attr N=4 --fresh-process; done
    [ -e "$samples/circ_pad_plugin_multi_tactic.py" ] && check sample-multi-tactic "$samples/circ_pad_plugin_multi_tactic.py" --input 10x3x32x32:float32 --attr pads=1,1,1,1 --attr per_format_tactics=0
    [ -e "$samples/non_zero_plugin.py" ] && check sample-non-zero "$samples/non_zero_plugin.py" --input 8x5:float32
    [ -e "$samples/aliased_io_plugin.py" ] && check sample-aliased-io "$samples/aliased_io_plugin.py" --input 4:float32 --input 6:float32 --input 6:int64 --aliased-io
fi
if [ -n "$qdp_samples" ] && [ -e "$qdp_samples/qdp_defs.py" ]; then
    q="$qdp_samples/qdp_defs.py"
    check qdp-circ-pad-jit "$q" --plugin sample::circ_pad_plugin --input 10x3x32x32:float32 --attr pads=1,1,1,1 --call enable_single_tactic_circ_pad
    check qdp-circ-pad-multi "$q" --plugin sample::circ_pad_plugin --input 10x3x32x32:float32 --attr pads=1,1,1,1 --call enable_multi_tactic_circ_pad
    check qdp-circ-pad-aot "$q" --plugin sample::circ_pad_plugin --input 10x3x32x32:float32 --attr pads=1,1,1,1 --call enable_multi_tactic_aot_circ_pad --qdp both
    check qdp-non-zero "$q" --plugin sample::non_zero_plugin --input 8x5:float32
    check qdp-elemwise-add "$q" --plugin sample::elemwise_add_plugin --input 16:float32 --attr block_size=256 --call register_autotune
fi
summarize
tail -n 3 "$stem.txt"
exit "$status"
