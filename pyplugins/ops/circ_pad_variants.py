"""CircPad's variant table: the six launches of ``circ_pad.cu``, in the order its plan tries them.

Each row reads the facts of one concrete launch, a :class:`pyplugins.ops.circ_pad.LaunchPlan`
(the kernels' parameter structs, the element size, the planes a narrow stage holds), and says
whether its kernel can pad them (``fits``), whether the op prefers it there (``wins``: the
measured choice of ``docs/ops/circ_pad.md``), its grid rule and its arguments. ``strips`` is the
IPluginV3 tactic of that name. The constants ``circ_pad.cu`` shares with this module reach it as
``-D`` options (:data:`DEFINES`); the ``.cu`` has no defaults for them.

Example (which row each shape takes; names are the kernels', the tactic's row excepted)::

    >>> from pyplugins.ops.circ_pad import launch_plan
    >>> from pyplugins.runtime.tactics import choose
    >>> [choose(VARIANTS, launch_plan(shape, [1, 1, 1, 1], size)).name for shape, size in [
    ...     ((1, 64, 512, 8), 2), ((1, 4, 512, 512), 2), ((1, 4, 512, 510), 4),
    ...     ((1, 64, 512, 7), 2), ((1, 4, 512, 510), 2)]]
    ['circ_pad_warp_narrow', 'circ_pad_warp', 'circ_pad_flat', 'circ_pad_narrow', 'circ_pad']
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from pyplugins.runtime.tactics import Variant, define_options, tactics
from pyplugins.runtime import shapes
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import POINTER

__all__ = ["BLOCK", "DEFINES", "FLAT_MIN_ITEMSIZE", "NARROW_DATA", "NARROW_ROW_BYTES",
           "TACTICS", "VARIANTS", "WARP_NARROW_CHUNKS", "WARP_NARROW_TABLE", "WARP_ROW_BYTES",
           "warp_narrow_groups"]

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
#: Every ``circ_pad.cu`` kernel is compiled with these ``-D`` options: the constants it shares
#: with this module (``circ_pad.cu`` stops with an ``#error`` when one is missing).
DEFINES: Dict[str, int] = {
    "CIRC_PAD_NARROW_DATA": NARROW_DATA, "CIRC_PAD_WN_CHUNKS": WARP_NARROW_CHUNKS,
    "CIRC_PAD_WN_TABLE": WARP_NARROW_TABLE, "CIRC_PAD_WN_BLOCK": BLOCK,
    "CIRC_PAD_WARP_ROW": WARP_ROW_BYTES, "CIRC_PAD_WARP_BLOCK": BLOCK,
}
#: Output rows of at most this many bytes are narrow: the narrow kernels' rows.
NARROW_ROW_BYTES = 128
#: Smallest element size ``circ_pad_flat`` wins for: on both GPUs measured (the kernel-variant
#: tables in benchmarks/results/), 2-byte elements and narrow rows ran faster on the older kernels.
FLAT_MIN_ITEMSIZE = 4
_WARP = 32
_DIM_LIMIT = 2**31  # the kernels index rows with int


def _warp_narrow_rows(wi: int, wo: int, itemsize: int, lead: int) -> int:
    """Output rows per group of ``circ_pad_warp_narrow`` (``warp_narrow_geom``), 0 if none fit."""
    rv = wi * itemsize // 16
    row_out = wo * itemsize
    period = 16 // min(16, row_out & -row_out)  # rows whose output is whole 16-byte vectors
    pre = -(-lead // wo)  # rows the y misalignment pulls in before a group
    staged = _WARP * WARP_NARROW_CHUNKS // rv if rv else 0
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


# -- what each row's kernel can pad, and where the op prefers it -----------------------------------

def _narrow_rows(p: Any) -> bool:
    return p.out_row_bytes <= NARROW_ROW_BYTES


def _warp_narrow_fits(p: Any) -> bool:
    f = p.flat_params
    if f is None or p.itemsize not in (1, 2, 4, 8) or p.in_row_bytes % 16:
        return False
    wi, wo = int(f["wi"]), int(f["wo"])
    return (int(f["total"]) // wo < _DIM_LIMIT
            and _warp_narrow_rows(wi, wo, p.itemsize, 16 // p.itemsize - 1) > 0)


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
    # Narrow rows: each warp stages its own groups of rows, no block barrier in its loop. H200
    # kernel variants (2026-11-24), rows of 8 at 64 / 256 MiB: 4 resident grids half 0.85 / 0.91
    # and float 0.92 / 0.93 of copy, 2 grids 0.85 / 0.89 and 0.91 / 0.91.
    Variant("circ_pad_warp_narrow", _kernel("circ_pad_warp_narrow<{T}>"),
            needs="pads on the last two dims only, input rows of 16n bytes, fewer than 2**31 "
                  "output rows and a group of rows that fits its chunks and table",
            fits=_warp_narrow_fits, wins=_narrow_rows, waves=4, args=_flat_args,
            blocks=lambda p, block: shapes.cdiv(warp_narrow_groups(p), block // _WARP)),
    # Wider rows of 16n bytes: a warp per output row, the source row staged by cp.async. H200,
    # rows of 512 at 64 / 256 MiB: 4 grids half 0.91 / 0.89 and float 0.91 / 0.91 of copy, 1
    # grid 0.84 / 0.83 and 0.87 / 0.87.
    Variant("circ_pad_warp", _kernel("circ_pad_warp<{T}>"),
            needs=f"pads on the last two dims only and input rows of 16n bytes, at most "
                  f"{WARP_ROW_BYTES}",
            fits=_warp_fits, wins=lambda p: not _narrow_rows(p), waves=4, args=_flat_args,
            blocks=lambda p, block: shapes.cdiv(
                int(p.flat_params["total"]) // int(p.flat_params["wo"]), block // _WARP)),
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
