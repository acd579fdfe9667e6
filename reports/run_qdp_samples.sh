#!/usr/bin/env bash
# Checks NVIDIA's QDP sample (samples/python/quickly_deployable_plugins/qdp_defs.py of TensorRT's
# repository: never committed here) with the NumPy its tensorrt.plugin accepts, on a GPU machine.
#   bash reports/run_qdp_samples.sh OUT_FILE QDP_SAMPLES_DIR [NUMPY_WHEEL]
# With NumPy 2.5, tensorrt.plugin's register() refuses the sample's npt.NDArray annotations
# (docs/qdp.md), so a NumPy 2.4 wheel, installed into /tmp/np24, is put first on the path.
set -uo pipefail
out="${1:?usage: run_qdp_samples.sh OUT_FILE QDP_SAMPLES_DIR [NUMPY_WHEEL]}"
dir="${2:?QDP samples folder}"
wheel="${3:-}"
path="$PWD"
if [ -n "$wheel" ]; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/np24 "$wheel" && path="/tmp/np24:$PWD"
fi
q="$dir/qdp_defs.py"
numpy=$(PYTHONPATH="$path" python3 -c 'import numpy; print(numpy.__version__)')
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "# NVIDIA's qdp_defs.py checked with NumPy $numpy on $device, commit ${PYPLUGINS_COMMIT:-unknown}, $(date -u +%FT%TZ)" > "$out"
check() {
    echo >> "$out"
    echo "## pyplugins check qdp_defs.py $*" >> "$out"
    PYTHONPATH="$path" PYPLUGINS_TRT=emulator timeout 300 python3 -m pyplugins check "$q" "$@" >> "$out" 2>&1
    echo "exit status: $?" >> "$out"
}
check --call enable_single_tactic_circ_pad --plugin sample::circ_pad_plugin --input 10x3x32x32:float32 --attr pads=1,1,1,1 --qdp both
check --call enable_multi_tactic_circ_pad --plugin sample::circ_pad_plugin --input 10x3x32x32:float32 --attr pads=1,1,1,1
check --call enable_multi_tactic_aot_circ_pad --plugin sample::circ_pad_plugin --input 10x3x32x32:float32 --attr pads=1,1,1,1 --qdp both
check --plugin sample::non_zero_plugin --input 8x5:float32
check --call register_autotune --plugin sample::elemwise_add_plugin --input 16:float32 --attr block_size=256
check --plugin sample::elemwise_add_plugin_ --input 16:float32 --attr delta=2
check --plugin sample::elemwise_add_plugin --input 1000:float32 --attr block_size=256 --qdp jit --fresh-process
tail -n 2 "$out"
