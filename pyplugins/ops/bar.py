"""BarPlugin: two inputs, two outputs -- ``out0 = concat([A, B], axis=0)`` and ``out1 = copy(B)``.

What it computes. For ``A`` of shape ``[a0, r...]`` and ``B`` of shape ``[b0, r...]`` (the same
rank, at least 1, and the same trailing dims ``r``):

- output 0 is ``np.concatenate([A, B], axis=0)``, shape ``[a0 + b0, r...]``;
- output 1 is a copy of ``B``, shape ``[b0, r...]``.

The guide this plugin comes from contradicts itself about which output is which (one passage
has output 0 copy an input and output 1 concatenate). **This is pyplugins' definition**: output
0 is the concatenation, output 1 the copy of input 1. :meth:`BarPlugin.reference` states the
same semantics in NumPy.

ONNX: op type ``BarPlugin`` (``plugin_version`` "1", ``plugin_namespace`` ""), two inputs, two
outputs, **no attributes** (``field_names`` is empty, so the serialized state is just the
versioned header of :mod:`pyplugins.runtime.serialize`).

Data types: FP32, FP16, INT8 and INT32 -- the instantiations ``kernels_cu/bar.cu`` lists. All
four tensors share one type and the LINEAR format. The kernel moves elements as unsigned
integers of their size, so the result is bit-exact: ``pyplugins.testing.TOLERANCES`` allows 0 for
INT32, and the tests compare every type with ``np.array_equal`` (no rounding is involved).

How each TensorRT callback serves this op: ``docs/ops/bar.md``. Registered as
``tensorrt.plugin`` (``interface="qdp"``), it also has an ahead-of-time kernel (``bar_aot``,
:meth:`BarPlugin.aot_launch`; ``numel(A)`` and ``numel(B)`` below 2**31): ``docs/aot.md``.

Example (no GPU needed: the run stops before ``enqueue``):
    >>> from pyplugins.checker import lifecycle
    >>> from pyplugins.ops.bar import BarPlugin
    >>> report = lifecycle.run(BarPlugin.creator, ["2x3:float32", "1-4-8x3:float32"],
    ...                        device="cpu")
    >>> report.ok, report.output_shapes
    (True, [(6, 3), (4, 3)])
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

import pyplugins.trt as trt
from pyplugins.runtime import aot, shapes
from pyplugins.runtime.creator import register
from pyplugins.dtypes import ctype_from_trt, itemsize_from_trt
from pyplugins.runtime.error_reports import describe
from pyplugins.errors import ShapeError
from pyplugins.runtime.tactics import define_options
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import MAX_GRID, POINTER, Launch
from pyplugins.runtime.plugin import Plugin

__all__ = ["DEFINES", "UNROLL", "BarPlugin", "grid_size"]

#: Threads per block (the kernel accepts any 1-D block; 256 is its suggestion).
BLOCK = 256


#: 16-byte vectors of A or B per thread (``PP_BAR_UNROLL`` in ``bar.cu``; 2 measured fastest on
#: both GPUs, see the kernel-variant tables in benchmarks/results/).
UNROLL = 2
#: bar.cu is compiled with these ``-D`` options, the constants it shares with this module (it
#: stops with an ``#error`` when one is missing).
DEFINES = {"PP_BAR_UNROLL": UNROLL}


def grid_size(na: Any, nb: Any, itemsize: int) -> Any:
    """Blocks of ``BLOCK`` threads for a full grid: :data:`UNROLL` 16-byte vectors of A or B
    per thread (``bar.cu`` splits the threads between them in proportion to ``na`` and ``nb``);
    0 when both are empty. ``na`` and ``nb`` may be symbolic dims (the AOT launch).

    Example:
        >>> grid_size(2**24, 2**24, 4), grid_size(1, 0, 2), grid_size(0, 0, 4)
        (16384, 1, 0)
    """
    v = 16 // itemsize
    return shapes.minimum(shapes.cdiv(shapes.cdiv(na, v) + shapes.cdiv(nb, v), BLOCK * UNROLL),
                          MAX_GRID[0])


@register
class BarPlugin(Plugin):
    """``out0 = concat([A, B], axis=0)``, ``out1 = copy(B)``.

    Example:
        >>> import pyplugins.trt as trt
        >>> from pyplugins.ops.bar import BarPlugin
        >>> p = BarPlugin()
        >>> p.num_outputs, BarPlugin.creator.name
        (2, 'BarPlugin')
        >>> d = lambda t: trt.PluginTensorDesc([4, 3], t, trt.TensorFormat.LINEAR)
        >>> F, H = trt.DataType.FLOAT, trt.DataType.HALF
        >>> p.supports_format_combination(2, [d(F), d(F), d(F), None], 2)  # in_out[3]: junk
        True
        >>> p.supports_format_combination(2, [d(F), d(F), d(H), None], 2)
        False

        On a GPU (``pp.run`` drives the whole lifecycle; needs CuPy and a device)::

            a, b = np.ones((2, 3), np.float32), np.zeros((1, 3), np.float32)
            out0, out1 = pp.run(BarPlugin, a, b)
    """

    name = "BarPlugin"
    inputs = 2
    outputs = 2
    dtypes = (trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.INT8, trt.DataType.INT32)
    kernel = Kernel("bar.cu", "bar<{T}>", options=define_options(DEFINES))
    aot_kernel = Kernel("bar.cu", "bar_aot<{T}>", options=define_options(DEFINES))

    def get_output_dimensions(self, output_index: int, inputs: Any, expr_builder: Any) -> Any:
        """``[A0 + B0, r...]`` for output 0, ``[B0, r...]`` for output 1.

        Raises:
            ShapeError: not two inputs, rank 0, different ranks, or trailing dims that are
                build-time constants and differ.
        """
        if len(inputs) != 2:
            msg = (f"plugin {describe(self)} takes exactly 2 inputs (A, B) but the node has "
                   f"{len(inputs)}; connect two tensors.")
            raise ShapeError(msg)
        a, b = shapes.dims(inputs[0], expr_builder), shapes.dims(inputs[1], expr_builder)
        _check_dims(self, [d.value for d in a], [d.value for d in b], "at network definition")
        # Prefer a build-time constant: the dims are equal at run time, and a constant tells
        # the builder more than a symbol.
        trailing = [y if (y.is_constant and not x.is_constant) else x for x, y in zip(a[1:], b[1:])]
        first = a[0] + b[0] if output_index == 0 else b[0]
        return [first, *trailing]

    def supports_format_combination(self, pos: int, in_out: Any, num_inputs: int) -> bool:
        """LINEAR everywhere; position 0 picks one of :attr:`dtypes`, the rest must equal it.

        Reads ``in_out[pos]`` and ``in_out[0]`` only (entries after ``pos`` are junk).
        """
        desc = in_out[pos]
        if desc.format != trt.TensorFormat.LINEAR:
            return False
        if pos == 0:
            return desc.type in type(self).dtypes
        return desc.type == in_out[0].type

    def check_configure(self, inp: Any, out: Any) -> None:
        """Check the dims known now (every configure_plugin call, build phase too).

        Raises:
            ShapeError: trailing dims (or ranks) of A and B differ.
        """
        a_dims, b_dims = [int(v) for v in inp[0].desc.dims], [int(v) for v in inp[1].desc.dims]
        _check_dims(self, _known(a_dims), _known(b_dims), "at configure_plugin")

    def plan(self, inputs: Sequence[Any], outputs: Sequence[Any], device: int) -> Launch:
        """``bar<T>(A, B, out0, out1, na, nb)`` on a full grid (:func:`grid_size`)."""
        a, b = inputs
        na, nb = shapes.volume(a.dims), shapes.volume(b.dims)
        grid = grid_size(na, nb, itemsize_from_trt(a.type))
        fn = self.kernel.function(ctype_from_trt(a.type), device)
        return Launch(fn, grid=grid, block=BLOCK, device=device,
                      args=(POINTER, POINTER, POINTER, POINTER, np.int64(na), np.int64(nb)))

    def aot_launch(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> aot.AotLaunch:
        """:meth:`plan`'s launch as expressions of the shapes:
        ``bar_aot<T>(A, B, na, nb, out0, out1)``, the sizes as int32."""
        a, b = inputs
        na, nb = aot.volume(a.dims), aot.volume(b.dims)
        grid = aot.at_least_one(grid_size(na, nb, itemsize_from_trt(a.type)))
        return aot.AotLaunch(self.aot_kernel, ctype_from_trt(a.type), grid=grid, block=BLOCK,
                             args=(na, nb))

    def reference(self, a: np.ndarray, b: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(np.concatenate([a, b], axis=0), b.copy())``.

        Raises:
            ShapeError: rank 0, different trailing dims, or different dtypes.

        Example:
            >>> out0, out1 = BarPlugin().reference(np.int8([[1, 2]]), np.int8([[3, 4], [5, 6]]))
            >>> out0.tolist(), out1.tolist()
            ([[1, 2], [3, 4], [5, 6]], [[3, 4], [5, 6]])
        """
        _check_dims(self, a.shape, b.shape, "in reference")
        if a.dtype != b.dtype:
            msg = (f"plugin {describe(self)}: A is {a.dtype} but B is {b.dtype}; every tensor "
                   f"has one type.")
            raise ShapeError(msg)
        return np.concatenate([a, b], axis=0), b.copy()


