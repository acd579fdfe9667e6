"""Pool's variant table: the launches of ``pool.cu``'s kernels, in the order its plan tries them.

Every ``pool.cu`` kernel computes every window (each falls back to the generic path), so every
row fits every input; the rows differ in where the op prefers them (``wins``: the measured
choices of ``docs/ops/pool.md``), their compile options, block and grid. The facts a row reads
are a :class:`PoolFacts`. The constants ``pool.cu`` shares with this module reach it as ``-D``
options (:data:`DEFINES`); the ``.cu`` has no defaults for them.

Example::

    >>> from pyplugins.runtime.tactics import choose
    >>> def facts(window, w, itemsize, scales=(1.0, 1.0)):
    ...     return PoolFacts(window, 2, 64, w, 32, w // 2, itemsize, 0, *scales)
    >>> [choose(VARIANTS, facts(*case)).name for case in [
    ...     ((5, 5, 2, 2, 2, 2), 64, 4), ((5, 5, 2, 2, 2, 2), 64, 1), ((5, 5, 2, 2, 2, 2), 12, 2),
    ...     ((2, 2, 2, 2, 0, 0), 64, 1), ((2, 2, 2, 2, 0, 0), 64, 1, (1.0, 0.5)),
    ...     ((4, 4, 4, 4, 0, 0), 64, 2)]]
    ['pool2d_cols_s4', 'pool2d_cols', 'pool2d_wide', 'pool2d_i8', 'pool2d_b128', 'pool2d']
"""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Tuple

import numpy as np

from pyplugins.runtime.tactics import Variant, define_options
from pyplugins.runtime import shapes
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import POINTER

__all__ = ["COLS_BLOCK", "COLS_MIN_ROWS", "COLS_WINDOW", "DEFINES", "OUTPUTS_PER_THREAD",
           "PoolFacts", "VARIANTS", "WIDE_WINDOWS", "cols_blocks"]

#: Threads per block of the pool2d_cols rows (its ``__launch_bounds__``, ``PP_POOL_COLS_THREADS``;
#: a multiple of 32: a warp is one column group).
COLS_BLOCK = 256
#: Fewest output rows a pool2d_cols warp walks per work item (``PP_POOL_COLS_SMIN``): its grid
#: rule gives each warp one item of that many rows.
COLS_MIN_ROWS = 8
#: Outputs one thread of the generic path computes per grid-stride trip (``PP_POOL_OUTPUTS``).
OUTPUTS_PER_THREAD = 4
#: Every ``pool.cu`` kernel is compiled with these ``-D`` options: the constants it shares with
#: this module (``pool.cu`` stops with an ``#error`` when one is missing).
DEFINES: Dict[str, int] = {"PP_POOL_OUTPUTS": OUTPUTS_PER_THREAD,
                           "PP_POOL_COLS_SMIN": COLS_MIN_ROWS, "PP_POOL_COLS_THREADS": COLS_BLOCK}
#: Windows ``(kh, kw, sh, sw, pw)`` that ``pool2d_wide`` has a vector path for (``pool2d`` has
#: the others; both compute every window, with the same arguments).
WIDE_WINDOWS = frozenset({(5, 5, 2, 2, 2), (3, 3, 2, 2, 0), (2, 2, 1, 1, 0)})
#: ``(kh, kw, sh, sw, pw)`` of ``pool2d_cols``'s column path (any ph <= 4).
COLS_WINDOW = (5, 5, 2, 2, 2)


class PoolFacts(NamedTuple):
    """One concrete Pool launch: what the rows of :data:`VARIANTS` read.

    Attributes:
        window: ``(kh, kw, sh, sw, ph, pw)``.
        nc, h, w, ho, wo: planes (N * C), input and output height and width.
        itemsize: bytes per element (4, 2 or 1).
        mode: the kernel's ``mode`` (0 max, 1 average).
        in_scale, out_scale: the INT8 scales (1.0 for float types).
    """

    window: Tuple[int, int, int, int, int, int]
    nc: int
    h: int
    w: int
    ho: int
    wo: int
    itemsize: int
    mode: int
    in_scale: float
    out_scale: float

    @property
    def unit_ratio(self) -> bool:
        """in_scale == out_scale, as the kernel's float32 arguments."""
        return bool(np.float32(self.in_scale) == np.float32(self.out_scale))


