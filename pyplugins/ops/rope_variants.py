"""RoPE's variant table: ``rope.cu``'s kernels and grids, in the order ``RoPE.plan`` tries them.

``rope_table`` (a block makes a table of its tile's angles, then streams the tile like a copy)
and ``rope`` (the angles computed along the stream) give the same bits; the rows say where each
runs (``fits``: rope_table's table holds rotary_dim / 2 pairs), where the op prefers it
(``wins``: the measured choices of ``docs/ops/rope.md``), and the grids. The facts a row reads
are a :class:`RopeFacts`. The constants ``rope.cu`` shares with this module reach it as ``-D``
options (:data:`DEFINES`); the ``.cu`` has no defaults for them.

Example::

    >>> from pyplugins.runtime.tactics import choose
    >>> def facts(itemsize, rotary):
    ...     return RopeFacts(4096, 4096, 8, rotary, rotary, 0, 0, 10000.0, itemsize)
    >>> [choose(VARIANTS, facts(*case)).name for case in [(2, 128), (4, 128), (2, 2 * 1024 + 2)]]
    ['rope_table', 'rope', 'rope_1x']
"""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Tuple

import numpy as np

from pyplugins.runtime.tactics import Variant, define_options
from pyplugins.runtime import shapes
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import POINTER

__all__ = ["BLOCK", "DEFINES", "HEADS_PER_ITEM", "TABLE_PAIRS", "TABLE_UNITS", "TILE_UNITS",
           "VARIANTS", "RopeFacts", "table_tiles"]

#: Threads per block of every row.
BLOCK = 256
#: Heads one ``rope`` work item covers with the same angles, by element size (H in rope.cu's
#: contract: its per-type default).
HEADS_PER_ITEM = {4: 16, 2: 8}
#: ``PP_ROPE_TABLE_PAIRS``: rope_table's table capacity in (token, pair) entries. It applies
#: where rotary_dim / 2 fits.
TABLE_PAIRS = 1024
#: ``PP_ROPE_TABLE_UNITS``: work units a rope_table thread loads before it rotates and stores.
TABLE_UNITS = 2
#: Units a rope_table tile aims at: twice BLOCK threads x TABLE_UNITS, so that a thread streams
#: two passes of units per tile (measured better than one on both GPUs).
TILE_UNITS = 2 * BLOCK * TABLE_UNITS
#: Every ``rope.cu`` kernel is compiled with these ``-D`` options: the constants it shares with
#: this module (``rope.cu`` stops with an ``#error`` when one is missing).
DEFINES: Dict[str, int] = {"PP_ROPE_TABLE_PAIRS": TABLE_PAIRS, "PP_ROPE_TABLE_UNITS": TABLE_UNITS}


class RopeFacts(NamedTuple):
    """One concrete RoPE launch: what the rows of :data:`VARIANTS` read.

    Attributes:
        tokens, seq, heads, head_dim: x ``[batch, seq, heads, head_dim]`` with tokens =
            batch * seq.
        rotary: the rotary width; layout: the kernel's (0 neox, 1 gptj).
        offset, theta: ``position_offset`` and ``theta`` as the kernel gets them.
        itemsize: bytes per element (4 or 2).
    """

    tokens: int
    seq: int
    heads: int
    head_dim: int
    rotary: int
    layout: int
    offset: int
    theta: float
    itemsize: int


