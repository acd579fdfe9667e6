"""Test plugins for what only IPluginV3 serves, written as pp.Plugin classes: a size tensor
(NonZero), a shape input (Tile) and an aliased output (in-place LeakyReLU).

Check them with ``pyplugins check tests.v3_plugins --plugin PPNonZero --input 3x4:float32``
(``PPTile`` also needs ``--shape-input 7``). Registration replaces an earlier one: importing the
file again under another name (as a path) moves the registrations to that copy. None uses
``interface=``: a class with ``size_tensors``, ``shape_inputs`` or ``aliases`` registers as V3
by default. The NonZero and Tile kernels are small CUDA sources compiled with CuPy in ``plan``
(test-only; shipped ops keep theirs in ``kernels_cu/``).
"""

from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np

import pyplugins.trt as trt
from pyplugins.runtime import shapes
from pyplugins.runtime.creator import register
from pyplugins.runtime.launch import POINTER, Launch
from pyplugins.ops.leaky_relu import LeakyReLU
from pyplugins.runtime.plugin import Plugin

_SOURCE = r"""
extern "C" __global__ void pp_nonzero(const float* x, int* idx, long long* count,
                                      long long rows, long long cols) {
    // One thread, row-major order: a test kernel, correct rather than fast.
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    long long k = 0;
    for (long long r = 0; r < rows; ++r)
        for (long long c = 0; c < cols; ++c)
            if (x[r * cols + c] != 0.0f) { idx[2 * k] = (int)r; idx[2 * k + 1] = (int)c; ++k; }
    *count = k;
}
extern "C" __global__ void pp_tile(const float* x, float* y, long long n, long long length) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < length;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = x[i % n];
}
"""


def _function(name: str, device: int) -> Any:
    import cupy as cp

    with cp.cuda.Device(device):
        return cp.RawModule(code=_SOURCE).get_function(name)


@register(replace=True)
class NonZero(Plugin):
    """``[count, 2]`` int32 (row, col) indices of the non-zero elements of a 2-D float32 input,
    row-major; output 1 is the int64 size tensor ``count`` (at most rows * cols)."""

    name = "PPNonZero"
    outputs = 2
    size_tensors = (1,)
    dtypes = {0: (trt.DataType.FLOAT,), 1: (trt.DataType.INT32,), 2: (trt.DataType.INT64,)}
    same_as = None

    def get_output_datatype(self, index: int, input_types: Any) -> Any:
        return trt.DataType.INT32 if index == 0 else trt.DataType.INT64

    def get_output_dimensions(self, output_index: int, inputs: Any, expr_builder: Any) -> Any:
        rows, cols = shapes.dims(inputs[0], expr_builder)
        n = rows * cols
        count = shapes.size_tensor(expr_builder, 1, opt=shapes.cdiv(n, 2), upper=n)
        return [count, 2]

    def plan(self, inputs: Sequence[Any], outputs: Sequence[Any], device: int) -> Launch:
        rows, cols = (int(d) for d in inputs[0].dims)
        return Launch(_function("pp_nonzero", device), grid=1, block=1, device=device,
                      args=(POINTER, POINTER, POINTER, np.int64(rows), np.int64(cols)))

    def reference(self, x: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        idx = np.argwhere(x != 0).astype(np.int32)
        return idx, np.array(len(idx), np.int64)


@register(replace=True)
class Tile(Plugin):
    """1-D float32 ``x`` repeated to the length held by a shape-tensor input:
    ``y[i] = x[i % len(x)]``."""

    name = "PPTile"
    shape_inputs = 1
    dtypes = (trt.DataType.FLOAT,)

    def get_output_dimensions(self, output_index: int, inputs: Any, expr_builder: Any,
                              shape_inputs: Any) -> Any:
        (length,) = shapes.dims(shape_inputs[0], expr_builder)
        return [length]

    def plan(self, inputs: Sequence[Any], outputs: Sequence[Any], device: int) -> Launch:
        n, length = int(inputs[0].dims[0]), int(outputs[0].dims[0])
        grid = min(shapes.cdiv(length, 256), 1024)
        return Launch(_function("pp_tile", device), grid=grid, block=256, device=device,
                      args=(POINTER, POINTER, np.int64(n), np.int64(length)))


@register(replace=True)
class LeakyReLUInPlace(LeakyReLU):
    """The shipped LeakyReLU with its output aliased to its input: written in place when
    TensorRT honours the alias (the elementwise kernel is right either way)."""

    name = "PPLeakyReLUInPlace"
    aliases = {0: 0}
