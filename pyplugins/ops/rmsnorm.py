"""RMSNorm: ``y = x / sqrt(mean(x^2 over the last dim) + eps) * weight``, FP32 accumulation.

What it computes. For ``x`` of shape ``[..., D]`` (any leading dims, dynamic or not) and
``weight`` of shape ``[D]``, each row ``x[r, :]`` of ``D`` elements is scaled by the reciprocal
of its root mean square, then multiplied element-wise by ``weight``. The sum of squares is a
float32 tree reduction for FP16 inputs too, and the result is rounded to the input type once.
:meth:`RMSNorm.reference` states the same in float64 NumPy.

ONNX: op type ``RMSNorm`` (``plugin_version`` "1", ``plugin_namespace`` ""), inputs ``x`` and
``weight`` (in that order), one output, one attribute:

- ``eps`` (FLOAT, default ``1e-6``, finite and > 0): added to the mean square before the square
  root, so an all-zero row gives zeros instead of a division by zero. The ONNX parser passes it
  as FLOAT32.

Data types: FP32 or FP16 (the instantiations ``kernels_cu/rmsnorm.cu`` lists); ``weight`` and
the output have ``x``'s type; LINEAR only. Tolerances (``pyplugins.testing.TOLERANCES``, against the
float64 reference): FP32 ``rtol = atol = 1e-5`` (rsqrtf's 2 ulp and a float sum of squares);
FP16 ``rtol = atol = 1e-3`` (one half ulp: float math rounded to half).

How each TensorRT callback serves this op: ``docs/ops/rmsnorm.md``. Registered as
``tensorrt.plugin`` (``interface="qdp"``), it also has an ahead-of-time kernel (``rmsnorm_aot``,
:meth:`RMSNorm.aot_launch`; fewer than 2**31 rows): ``docs/aot.md``.

Example (no GPU needed: the run stops before ``enqueue``):
    >>> from pyplugins.checker import lifecycle
    >>> from pyplugins.ops.rmsnorm import RMSNorm
    >>> report = lifecycle.run(RMSNorm.creator, ["1-3-8x5x64:float16", "64:float16"],
    ...                        {"eps": 1e-5}, device="cpu")
    >>> report.ok, report.output_shapes
    (True, [(3, 5, 64)])
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional, Sequence, Tuple

import numpy as np

import pyplugins.trt as trt
from pyplugins.runtime import aot, shapes
from pyplugins.runtime.creator import register
from pyplugins.dtypes import ctype_from_trt, itemsize_from_trt
from pyplugins.runtime.error_reports import describe
from pyplugins.errors import ShapeError
from pyplugins.runtime.fields import Field
from pyplugins.runtime.tactics import Variant, choose, define_options, find, launch
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import MAX_GRID, POINTER, Launch
from pyplugins.runtime.plugin import Plugin
from pyplugins.testing import round_to

__all__ = ["DEFINES", "VARIANTS", "RMSNorm", "RmsFacts", "grid_size", "rows_per_block"]

#: Threads per block: 256, or 512 when a row is longer than LONG_ROW_BYTES (kernel contract).
BLOCK = 256
LONG_ROW_BLOCK = 512
LONG_ROW_BYTES = 16 * 1024
#: 16-byte vectors of a row each thread keeps in registers (rmsnorm.cu's ``PP_RMSNORM_CACHED``).
CACHED = 4
#: rmsnorm.cu is compiled with these ``-D`` options, the constants it shares with this module
#: (it stops with an ``#error`` when one is missing).
DEFINES = {"PP_RMSNORM_CACHED": CACHED}
INT32_MAX = 2**31 - 1


def rows_per_block(d: int, itemsize: int, block: int) -> int:
    """Rows one block of ``block`` threads takes per trip, as ``rmsnorm.cu`` decides it for
    16-byte aligned tensors: ``block // g`` with ``g`` the threads of a row (the fewest, a power
    of two, that hold at most ``CACHED`` vectors each; the whole block past that).

    Example:
        >>> rows_per_block(4096, 2, 256), rows_per_block(4096, 4, 256), rows_per_block(64, 2, 256)
        (2, 1, 128)
        >>> rows_per_block(6, 2, 256)     # 6 halves are no whole vector: element by element
        128
    """
    v = 16 // itemsize
    n = d // v if d % v == 0 else d
    g = 1
    while g < block and g * CACHED < n:
        g <<= 1
    if g > block or (g > 32 and block % g):
        g = block
    return block // g


def grid_size(rows: int, d: int, itemsize: int, block: int) -> int:
    """Blocks for a full grid: each block takes its rows once (0 when there is no work). The
    kernel strides over rows, so fewer blocks (pointers off 16-byte alignment make ``g``
    larger) stay correct.

    Example:
        >>> grid_size(8192, 4096, 2, 256), grid_size(8192, 4096, 4, 256), grid_size(0, 64, 4, 256)
        (4096, 8192, 0)
    """
    if rows <= 0 or d <= 0:
        return 0
    return min(shapes.cdiv(rows, rows_per_block(d, itemsize, block)), MAX_GRID[0])


class RmsFacts(NamedTuple):
    """One concrete RMSNorm launch: ``rows`` rows of ``d`` elements of ``itemsize`` bytes."""

    rows: int
    d: int
    itemsize: int
    eps: float


def _args(f: RmsFacts) -> Tuple[Any, ...]:
    return (POINTER, POINTER, POINTER, np.int64(f.rows), np.int32(f.d), np.float32(f.eps))


_KERNEL = Kernel("rmsnorm.cu", "rmsnorm<{T}>", options=define_options(DEFINES))
#: RMSNorm's variant table (:mod:`pyplugins.runtime.tactics`): one kernel on two block sizes, the
#: first that wins launches; both on the full grid (:func:`grid_size`).
VARIANTS = (
    Variant("rmsnorm_512", _KERNEL, needs="nothing", fits=lambda f: True, args=_args,
            blocks=lambda f, block: grid_size(f.rows, f.d, f.itemsize, block),
            block=LONG_ROW_BLOCK, wins=lambda f: f.d * f.itemsize > LONG_ROW_BYTES),
    Variant("rmsnorm", _KERNEL, needs="nothing", fits=lambda f: True, args=_args,
            blocks=lambda f, block: grid_size(f.rows, f.d, f.itemsize, block), block=BLOCK),
)


def aot_rows_per_block(d: Any, itemsize: int, block: Any) -> Any:
    """:func:`rows_per_block` for a symbolic row length ``d`` and block (256 or 512), as
    arithmetic: ``g`` is 1 doubled once for each ``2**k`` (below the block) with
    ``2**k * CACHED`` under the row's vector count, which is the loop's answer. The loop's last
    rule (a ``g`` over 32 that does not divide the block) never applies to a power-of-two block.
    """
    v = 16 // itemsize
    n = aot.select(aot.divisible(d, v), d // v, d)
    g: Any = 1
    for k in range(LONG_ROW_BLOCK.bit_length() - 1):
        g = g + (1 << k) * aot.less((1 << k) * CACHED, n) * aot.less(1 << k, block)
    return block // g


def _positive_finite(value: float) -> None:
    """The check of ``eps``: finite and > 0."""
    if not (math.isfinite(value) and value > 0):
        msg = ("must be finite and > 0 (it keeps an all-zero row from dividing by zero); use "
               "e.g. 1e-6")
        raise ValueError(msg)


@register
class RMSNorm(Plugin):
    """RMS normalization over the last dim, times ``weight``.

    Example:
        >>> from pyplugins.ops.rmsnorm import RMSNorm
        >>> RMSNorm().eps == 1e-6, RMSNorm(eps=1e-5).eps
        (True, 1e-05)
        >>> RMSNorm(eps=0.0)
        Traceback (most recent call last):
        ...
        pyplugins.errors.FieldError: Field 'eps' of plugin 'RMSNorm' is invalid: must be finite ...

        On a GPU (``pp.run`` drives the whole lifecycle; needs CuPy and a device)::

            y = pp.run(RMSNorm, x, np.ones(x.shape[-1], x.dtype), eps=1e-6)
    """

    name = "RMSNorm"
    inputs = 2
    eps = Field.float(default=1e-6, validate=_positive_finite,
                      doc="added to the mean square before the square root")
    dtypes = (trt.DataType.FLOAT, trt.DataType.HALF)
    kernel = find(VARIANTS, "rmsnorm").kernel
    aot_kernel = Kernel("rmsnorm.cu", "rmsnorm_aot<{T}>", options=define_options(DEFINES))

    def get_output_dimensions(self, output_index: int, inputs: Any, expr_builder: Any) -> Any:
        """``x``'s shape.

        Raises:
            ShapeError: not two inputs, ``x`` of rank 0, ``weight`` not of rank 1, or a
                constant weight length that differs from a constant last dim of ``x``.
        """
        if len(inputs) != 2:
            msg = (f"plugin {describe(self)} takes exactly 2 inputs (x, weight) but the node has "
                   f"{len(inputs)}; connect x [..., D] and weight [D].")
            raise ShapeError(msg)
        x, w = shapes.dims(inputs[0], expr_builder), shapes.dims(inputs[1], expr_builder)
        _check_dims(self, [d.value for d in x], [d.value for d in w], "at network definition")
        return inputs[0]

    def check_configure(self, inp: Any, out: Any) -> None:
        """Check the dims known now (every configure_plugin call, build phase too).

        Raises:
            ShapeError: the weight's length differs from x's last dim.
        """
        x_dims, w_dims = ([v if v >= 0 else None for v in (int(d) for d in t.desc.dims)]
                          for t in inp[:2])
        _check_dims(self, x_dims, w_dims, "at configure_plugin")

    def check_shapes(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """Raise ShapeError when the row length D exceeds the kernel's int32."""
        d = int(inputs[0].dims[-1])
        if d > INT32_MAX:
            msg = (f"plugin {describe(self)}: the last dim of x is {d}, more than the kernel's "
                   f"int32 row length allows ({INT32_MAX}).")
            raise ShapeError(msg)

    def plan(self, inputs: Sequence[Any], outputs: Sequence[Any], device: int, *,
             variant: Optional[str] = None) -> Launch:
        """``rmsnorm<T>(x, weight, y, rows, D, eps)`` on a full grid (:func:`grid_size`) of the
        block of the row of :data:`VARIANTS` that takes it (or of the row named ``variant``)."""
        x = inputs[0]
        x_dims = [int(v) for v in x.dims]
        facts = RmsFacts(shapes.volume(x_dims[:-1]), x_dims[-1], itemsize_from_trt(x.type),
                         self.eps)
        row = choose(VARIANTS, facts, variant=variant, plugin=self.name)
        return launch(row, facts, ctype_from_trt(x.type), device)

    def aot_launch(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> aot.AotLaunch:
        """:meth:`plan`'s launch as expressions of the shape: the block (512 for rows over
        ``LONG_ROW_BYTES``) and :func:`grid_size` computed at run time
        (:func:`aot_rows_per_block`); ``rmsnorm_aot<T>(x, weight, rows, d, eps bits, y)``."""
        x = inputs[0]
        d, rows = x.dims[-1], aot.volume(x.dims[:-1])
        itemsize = itemsize_from_trt(x.type)
        block = aot.select(aot.less(LONG_ROW_BYTES, d * itemsize), LONG_ROW_BLOCK, BLOCK)
        blocks = shapes.cdiv(rows, aot_rows_per_block(d, itemsize, block)) * aot.less(0, d)
        grid = aot.at_least_one(shapes.minimum(blocks, MAX_GRID[0]))
        return aot.AotLaunch(self.aot_kernel, ctype_from_trt(x.type), grid=grid, block=block,
                             args=(rows, d, aot.float32_bits(self.eps)))

    def reference(self, x: np.ndarray, weight: np.ndarray) -> Tuple[np.ndarray]:
        """``x / sqrt(mean(x^2 over the last dim) + eps) * weight`` in float64, with the eps the
        kernel gets (float32), rounded to ``x``'s dtype.

        Raises:
            ShapeError: ``weight`` is not ``[D]`` for ``x`` ``[..., D]``.

        Example:
            >>> RMSNorm(eps=1e-30).reference(np.float32([[3.0, 4.0]]), np.float32([1.0, 2.0]))
            (array([[0.84852815, 2.2627418 ]], dtype=float32),)
        """
        _check_dims(self, x.shape, weight.shape, "in reference")
        if x.shape[-1] == 0:
            return (x.copy(),)
        v = x.astype(np.float64)
        ms = np.mean(v * v, axis=-1, keepdims=True)
        eps = float(np.float32(self.eps))
        return (round_to(v / np.sqrt(ms + eps) * weight.astype(np.float64), x.dtype),)


def _check_dims(plugin: Any, x: Sequence[Optional[int]], w: Sequence[Optional[int]],
                when: str) -> None:
    """Raise ShapeError unless weight [D] fits x [..., D] (None = not known yet)."""
    def show(dims: Sequence[Optional[int]]) -> str:
        return "[" + ", ".join("?" if v is None else str(v) for v in dims) + "]"

    if len(x) < 1 or len(w) != 1:
        msg = (f"plugin {describe(plugin)} needs x of rank >= 1 and weight of rank 1 (x "
               f"[..., D], weight [D]); got x {show(x)} and weight {show(w)} ({when}). Reshape "
               f"the weight to [D].")
        raise ShapeError(msg)
    if x[-1] is not None and w[0] is not None and x[-1] != w[0]:
        msg = (f"plugin {describe(plugin)}: the weight has {w[0]} elements but the last dim of x "
               f"is {x[-1]} ({when}: x {show(x)}, weight {show(w)}); the weight holds one scale "
               f"per element of the normalized (last) dim, so it must be [{x[-1]}].")
        raise ShapeError(msg)
