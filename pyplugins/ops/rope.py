"""``RoPE``: rotary position embedding on ``x [batch, seq, heads, head_dim]`` (FP32, FP16), with an
optional second input of int32 positions, as a TensorRT plugin.

What it computes: each token's features are rotated in pairs by angles that grow with its
position. With ``r = rotary_dim``, ``inv_freq[i] = theta ** (-2 i / r)`` for ``i < r / 2`` and
the token's position ``pos``, pair ``i`` becomes ``(a cos - b sin, b cos + a sin)`` of the angle
``pos * inv_freq[i]``. The pairs are ``(x[i], x[i + r/2])`` for ``layout="neox"``
(rotate-half, GPT-NeoX / Llama) and ``(x[2 i], x[2 i + 1])`` for ``layout="gptj"``
(interleaved, GPT-J). Features past ``rotary_dim`` are copied unchanged. The CUDA kernels are
in ``kernels_cu/rope.cu``: ``rope_table`` (a block makes a table of its tokens' angles, then
streams their data like a copy) and ``rope`` (the angles computed along the stream), chosen by
:data:`pyplugins.ops.rope.VARIANTS`; both give the same bits. Their NumPy twin is
:meth:`RoPE.reference`.

Positions: with one input, token ``(b, s)`` sits at ``position_offset + s`` (a decoder step
with a KV cache passes the cache length as the offset). With a second input ``positions``
(int32 ``[batch, seq]``), token ``(b, s)`` sits at ``positions[b, s]`` exactly; the two are not
combined, so ``position_offset`` must then be 0 (anything else is refused rather than silently
ignored: add the offset to the positions tensor instead).

Fields (ONNX attributes of the ``RoPE`` node; plugin version ``"1"``, namespace ``""``):

===================  ==========================  ===========================================
``rotary_dim``       INT, default 0              features rotated; 0 means ``head_dim``; even,
                                                 ``<= head_dim``
``theta``            FLOAT, default 10000.0      frequency base, > 0 (float32, as ONNX carries
                                                 it)
``layout``           STRING, default ``"neox"``  ``"neox"`` (rotate-half) or ``"gptj"``
                                                 (interleaved)
``position_offset``  INT, default 0              first position when there is no positions
                                                 input
===================  ==========================  ===========================================

Data types: ``x`` and the output FP32, or both FP16 (the math is float32 inside, with angles
accurate to float rounding even for positions in the thousands); ``positions`` INT32. All LINEAR.

How each TensorRT callback serves this op: ``docs/ops/rope.md``.

Example (the eager runner needs a GPU)::

    import numpy as np
    from pyplugins.runtime.eager import run
    from pyplugins.ops.rope import RoPE

    x = np.random.randn(2, 16, 4, 64).astype(np.float16)
    y = run(RoPE, x, rotary_dim=32, layout="gptj", position_offset=100)
    pos = np.arange(32, dtype=np.int32).reshape(2, 16)
    y2 = run(RoPE, x, pos)                         # positions given per token
"""

from __future__ import annotations

import math
from typing import Any, Dict, NamedTuple, Optional, Sequence, Tuple

import numpy as np

import pyplugins.trt as trt
from pyplugins import dtypes
from pyplugins.runtime import aot, shapes
from pyplugins.runtime.creator import register
from pyplugins.errors import FieldError, ShapeError
from pyplugins.runtime.fields import Field
from pyplugins.runtime.formats import Formats
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import POINTER, Launch
from pyplugins.runtime.tactics import Variant, choose, define_options, find, launch
from pyplugins.runtime.plugin import Plugin
from pyplugins.testing import round_to

__all__ = ["AOT_KERNELS", "BLOCK", "DEFINES", "HEADS_PER_ITEM", "LAYOUTS", "TABLE_PAIRS", "TABLE_UNITS",
           "TILE_UNITS", "VARIANTS", "RoPE", "RopeFacts", "table_tiles"]

