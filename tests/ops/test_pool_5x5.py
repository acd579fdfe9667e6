"""Pool's 5x5 stride 2 windows (column padding 2), which take pool2d_cols on whole-chunk rows
and pool2d_wide elsewhere: the choice and the constants the kernel gets (CPU); on the GPU
against the NumPy reference through the plugin (every type, row padding, INT8 scale, partial
segments and groups) and, by direct launches of a table row, pool2d_cols against pool2d_wide
bit for bit where both are exact. (pool2d_band, which staged bands of rows in shared memory,
lost to pool2d_cols and was removed: docs/ops/pool.md.)"""

from __future__ import annotations

import numpy as np
import pytest

from pyplugins.ops.pool import output_size
from pyplugins.ops.pool import (COLS_BLOCK, COLS_SEGMENT_ROWS, DEFINES, VARIANTS,
                                         OUTPUTS_PER_THREAD, PoolFacts)
from pyplugins.runtime.tactics import choose, find, with_options
from pyplugins.runtime.kernels import Kernel, instantiations
from pyplugins.testing import assert_close

from .test_pool import data, ref, run_gpu

CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float16): "__half",
          np.dtype(np.int8): "signed char"}
DTYPES = [np.float32, np.float16, np.int8]
W5 = (5, 5, 2, 2, 2, 2)


def fields5(mode, ph=2, scales=(1.0, 1.0)):
    return dict(mode=mode, kernel=[5, 5], stride=[2, 2], padding=[ph, 2], in_scale=scales[0],
                out_scale=scales[1])


def pool_row(window, w, itemsize, variant=None, scales=(1.0, 1.0)):
    """The name of the row of Pool's table that launches ``window`` on rows of ``w``."""
    ho = output_size(64, window[0], window[2], window[4])
    facts = PoolFacts(window, 2, 64, w, ho, output_size(w, window[1], window[3], window[5]),
                      itemsize, 0, *scales)
    return choose(VARIANTS, facts, variant=variant).name


# -- CPU: the choice, and the constants the kernel and the host share ---------------------------

def test_5x5_stride_2_with_whole_chunk_rows_takes_the_column_kernel():
    for itemsize in (4, 2, 1):
        assert pool_row(W5, 64, itemsize) == "pool2d_cols"
        assert pool_row(W5, 64, itemsize, scales=(1.0, 0.5)) == "pool2d_cols"
        assert pool_row(W5, 16 // itemsize + 1, itemsize) == "pool2d_wide"  # not whole chunks
    assert pool_row((5, 5, 2, 2, 4, 2), 8, 2) == "pool2d_cols"  # ph 4
    assert pool_row((5, 5, 2, 2, 2, 1), 64, 4) == "pool2d"  # pw 1: not the column path
    assert pool_row((5, 5, 1, 1, 2, 2), 64, 4) == "pool2d"
    assert "pool2d_band" not in {row.name for row in VARIANTS}
    assert not any(e.startswith("pool2d_band<") for e in instantiations("pool.cu"))


def test_every_kernel_gets_the_hosts_constants():
    assert DEFINES == {"PP_POOL_OUTPUTS": OUTPUTS_PER_THREAD, "PP_POOL_COLS_S": COLS_SEGMENT_ROWS,
                       "PP_POOL_COLS_THREADS": COLS_BLOCK}
    for row in VARIANTS:
        assert row.kernel.options[:3] == tuple(f"-D{k}={v}" for k, v in DEFINES.items())
    assert find(VARIANTS, "pool2d_cols").block == COLS_BLOCK and COLS_BLOCK % 32 == 0


def test_int8_full_window_division_is_exact():
    """The kernel's rne(U / 25) = ((U + 12) * 5243) >> 17 for every biased 25-sum U (0..6375)."""
    u = np.arange(0, 25 * 255 + 1)
    q, r = np.divmod(u, 25)
    rne = q + (2 * r > 25)  # 25 is odd: no ties
    assert np.array_equal(((u + 12) * 5243) >> 17, rne)


# -- GPU through the plugin ---------------------------------------------------------------------

#: Rows of whole 16-byte chunks for every type (w a multiple of 16); H odd and even; segments
#: partial and H smaller than a segment; N * C > 1; rows of more than one column group (the
#: last partial).
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
def test_gpu_5x5_through_the_plugin(mode, dtype):
    f = fields5(mode)
    for i, shape in enumerate(PLUGIN_SHAPES):
        x = data(shape, dtype, seed=60 + i)
        check_pool5(run_gpu(x, f), ref(x, f), dtype, f"{mode} {shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("scales", [(0.5, 0.125), (0.75, 0.25), (0.25, 0.75)])
def test_gpu_5x5_int8_unequal_scales_exact(mode, scales):
    f = fields5(mode, scales=scales)
    for i, shape in enumerate(PLUGIN_SHAPES[:5]):
        x = data(shape, np.int8, seed=70 + i)
        check_pool5(run_gpu(x, f), ref(x, f), np.int8, f"{mode} {scales} {shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("ph", [0, 1, 3, 4])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_5x5_any_row_padding(ph, dtype):
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
                 variant="pool2d_cols"):
    """The 5x5 stride 2 launch of Pool's table row ``variant`` (its kernel with ``options`` over
    its own; grid None: the full grid of its rule) on x (NCHW) placed x_offset elements into its
    buffer, y y_offset elements into a buffer filled with the byte `poison` (guards either
    side); returns y, guards."""
    import cupy as cp
    n, c, h, w = x.shape
    ph = f["padding"][0]
    ho, wo = output_size(h, 5, 2, ph), output_size(w, 5, 2, 2)
    xbuf = cp.zeros(x.size + x_offset, x.dtype)
    xbuf[x_offset:] = cp.asarray(x.ravel())
    ny = n * c * ho * wo
    ybuf = cp.full((ny + y_offset + 32) * x.dtype.itemsize, poison, cp.uint8).view(x.dtype)
    row = find(VARIANTS, variant)
    facts = PoolFacts((5, 5, 2, 2, ph, 2), n * c, h, w, ho, wo, x.dtype.itemsize,
                      int(f["mode"] == "avg"), f["in_scale"], f["out_scale"])
    if grid is None:
        grid = max(1, row.blocks(facts, block))
    kernel = Kernel("pool.cu", row.kernel.expression,
                    options=with_options(row.kernel.options, options))
    fn = kernel.function(CTYPES[x.dtype])
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


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_gpu_cols_equals_the_wide_path_bit_for_bit_where_exact(mode):
    """Float max and INT8 are exact, so pool2d_cols and pool2d_wide agree to the bit."""
    for dtype in (np.float32, np.float16, np.int8) if mode == "max" else (np.int8,):
        x = data((2, 4, 45, 128), dtype, seed=11)
        new, _ = launch_pool5(x, fields5(mode))
        old, _ = launch_pool5(x, fields5(mode), variant="pool2d_wide", block=128)
        assert np.array_equal(new.view(np.uint8), old.view(np.uint8)), f"{mode} {dtype}"
