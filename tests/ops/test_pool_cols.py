"""Pool's pool2d_cols kernel (5x5 stride 2, column padding 2; a warp walks down 32 16-byte chunks,
no shared memory): the host's kernel choice and grid rule (CPU); on the GPU, bit-exact against the
NumPy reference for every type, mode, row padding, INT8 scale, column-group shape (1 to 100
chunks a row: lane-edge halos, ragged groups), height, grid and block, its knobs, unaligned y
and the generic fallback, and through the plugin on both of its rows."""

from __future__ import annotations


import numpy as np
import pytest

from pyplugins.runtime import tactics as variants
from pyplugins.ops.pool import output_size
from pyplugins.ops.pool import COLS_SEGMENT_ROWS, VARIANTS, PoolFacts, cols_blocks
from pyplugins.runtime.kernels import kernels_dir

from .test_pool import data, ref, run_gpu
from .test_pool_5x5 import DTYPES, W5, check_pool5, fields5, launch_checked, pool_row

COLS = "pool2d_cols"


# -- CPU: kernel choice and grid rule ------------------------------------------------------------

def test_cols_rows_take_5x5_stride_2_whole_chunk_rows():
    for itemsize in (4, 2, 1):
        assert pool_row(W5, 64, itemsize).startswith("pool2d_cols")
        assert pool_row(W5, 64, itemsize, scales=(1.0, 0.5)).startswith("pool2d_cols")
    assert pool_row(W5, 13, 4) == "pool2d_wide"  # not whole chunks
    assert pool_row((2, 2, 2, 2, 0, 0), 64, 1) == "pool2d_i8"
    # asked by name, it runs any window (its generic fallback)
    assert pool_row((3, 3, 1, 1, 1, 1), 13, 4, variant=COLS) == COLS


def test_cols_grid_gives_every_warp_one_item_of_the_segment_rows():
    # float 512 wide: 128 chunks = 4 groups; 256 output rows = 64 segments of 4; 8 warps a block
    assert cols_blocks(64, 256, 512, 4) == 64 * 4 * 64 // 8
    # int8 512 wide: 32 chunks = 1 group; 128-thread blocks hold 4 warps
    assert cols_blocks(256, 256, 512, 1, 128) == 256 * 64 // 4
    # 33 chunks = 2 groups; 9 rows = 3 segments; 6 warps in blocks of 256 threads: 1 block
    assert cols_blocks(1, 9, 33 * 4, 4) == 1
    assert cols_blocks(3, 9, 33 * 4, 4, 32) == 3 * 2 * 3
    assert cols_blocks(0, 9, 64, 4) == 0