def cols_blocks(nc: int, ho: int, w: int, itemsize: int, block: int = COLS_BLOCK) -> int:
    """Blocks that give each pool2d_cols warp one work item of the fewest rows it walks
    (:data:`COLS_MIN_ROWS`): the grid to cap at the resident-block count (the kernel then sizes
    its segments to the grid).

    A work item is one plane's column group (32 16-byte chunks of ``w`` elements of ``itemsize``
    bytes) times a segment of output rows.

    Example:
        >>> cols_blocks(64, 256, 512, 4)  # 64 planes x 4 groups x 32 segments, 8 warps a block
        1024
        >>> cols_blocks(1, 1, 16, 1), cols_blocks(0, 5, 16, 1)
        (1, 0)
    """
    groups = shapes.cdiv(w * itemsize // 16, 32)
    warps = nc * groups * shapes.cdiv(ho, COLS_MIN_ROWS)
    return shapes.cdiv(warps * 32, block)


def _cols_window(f: PoolFacts) -> bool:
    kh, kw, sh, sw, ph, pw = f.window
    return (kh, kw, sh, sw, pw) == COLS_WINDOW and ph <= 4 and f.w * f.itemsize % 16 == 0


def _args(f: PoolFacts) -> Tuple[Any, ...]:
    kh, kw, sh, sw, ph, pw = f.window
    return (POINTER, POINTER, np.int64(f.nc), np.int32(f.h), np.int32(f.w), np.int32(f.ho),
            np.int32(f.wo), np.int32(kh), np.int32(kw), np.int32(sh), np.int32(sw),
            np.int32(ph), np.int32(pw), np.int32(f.mode), np.float32(f.in_scale),
            np.float32(f.out_scale))


def _outputs_blocks(f: PoolFacts, block: int) -> int:
    return shapes.cdiv(f.nc * f.ho * f.wo, block * OUTPUTS_PER_THREAD)


def _cols_blocks(f: PoolFacts, block: int) -> int:
    return cols_blocks(f.nc, f.ho, f.w, f.itemsize, block)


def _kernel(expression: str, *extra: str) -> Kernel:
    return Kernel("pool.cu", expression, options=define_options(DEFINES) + extra)


def _always(f: PoolFacts) -> bool:
    return True


#: The rows, in the order ``Pool.plan`` tries them (the first that fits and wins).
VARIANTS: Tuple[Variant, ...] = (
    # 5x5 stride 2 on whole-chunk rows, 4- and 2-byte elements: pool2d_cols with 4-row segments
    # on every block cols_blocks counts. Kernel variants (2026-11-24, 64 / 256 MiB, fraction of
    # copy), 4 rows against the kernel's own rule on one wave: H200 float max 0.87 / 0.91 (0.84
    # / 0.89), half max 0.87 / 0.93 (0.85 / 0.85), half avg 0.80 / 0.82 (0.78 / 0.83); H100
    # float 0.92-0.97 (0.87-0.91), half 0.90-0.98 (0.84-0.90).
    Variant("pool2d_cols_s4", _kernel("pool2d_cols<{T}>", "-DPP_POOL_COLS_S=4"),
            needs="nothing", fits=_always, args=_args, blocks=_cols_blocks, block=COLS_BLOCK,
            wins=lambda f: _cols_window(f) and f.itemsize in (4, 2)),
    # INT8 keeps the rule on one resident wave (4 rows: avg 0.61 / 0.64 against 0.66 / 0.69).
    Variant("pool2d_cols", _kernel("pool2d_cols<{T}>"), needs="nothing", fits=_always,
            args=_args, blocks=_cols_blocks, block=COLS_BLOCK, waves=1, wins=_cols_window),
    # INT8 2x2 stride 2 padding 0 at in_scale == out_scale: byte-SIMD.
    Variant("pool2d_i8", _kernel("pool2d_i8<{T}>"), needs="INT8 elements",
            fits=lambda f: f.itemsize == 1, args=_args, blocks=_outputs_blocks, block=128,
            waves=1, wins=lambda f: f.unit_ratio and f.window == (2, 2, 2, 2, 0, 0)),
    # The vector path's later windows. 128 threads measured faster than 256 on an H100: 5x5
    # stride 2 0.91 / 0.65 / 0.44 of copy for float / half / INT8 against 0.85 / 0.58 / 0.40.
    Variant("pool2d_wide", _kernel("pool2d_wide<{T}>"), needs="nothing", fits=_always,
            args=_args, blocks=_outputs_blocks, block=128, waves=1,
            wins=lambda f: (f.window[:4] + f.window[5:]) in WIDE_WINDOWS),
    # Everything else: float and half on 256 threads ...
    Variant("pool2d", _kernel("pool2d<{T}>"), needs="nothing", fits=_always, args=_args,
            blocks=_outputs_blocks, block=256, waves=1, wins=lambda f: f.itemsize > 1),
    # ... and INT8 on 128 (INT8 2x2 0.54 / 0.95 of copy (avg / max) against 0.48 / 0.90 on 256).
    Variant("pool2d_b128", _kernel("pool2d<{T}>"), needs="nothing", fits=_always, args=_args,
            blocks=_outputs_blocks, block=128, waves=1),
)
