"""A tensorrt.plugin (QDP) plugin written for real TensorRT: ``y = scale * x`` over FP32 and FP16.

``impl`` is the JIT implementation (Python runs it at every inference, here with CuPy on
TensorRT's stream); ``aot_impl`` the ahead-of-time one: a CUDA kernel compiled to PTX at build
time, with the scale baked in, which the engine runs without Python. ``scale`` is a one-element
``float32`` array rather than a ``float``: TensorRT re-creates a plugin with ``float(f.data)`` of a
one-element array, which NumPy 2.4 refuses (docs/qdp.md). Checked by ``demos/qdp_demo.py`` and,
from the command line, by::

    pyplugins check demos/qdp_scale.py --input 1-4-8x1000:float32 --attr scale=2.5 --qdp both

No ``from __future__ import annotations``: tensorrt.plugin reads annotations as objects.
"""

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, List, Tuple, Union

import numpy as np
import tensorrt as trt
import tensorrt.plugin as trtp

#: The AOT kernel: x and y of one type T, n elements, the scale a compile-time constant.
SOURCE = r"""
#include <cuda_fp16.h>
extern "C" __global__ void scale_{suffix}(const {T}* x, int n, {T}* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = {T}(float(x[i]) * {scale}f);
}
"""
BLOCK = 256


@trtp.register("demo::scale")
def scale_desc(inp0: trtp.TensorDesc, scale: np.ndarray[Any, np.dtype[np.float32]]) -> trtp.TensorDesc:
    return inp0.like()


@trtp.autotune("demo::scale")
def scale_autotune(inp0: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc]
                   ) -> List[trtp.AutoTuneCombination]:
    return [trtp.AutoTuneCombination("FP32|FP16, FP32|FP16")]


def _view(tensor: trtp.Tensor):
    """A CuPy array on the tensor's buffer. Not ``cupy.asarray(tensor)``: as a consumer of the
    CUDA Array Interface v3 CuPy would synchronize TensorRT's stream, which breaks an engine
    captured into a CUDA graph."""
    import cupy as cp

    dtype = cp.float32 if tensor.dtype == trt.float32 else cp.float16
    n = tensor.numel()
    memory = cp.cuda.UnownedMemory(tensor.data_ptr, n * np.dtype(dtype).itemsize, tensor,
                                   cp.cuda.runtime.getDevice())
    return cp.ndarray((n,), dtype, cp.cuda.MemoryPointer(memory, 0))


@trtp.impl("demo::scale")
def scale_impl(inp0: trtp.Tensor, scale: np.ndarray[Any, np.dtype[np.float32]], outputs: Tuple[trtp.Tensor],
               stream: int) -> None:
    import cupy as cp

    with cp.cuda.ExternalStream(stream):
        x, y = _view(inp0), _view(outputs[0])
        cp.multiply(x, x.dtype.type(scale[0]), out=y)


def ptx_of(source: str, name: str) -> bytes:
    """PTX for ``compute_80``: NVRTC when its library loads, else ``nvcc --ptx``."""
    try:
        from cuda.bindings import nvrtc

        _, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
        cuda_include = Path(shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc").parent.parent
        options = [b"-arch=compute_80", f"-I{cuda_include / 'include'}".encode()]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"NVRTC could not compile {name}")
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        ptx = b" " * size
        nvrtc.nvrtcGetPTX(prog, ptx)
        return ptx.rstrip(b"\0")
    except Exception:  # noqa: BLE001 - no cuda.bindings, or its NVRTC library: nvcc instead
        pass
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / f"{name}.cu").write_text(source)
        subprocess.run([nvcc, "--ptx", "-arch=compute_80", f"{name}.cu", "-o", f"{name}.ptx"],
                       cwd=work, check=True, capture_output=True)
        return (Path(work) / f"{name}.ptx").read_bytes()


@trtp.aot_impl("demo::scale")
def scale_aot_impl(inp0: trtp.TensorDesc, scale: np.ndarray[Any, np.dtype[np.float32]],
                   outputs: Tuple[trtp.TensorDesc], tactic: int
                   ) -> Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams,
                              trtp.SymExprs]:
    suffix, ctype = ("f32", "float") if inp0.dtype == trt.float32 else ("f16", "__half")
    name = f"scale_{suffix}"
    source = SOURCE.replace("{suffix}", suffix).replace("{T}", ctype).replace(
        "{scale}", repr(float(scale[0])))
    n = inp0.shape_expr.numel()
    params = trtp.KernelLaunchParams()
    params.grid_x = trtp.cdiv(n, BLOCK)
    params.block_x = BLOCK
    return name, ptx_of(source, name), params, trtp.SymIntExprs.from_tuple([trtp.SymInt32(n)])