def test_each_rows_blocks_follow_its_kernel():
    nc, ho, wo, w = 8, 64, 64, 128
    facts = PoolFacts(W5, nc, 2 * ho + 1, w, ho, wo, 2, 0, 1.0, 1.0)
    assert variants.find(VARIANTS, "pool2d_cols").blocks(facts, 256) == cols_blocks(nc, ho, w, 2, 256)
    assert variants.find(VARIANTS, "pool2d_wide").blocks(facts, 128) == -(-nc * ho * wo // 512)
    assert COLS_SEGMENT_ROWS == 4


def _prmt(a, b, s):
    """PTX prmt.b32 (default mode): byte i of the result is byte (nibble i of s) & 7 of b:a, or
    that byte's sign replicated when the nibble's bit 3 is set."""
    src = (int(a) | (int(b) << 32)).to_bytes(8, "little")
    out = 0
    for i in range(4):
        n = (s >> (4 * i)) & 0xF
        byte = src[n & 7]
        out |= ((0xFF if byte & 0x80 else 0) if n & 8 else byte) << (8 * i)
    return out


def test_int8_byte_splits_equal_the_masked_form():
    """INT8 average: prmt splits of the biased word equal the mask-and-shift form they replaced,
    and the halo words' splits give columns -2, -1 (l) and 16 (r) as 16-bit lanes."""
    text = (kernels_dir() / "pool.cu").read_text()
    assert "prmt(b, 0u, 0x4240u)" in text and "prmt(b, 0u, 0x4341u)" in text
    assert "prmt(in.l.y, 0u, 0x4342u) ^ 0x00800080u" in text
    rng = np.random.default_rng(0)
    words = [int(v) for v in rng.integers(0, 2**32, size=2000, dtype=np.uint64)]
    words += [0x80808080, 0x7F7F7F7F, 0, 0xFFFFFFFF, 0x00FF80FF]
    for w in words:
        b = w ^ 0x80808080
        assert _prmt(b, 0, 0x4240) == (w & 0x00FF00FF) ^ 0x00800080
        assert _prmt(b, 0, 0x4341) == ((w >> 8) & 0x00FF00FF) ^ 0x00800080
        # l: bytes 2, 3 (columns -2, -1) biased, in the low / high lane
        assert _prmt(w, 0, 0x4342) ^ 0x00800080 == ((((w >> 24) ^ 0x80) << 16) | (((w >> 16) & 0xFF) ^ 0x80))
        # max: the same bytes sign-extended
        lo, hi = np.int8(np.uint8((w >> 16) & 0xFF)), np.int8(np.uint8(w >> 24))
        assert _prmt(w, 0, 0xB3A2) == (int(np.uint16(np.int16(lo))) | int(np.uint16(np.int16(hi))) << 16)


def test_int8_average_by_multiply_is_exact_for_every_count_and_sum():
    """pool2d_cols' INT8 average at a unit ratio divides by multiplying: for every count 1..25
    (rows x 3, 4 or 5 columns) and every sum of count int8 values, the top byte of
    u * K + C (mod 2^32), u = sum + 128 count, with the tie step for even counts, is the output
    byte rne(sum / count). Mirrors cols_avg_consts and BandRow<signed char>::emit."""
    text = (kernels_dir() / "pool.cu").read_text()
    assert "k = (0x1000000u + n - 1u) / n;" in text
    assert "c = (n / 2u) * k + 0x80000000u;" in text
    assert "(t[o] & 0x01ffe000u) == 0x01000000u) t[o] -= 0x01000000u;" in text
    for count in range(1, 26):
        k = (0x1000000 + count - 1) // count
        c = ((count // 2) * k + 0x80000000) % 2**32
        s = np.arange(-128 * count, 127 * count + 1, dtype=np.int64)
        u = s + 128 * count
        t = (u * k + c) % 2**32
        if count % 2 == 0:
            t = np.where((t & 0x01FFE000) == 0x01000000, t - 0x01000000, t)
        got = (t >> 24).astype(np.uint8).view(np.int8).astype(np.int64)
        # float64 holds a tie s / count (k + 1/2) exactly and puts any other quotient at least
        # 1 / (2 count) from a tie, so np.rint (half to even) is exact here
        want = np.rint(s / count).astype(np.int64)
        assert np.array_equal(got, want), count


# -- GPU, direct launches -------------------------------------------------------------------------

#: Chunks per row: one lane; two; one short of a group; one group; one past it (a second group of
#: one lane: lane-edge halos both ways); two groups; four groups and a ragged fifth.
CHUNKS = [1, 2, 31, 32, 33, 64, 100]


def _shapes(itemsize, ph):
    v = 16 // itemsize
    for k in CHUNKS:
        for h in list(range(1, 10)) + [70]:
            if output_size(h, 5, 2, ph) >= 1:
                yield (2, 1, h, k * v) if h < 10 else (1, 3, h, k * v)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_cols_reference_every_row_padding_and_group_shape(mode, dtype):
    for ph in range(5):
        f = fields5(mode, ph=ph)
        for i, shape in enumerate(_shapes(np.dtype(dtype).itemsize, ph)):
            launch_checked(data(shape, dtype, seed=1000 * ph + i), f, variant=COLS)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("scales", [(1.0, 1.0), (0.5, 0.125), (0.75, 0.25), (0.25, 0.75)])
def test_gpu_cols_int8_scales_exact(mode, scales):
    for ph in (0, 2, 3):
        f = fields5(mode, ph=ph, scales=scales)
        for i, k in enumerate((1, 33, 64)):
            launch_checked(data((2, 2, 23, 16 * k), np.int8, seed=i + 7 * ph), f, variant=COLS)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("scales", [(1.0, 1.0), (0.75, 0.25)])
def test_gpu_cols_int8_extremes_and_ties(mode, scales):
    """All -128 / all 127 windows, and odd values whose clipped windows' means tie."""
    rng = np.random.default_rng(19)
    x = rng.choice(np.array([-128, -127, -1, 0, 1, 3, 126, 127], np.int8), size=(3, 3, 12, 528))
    x[0, 0] = -128
    x[0, 1] = 127
    x[1, 2, :, :16] = 127
    x[1, 2, :, 16:] = -128
    x[2, 0] = rng.choice(np.array([1, 3], np.int8), size=(12, 528))
    launch_checked(x, fields5(mode, scales=scales), variant=COLS)


#: More items than warps at small grids (grid-stride), partial segments, ragged groups.
GRID_SHAPES = [(3, 5, 33, 528), (2, 2, 70, 1040), (1, 1, 2, 16)]


@pytest.mark.gpu
@pytest.mark.parametrize("grid", [1, 3, 1000])
@pytest.mark.parametrize("block", [32, 128, 256])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_cols_any_grid_and_block(grid, block, dtype):
    for mode in ("max", "avg"):
        for i, shape in enumerate(GRID_SHAPES):
            launch_checked(data(shape, dtype, seed=30 + i), fields5(mode), variant=COLS, grid=grid,
                           block=block)


@pytest.mark.gpu
@pytest.mark.parametrize("options", [
    ("-DPP_POOL_COLS_AHEAD=2",), ("-DPP_POOL_COLS_AHEAD=2", "-DPP_POOL_COLS_MINB=3"),
    ("-DPP_POOL_COLS_MINB=3",), ("-DPP_POOL_COLS_S=1",), ("-DPP_POOL_COLS_S=3",),
    ("-DPP_POOL_COLS_S=8",), ("-DPP_POOL_COLS_S=64",)],
    ids=lambda o: " ".join(o))
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_cols_knobs(options, dtype):
    """Every knob the benchmark variants sweep (odd segments, prefetch past a segment's end)."""
    for mode in ("max", "avg"):
        for grid in (2, None):
            for i, shape in enumerate(GRID_SHAPES):
                launch_checked(data(shape, dtype, seed=50 + i), fields5(mode, ph=1 + i),
                               variant=COLS, options=options, grid=grid)


@pytest.mark.gpu
@pytest.mark.parametrize("x_offset, y_offset", [(0, 1), (0, 3), (1, 0), (3, 5)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_cols_unaligned_pointers(x_offset, y_offset, dtype):
    """x not 16-byte aligned or y not 8-byte aligned: the generic fallback."""
    for mode in ("max", "avg"):
        x = data((2, 3, 21, 33 * 16 // np.dtype(dtype).itemsize), dtype, seed=x_offset + y_offset)
        launch_checked(x, fields5(mode), variant=COLS, x_offset=x_offset, y_offset=y_offset)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_cols_falls_back_for_other_rows_and_blocks(dtype):
    """Rows that are not whole chunks, and a block that is not whole warps: the generic path."""
    for mode in ("max", "avg"):
        launch_checked(data((2, 2, 15, 18), dtype, seed=3), fields5(mode), variant=COLS)
        launch_checked(data((2, 2, 15, 64), dtype, seed=4), fields5(mode), variant=COLS, block=48)


@pytest.mark.parametrize("trt_type, itemsize", [("FLOAT", 4), ("HALF", 2), ("INT8", 1)])
def test_plan_launches_one_resident_wave_of_segment_items(trt_type, itemsize, monkeypatch):
    """Every element size launches pool2d_cols, compiled with its segment rows, on the blocks
    cols_blocks counts capped at one resident wave."""
    import pyplugins.trt as trt
    from pyplugins.ops.pool import Pool

    monkeypatch.setitem(vars(Pool.pool2d_cols), "function", lambda ctype, device=None: 1111)
    assert f"-DPP_POOL_COLS_S={COLS_SEGMENT_ROWS}" in Pool.pool2d_cols.options
    dt = getattr(trt.DataType, trt_type)
    desc = trt.PluginTensorDesc((1, 64, 512, 512), dt, trt.TensorFormat.LINEAR)
    plugin = Pool(**fields5("max"))
    plugin.scales = (1.0, 1.0)
    for resident in (10, 10**6):
        monkeypatch.setattr(variants, "resident_blocks", lambda fn, block, device=0, r=resident: r)
        launch = plugin.plan([desc], [], 0)
        assert launch.name.startswith("pool2d_cols<") and launch.function_ptr == 1111
        assert launch.grid == (min(resident, cols_blocks(64, 256, 512, itemsize)), 1, 1)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_cols_through_the_plugin_and_the_row(mode, dtype):
    """The plugin plans pool2d_cols and matches; the row launched directly matches too."""
    f = fields5(mode)
    for i, shape in enumerate([(2, 3, 17, 32), (1, 2, 41, 320), (1, 1, 1, 16), (1, 2, 37, 1040)]):
        x = data(shape, dtype, seed=90 + i)
        check_pool5(run_gpu(x, f), ref(x, f), dtype, f"{mode} {shape}")
        launch_checked(x, f, variant="pool2d_cols")
