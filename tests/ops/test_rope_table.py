"""RoPE's rope_table kernel: the kernel choice and tile rule (CPU), a model of the kernel's work
split (CPU: every element written once, with its own token's and pair's angle), and the kernel
on the GPU against the NumPy reference and, to the bit, against the rope kernel."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.runtime.kernels import Kernel, kernels_dir
from pyplugins.ops.rope import LAYOUTS, RoPE
from pyplugins.ops.rope import (BLOCK, DEFINES, TABLE_PAIRS, TABLE_UNITS, TILE_UNITS,
                                         VARIANTS, RopeFacts, table_tiles)
from pyplugins.runtime.tactics import VariantError, choose, find, with_options
from pyplugins.testing import assert_close

from .test_rope import ref, run_gpu

NEOX, GPTJ = LAYOUTS["neox"], LAYOUTS["gptj"]
MAX_UNITS = 2**31 - 1


# -- host rules ------------------------------------------------------------------------------------

def row_kernel(name, *options):
    """The kernel of RoPE's table row ``name`` with ``options`` over its own."""
    kernel = find(VARIANTS, name).kernel
    return Kernel("rope.cu", kernel.expression, options=with_options(kernel.options, options))


def test_the_kernels_get_the_hosts_constants():
    assert DEFINES == {"PP_ROPE_TABLE_PAIRS": TABLE_PAIRS, "PP_ROPE_TABLE_UNITS": TABLE_UNITS}
    assert TILE_UNITS == 2 * BLOCK * TABLE_UNITS  # two passes a thread per tile
    for row in VARIANTS:
        assert row.kernel.options == tuple(f"-D{k}={v}" for k, v in DEFINES.items())
    assert not re.search(r"^#define PP_ROPE_TABLE_(PAIRS|UNITS) ",
                         (kernels_dir() / "rope.cu").read_text(), re.M)


def _row(itemsize, rotary, variant=None):
    facts = RopeFacts(64, 64, 8, max(rotary, 2), rotary, NEOX, 0, 10000.0, itemsize)
    return choose(VARIANTS, facts, variant=variant).name


def test_kernel_choice():
    assert (_row(2, 128), _row(4, 128)) == ("rope_table", "rope")  # the defaults
    assert _row(2, 0) == _row(2, 2 * TABLE_PAIRS) == "rope_table"  # pairs fill the table
    assert _row(2, 2 * TABLE_PAIRS + 2) == "rope_1x"              # one pair too many: one wave
    for itemsize in (2, 4):
        assert _row(itemsize, 2 * TABLE_PAIRS, "rope_table") == "rope_table"
        assert _row(itemsize, 128, "rope") == "rope"
        with pytest.raises(VariantError, match=r"rotary_dim / 2 <= 1024"):
            _row(itemsize, 2 * TABLE_PAIRS + 2, "rope_table")
    assert [find(VARIANTS, n).waves for n in ("rope_table", "rope", "rope_1x")] == [None, 4, 1]


