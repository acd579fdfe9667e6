"""SeqRepeat: nearest-neighbour repeat along dim 1 by an integer factor (``np.repeat(x, f, 1)``).

What it computes. For ``x`` of shape ``[d0, len, rest...]`` (rank >= 2) and ``factor`` ``f``,
the output has shape ``[d0, len * f, rest...]`` and ``y[:, j] = x[:, j // f]``: every step of
the sequence is repeated ``f`` times in place -- the "output length = input length x 2" example
of the plugin guides, with the 2 made a field. :meth:`SeqRepeat.reference` is the
NumPy statement of the same thing.

ONNX: op type ``SeqRepeat`` (``plugin_version`` "1", ``plugin_namespace`` ""), one input, one
output, one attribute:

- ``factor`` (INT, required, 1 <= factor <= 2**31 - 1): the repeat count. It has no default: a
  node that forgets it fails with a message naming the field instead of silently doubling.

Data types: FP32, FP16, INT8 and INT32 (the instantiations ``kernels_cu/seq_repeat.cu`` lists);
the output has the input's type; LINEAR only. The kernel copies elements as unsigned integers
of their size, so results are bit-exact (``pyplugins.testing.TOLERANCES`` would allow nothing less for
INT32; the tests compare every type with ``np.array_equal``).

How each TensorRT callback serves this op: ``docs/ops/seq_repeat.md``. Registered as
``tensorrt.plugin`` (``interface="qdp"``), it also has an ahead-of-time kernel
(``seq_repeat_aot``, :meth:`SeqRepeat.aot_launch`; ``d0``, ``len`` and ``inner`` below 2**31):
``docs/aot.md``.

Example (no GPU needed: the run stops before ``enqueue``):
    >>> from pyplugins.checker import lifecycle
    >>> from pyplugins.emulator.specs import TensorSpec
    >>> from pyplugins.ops.seq_repeat import SeqRepeat
    >>> spec = TensorSpec((2, -1, 4), "float16", min=(2, 1, 4), opt=(2, 5, 4),
    ...                             max=(2, 9, 4))
    >>> report = lifecycle.run(SeqRepeat.creator, [spec], {"factor": 3}, device="cpu")
    >>> report.ok, report.output_shapes
    (True, [(2, 15, 4)])
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

import pyplugins.trt as trt
from pyplugins.runtime import aot, shapes
from pyplugins.runtime.creator import register
from pyplugins.dtypes import ctype_from_trt, itemsize_from_trt
from pyplugins.runtime.error_reports import describe
from pyplugins.errors import ShapeError
from pyplugins.runtime.fields import Field
from pyplugins.runtime.tactics import define_options
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import MAX_GRID, POINTER, Launch
from pyplugins.runtime.plugin import Plugin

__all__ = ["DEFINES", "UNROLL", "SeqRepeat", "grid_size"]

#: Threads per block (any 1-D block works; 256 is the kernel's suggestion).
BLOCK = 256
#: Units a thread takes per trip of path "rows" (``PP_SEQ_REPEAT_UNROLL``; 1 on a full grid
#: measured fastest, benchmarks/results/).
UNROLL = 1
#: seq_repeat.cu is compiled with these ``-D`` options, the constants it shares with this
#: module (it stops with an ``#error`` when one is missing).
DEFINES = {"PP_SEQ_REPEAT_UNROLL": UNROLL}
INT32_MAX = 2**31 - 1


def grid_size(d0: int, length: int, inner: int, factor: int, itemsize: int) -> int:
    """Blocks of ``BLOCK`` threads for a full grid, :data:`UNROLL` units of ``seq_repeat.cu``
    per thread:
    a 16-byte vector of x when a row is whole vectors (path "rows", for 16-byte aligned
    tensors), else 16 bytes of y (path "gather"); 0 when there is no work. The kernel strides
    over the grid, so a grid sized for "rows" stays correct when unaligned pointers send it
    down "gather".

    Example:
        >>> grid_size(1, 16384, 1024, 2, 4), grid_size(2, 3, 5, 2, 4), grid_size(0, 3, 4, 2, 4)
        (16384, 1, 0)
    """
    v = 16 // itemsize
    numel = d0 * length * inner
    units = numel // v if inner % v == 0 else shapes.cdiv(numel * factor, v)
    return min(shapes.cdiv(units, BLOCK * UNROLL), MAX_GRID[0])


@register
class SeqRepeat(Plugin):
    """``y = np.repeat(x, factor, axis=1)``.

    Example:
        >>> from pyplugins.ops.seq_repeat import SeqRepeat
        >>> p = SeqRepeat(factor=2)
        >>> SeqRepeat.from_bytes(p.serialize()).factor
        2
        >>> SeqRepeat(factor=0)
        Traceback (most recent call last):
        ...
        pyplugins.errors.FieldError: Field 'factor' of plugin 'SeqRepeat' must be >= 1 (got 0).

        On a GPU (``pp.run`` drives the whole lifecycle; needs CuPy and a device)::

            y = pp.run(SeqRepeat, np.arange(6, dtype=np.float32).reshape(1, 3, 2), factor=2)
    """

    name = "SeqRepeat"
    inputs = 1
    factor = Field.int(min=1, max=INT32_MAX, doc="how many times each step of dim 1 repeats")
    dtypes = (trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.INT8, trt.DataType.INT32)
    kernel = Kernel("seq_repeat.cu", "seq_repeat<{T}>", options=define_options(DEFINES))
    aot_kernel = Kernel("seq_repeat.cu", "seq_repeat_aot<{T}>", options=define_options(DEFINES))

    def get_output_dimensions(self, output_index: int, inputs: Any, expr_builder: Any) -> Any:
        """``[d0, len * factor, rest...]`` with ``len * factor`` a symbolic product.

        Raises:
            ShapeError: not one input, or rank < 2.
        """
        if len(inputs) != 1:
            msg = (f"plugin {describe(self)} takes exactly 1 input but the node has "
                   f"{len(inputs)}; connect one tensor.")
            raise ShapeError(msg)
        x = shapes.dims(inputs[0], expr_builder)
        _check_rank(self, [d.value for d in x])
        x[1] = x[1] * self.factor
        return x

    def check_configure(self, inp: Any, out: Any) -> None:
        """Check the rank (every configure_plugin call, build phase too).

        Raises:
            ShapeError: the input has rank < 2.
        """
        _check_rank(self, [d if d >= 0 else None for d in (int(v) for v in inp[0].desc.dims)])

    def plan(self, inputs: Sequence[Any], outputs: Sequence[Any], device: int) -> Launch:
        """``seq_repeat<T>(x, y, d0, len, inner, factor)`` with x viewed as ``[d0, len, inner]``."""
        desc = inputs[0]
        dims = [int(v) for v in desc.dims]
        d0, length, inner = dims[0], dims[1], shapes.volume(dims[2:])
        grid = grid_size(d0, length, inner, self.factor, itemsize_from_trt(desc.type))
        fn = self.kernel.function(ctype_from_trt(desc.type), device)
        return Launch(fn, grid=grid, block=BLOCK, device=device,
                      args=(POINTER, POINTER, np.int64(d0), np.int64(length), np.int64(inner),
                            np.int32(self.factor)))

    def aot_launch(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> aot.AotLaunch:
        """:meth:`plan`'s launch as expressions of the shape (:func:`grid_size`'s two paths
        chosen by :func:`~pyplugins.runtime.aot.divisible`, at run time):
        ``seq_repeat_aot<T>(x, d0, len, inner, factor, y)``, the sizes as int32."""
        x = inputs[0]
        d0, length, inner = x.dims[0], x.dims[1], aot.volume(x.dims[2:])
        v = 16 // itemsize_from_trt(x.type)
        numel = d0 * length * inner
        units = aot.select(aot.divisible(inner, v), numel // v,
                           shapes.cdiv(numel * self.factor, v))
        grid = aot.at_least_one(shapes.minimum(shapes.cdiv(units, BLOCK), MAX_GRID[0]))
        return aot.AotLaunch(self.aot_kernel, ctype_from_trt(x.type), grid=grid, block=BLOCK,
                             args=(d0, length, inner, self.factor))

    def reference(self, x: np.ndarray) -> Tuple[np.ndarray]:
        """``(np.repeat(x, self.factor, axis=1),)``: ``y[:, j] = x[:, j // factor]``.

        Raises:
            ShapeError: ``x`` has rank < 2.

        Example:
            >>> SeqRepeat(factor=2).reference(np.int8([[1, 2], [3, 4]]))
            (array([[1, 1, 2, 2],
                   [3, 3, 4, 4]], dtype=int8),)
        """
        _check_rank(self, x.shape)
        return (np.repeat(x, self.factor, axis=1),)


def _check_rank(plugin: Any, dims: Sequence[Optional[int]]) -> None:
    if len(dims) < 2:
        shown = "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
        msg = (f"plugin {describe(plugin)} repeats along dim 1, so its input needs rank >= 2 "
               f"([d0, len, ...]); got rank {len(dims)} {shown}. Reshape it, e.g. to "
               f"[1, len] for a single sequence.")
        raise ShapeError(msg)
