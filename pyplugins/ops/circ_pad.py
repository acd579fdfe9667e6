"""``CircPad``: circular (wrap) padding of the last dims of a tensor, as a TensorRT plugin.

This is the op of NVIDIA's Python plugin samples (``samples/python/python_plugin/
circ_pad_plugin_*.py``), written with pyplugins. Element ``y[o]`` is ``x[(o - before) mod in]``
on every padded dim, which is ``numpy.pad(x, widths, mode="wrap")`` exactly, pads larger than
the dim included (the input repeats as often as needed). The kernel is ``kernels_cu/circ_pad.cu``;
its NumPy twin is :meth:`CircPad.reference`.

Field (the ONNX attribute of a ``CircPad`` node; plugin version ``"1"``, namespace ``""``):

``pads`` (INTS, required): ``2k`` non-negative ints, ``k`` <= the input's rank, in the samples'
order: ``pads[2i]`` and ``pads[2i + 1]`` are the before and after pads of dim ``rank - 1 - i``,
the last dim first (as in ``torch.nn.functional.pad``). ``[1, 2, 3, 4]`` on ``[N, C, H, W]``
pads W by 1 before and 2 after, H by 3 and 4. The ONNX parser hands them over as int32.

Data types: every tensor of one type among FP32, FP16, BF16, INT8, INT32 and INT64, and, as an
IPluginV3 only (TensorRT gives V2 plugins no BOOL or UINT8 tensors), UINT8 and BOOL
(the kernel moves elements as raw bits, so any element size works); LINEAR format; any rank up
to 8. The output is bit-for-bit ``np.pad(x, ..., mode="wrap")``: no arithmetic happens, so the
tests demand exact equality, stricter than :data:`pyplugins.testing.TOLERANCES` (FP32 1e-5,
FP16 1e-3).

How each TensorRT callback serves this op: ``docs/ops/circ_pad.md``.

Example (the eager runner needs a GPU)::

    import cupy as cp
    from pyplugins.runtime.eager import run
    from pyplugins.ops.circ_pad import CircPad

    x = cp.arange(6, dtype=cp.float32).reshape(2, 3)
    y = run(CircPad, x, pads=[1, 2])        # [[2, 0, 1, 2, 0, 1], [5, 3, 4, 5, 3, 4]]
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

import pyplugins.trt as trt
from pyplugins.runtime import aot, shapes
from pyplugins.runtime.creator import register
from pyplugins.dtypes import ctype_from_trt, itemsize_from_trt
from pyplugins.errors import ShapeError
from pyplugins.runtime.fields import Field
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import POINTER, Launch
from pyplugins.runtime.tactics import Variant, choose, define_options, find, launch, tactics
from pyplugins.runtime.plugin import Plugin

__all__ = ["AOT_CTYPES", "AOT_KERNELS", "BLOCK", "DEFINES", "FLAT_MIN_ITEMSIZE", "FLAT_PARAMS_DTYPE", "NARROW_DATA",
           "NARROW_ROW_BYTES", "PARAMS_DTYPE", "TACTICS", "VARIANTS", "WARP_MIN_WARPS",
           "WARP_NARROW_CHUNKS", "WARP_NARROW_TABLE", "WARP_ROW_BYTES", "WARP_SHARE_BYTES", "CircPad",
           "LaunchPlan", "flat_magic31", "flat_magic64", "launch_plan", "pad_widths", "warp_narrow_groups",
           "warp_row_warps"]

#: ``struct CircPadParams`` of ``kernels_cu/circ_pad.cu``: 288 bytes, all int64, C layout.
PARAMS_DTYPE = np.dtype([("in_dims", "<i8", 8), ("out_dims", "<i8", 8), ("shift", "<i8", 8),
                         ("in_strides", "<i8", 8), ("rows", "<i8"), ("strips", "<i8"),
                         ("strip_vecs", "<i8"), ("group", "<i8")], align=True)
#: ``struct CircPadFlatParams`` of ``kernels_cu/circ_pad.cu`` (``circ_pad_flat``): 104 bytes.
FLAT_PARAMS_DTYPE = np.dtype([("total", "<i8"), ("plane_in", "<i8"), ("plane_out", "<i8"),
                              ("wi", "<i8"), ("wo", "<i8"), ("hi", "<i8"), ("ho", "<i8"),
                              ("sw", "<i8"), ("sh", "<i8"), ("magic_plane", "<u8"),
                              ("shift_plane", "<i8"), ("magic_wo", "<i8"), ("shift_wo", "<i8")],
                             align=True)
#: Threads per block of every row (a multiple of 32; the warp kernels' launch bounds and static
#: buffers are sized for it: ``CIRC_PAD_WN_BLOCK``, ``CIRC_PAD_WARP_BLOCK``).
BLOCK = 256
#: ``CIRC_PAD_NARROW_DATA``: bytes of source planes one ``circ_pad_narrow`` stage holds.
NARROW_DATA = 20480
#: ``CIRC_PAD_WN_CHUNKS``: 16-byte input chunks a ``circ_pad_warp_narrow`` lane stages per group.
WARP_NARROW_CHUNKS = 4
#: ``CIRC_PAD_WN_TABLE``: ``circ_pad_warp_narrow``'s offset-table entries (a group's elements).
WARP_NARROW_TABLE = 2048
#: ``CIRC_PAD_WARP_ROW``: the most input row bytes ``circ_pad_warp`` stages (a slot's size).
WARP_ROW_BYTES = 2048
#: ``circ_pad_warp``'s grid (:func:`warp_row_warps`): each warp writes whole output rows, about
#: this many bytes of them ...
WARP_SHARE_BYTES = 4096
#: ... and the grid has at least this many warps while the output has that many rows.
WARP_MIN_WARPS = 32768
#: Every ``circ_pad.cu`` kernel is compiled with these ``-D`` options, the constants it shares
#: with this module (it stops with an ``#error`` when one is missing).
DEFINES: Dict[str, int] = {
    "CIRC_PAD_NARROW_DATA": NARROW_DATA, "CIRC_PAD_WN_CHUNKS": WARP_NARROW_CHUNKS,
    "CIRC_PAD_WN_TABLE": WARP_NARROW_TABLE, "CIRC_PAD_WN_BLOCK": BLOCK,
    "CIRC_PAD_WARP_ROW": WARP_ROW_BYTES, "CIRC_PAD_WARP_BLOCK": BLOCK,
}
#: Output rows of at most this many bytes are narrow: the narrow kernels' rows.
NARROW_ROW_BYTES = 128
#: Smallest element size ``circ_pad_flat`` wins for: on both GPUs measured (benchmarks/results/),
#: 2-byte elements and narrow rows ran faster on the older kernels.
FLAT_MIN_ITEMSIZE = 4
_MAX_RANK = 8
_NARROW_PLANE_OUT = 2**18  # most output bytes of one plane for circ_pad_narrow (one block's)
_DIM_LIMIT = 2**31  # every dim the kernel sees must be below this (it indexes rows with int)


def _pairs(value: List[int]) -> bool:
    if len(value) % 2:
        msg = (f"it needs (before, after) pairs, an even number of values, but has "
               f"{len(value)}; pads[2i], pads[2i+1] pad dim rank-1-i (the last dim first)")
        raise ValueError(msg)
    return True


def pad_widths(rank: int, pads: Sequence[int]) -> List[Tuple[int, int]]:
    """The ``(before, after)`` pads of each of ``rank`` dims, in dim order (``np.pad``'s
    ``pad_width``), from ``pads`` in the samples' order (the last dim first).

    Raises:
        ShapeError: ``pads`` names more dims than ``rank``.

    Example:
        >>> pad_widths(3, [1, 2, 3, 4])
        [(0, 0), (3, 4), (1, 2)]
    """
    k = len(pads) // 2
    if k > rank:
        msg = (f"plugin 'CircPad': field 'pads' = {list(pads)!r} pads the last {k} dims but "
               f"input 0 has rank {rank}; give at most {2 * rank} values ((before, after) "
               f"pairs, the last dim first).")
        raise ShapeError(msg)
    widths = [(0, 0)] * rank
    for i in range(k):
        widths[rank - 1 - i] = (int(pads[2 * i]), int(pads[2 * i + 1]))
    return widths


class LaunchPlan(NamedTuple):
    """What :func:`launch_plan` computes for one input shape and element size: the facts the
    rows of :data:`pyplugins.ops.circ_pad.VARIANTS` read.

    Attributes:
        out_shape: the output shape.
        params: the ``CircPadParams`` struct, a NumPy structured scalar of :data:`PARAMS_DTYPE`.
        threads: threads the work needs (``rows * strips * group``); 0 for an empty output.
        itemsize: bytes per element.
        stage_planes: the number of planes (last two dims) when a plane fits a stage of
            ``circ_pad_narrow`` (its launch contract), else 0; 0 for an empty output.
        flat_params: the ``CircPadFlatParams`` struct (:data:`FLAT_PARAMS_DTYPE`) when the pads
            touch the last two dims only and a plane has fewer than 2**31 elements (the flat and
            warp kernels' contract), else None; None for an empty output.
        flat_threads: threads ``circ_pad_flat`` needs (one per aligned 16-byte output vector,
            ``ceil((elements + V - 1) / V)``, whatever the output's alignment); 0 if it does
            not apply.
    """

    out_shape: Tuple[int, ...]
    params: np.void
    threads: int
    itemsize: int
    stage_planes: int = 0
    flat_params: Optional[np.void] = None
    flat_threads: int = 0

    @property
    def in_row_bytes(self) -> int:
        """Bytes of an input row (the last dim)."""
        return int(self.params["in_dims"][7]) * self.itemsize

    @property
    def out_row_bytes(self) -> int:
        """Bytes of an output row (the last dim, padded)."""
        return int(self.params["out_dims"][7]) * self.itemsize


def launch_plan(in_shape: Sequence[int], pads: Sequence[int], itemsize: int) -> LaunchPlan:
    """The kernel's parameters for a concrete input shape, per ``circ_pad.cu``'s launch contract
    (right-aligned dims, shifts, strides, and the recommended rows/strips/group plan).

    Args:
        in_shape: the concrete input shape (rank 0 to 8).
        pads: the ``pads`` field (the last dim first).
        itemsize: bytes per element (1, 2, 4 or 8).

    Raises:
        ShapeError: too many pads for the rank, a padded dim of size 0, or a dim of 2**31 or more.

    Example:
        >>> plan = launch_plan((2, 3), [1, 2], itemsize=4)
        >>> plan.out_shape, plan.params["in_dims"][-2:].tolist(), int(plan.params["shift"][-1])
        ((2, 6), [2, 3], 2)
    """
    rank = len(in_shape)
    if rank > _MAX_RANK:
        msg = f"plugin 'CircPad': input 0 has rank {rank}; TensorRT tensors have at most 8 dims."
        raise ShapeError(msg)
    widths = pad_widths(rank, pads)
    in_shape = tuple(int(d) for d in in_shape)
    _check_no_empty_padded_dim(in_shape, widths, "the input shape")
    out_shape = tuple(n + b + a for n, (b, a) in zip(in_shape, widths))
    if any(d >= _DIM_LIMIT for d in in_shape + out_shape):
        msg = (f"plugin 'CircPad': input {in_shape} padded to {out_shape} has a dim of 2**31 "
               f"or more, beyond the kernel's 32-bit row indexing; pad a smaller tensor.")
        raise ShapeError(msg)
    lead = _MAX_RANK - rank
    in8 = [1] * lead + list(in_shape)
    out8 = [1] * lead + list(out_shape)
    before8 = [0] * lead + [b for b, _ in widths]
    p = np.zeros((), PARAMS_DTYPE)[()]
    p["in_dims"] = in8
    p["out_dims"] = out8
    p["shift"] = [(-b) % n if n else 0 for b, n in zip(before8, in8)]
    p["in_strides"] = [math.prod(in8[d + 1:]) for d in range(_MAX_RANK)]
    rows = math.prod(out8[:_MAX_RANK - 1])
    nvec = out8[-1] // (16 // itemsize)  # 16-byte vectors per output row
    group = min(32, 1 << (max(1, -(-nvec // 2)) - 1).bit_length())
    strip_vecs = max(1, nvec if nvec <= 8 * group else 8 * group)
    strips = max(1, -(-nvec // strip_vecs))
    p["rows"], p["strips"], p["strip_vecs"], p["group"] = rows, strips, strip_vecs, group
    threads = rows * strips * group if math.prod(out_shape) else 0
    if not threads:
        return LaunchPlan(out_shape, p, 0, itemsize)
    flat = _flat_params(in8, out8, [int(s) for s in p["shift"]])
    flat_threads = -(-(int(flat["total"]) + 16 // itemsize - 1) // (16 // itemsize)) \
        if flat is not None else 0
    return LaunchPlan(out_shape, p, threads, itemsize, _stage_planes(in8, out8, itemsize), flat,
                      flat_threads)


def flat_magic64(d: int) -> Tuple[int, int]:
    """``(m, s)`` with ``n // d == n if s == 0 else umul64hi(n, m) >> (s - 1)`` for every
    ``0 <= n < 2**63`` (``m < 2**64``): ``circ_pad_flat``'s division by the plane size.

    Example:
        >>> m, s = flat_magic64(5140)
        >>> all(((n * m) >> 64) >> (s - 1) == n // 5140 for n in (0, 5139, 5140, 2**63 - 1))
        True
    """
    s = (d - 1).bit_length()  # 2**s >= d > 2**(s-1): n * (m - 2**(63+s)/d) / 2**(63+s) < 1/d
    return -(-(1 << (63 + s)) // d), s


def flat_magic31(d: int) -> Tuple[int, int]:
    """``(m, sh)`` with ``n // d == (n * m) >> sh`` for every ``0 <= n < 2**31`` (``m < 2**32``):
    ``circ_pad_flat``'s division by the output row length.

    Example:
        >>> m, sh = flat_magic31(10)
        >>> [(n * m) >> sh for n in (9, 10, 2**31 - 1)] == [0, 1, (2**31 - 1) // 10]
        True
    """
    s = (d - 1).bit_length()
    return -(-(1 << (31 + s)) // d), 31 + s


def _flat_params(in8: Sequence[int], out8: Sequence[int], shift8: Sequence[int]
                 ) -> Optional[np.void]:
    """``CircPadFlatParams`` where ``circ_pad_flat``'s contract holds, else None."""
    if list(in8[:6]) != list(out8[:6]) or out8[6] * out8[7] >= _DIM_LIMIT:
        return None
    f = np.zeros((), FLAT_PARAMS_DTYPE)[()]
    hi, wi, ho, wo = in8[6], in8[7], out8[6], out8[7]
    f["total"] = math.prod(out8)
    f["plane_in"], f["plane_out"] = hi * wi, ho * wo
    f["wi"], f["wo"], f["hi"], f["ho"] = wi, wo, hi, ho
    f["sw"], f["sh"] = shift8[7], shift8[6]
    f["magic_plane"], f["shift_plane"] = flat_magic64(ho * wo)
    f["magic_wo"], f["shift_wo"] = flat_magic31(wo)
    return f


def _stage_planes(in8: Sequence[int], out8: Sequence[int], itemsize: int) -> int:
    """``prod(out8[:6])`` where a plane fits a ``circ_pad_narrow`` stage (its contract), else 0."""
    plane_in = in8[6] * in8[7] * itemsize
    plane_out = out8[6] * out8[7] * itemsize
    if (plane_in + 30) // 16 * 16 > NARROW_DATA or plane_out > _NARROW_PLANE_OUT:
        return 0
    return math.prod(out8[:6])


def _check_no_empty_padded_dim(shape: Sequence[int], widths: Sequence[Tuple[int, int]],
                               where: str) -> None:
    for d, (n, (before, after)) in enumerate(zip(shape, widths)):
        if n == 0 and (before or after):
            msg = (f"plugin 'CircPad': dim {d} of input 0 is 0 in {where} {tuple(shape)} but "
                   f"'pads' adds ({before}, {after}) to it: an empty dim has nothing to wrap "
                   f"around. Keep that dim >= 1 (also in the profile's min) or do not pad it.")
            raise ShapeError(msg)


# -- the variant table: each row reads a LaunchPlan and says whether its kernel can pad it (fits),
# whether the op prefers it there (wins: the measured choices of docs/ops/circ_pad.md), its grid
# rule and its arguments; "strips" is the IPluginV3 tactic of that name.

def _warp_narrow_rows(wi: int, wo: int, itemsize: int, lead: int) -> int:
    """Output rows per group of ``circ_pad_warp_narrow`` (``warp_narrow_geom``), 0 if none fit."""
    rv = wi * itemsize // 16
    row_out = wo * itemsize
    period = 16 // min(16, row_out & -row_out)  # rows whose output is whole 16-byte vectors
    pre = -(-lead // wo)  # rows the y misalignment pulls in before a group
    staged = 32 * WARP_NARROW_CHUNKS // rv if rv else 0
    rows = (staged - pre) // period * period if staged > pre else 0
    return min(rows, WARP_NARROW_TABLE // wo // period * period)


def warp_narrow_groups(plan: Any) -> int:
    """Groups of rows ``circ_pad_warp_narrow`` writes for ``plan`` (a ``LaunchPlan``; one warp
    each, round-robin), counted for the worst alignment of y (an upper bound); needs that row
    to fit.

    Example:
        >>> from pyplugins.ops.circ_pad import launch_plan
        >>> warp_narrow_groups(launch_plan((1, 2, 512, 8), [1, 1, 1, 1], 2))  # 124-row groups
        9
    """
    f, itemsize = plan.flat_params, plan.itemsize
    wi, wo, total = int(f["wi"]), int(f["wo"]), int(f["total"])
    v = 16 // itemsize
    lead = v - 1
    vectors = -(-(total + lead) // v)
    per_group = _warp_narrow_rows(wi, wo, itemsize, lead) * wo // v
    return -(-vectors // per_group)


def _narrow_rows(p: Any) -> bool:
    return p.out_row_bytes <= NARROW_ROW_BYTES


def _warp_narrow_fits(p: Any) -> bool:
    f = p.flat_params
    if f is None or p.itemsize not in (1, 2, 4, 8) or p.in_row_bytes % 16:
        return False
    wi, wo = int(f["wi"]), int(f["wo"])
    return (int(f["total"]) // wo < _DIM_LIMIT
            and _warp_narrow_rows(wi, wo, p.itemsize, 16 // p.itemsize - 1) > 0)


def warp_row_warps(rows: Any, row_bytes: int) -> Any:
    """Warps of ``circ_pad_warp``'s grid for ``rows`` output rows of ``row_bytes`` bytes (an int,
    or a shape expression for the AOT grid): ``cdiv(WARP_SHARE_BYTES, row_bytes)``
    rows a warp, but at least :data:`WARP_MIN_WARPS` warps and at most one a row. The kernel
    takes rows grid-stride, so any grid is correct; this one measured fastest on an H100 and an
    H200 (docs/ops/circ_pad.md).

    Example:
        >>> warp_row_warps(2048 * 514, 1028), warp_row_warps(1024 * 514, 2056)
        (263168, 263168)
        >>> warp_row_warps(128 * 514, 1028), warp_row_warps(100, 1028)
        (32768, 100)
    """
    per_warp = shapes.cdiv(WARP_SHARE_BYTES, row_bytes)
    return shapes.minimum(rows, shapes.maximum(WARP_MIN_WARPS, shapes.cdiv(rows, per_warp)))


def _warp_blocks(p: Any, block: int) -> int:
    rows = int(p.flat_params["total"]) // int(p.flat_params["wo"])
    return shapes.cdiv(warp_row_warps(rows, p.out_row_bytes), block // 32)


def _warp_fits(p: Any) -> bool:
    return (p.flat_params is not None and p.in_row_bytes % 16 == 0
            and p.in_row_bytes <= WARP_ROW_BYTES)


def _flat_wins(p: Any) -> bool:
    return p.itemsize >= FLAT_MIN_ITEMSIZE and not (p.stage_planes and _narrow_rows(p))


def _flat_args(p: Any) -> Tuple[Any, ...]:
    return (POINTER, POINTER, p.flat_params)


def _row_args(p: Any) -> Tuple[Any, ...]:
    return (POINTER, POINTER, p.params)


def _rows_blocks(p: Any, block: int) -> int:
    return shapes.cdiv(p.threads, block)


def _kernel(expression: str, *extra: str) -> Kernel:
    return Kernel("circ_pad.cu", expression, options=define_options(DEFINES) + extra)


#: The rows, in the order ``CircPad.plan`` tries them (the first that fits and wins).
VARIANTS: Tuple[Variant, ...] = (
    # Narrow rows: each warp stages its own groups of rows (4 resident grids beat 1 and 2).
    Variant("circ_pad_warp_narrow", _kernel("circ_pad_warp_narrow<{T}>"),
            needs="pads on the last two dims only, input rows of 16n bytes, fewer than 2**31 "
                  "output rows and a group of rows that fits its chunks and table",
            fits=_warp_narrow_fits, wins=_narrow_rows, waves=4, args=_flat_args,
            blocks=lambda p, block: shapes.cdiv(warp_narrow_groups(p), block // 32)),
    # Wider rows of 16n bytes: a warp per output row, the source row staged by cp.async; the
    # grid by output bytes (warp_row_warps), no longer 4 resident waves: rows of 512 at 64 MiB /
    # 1 GiB, fraction of copy (2026-11-27): H200 half 0.91 / 0.95 (0.91 / 0.84), float 0.93 /
    # 0.95 (0.91 / 0.88); H100 half 0.95 / 0.97 (0.94 / 0.89), float 0.97 / 0.97 (0.95 / 0.91).
    Variant("circ_pad_warp", _kernel("circ_pad_warp<{T}>"),
            needs=f"pads on the last two dims only and input rows of 16n bytes, at most "
                  f"{WARP_ROW_BYTES}",
            fits=_warp_fits, wins=lambda p: not _narrow_rows(p), args=_flat_args,
            blocks=_warp_blocks),
    # One 16-byte output vector a thread, the full grid.
    Variant("circ_pad_flat", _kernel("circ_pad_flat<{T}>"),
            needs="pads on the last two dims only and planes of fewer than 2**31 elements",
            fits=lambda p: p.flat_params is not None, wins=_flat_wins, args=_flat_args,
            blocks=lambda p, block: shapes.cdiv(p.flat_threads, block)),
    # Narrow rows, whole planes staged in shared memory. One resident grid measured 0.66 / 0.78
    # of copy for narrow half rows on the H200 / H100, two 0.62 / 0.76.
    Variant("circ_pad_narrow", _kernel("circ_pad_narrow<{T}>"),
            needs=f"planes whose input fits a stage ({NARROW_DATA} bytes)",
            fits=lambda p: p.stage_planes > 0, wins=_narrow_rows, waves=1, args=_row_args,
            blocks=lambda p, block: p.stage_planes),
    # Every shape: rows that fit 16 KB staged, longer rows in strips.
    Variant("circ_pad", _kernel("circ_pad<{T}>"), needs="nothing", fits=lambda p: True,
            waves=1, args=_row_args, blocks=_rows_blocks),
    # The IPluginV3 tactic "strips": circ_pad compiled without its staged path.
    Variant("circ_pad_strips", _kernel("circ_pad<{T}>", "-DCIRC_PAD_STAGE_BYTES=0"),
            needs="nothing", fits=lambda p: True, waves=1, args=_row_args, blocks=_rows_blocks,
            tactic="strips"),
)
#: CircPad's IPluginV3 tactics: "staged" (the table's own choice, as V2) and each tagged row.
TACTICS = tactics(VARIANTS, "staged")
#: The AOT entries' ``{T}`` per element size (the kernels move raw bytes: one type per size).
AOT_CTYPES = {1: "signed char", 2: "__half", 4: "float", 8: "long long"}
#: Each row's AOT entry (``<kernel>_aot`` in circ_pad.cu), by row name: :meth:`CircPad.aot_launch`.
AOT_KERNELS = {name: Kernel(k.source, k.expression, options=k.options,
                            dtypes=("int8", "float16", "float32", "int64"))
               for name, k in aot.entry_kernels(VARIANTS).items()}


def _strip_plan(nvec: Any) -> Tuple[Any, Any, Any]:
    """``(strips, strip_vecs, group)`` of :func:`launch_plan` for ``nvec`` 16-byte vectors a
    row, as arithmetic (ints or symbolic dims): group 1, 2, 4, ... 32 past 2, 4, ... 32."""
    group = 1 + sum(k * aot.less(2 * k, nvec) for k in (1, 2, 4, 8, 16))  # type: ignore[misc]
    return (shapes.maximum(shapes.cdiv(nvec, 256), 1),
            shapes.maximum(shapes.minimum(nvec, 256), 1), group)


@register
class CircPad(Plugin):
    """Circular padding; the callbacks are walked through in ``docs/ops/``.

    Example:
        >>> p = CircPad(pads=[1, 1, 2, 0])
        >>> p.pads, p.plugin_type
        ([1, 1, 2, 0], 'CircPad')
        >>> CircPad(pads=[1, 1, 2])
        Traceback (most recent call last):
        ...
        pyplugins.errors.FieldError: Field 'pads' of plugin 'CircPad' is invalid: it needs
        (before, after) pairs, an even number of values, but has 3; pads[2i], pads[2i+1] pad
        dim rank-1-i (the last dim first) (got [1, 1, 2]).
    """

    name = "CircPad"
    dtypes = (trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.BF16, trt.DataType.INT8,
              trt.DataType.UINT8, trt.DataType.BOOL, trt.DataType.INT32, trt.DataType.INT64)
    same_as = 0
    inputs = 1

    pads = Field.ints(min=0, max=_DIM_LIMIT - 1, max_len=2 * _MAX_RANK, validate=_pairs,
                      doc="(before, after) pairs, the last dim first")
    # The kernels of the variant table (pyplugins.ops.circ_pad), by role; plan
    # launches the row the table chooses.
    kernel = find(VARIANTS, "circ_pad").kernel
    #: ``circ_pad`` with its staged (shared-memory) path off: every row takes the strips path.
    strips_kernel = find(VARIANTS, "circ_pad_strips").kernel
    narrow_kernel = find(VARIANTS, "circ_pad_narrow").kernel
    flat_kernel = find(VARIANTS, "circ_pad_flat").kernel
    warp_narrow_kernel = find(VARIANTS, "circ_pad_warp_narrow").kernel
    warp_kernel = find(VARIANTS, "circ_pad_warp").kernel
    #: The AOT entries (:data:`AOT_KERNELS`; circ_pad_strips's is circ_pad's with its option).
    aot_kernel, narrow_aot_kernel, flat_aot_kernel, warp_narrow_aot_kernel, warp_aot_kernel = (
        AOT_KERNELS[n] for n in ("circ_pad", "circ_pad_narrow", "circ_pad_flat",
                                 "circ_pad_warp_narrow", "circ_pad_warp"))
    #: As IPluginV3, TensorRT times both and keeps the faster (``benchmarks/tactics.py``):
    #: "staged" is the table's own choice (as V2), "strips" the row of that tactic.
    tactics = TACTICS

    # -- shape inference ---------------------------------------------------------------------------

    def get_output_dimensions(self, output_index: int, inputs: Sequence[Any],
                              expr_builder: Any) -> List[shapes.Dim]:
        """Each padded dim becomes ``in + before + after``, symbolic when ``in`` is dynamic."""
        if len(inputs) != 1:
            msg = (f"plugin 'CircPad' takes exactly 1 input (got {len(inputs)}); connect only "
                   f"the tensor to pad.")
            raise ShapeError(msg)
        x = shapes.dims(inputs[0], expr_builder)
        widths = pad_widths(len(x), self.pads)
        _check_no_empty_padded_dim([d.value if d.is_constant else 1 for d in x], widths,
                                   "the network's input shape")
        return [d + (before + after) if before + after else d
                for d, (before, after) in zip(x, widths)]

    # -- configuration -----------------------------------------------------------------------------

    def check_configure(self, inp: Sequence[Any], out: Sequence[Any]) -> None:
        """Check the pads against the rank and the profile's min (every configure_plugin call)."""
        widths = pad_widths(len(inp[0].desc.dims), self.pads)
        profile_min = tuple(int(d) for d in inp[0].min)
        if len(profile_min) == len(widths) and shapes.is_concrete(profile_min):
            _check_no_empty_padded_dim(profile_min, widths, "the profile's min shape")

    def check_shapes(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """Raise ShapeError for a concrete shape the kernel cannot pad (see :func:`launch_plan`)."""
        self._launch_plan(inputs[0])

    def plan(self, inputs: Sequence[Any], outputs: Sequence[Any], device: int, *,
             variant: Optional[str] = None) -> Launch:
        """The launch of the row of :data:`~pyplugins.ops.circ_pad.VARIANTS` that
        takes this shape (the first that fits and wins; the ``strips`` tactic's row under that
        tactic), or of the row named ``variant`` (tests and benchmarks: it must fit): its kernel
        ``(x, y, CircPadParams or CircPadFlatParams)``, its grid and block.

        Raises:
            VariantError: ``variant`` names no row, or one whose kernel cannot pad this shape.
        """
        desc = inputs[0]
        facts = self._launch_plan(desc)
        row = choose(VARIANTS, facts, variant=variant, tactic=self.tactic, plugin=self.name)
        return launch(row, facts, ctype_from_trt(desc.type), device)

    def aot_launch(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> aot.AotLaunch:
        """:meth:`plan`'s launch as expressions of x's shape (QDP ``aot_impl``): the row plan
        takes at the profile's max shape (the tactic's row under a tactic), the warp rows only
        where the network fixes the last dim (their fit reads its bytes), and its entry
        ``<kernel>_aot`` with the row's struct as int32s, in field order (the flat rows' first
        nine fields; the kernel derives the magic numbers).

        Raises:
            ShapeError: the input or output has 2**31 elements or more at the profile's max
                (int32 arguments), or a padded dim is 0 in the profile's min.
        """
        x = inputs[0]
        widths = pad_widths(len(x.dims), self.pads)
        _check_no_empty_padded_dim(x.min, widths, "the profile's min shape")
        itemsize = max(itemsize_from_trt(x.type), 1)
        facts = launch_plan(x.max, self.pads, itemsize)
        aot.int32_bound(self.name, "the element count of input 0 or output 0", max(
            math.prod(max(d, 1) for d in x.max), math.prod(max(d, 1) for d in facts.out_shape)),
            "lower the profile's max")
        fixed = not x.shape or x.shape[-1] >= 0
        rows = [r for r in VARIANTS if fixed or r.name not in ("circ_pad_warp_narrow",
                                                               "circ_pad_warp")]
        row = choose(rows, facts, tactic=self.tactic, plugin=self.name)
        lead = [1] * (_MAX_RANK - len(x.dims))
        in8 = lead + list(x.dims)
        out8 = lead + [d + (b + a) if b + a else d for d, (b, a) in zip(x.dims, widths)]
        before8 = [0] * len(lead) + [b for b, _ in widths]
        shift8 = [0 if not b else shapes.cdiv(b, n) * n - b for b, n in zip(before8, in8)]
        v, total = 16 // itemsize, aot.volume(out8)
        if row.args is _row_args:
            strips, strip_vecs, group = _strip_plan(out8[7] // v)
            threads = aot.volume(out8[:7]) * strips * group
            blocks = aot.volume(out8[:6]) if row.name == "circ_pad_narrow" else \
                shapes.cdiv(threads, row.block)
            args = (*in8, *out8, *shift8, *(aot.volume(in8[d + 1:]) for d in range(_MAX_RANK)),
                    aot.volume(out8[:7]), strips, strip_vecs, group)
        else:
            f = facts.flat_params
            wi, wo = int(f["wi"]), int(f["wo"])
            blocks = shapes.cdiv(shapes.cdiv(total + v - 1, v), row.block)
            if row.name == "circ_pad_warp":
                blocks = shapes.cdiv(warp_row_warps(total // wo, wo * itemsize), row.block // 32)
            elif row.name == "circ_pad_warp_narrow":
                per_group = _warp_narrow_rows(wi, wo, itemsize, v - 1) * wo // v
                blocks = shapes.cdiv(shapes.cdiv(shapes.cdiv(total + v - 1, v), per_group),
                                     row.block // 32)
            # circ_pad_warp_aot takes the plane count in total's place (circ_pad.cu's AOT entries)
            first = aot.volume(out8[:6]) if row.name == "circ_pad_warp" else total
            args = (first, in8[6] * in8[7], out8[6] * out8[7], in8[7], out8[7], in8[6], out8[6],
                    shift8[7], shift8[6])
        ctype = AOT_CTYPES[itemsize]
        return aot.AotLaunch(AOT_KERNELS[row.name], ctype, block=row.block, args=args,
                             grid=aot.variant_grid(row, blocks, ctype_from_trt(x.type)))

    def _launch_plan(self, desc: Any) -> LaunchPlan:
        in_shape = tuple(int(d) for d in desc.dims)
        return launch_plan(in_shape, self.pads, max(itemsize_from_trt(desc.type), 1))

    # -- reference ---------------------------------------------------------------------------------

    def reference(self, x: np.ndarray) -> Tuple[np.ndarray]:
        """``(np.pad(x, pad_widths(x.ndim, self.pads), mode="wrap"),)``: the kernel's output, bit
        for bit (pads larger than a dim repeat the pattern).

        Raises:
            ShapeError: ``pads`` names more dims than ``x`` has, or pads a dim of size 0.

        Example:
            >>> CircPad(pads=[1, 2]).reference(np.array([[1, 2, 3]], dtype=np.float32))
            (array([[3., 1., 2., 3., 1., 2.]], dtype=float32),)
        """
        widths = pad_widths(x.ndim, self.pads)
        _check_no_empty_padded_dim(x.shape, widths, "the input shape")
        return (np.pad(x, widths, mode="wrap"),)