def _known(dims: Sequence[int]) -> List[Optional[int]]:
    """Concrete dims as ints, runtime (-1) dims as None."""
    return [d if d >= 0 else None for d in dims]


def _show(dims: Sequence[Optional[int]]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _check_dims(plugin: Any, a: Sequence[Optional[int]], b: Sequence[Optional[int]],
                when: str) -> None:
    """Raise ShapeError unless A and B can be concatenated along dim 0 (None = not known yet)."""
    if not a or len(a) != len(b):
        msg = (f"plugin {describe(plugin)}: inputs A {_show(a)} and B {_show(b)} must have the "
               f"same rank, at least 1 (got ranks {len(a)} and {len(b)}, {when}), because output "
               f"0 concatenates them along dim 0; reshape them to [a0, r...] and [b0, r...].")
        raise ShapeError(msg)
    for d in range(1, len(a)):
        if a[d] is not None and b[d] is not None and a[d] != b[d]:
            msg = (f"plugin {describe(plugin)}: dim {d} of B is {b[d]!r} but dim {d} of A is "
                   f"{a[d]!r} ({when}: A {_show(a)}, B {_show(b)}); every dim but dim 0 must "
                   f"match to concatenate along dim 0. Give B the trailing dims {_show(a[1:])}.")
            raise ShapeError(msg)
