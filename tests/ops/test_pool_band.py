"""Pool's pool2d_band kernel (5x5 stride 2, column padding 2, rows staged in shared memory): kernel
choice and grid (CPU); on the GPU against the NumPy reference through the plugin and by direct
launches: partial bands and column tiles, every row padding, any grid, its compile-time knobs,
exact INT8 at equal and unequal scales, and the generic fallback (unaligned x, rows that are not
whole 16-byte chunks)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pyplugins.runtime.kernels import Kernel, kernels_dir
from pyplugins.ops import pool as pool_op
from pyplugins.ops.pool import (BAND_KERNEL, BAND_WINDOW, band_blocks, block_size, blocks_needed,
                                kernel_name, output_size)
from pyplugins.testing import assert_close

from .test_pool import data, ref, run_gpu

CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float16): "__half",
          np.dtype(np.int8): "signed char"}
DTYPES = [np.float32, np.float16, np.int8]


def fields5(mode, ph=2, scales=(1.0, 1.0)):
    return dict(mode=mode, kernel=[5, 5], stride=[2, 2], padding=[ph, 2], in_scale=scales[0],
                out_scale=scales[1])


# -- CPU: kernel choice, block, grid, and the constants the kernel and the host share -----------

def test_band_kernel_is_chosen_for_5x5_stride_2_with_whole_chunk_rows():
    w5 = (5, 5, 2, 2, 2, 2)
    for ctype, itemsize in (("float", 4), ("__half", 2), ("signed char", 1)):
        assert kernel_name(w5, ctype, True) == BAND_KERNEL
        assert kernel_name(w5, ctype, False, width=64) == BAND_KERNEL
        assert kernel_name(w5, ctype, True, width=16 // itemsize + 1) == "pool2d_wide"
    assert kernel_name((5, 5, 2, 2, 4, 2), "__half", True, width=8) == BAND_KERNEL  # ph 4
    assert kernel_name((5, 5, 2, 2, 2, 1), "float", True) == "pool2d"  # pw 1: not the band
    assert kernel_name((5, 5, 1, 1, 2, 2), "float", True) == "pool2d"
    assert BAND_WINDOW == (5, 5, 2, 2, 2)
    assert block_size("pool2d_band", 1) == block_size("pool2d_band", 4) == 256


def _define(name):
    text = (kernels_dir() / "pool.cu").read_text()
    return int(re.search(rf"#define {name} (\d+)", text).group(1))


def test_host_constants_match_the_kernel_defaults():
    """The plugin's block and grid rule assume pool.cu's default launch bounds and walk."""
    assert pool_op.BAND_BLOCK == _define("PP_POOL_BAND_THREADS")
    assert pool_op._BAND_ROWS_PER_THREAD == _define("PP_POOL_BAND_RS")


def test_band_blocks_one_walk_per_thread():
    # 64 planes of 256 x 256 float outputs: 256 threads x 2 outputs x 2 rows per block
    assert band_blocks(64 * 256 * 256, 4) == 64 * 256 * 256 // 1024
    assert band_blocks(64 * 256 * 256, 1) == 64 * 256 * 256 // 4096
    assert band_blocks(1, 2) == 1 and band_blocks(0, 2) == 0


def test_int8_full_window_division_is_exact():
    """The kernel's rne(U / 25) = ((U + 12) * 5243) >> 17 for every biased 25-sum U (0..6375)."""
    u = np.arange(0, 25 * 255 + 1)
    q, r = np.divmod(u, 25)
    rne = q + (2 * r > 25)  # 25 is odd: no ties
    assert np.array_equal(((u + 12) * 5243) >> 17, rne)


# -- GPU through the plugin ---------------------------------------------------------------------

#: Rows of whole 16-byte chunks for every type (w a multiple of 16); H odd and even; bands
#: partial (Ho not a multiple of the band's rows) and H smaller than a band; N * C > 1; a row of
#: more than 64 chunks (several column tiles, the last partial).
PLUGIN_SHAPES = [(2, 3, 17, 32), (1, 2, 10, 16), (1, 1, 3, 48), (3, 5, 33, 64), (1, 2, 41, 320),
                 (2, 1, 70, 144), (1, 1, 1, 16), (1, 2, 37, 1040)]