@pytest.mark.parametrize("itemsize", [2, 4])
@pytest.mark.parametrize("layout", [NEOX, GPTJ])
@pytest.mark.parametrize("tokens, heads, head_dim, rotary", [
    (32768, 8, 128, 128), (7, 3, 64, 32), (5, 1, 10, 6), (1, 40, 64, 64), (9, 64, 256, 256),
    (3, 1000, 128, 64), (2, 2, 4000, 4000), (4, 3, 2048, 2048), (100, 5, 7, 0), (0, 8, 128, 128),
    (6, 0, 128, 128),
])
def test_table_tiles_cover_the_work_in_tiles_of_about_tile_units(tokens, heads, head_dim, rotary,
                                                                  itemsize, layout):
    tt, th, tiles = table_tiles(tokens, heads, head_dim, rotary, itemsize, layout)
    if not tokens or not heads:
        assert tiles == 0
        return
    assert tt >= 1 and 1 <= th <= heads and (th == heads or tt == 1)
    assert tiles == math.ceil(tokens / tt) * math.ceil(heads / th)
    if 0 < rotary // 2 <= TABLE_PAIRS:  # else rope_table does not fit (its row)
        assert tt * (rotary // 2) <= TABLE_PAIRS
    vec = 16 // itemsize
    rot = rotary if layout == GPTJ else rotary // 2
    wide = head_dim % vec == 0 and rot % vec == 0
    columns = (rot + head_dim - rotary) // vec if wide else rotary // 2 + head_dim - rotary
    units = tt * th * columns
    assert units <= max(TILE_UNITS, columns)             # no tile much above the aim ...
    if tt * (rotary // 2) + (rotary // 2) <= TABLE_PAIRS and th == heads:
        assert units + heads * columns > TILE_UNITS      # ... nor a token short of it
    if th < heads:
        assert (th + 1) * columns > TILE_UNITS


def test_table_tiles_examples():
    assert table_tiles(32768, 8, 128, 128, 2, NEOX) == (16, 8, 2048)  # the benchmark, half
    assert table_tiles(16384, 8, 128, 128, 4, NEOX) == (8, 8, 2048)  # and float
    assert table_tiles(1, 32, 128, 128, 2, NEOX) == (4, 32, 1)       # a decode step
    assert table_tiles(2, 100, 80, 64, 2, GPTJ) == (1, 100, 2)        # 10 units a head
    assert table_tiles(40, 2, 2048, 2048, 4, NEOX) == (1, 2, 40)     # a token a tile
    assert table_tiles(40, 1, 1024, 1024, 4, NEOX) == (2, 1, 20)     # the table's limit
    assert table_tiles(40, 1, 2048, 2048, 2, GPTJ) == (1, 1, 40)     # 256 units, table full


# -- a model of the kernel's work split --------------------------------------------------------------

def model(tokens, heads, head_dim, rotary, layout, itemsize, tile_tokens, tile_heads, grid,
          block, wide=True, units=2, pairs=1024):
    """rope_table's loops in Python (tile clamps, inv_freq and table layout, units, passes,
    grid-stride), recording for each output element how often it is written and, for rotated
    ones, the (token, pair, role) whose angle and partner it got; role 0: the pair's first
    element (cos term), 1: its second, 2: copied."""
    interleaved = layout == GPTJ
    vec = 16 // itemsize
    k_n = vec if wide else (2 if interleaved else 1)
    k_pairs = k_n // 2 if interleaved else k_n
    k_copy = vec if wide else 1
    half = rotary // 2
    rot_cols = rotary // k_n if interleaved else half // k_n
    copy_cols = (head_dim - rotary) // k_copy
    ucols = rot_cols + copy_cols
    nh_max = 1 if tile_heads < 1 else min(tile_heads, heads)
    nh_max = min(nh_max, MAX_UNITS // ucols)
    nt_max = 1
    if nh_max == heads and tile_tokens > 1:
        nt_max = min(tile_tokens, MAX_UNITS // (heads * ucols))
        if half:
            nt_max = min(nt_max, pairs // half)
    hchunks = (heads - 1) // nh_max + 1
    tiles = ((tokens - 1) // nt_max + 1) * hchunks
    freq_pair = [(r % rot_cols) * k_pairs + r // rot_cols for r in range(half)]  # freqs[r]'s pair
    size = tokens * heads * head_dim
    count = np.zeros(size, np.int64)
    got = np.full((size, 3), -1, np.int64)  # (token, pair, role)

    def put(at, token, pair, role):
        count[at] += 1
        got[at] = (token, pair, role)

    for b in range(grid):
        for tile in range(b, tiles, grid):
            tg, hg = divmod(tile, hchunks)
            first = tg * nt_max
            nt = min(nt_max, tokens - first)
            h0 = hg * nh_max
            nh = min(nh_max, heads - h0)
            base = (first * heads + h0) * head_dim
            rot_units, n_units = nt * nh * rot_cols, nt * nh * ucols
            table = [(first + e // half, freq_pair[e % half]) for e in range(nt * half)]
            assert len(table) <= pairs
            for t in range(block):
                for u0 in range(t, n_units, units * block):
                    for j in range(units):
                        u = u0 + j * block
                        if u < rot_units:
                            row, col = divmod(u, rot_cols)
                            off, tix = base + row * head_dim + col * k_n, row // nh * half + col
                            for k in range(k_pairs):
                                token, pair = table[tix + k * rot_cols]
                                a, b2 = ((off + 2 * k, off + 2 * k + 1) if interleaved
                                         else (off + k, off + k + half))
                                put(a, token, pair, 0)
                                put(b2, token, pair, 1)
                        elif u < n_units:
                            row, col = divmod(u - rot_units, copy_cols)
                            off = base + row * head_dim + rotary + col * k_copy
                            for k in range(k_copy):
                                put(off + k, -1, -1, 2)
    return count, got


def expected_roles(tokens, heads, head_dim, rotary, layout):
    """(token, pair, role) of every element of x, as the model records them."""
    flat = np.arange(tokens * heads * head_dim)
    token, d = flat // (heads * head_dim), flat % head_dim
    half = rotary // 2
    if layout == GPTJ:
        pair, role = d // 2, d % 2
    else:
        pair, role = d % max(half, 1), (d >= half).astype(np.int64)
    rotated = d < rotary
    return np.stack([np.where(rotated, token, -1), np.where(rotated, pair, -1),
                     np.where(rotated, role, 2)], axis=1)


@pytest.mark.parametrize("layout", [NEOX, GPTJ])
@pytest.mark.parametrize("itemsize, wide", [(2, True), (4, True), (2, False), (4, False)])
@pytest.mark.parametrize("tokens, heads, head_dim, rotary, tiles, grid, block", [
    (13, 3, 64, 32, None, 3, 64),        # default tiles; 5 tokens do not divide 13
    (5, 7, 32, 32, (3, 7), 1, 32),       # one block, several passes a tile
    (4, 6, 64, 0, (2, 4), 2, 32),        # no rotation: copy units only; tile_heads < heads
    (3, 5, 128, 64, (9, 2), 4, 64),      # head chunks of 2 of 5 heads (tokens forced to 1)
    (6, 2, 32, 32, (1000, 99), 5, 32),   # both clamped: 99 -> 2 heads, tokens to the table
    (2, 1, 16, 16, (0, 0), 1, 256),      # nonsense tile sizes clamp to (1, 1); idle threads
])
def test_model_writes_every_element_once_with_its_own_angle(layout, itemsize, wide, tokens,
                                                           heads, head_dim, rotary, tiles,
                                                           grid, block):
    vec = 16 // itemsize
    if wide and (head_dim % vec or (rotary if layout == GPTJ else rotary // 2) % vec):
        pytest.skip("not a 16-byte geometry")
    if tiles is None:
        tiles = table_tiles(tokens, heads, head_dim, rotary, itemsize, layout, units=2 * block)[:2]
    pairs = 32 if tiles == (1000, 99) else 1024  # small table: the clamp to pairs / half bites
    count, got = model(tokens, heads, head_dim, rotary, layout, itemsize, *tiles, grid, block,
                       wide=wide, pairs=pairs)
    assert (count == 1).all(), f"written {count.min()}..{count.max()} times"
    np.testing.assert_array_equal(got, expected_roles(tokens, heads, head_dim, rotary, layout))


# -- GPU ---------------------------------------------------------------------------------------------

CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float16): "__half"}


def _launch(expr, x, positions, fields, grid, block, extra=(), offset=0):
    """Launches `expr` on x (placed `offset` elements past a 16-byte boundary) into a
    NaN-poisoned output with a poisoned guard after it; returns the output and the guard."""
    import cupy as cp  # GPU tests only

    batch, seq, heads, head_dim = x.shape
    fn = row_kernel(expr.split("<")[0]).function(CTYPES[x.dtype])
    xbuf = cp.empty(x.size + offset + 1, dtype=x.dtype)
    dx = xbuf[offset:offset + x.size]
    dx[...] = cp.asarray(x.reshape(-1))
    ybuf = cp.full(x.size + offset + 64, np.nan, dtype=x.dtype)
    dy = ybuf[offset:offset + x.size]
    dpos = cp.asarray(positions) if positions is not None else None
    plugin = RoPE(**fields)
    fn((grid,), (block,),
       (dx, dpos if dpos is not None else np.uint64(0), dy, np.int64(batch * seq),
        np.int32(seq), np.int32(heads), np.int32(head_dim),
        np.int32(plugin.rotary_for(head_dim)), np.int32(LAYOUTS[plugin.layout]),
        np.int32(0 if positions is not None else plugin.position_offset),
        np.float32(plugin.theta)) + tuple(np.int32(v) for v in extra))
    cp.cuda.get_current_stream().synchronize()
    return cp.asnumpy(dy).reshape(x.shape), cp.asnumpy(ybuf[offset + x.size:])


def _table(x, positions, fields, tiles, grid, block=BLOCK, offset=0):
    return _launch("rope_table<{T}>", x, positions, fields, grid, block, tiles, offset)


def _rope(x, positions, fields, offset=0):
    return _launch("rope<{T}>", x, positions, fields, 64, BLOCK, (), offset)[0]


def _default_tiles(x, fields):
    batch, seq, heads, head_dim = x.shape
    plugin = RoPE(**fields)
    return table_tiles(batch * seq, heads, head_dim, plugin.rotary_for(head_dim),
                       x.dtype.itemsize, LAYOUTS[plugin.layout])[:2]


# (batch, seq, heads, head_dim, rotary_dim)
GPU_SHAPES = [(2, 33, 8, 128, 0), (1, 1, 3, 64, 64), (3, 7, 11, 80, 48), (2, 9, 5, 40, 24),
              (1, 5, 2, 10, 6), (2, 3, 1, 7, 4), (1, 4, 40, 64, 32), (2, 50, 2, 16, 16)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("layout", ["neox", "gptj"])
@pytest.mark.parametrize("shape", GPU_SHAPES)
@pytest.mark.parametrize("where", ["offset", "positions"])
@pytest.mark.parametrize("offset", [0, 1])  # 1: x and y off 16-byte alignment (element-wise)
def test_gpu_table_matches_reference_and_rope_to_the_bit(dtype, layout, shape, where, offset):
    batch, seq, heads, head_dim, rotary = shape
    rng = np.random.default_rng(head_dim)
    x = rng.standard_normal((batch, seq, heads, head_dim)).astype(dtype)
    positions = None
    fields = dict(rotary_dim=rotary, layout=layout, theta=500000.0, position_offset=0)
    if where == "positions":
        positions = rng.integers(-100, 2_000_000, (batch, seq)).astype(np.int32)
    else:
        fields["position_offset"] = 1_000_003
    want = ref(x, fields, positions)
    old = _rope(x, positions, fields, offset)
    for tiles, grid in [(_default_tiles(x, fields), 64), ((3, heads), 2), ((1, 2), 3), ((7, 1), 1),
                        ((1000, heads), 1)]:
        got, guard = _table(x, positions, fields, tiles, grid, offset=offset)
        what = f"rope_table {shape} {layout} {where} tiles {tiles} grid {grid}"
        assert np.isnan(guard.astype(np.float32)).all(), f"{what}: wrote past the end"
        assert_close(got, want, dtype, what=what)
        np.testing.assert_array_equal(got.view(f"u{x.itemsize}"), old.view(f"u{x.itemsize}"),
                                      err_msg=f"{what}: differs from rope")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("block", [32, 128, 256])
def test_gpu_table_blocks_and_many_tiles(dtype, block):
    # More tiles than blocks (each block several tiles, alternating table buffers), blocks
    # smaller than a tile's units (several passes).
    fields = dict(layout="neox", position_offset=5)
    x = np.random.default_rng(block).standard_normal((2, 300, 8, 128)).astype(dtype)
    want = ref(x, fields)
    for tiles in [_default_tiles(x, fields), (16, 8), (1, 3)]:
        got, _ = _table(x, None, fields, tiles, grid=7, block=block)
        assert_close(got, want, dtype, what=f"block {block} tiles {tiles}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_table_empty_work_writes_nothing(dtype):
    x = np.zeros((0, 4, 8, 128), dtype)
    got, guard = _table(x, None, {}, (8, 8), 4)
    assert got.shape == x.shape and np.isnan(guard.astype(np.float32)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("table", [True, False])
def test_gpu_plugin_launches_the_chosen_kernel(dtype, table):
    """The plugin's own choice through the lifecycle, and each kernel's row asked for by name
    (the launch plan builds), against the reference."""
    import cupy as cp  # GPU tests only

    data_type = trt.DataType.FLOAT if dtype == np.float32 else trt.DataType.HALF
    desc = trt.PluginTensorDesc((2, 9, 4, 64), data_type, trt.TensorFormat.LINEAR)
    fields = dict(rotary_dim=32, layout="gptj", position_offset=7)
    variant = "rope_table" if table else "rope"
    launch = RoPE(**fields).plan([desc], [], cp.cuda.Device().id, variant=variant)
    assert launch.name.startswith(variant + "<")
    x = np.random.default_rng(3).standard_normal((2, 9, 4, 64)).astype(dtype)
    assert_close(run_gpu(x, fields), ref(x, fields), dtype)
    dx, dy = cp.asarray(x), cp.full(x.shape, np.nan, dtype)
    launch(cp.cuda.get_current_stream().ptr, dx.data.ptr, dy.data.ptr)  # no positions input
    cp.cuda.get_current_stream().synchronize()
    assert_close(cp.asnumpy(dy), ref(x, fields), dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("options", [("-DPP_ROPE_TABLE_UNITS=1", "-DPP_ROPE_TABLE_MINB=8"),
                                     ("-DPP_ROPE_TABLE_UNITS=4", "-DPP_ROPE_TABLE_MINB=3"),
                                     ("-DPP_ROPE_TABLE_MINB=0",), ("-DPP_ROPE_TABLE_EARLY=0",),
                                     ("-DPP_ROPE_TABLE_PAIRS=64",)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_table_knobs(options, dtype):
    # The knobs kernel_variants compares (and a table smaller than the tiles asked: the kernel
    # clamps them), on full and partial rotary widths, aligned and not.
    import cupy as cp  # GPU tests only

    fn = row_kernel("rope_table", *options).function(CTYPES[np.dtype(dtype)])
    rng = np.random.default_rng(len(options))
    for shape, fields in [((2, 37, 8, 128), dict(layout="neox", position_offset=3)),
                          ((3, 5, 6, 64), dict(rotary_dim=32, layout="gptj", position_offset=9))]:
        x = rng.standard_normal(shape).astype(dtype)
        plugin = RoPE(**fields)
        want = ref(x, fields)
        for offset in (0, 1):
            old = _rope(x, None, fields, offset)
            buf = cp.empty(x.size + 1, dtype)
            dx, dy = buf[offset:offset + x.size], cp.full(x.size + 1, np.nan, dtype)[offset:]
            dx[...] = cp.asarray(x.reshape(-1))
            for tiles, grid in [(_default_tiles(x, fields), 8), ((16, shape[2]), 3), ((1, 5), 2)]:
                dy.fill(np.nan)
                fn((grid,), (BLOCK,), (dx, np.uint64(0), dy, np.int64(shape[0] * shape[1]),
                                       np.int32(shape[1]), np.int32(shape[2]), np.int32(shape[3]),
                                       np.int32(plugin.rotary_for(shape[3])),
                                       np.int32(LAYOUTS[plugin.layout]),
                                       np.int32(plugin.position_offset), np.float32(plugin.theta),
                                       np.int32(tiles[0]), np.int32(tiles[1])))
                got = cp.asnumpy(dy[:x.size]).reshape(shape)
                what = f"{options} {shape} offset {offset} tiles {tiles}"
                assert_close(got, want, dtype, what=what)
                np.testing.assert_array_equal(got.view(f"u{x.itemsize}"),
                                              old.view(f"u{x.itemsize}"), err_msg=what)