def table_tiles(tokens: int, heads: int, head_dim: int, rotary_dim: int, itemsize: int,
                layout: int, units: int = TILE_UNITS) -> Tuple[int, int, int]:
    """rope_table's ``(tile_tokens, tile_heads, tiles)`` for x ``[tokens, heads, head_dim]``.

    A tile holds about ``units`` work units (a unit: one rotation column, 16 bytes and, for
    rotate-half, their partner; or one 16-byte copy column; element-wise where rope.cu's
    16-byte conditions fail, taken as if the tensors are 16-byte aligned): all heads of
    ``tile_tokens`` tokens (at most :data:`TABLE_PAIRS` / (``rotary_dim`` / 2) of them), or,
    where one token's heads hold ``units`` or more, ``tile_heads`` heads of one token.
    ``layout`` is the kernel's (0 neox, 1 gptj). ``tiles`` is 0 for empty work.

    Example:
        >>> table_tiles(4096, 8, 128, 128, 2, 0)  # 64 units a token
        (16, 8, 256)
        >>> table_tiles(3, 64, 128, 128, 4, 1)    # 2048 units a token
        (1, 32, 6)
    """
    vec = 16 // itemsize
    half = rotary_dim // 2
    rot = rotary_dim if layout == 1 else half
    if head_dim % vec == 0 and rot % vec == 0:
        columns = rot // vec + (head_dim - rotary_dim) // vec
    else:
        columns = half + head_dim - rotary_dim
    if not (tokens and heads and columns):
        return 1, max(heads, 1), 0
    if heads * columns >= units:
        tile_tokens, tile_heads = 1, max(1, min(heads, units // columns))
    else:
        tile_tokens, tile_heads = units // (heads * columns), heads
        if half:
            tile_tokens = max(1, min(tile_tokens, TABLE_PAIRS // half))
    return (tile_tokens, tile_heads,
            shapes.cdiv(tokens, tile_tokens) * shapes.cdiv(heads, tile_heads))


def _tiles(f: RopeFacts) -> Tuple[int, int, int]:
    return table_tiles(f.tokens, f.heads, f.head_dim, f.rotary, f.itemsize, f.layout)


def _args(f: RopeFacts) -> Tuple[Any, ...]:
    return (POINTER, POINTER, POINTER, np.int64(f.tokens), np.int32(f.seq), np.int32(f.heads),
            np.int32(f.head_dim), np.int32(f.rotary), np.int32(f.layout), np.int32(f.offset),
            np.float32(f.theta))


def _table_args(f: RopeFacts) -> Tuple[Any, ...]:
    tile_tokens, tile_heads, _ = _tiles(f)
    return _args(f) + (np.int32(tile_tokens), np.int32(tile_heads))


def _rope_blocks(f: RopeFacts, block: int) -> int:
    columns = shapes.cdiv(f.head_dim * f.itemsize, 16)
    items = f.tokens * shapes.cdiv(f.heads, HEADS_PER_ITEM[f.itemsize]) * columns
    return shapes.cdiv(items, block)


def _kernel(expression: str) -> Kernel:
    return Kernel("rope.cu", expression, options=define_options(DEFINES))


#: The rows, in the order ``RoPE.plan`` tries them (the first that fits and wins).
VARIANTS: Tuple[Variant, ...] = (
    # Half (2026-11-24): 0.88 / 0.92 of copy on the H200 / H100 at 64 MiB against rope's 0.84 /
    # 0.89; float 0.89 / 0.92 against rope's 0.89 / 0.96, so float keeps rope. One block per tile
    # (no waves): 0.87 / 0.94 of copy at 64 / 256 MiB on the H200 against two waves' 0.88 / 0.84.
    Variant("rope_table", _kernel("rope_table<{T}>"),
            needs=f"rotary_dim / 2 <= {TABLE_PAIRS} (its table's pairs)",
            fits=lambda f: f.rotary // 2 <= TABLE_PAIRS, wins=lambda f: f.itemsize == 2,
            blocks=lambda f, block: _tiles(f)[2], args=_table_args, block=BLOCK),
    # Float: 4 waves of resident blocks measured 0.96 of copy against 0.89 at 1 on an H100.
    Variant("rope", _kernel("rope<{T}>"), needs="nothing", fits=lambda f: True,
            wins=lambda f: f.itemsize == 4, blocks=_rope_blocks, args=_args, block=BLOCK,
            waves=4),
    # Half where the table cannot hold the pairs: rope on one wave.
    Variant("rope_1x", _kernel("rope<{T}>"), needs="nothing", fits=lambda f: True,
            blocks=_rope_blocks, args=_args, block=BLOCK, waves=1),
)