def check_pool5(y, expected, dtype, what):
    if np.dtype(dtype) == np.int8:
        bad = np.flatnonzero(y != expected)
        assert bad.size == 0, (f"{what}: {bad.size} of {y.size} int8 outputs differ, first at "
                               f"{bad[0]}: {y.flat[bad[0]]} != {expected.flat[bad[0]]}")
    else:
        assert_close(y, expected, dtype, what=what)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_band_through_the_plugin(mode, dtype):
    f = fields5(mode)
    for i, shape in enumerate(PLUGIN_SHAPES):
        x = data(shape, dtype, seed=60 + i)
        check_pool5(run_gpu(x, f), ref(x, f), dtype, f"{mode} {shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("scales", [(0.5, 0.125), (0.75, 0.25), (0.25, 0.75)])
def test_gpu_band_int8_unequal_scales_exact(mode, scales):
    f = fields5(mode, scales=scales)
    for i, shape in enumerate(PLUGIN_SHAPES[:5]):
        x = data(shape, np.int8, seed=70 + i)
        check_pool5(run_gpu(x, f), ref(x, f), np.int8, f"{mode} {scales} {shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("ph", [0, 1, 3, 4])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_band_any_row_padding(ph, dtype):
    for mode in ("max", "avg"):
        f = fields5(mode, ph=ph)
        for shape in [(2, 2, 11, 32), (1, 1, 6, 16), (1, 3, 40, 48)]:
            x = data(shape, dtype, seed=ph + len(shape))
            check_pool5(run_gpu(x, f), ref(x, f), dtype, f"{mode} ph {ph} {shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_rows_not_whole_chunks_take_pool2d_wide(dtype):
    """w * itemsize % 16 != 0: the plugin launches pool2d_wide (generic path), still exact."""
    for mode in ("max", "avg"):
        f = fields5(mode)
        x = data((2, 3, 13, 21), dtype, seed=5)
        check_pool5(run_gpu(x, f), ref(x, f), dtype, f"{mode} w=21")


# -- GPU, direct launches -----------------------------------------------------------------------

def launch_pool5(x, f, *, options=(), grid=None, block=256, x_offset=0, y_offset=0, poison=0x5A,
                 expr="pool2d_band<{T}>"):
    """The 5x5 stride 2 kernel `expr` (pool2d_band by default; grid None: the plan's rule) on x
    (NCHW) placed x_offset elements into its buffer, y y_offset elements into a buffer filled
    with the byte `poison` (guards either side); returns y, guards."""
    import cupy as cp
    n, c, h, w = x.shape
    ph = f["padding"][0]
    ho, wo = output_size(h, 5, 2, ph), output_size(w, 5, 2, 2)
    xbuf = cp.zeros(x.size + x_offset, x.dtype)
    xbuf[x_offset:] = cp.asarray(x.ravel())
    ny = n * c * ho * wo
    ybuf = cp.full((ny + y_offset + 32) * x.dtype.itemsize, poison, cp.uint8).view(x.dtype)
    itemsize = x.dtype.itemsize
    if grid is None:
        grid = max(1, blocks_needed(expr.split("<")[0], n * c, ho, wo, w, itemsize, block))
    fn = Kernel("pool.cu", expr, options=options).function(CTYPES[x.dtype])
    fn((grid,), (block,), (xbuf[x_offset:], ybuf[y_offset:], np.int64(n * c), np.int32(h),
                           np.int32(w), np.int32(ho), np.int32(wo), np.int32(5), np.int32(5),
                           np.int32(2), np.int32(2), np.int32(ph), np.int32(2),
                           np.int32(f["mode"] == "avg"), np.float32(f["in_scale"]),
                           np.float32(f["out_scale"])))
    out = cp.asnumpy(ybuf)
    guards = np.concatenate([out[:y_offset], out[y_offset + ny:]]).view(np.uint8)
    return out[y_offset:y_offset + ny].reshape(n, c, ho, wo), guards


def launch_checked(x, f, **kwargs):
    """Two launches with different poison bytes (an output that is never written keeps the
    poison, which differs between them), both equal to the reference; guards untouched."""
    expected = ref(x, f)
    for poison in (0x5A, 0xA5):
        y, guards = launch_pool5(x, f, poison=poison, **kwargs)
        check_pool5(y, expected, x.dtype, f"{f['mode']} {x.shape} {kwargs}")
        assert (guards == poison).all(), f"wrote outside y: {kwargs}"


#: Several tiles per block at small grids (the two-stage loop), partial bands and column tiles.
LAUNCH_SHAPES = [(3, 5, 33, 64), (2, 2, 70, 336), (1, 1, 2, 16)]


@pytest.mark.gpu
@pytest.mark.parametrize("grid", [1, 3, 1000])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_band_any_grid(grid, dtype):
    for mode in ("max", "avg"):
        for i, shape in enumerate(LAUNCH_SHAPES):
            launch_checked(data(shape, dtype, seed=80 + i), fields5(mode), grid=grid)


@pytest.mark.gpu
@pytest.mark.parametrize("block", [32, 96, 128])
def test_gpu_band_smaller_blocks(block):
    for dtype in DTYPES:
        launch_checked(data((2, 3, 37, 64), dtype, seed=block), fields5("avg"), block=block)


@pytest.mark.gpu
@pytest.mark.parametrize("options", [
    ("-DPP_POOL_BAND_STAGES=1",), ("-DPP_POOL_BAND_ASYNC=0",), ("-DPP_POOL_BAND_RS=1",),
    ("-DPP_POOL_BAND_RS=4",), ("-DPP_POOL_BAND_TC=32",), ("-DPP_POOL_BAND_CHUNKS=640",),
    ("-DPP_POOL_BAND_RMAX=2",), ("-DPP_POOL_STAGED=0",)],
    ids=lambda o: " ".join(o))
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_band_knobs(options, dtype):
    """Every tuning knob the benchmark variants sweep still gives the reference."""
    for mode in ("max", "avg"):
        for i, shape in enumerate(LAUNCH_SHAPES):
            x = data(shape, dtype, seed=90 + i)
            launch_checked(x, fields5(mode), options=options, grid=7)


@pytest.mark.gpu
@pytest.mark.parametrize("x_offset, y_offset", [(1, 0), (0, 1), (3, 5)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_band_unaligned_pointers(x_offset, y_offset, dtype):
    """x not 16-byte aligned: the generic fallback; y not 8-byte aligned: element stores."""
    for mode in ("max", "avg"):
        x = data((2, 3, 21, 32), dtype, seed=x_offset + 2 * y_offset)
        launch_checked(x, fields5(mode), x_offset=x_offset, y_offset=y_offset)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_band_kernel_falls_back_for_other_rows_and_windows(dtype):
    """pool2d_band launched on rows that are not whole chunks (generic path) is still exact."""
    for mode in ("max", "avg"):
        launch_checked(data((2, 2, 15, 18), dtype, seed=3), fields5(mode))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("scales", [(1.0, 1.0), (0.75, 0.25), (0.5, 0.125)])
def test_gpu_band_int8_extremes_and_ties(mode, scales):
    """All -128 and all 127 windows (the least and largest 16-bit lane sums), values that make
    clipped windows' sums ties of sum / count (counts 20, 16, 12 are even), exact."""
    rng = np.random.default_rng(9)
    x = rng.choice(np.array([-128, -127, -1, 0, 1, 2, 3, 126, 127], np.int8), size=(3, 3, 12, 48))
    x[0, 0] = -128
    x[0, 1] = 127
    x[1, 2, :, :16] = 127
    x[1, 2, :, 16:] = -128
    x[2, 0] = rng.choice(np.array([1, 3], np.int8), size=(12, 48))  # odd sums: many x.5 means
    f = fields5(mode, scales=scales)
    launch_checked(x, f)  # (not through the emulator: its INT8 poison -91 can be a result here)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_gpu_band_equals_the_old_path_bit_for_bit_where_exact(mode):
    """Float max and INT8 are exact, so pool2d_band and pool2d_wide agree to the bit."""
    for dtype in (np.float32, np.float16, np.int8) if mode == "max" else (np.int8,):
        x = data((2, 4, 45, 128), dtype, seed=11)
        new, _ = launch_pool5(x, fields5(mode))
        old, _ = launch_pool5(x, fields5(mode), expr="pool2d_wide<{T}>", block=128)
        assert np.array_equal(new.view(np.uint8), old.view(np.uint8)), f"{mode} {dtype}"