#: Field value of ``layout`` -> the kernel's ``layout`` argument.
LAYOUTS = {"neox": 0, "gptj": 1}
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1

_FLOATS = (trt.DataType.FLOAT, trt.DataType.HALF)
#: Format rule per input count: {tensor index: allowed types}, output has x's type.
_RULES = {
    1: Formats(dtypes={0: _FLOATS, 1: _FLOATS}, same_as={1: 0}),
    2: Formats(dtypes={0: _FLOATS, 1: (trt.DataType.INT32,), 2: _FLOATS}, same_as={2: 0}),
}


# -- the variant table: rope_table and rope give the same bits; each row (reading a RopeFacts)
# says where its kernel runs (fits: rope_table's table holds rotary_dim / 2 pairs), where the op
# prefers it (wins: the measured choices of docs/ops/rope.md) and its grid.

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
        positions: whether the plugin has its positions input; without it the kernel's
            positions argument is a null pointer, packed by value (the launch then takes the
            pointers x, y: what :meth:`pyplugins.Plugin.enqueue` passes).
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
    positions: bool = True


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
    positions = POINTER if f.positions else np.uint64(0)  # a null const int*, by value
    return (POINTER, positions, POINTER, np.int64(f.tokens), np.int32(f.seq), np.int32(f.heads),
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

#: Each row's AOT entry (``rope_aot``, ``rope_table_aot``), by row name: :meth:`RoPE.aot_launch`.
AOT_KERNELS = aot.entry_kernels(VARIANTS)


def even(value: int) -> bool:
    """Field check: the value is even (features rotate in pairs)."""
    if value % 2:
        msg = "rotary_dim must be even, since features rotate in pairs"
        raise ValueError(msg)
    return True


def positive_finite(value: float) -> bool:
    """Field check: a finite number > 0."""
    if not (math.isfinite(value) and value > 0):
        msg = "expected a finite number > 0"
        raise ValueError(msg)
    return True


def _show(dims: Sequence[shapes.Dim]) -> str:
    """``[2, ?, 4]``: build-time dims, ``?`` where only the runtime knows the value."""
    return "[" + ", ".join("?" if d.value is None else str(d.value) for d in dims) + "]"


def _input_count(n: int, method: str) -> int:
    if n not in (1, 2):
        msg = (f"plugin 'RoPE' takes 1 input (x) or 2 inputs (x, positions) (got {n} in "
               f"{method}); connect x [batch, seq, heads, head_dim] and optionally int32 "
               f"positions [batch, seq].")
        raise ShapeError(msg)
    return n


@register
class RoPE(Plugin):
    """Rotary position embedding.

    Example:
        >>> RoPE(rotary_dim=64, layout="gptj").rotary_for(128)
        64
        >>> RoPE().rotary_for(80)          # rotary_dim 0 means head_dim
        80
        >>> RoPE(rotary_dim=3)
        Traceback (most recent call last):
        ...
        pyplugins.errors.FieldError: Field 'rotary_dim' of plugin 'RoPE' is invalid:
        rotary_dim must be even, since features rotate in pairs (got 3).
    """

    name = "RoPE"
    #: As QDP (a fixed input count) it takes x alone: positions are position_offset + s.
    inputs = 1

    rotary_dim = Field.int(default=0, min=0, validate=even,
                           doc="features rotated (even); 0 means head_dim")
    theta = Field.float(default=10000.0, validate=positive_finite, doc="frequency base, > 0")
    layout = Field.enum("neox", "gptj", default="neox",
                        doc="'neox' (rotate-half) or 'gptj' (interleaved pairs)")
    position_offset = Field.int(default=0, min=_INT32_MIN, max=_INT32_MAX,
                                doc="first position when there is no positions input")

    # The kernels of the variant table (pyplugins.ops.rope); plan launches the row the
    # table chooses.
    rope = find(VARIANTS, "rope").kernel
    rope_table = find(VARIANTS, "rope_table").kernel
    rope_aot, rope_table_aot = AOT_KERNELS["rope"], AOT_KERNELS["rope_table"]

    def rotary_for(self, head_dim: int) -> int:
        """The rotary width for a given ``head_dim`` (``rotary_dim``, or ``head_dim`` if 0).

        Raises:
            ShapeError: ``rotary_dim > head_dim``, or ``head_dim`` odd when ``rotary_dim`` is 0.
        """
        rotary = self.rotary_dim or head_dim
        if rotary > head_dim:
            msg = (f"plugin 'RoPE': field 'rotary_dim' = {self.rotary_dim!r} exceeds x's "
                   f"head_dim {head_dim}; use rotary_dim <= head_dim (0 means all of it).")
            raise ShapeError(msg)
        if rotary % 2:
            msg = (f"plugin 'RoPE': rotary_dim 0 means head_dim, which is odd ({head_dim}); "
                   f"features rotate in pairs, so set an even rotary_dim < {head_dim}.")
            raise ShapeError(msg)
        return rotary

    def _check_offset(self, n_in: int) -> None:
        if n_in == 2 and self.position_offset != 0:
            msg = (f"plugin 'RoPE': field 'position_offset' is {self.position_offset!r} but a "
                   f"positions input is connected, whose values are used as they are; set "
                   f"position_offset to 0 and add the offset to the positions tensor.")
            raise FieldError(msg)

    def reference(self, x: np.ndarray,
                  positions: Optional[np.ndarray] = None) -> Tuple[np.ndarray]:
        """Rotary embedding of ``x`` ``[batch, seq, heads, head_dim]`` in float64, rounded to
        ``x``'s dtype; ``theta`` is taken as the float32 the kernel gets.

        Token ``(b, s)`` sits at ``positions[b, s]`` when given, else at
        ``position_offset + s``; pair ``i`` (see :data:`LAYOUTS`) becomes ``(a cos - b sin,
        b cos + a sin)`` of ``pos * theta ** (-2 i / rotary)``; features past the rotary width
        are copied.

        Raises:
            ShapeError: ``x`` not rank 4, a bad rotary width, or positions not ``[batch, seq]``.
            FieldError: positions given while ``position_offset`` is not 0.

        Example:
            >>> x = np.float32([1, 0, 0, 1]).reshape(1, 1, 1, 4)
            >>> RoPE(position_offset=1).reference(x)[0].round(4)  # angles 1 and 0.01 rad
            array([[[[ 0.5403, -0.01  ,  0.8415,  1.    ]]]], dtype=float32)
            >>> RoPE(layout="gptj", position_offset=1).reference(x)[0].round(4)
            array([[[[ 0.5403,  0.8415, -0.01  ,  1.    ]]]], dtype=float32)
        """
        if x.ndim != 4:
            msg = (f"plugin 'RoPE': x must be [batch, seq, heads, head_dim], rank 4 (got shape "
                   f"{x.shape})")
            raise ShapeError(msg)
        batch, seq, _, head_dim = x.shape
        rotary = self.rotary_for(head_dim)
        if positions is None:
            pos = np.broadcast_to(self.position_offset + np.arange(seq, dtype=np.float64),
                                  (batch, seq))
        else:
            self._check_offset(2)
            if positions.shape != (batch, seq):
                msg = (f"plugin 'RoPE': positions must be [batch, seq] = {(batch, seq)} (got "
                       f"{positions.shape})")
                raise ShapeError(msg)
            pos = positions.astype(np.float64)
        half = rotary // 2
        inv_freq = float(np.float32(self.theta)) ** (-(2.0 * np.arange(half)) / rotary)
        ang = pos[:, :, None, None] * inv_freq  # [batch, seq, 1, half]
        cos, sin = np.cos(ang), np.sin(ang)
        v = x.astype(np.float64)
        out = v.copy()
        if LAYOUTS[self.layout] == 0:
            a_at, b_at = slice(0, half), slice(half, rotary)
        else:
            a_at, b_at = slice(0, rotary, 2), slice(1, rotary, 2)
        a, b = v[..., a_at], v[..., b_at]
        out[..., a_at] = a * cos - b * sin
        out[..., b_at] = b * cos + a * sin
        return (round_to(out, x.dtype),)

    # -- shape inference ---------------------------------------------------------------------------

    def get_output_dimensions(self, output_index: int, inputs: Sequence[Any],
                              expr_builder: Any) -> Any:
        """x's shape; checks ranks and what build-time constants allow."""
        n_in = _input_count(len(inputs), "get_output_dimensions")
        self._check_offset(n_in)
        x = shapes.dims(inputs[0], expr_builder)
        if len(x) != 4:
            msg = (f"plugin 'RoPE': input 0 (x) must be [batch, seq, heads, head_dim], rank 4 "
                   f"(got rank {len(x)}: {_show(x)}); reshape it first.")
            raise ShapeError(msg)
        if x[3].is_constant:
            self.rotary_for(x[3].value)
        if n_in == 2:
            pos = shapes.dims(inputs[1], expr_builder)
            fits = len(pos) == 2 and all(
                pos[i].value == x[i].value for i in (0, 1)
                if pos[i].is_constant and x[i].is_constant)
            if not fits:
                msg = (f"plugin 'RoPE': input 1 (positions) must be [batch, seq] of x "
                       f"{_show(x[:2])} (got {_show(pos)}).")
                raise ShapeError(msg)
        return inputs[0]

    # -- format negotiation ------------------------------------------------------------------------

    def supports_format_combination(self, pos: int, in_out: Sequence[Any],
                                    num_inputs: int) -> bool:
        """x FLOAT/HALF, positions INT32, output x's type; LINEAR; 1 or 2 inputs."""
        rule = _RULES[_input_count(num_inputs, "supports_format_combination")]
        return rule(pos, in_out, num_inputs)

    # -- configuration -----------------------------------------------------------------------------

    def check_configure(self, inp: Sequence[Any], out: Sequence[Any]) -> None:
        """Check the input count and the offset (every configure_plugin call)."""
        self._check_offset(_input_count(len(inp), "configure_plugin"))

    def check_shapes(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """Raise ShapeError for a bad rotary width, positions shape or an int32 overflow."""
        dims = [tuple(int(v) for v in d.dims) for d in inputs]
        batch, seq, heads, head_dim = dims[0]
        self.rotary_for(head_dim)
        if len(inputs) == 2 and dims[1] != (batch, seq):
            msg = (f"plugin 'RoPE': input 1 (positions) has shape {dims[1]}, expected [batch, "
                   f"seq] = {(batch, seq)} of x {dims[0]}.")
            raise ShapeError(msg)
        for what, value in (("seq", seq), ("heads", heads), ("head_dim", head_dim)):
            if value > _INT32_MAX:
                msg = (f"plugin 'RoPE': x's {what} = {value} exceeds the kernel's int32 limit; "
                       f"split the tensor.")
                raise ShapeError(msg)
        if len(inputs) == 1 and seq and self.position_offset + seq - 1 > _INT32_MAX:
            msg = (f"plugin 'RoPE': position_offset {self.position_offset} + seq {seq} passes "
                   f"the int32 position limit {_INT32_MAX}; use a smaller offset.")
            raise ShapeError(msg)

    def plan(self, inputs: Sequence[Any], outputs: Sequence[Any], device: int, *,
             variant: Optional[str] = None) -> Launch:
        """``rope<T>`` or ``rope_table<T>`` with ``(x, positions, y, tokens, seq, heads,
        head_dim, rotary, layout, offset, theta)``, rope_table's tile sizes after them: the
        launch of the row of :data:`~pyplugins.ops.rope.VARIANTS` that takes this
        input, or of the row named ``variant`` (tests and benchmarks). The inherited
        :meth:`enqueue` passes the pointers x, positions, y, or x, y when there is no positions
        input (its argument is then a null pointer packed by value).

        Raises:
            VariantError: ``variant`` names no row, or one whose kernel cannot run this input.
        """
        x = inputs[0]
        batch, seq, heads, head_dim = (int(v) for v in x.dims)
        facts = RopeFacts(batch * seq, seq, heads, head_dim, self.rotary_for(head_dim),
                          LAYOUTS[self.layout], self.position_offset, self.theta,
                          dtypes.itemsize_from_trt(x.type), positions=len(inputs) > 1)
        row = choose(VARIANTS, facts, variant=variant, plugin=self.name)
        return launch(row, facts, dtypes.ctype_from_trt(x.type), device)

    def aot_launch(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> aot.AotLaunch:
        """:meth:`plan`'s launch as expressions of x's shape (QDP ``aot_impl``; x alone): the row
        plan takes at the profile's max shape, rope_table only where the network fixes heads and
        head_dim (its tile sizes are then constants; else half takes rope_1x), and its entry
        ``rope_aot`` ``(x, tokens, 0, seq, heads, head_dim, rotary, layout, offset, theta bits,
        y)`` (0: the token count's high word) or ``rope_table_aot`` ``(x, tokens, seq, heads,
        head_dim, rotary, layout, offset, theta bits, tile_tokens, tile_heads, y)``.

        Raises:
            ShapeError: batch * seq or position_offset + seq - 1 passes 2**31 - 1 at the
                profile's max (int32 arguments), or rotary_dim does not fit head_dim.
        """
        x = inputs[0]
        (batch, seq, heads, head_dim), lo = x.max, x.min
        aot.int32_bound(self.name, "batch * seq", batch * seq, "lower the profile's max")
        aot.int32_bound(self.name, "position_offset + seq - 1", self.position_offset + seq - 1,
                        "lower the profile's max seq or the offset")
        self.rotary_for(lo[3])
        itemsize = dtypes.itemsize_from_trt(x.type)
        facts = RopeFacts(batch * seq, seq, heads, head_dim, self.rotary_for(head_dim),
                          LAYOUTS[self.layout], self.position_offset, self.theta, itemsize,
                          positions=False)  # QDP's RoPE takes x alone
        fixed = x.shape[2] >= 0 and x.shape[3] >= 0
        row = choose([r for r in VARIANTS if fixed or r.name != "rope_table"], facts,
                     plugin=self.name)
        b, s, h, d = x.dims
        facts = facts._replace(tokens=b * s, seq=s, heads=h, head_dim=d,
                               rotary=self.rotary_dim or d)
        args = (facts.tokens, s, h, d, facts.rotary, facts.layout, facts.offset,
                aot.float32_bits(self.theta))
        if row.name == "rope_table":  # heads, head_dim fixed: the tile sizes are constants
            tt, th, tiles = table_tiles(1, heads, head_dim, self.rotary_for(head_dim), itemsize,
                                        facts.layout)
            blocks = shapes.cdiv(facts.tokens, tt) * shapes.cdiv(heads, th) if tiles else 0
            some = aot.less(0, facts.tokens)  # plan's table_tiles for no tokens: (1, heads)
            args += (aot.select(some, tt, 1) if tiles else 1,
                     aot.select(some, th, max(heads, 1)) if tiles else max(heads, 1))
        else:
            blocks = row.blocks(facts, row.block)
            # rope_aot's tokens_hi, the count's high word (0 under the int32 bound): the body
            # then compiles as rope's, to its registers (kernels_cu/rope.cu's AOT entries)
            args = args[:1] + (0,) + args[1:]
        ctype = dtypes.ctype_from_trt(x.type)
        return aot.AotLaunch(AOT_KERNELS[row.name], ctype, block=row.block, args=args,
                             grid=aot.variant_grid(row, blocks, ctype))
