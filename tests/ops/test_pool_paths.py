"""Pool's vector paths (both kernels, every window that has one) and INT8 requantization, on the
GPU against the NumPy reference: shapes whose rows are whole 16-byte chunks (so the vector path
runs), odd heights, clipped windows on every border, and exact INT8 at any scale ratio."""

from __future__ import annotations

import numpy as np
import pytest

from pyplugins.runtime.kernels import Kernel
from pyplugins.ops.pool import Pool, output_size
from pyplugins.ops.pool import VARIANTS, WIDE_WINDOWS
from pyplugins.runtime.tactics import find, with_options
from pyplugins.testing import assert_close

from .test_pool import data, ref, run_gpu
from .test_pool_5x5 import pool_row


def row_kernel(name, *options):
    """The kernel of Pool's table row ``name`` with ``options`` over its own."""
    kernel = find(VARIANTS, name).kernel
    return Kernel("pool.cu", kernel.expression, options=with_options(kernel.options, options))

#: (kernel, stride, padding) of every window with a vector path, square, as pool.cu lists them.
VECTOR_WINDOWS = [(2, 2, 0), (3, 2, 1), (3, 1, 1), (5, 2, 2), (3, 2, 0), (2, 1, 0)]
#: Rows of 16, 32 and 48 elements: whole 16-byte chunks for float, half and int8 alike.
VECTOR_SHAPES = [(2, 3, 17, 32), (1, 2, 9, 16), (1, 4, 6, 48), (1, 1, 5, 16)]


def window_fields(mode, k, s, p, ph=None):
    return dict(mode=mode, kernel=[k, k], stride=[s, s], padding=[p if ph is None else ph, p])


def test_wide_windows_are_vector_windows():
    assert {(k, k, s, s, p) for k, s, p in VECTOR_WINDOWS[3:]} == WIDE_WINDOWS


@pytest.mark.gpu
@pytest.mark.parametrize("window", VECTOR_WINDOWS)
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_vector_windows_float(window, mode, dtype):
    fields = window_fields(mode, *window)
    for i, shape in enumerate(VECTOR_SHAPES):
        x = data(shape, dtype, seed=10 + i)
        assert_close(run_gpu(x, fields), ref(x, fields), dtype, what=f"{fields} {shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("window", VECTOR_WINDOWS)
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("scales", [(1.0, 1.0), (0.5, 0.125), (0.75, 0.25), (0.25, 0.75)])
def test_gpu_vector_windows_int8_exact(window, mode, scales):
    """INT8 equals the reference exactly at every ratio (1, a power of two, 3 and 1/3): the
    kernel requantizes in double (integers for ratio 1) as the reference does."""
    fields = dict(window_fields(mode, *window), in_scale=scales[0], out_scale=scales[1])
    for i, shape in enumerate(VECTOR_SHAPES):
        x = data(shape, np.int8, seed=20 + i)
        y, expected = run_gpu(x, fields), ref(x, fields, *scales)
        bad = np.flatnonzero(y != expected)
        assert bad.size == 0, (f"{fields} {shape}: {bad.size} outputs differ, first "
                               f"{y.flat[bad[0]]} != {expected.flat[bad[0]]}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_gpu_vector_windows_with_other_row_padding(dtype):
    """ph differs from pw (the vector paths take any ph): 5x5 with padding [1, 2], 3x3/1 [0, 1]."""
    for k, s, p, ph in [(5, 2, 2, 1), (5, 2, 2, 0), (3, 1, 1, 0), (3, 2, 1, 2)]:
        fields = dict(window_fields("avg", k, s, p, ph), in_scale=1.0, out_scale=1.0)
        x = data((2, 2, 11, 32), dtype, seed=k + ph)
        assert_close(run_gpu(x, fields), ref(x, fields), dtype, what=str(fields))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_gpu_int8_generic_path_exact_at_a_non_binary_ratio(mode):
    """The generic path (rows not whole 16-byte chunks, an unlisted window) requantizes exactly
    too."""
    fields = dict(mode=mode, kernel=[5, 4], stride=[1, 3], padding=[2, 1], in_scale=0.75,
                  out_scale=0.25)
    x = data((2, 4, 19, 21), np.int8, seed=3)
    assert np.array_equal(run_gpu(x, fields), ref(x, fields, 0.75, 0.25))


def test_reference_int8_rounds_half_to_even():
    """What the kernel must match: sums 2, 6, -2, -6 over 4 give 0.5, 1.5, -0.5, -1.5 -> 0, 2, -0,
    -2."""
    x = np.array([[1, 1, 3, 3, -1, -1, -3, -3], [0, 0, 0, 0, 0, 0, 0, 0]], np.int8)
    y = Pool(mode="avg", kernel=[2, 2], in_scale=1.0, out_scale=1.0).reference(x[None, None])[0]
    assert y.ravel().tolist() == [0, 2, 0, -2]


# -- pool2d_i8: INT8 2x2 stride 2 padding 0 at a unit ratio, byte-SIMD ---------------------------------

def test_int8_2x2_at_unit_ratio_takes_pool2d_i8():
    """Only INT8 2x2/2 padding 0 with equal scales (float32 equality, as the kernel tests it)
    goes to pool2d_i8; any other ratio, window or type keeps pool2d / pool2d_wide."""
    w22 = (2, 2, 2, 2, 0, 0)
    assert pool_row(w22, 64, 1) == "pool2d_i8"
    assert pool_row(w22, 64, 1, scales=(1.0, 0.5)) == "pool2d_b128"  # pool2d on 128 threads
    assert pool_row(w22, 64, 4) == pool_row(w22, 64, 2) == "pool2d"
    assert pool_row((2, 2, 2, 2, 1, 0), 64, 1) == "pool2d_b128"
    assert pool_row((5, 5, 2, 2, 2, 2), 64, 1) == "pool2d_cols"
    blocks = {row.name: row.block for row in VARIANTS}
    assert blocks["pool2d_i8"] == blocks["pool2d_wide"] == blocks["pool2d_b128"] == 128
    assert blocks["pool2d"] == 256
    assert find(VARIANTS, "pool2d_b128").kernel.expression == "pool2d<{T}>"


#: Whole 16-byte rows (the SIMD path), odd heights (last row unused), a single output row; and
#: rows that are not (the kernel's generic fallback).
I8_SHAPES = [(2, 3, 17, 32), (1, 2, 9, 16), (1, 4, 6, 48), (3, 1, 2, 64), (1, 1, 3, 16),
             (2, 3, 9, 24), (1, 2, 5, 18), (1, 1, 4, 2)]


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("shape", I8_SHAPES)
def test_gpu_int8_2x2_unit_ratio_exact(mode, shape):
    fields = dict(mode=mode, kernel=[2, 2], in_scale=0.25, out_scale=0.25)
    x = data(shape, np.int8, seed=sum(shape))
    y, expected = run_gpu(x, fields), ref(x, fields)
    bad = np.flatnonzero(y != expected)
    assert bad.size == 0, (f"{mode} {shape}: {bad.size} outputs differ, first "
                           f"{y.flat[bad[0]]} != {expected.flat[bad[0]]}")


def _ties(shape, seed):
    """INT8 whose 2x2 sums are often 2 mod 4 (exact ties of sum / 4) and reach both extremes."""
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array([-128, -127, -1, 0, 1, 2, 3, 126, 127], np.int8), size=shape)
    x[..., 0, :4] = [1, 1, 3, 3]     # sums 2 + row 1
    x[..., 0, 4:8] = [-128] * 4
    x[..., 1, 4:8] = [-128] * 4      # the minimum, -128 exactly
    x[..., 0, 8:12] = [127] * 4
    x[..., 1, 8:12] = [127] * 4      # the maximum
    return x


def _launch_i8(x, mode, x_offset=0, y_offset=0, nc=None):
    """pool2d_i8 on x placed x_offset bytes into its buffer, y y_offset bytes into a poisoned
    one (with a guard after it); returns y and the guard bytes."""
    import cupy as cp
    n, c, h, w = x.shape
    ho, wo = output_size(h, 2, 2, 0), output_size(w, 2, 2, 0)
    xbuf = cp.zeros(x.size + x_offset + 16, cp.int8)
    xbuf[x_offset:x_offset + x.size] = cp.asarray(x.ravel())
    ny = n * c * ho * wo
    ybuf = cp.full(ny + y_offset + 64, 0x5A, cp.int8)
    fn = row_kernel("pool2d_i8").function("signed char")
    fn((7,), (128,), (xbuf[x_offset:], ybuf[y_offset:], np.int64(n * c if nc is None else nc),
                      np.int32(h), np.int32(w), np.int32(ho), np.int32(wo), np.int32(2),
                      np.int32(2), np.int32(2), np.int32(2), np.int32(0), np.int32(0),
                      np.int32(mode == "avg"), np.float32(1.0), np.float32(1.0)))
    out = cp.asnumpy(ybuf)
    return out[y_offset:y_offset + ny].reshape(n, c, ho, wo), out[:y_offset], out[y_offset + ny:]


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("x_offset, y_offset", [(0, 0), (0, 1), (0, 4), (0, 3), (1, 0), (5, 8)])
def test_gpu_pool2d_i8_ties_and_unaligned_pointers(mode, x_offset, y_offset):
    """Ties round half to even and the extremes stay exact; an unaligned y stores byte by byte,
    an unaligned x takes the generic path; nothing outside y is written."""
    x = _ties((2, 3, 10, 64), seed=7 + x_offset + y_offset)
    fields = dict(mode=mode, kernel=[2, 2], in_scale=1.0, out_scale=1.0)
    y, before, after = _launch_i8(x, mode, x_offset, y_offset)
    expected = ref(x, fields)
    bad = np.flatnonzero(y != expected)
    assert bad.size == 0, f"{bad.size} differ, first {y.flat[bad[0]]} != {expected.flat[bad[0]]}"
    assert (before == 0x5A).all() and (after == 0x5A).all()


@pytest.mark.gpu
def test_gpu_pool2d_i8_empty_writes_nothing():
    x = _ties((1, 2, 4, 32), seed=1)
    y, _, after = _launch_i8(x, "avg", nc=0)
    assert (y == 0x5A).all() and (after == 0x5A).all()


# -- 5x5 stride 2: rows reduced on packed words (PP_POOL_PACKED, half and INT8) -----------------

def _launch_wide(x, fields, options=(), scales=(1.0, 1.0)):
    """pool2d_wide on x (NCHW) with compile options; returns y."""
    import cupy as cp
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw) = fields["kernel"], fields["stride"], fields["padding"]
    ho, wo = output_size(h, kh, sh, ph), output_size(w, kw, sw, pw)
    ctype = {np.dtype(np.float16): "__half", np.dtype(np.int8): "signed char"}[x.dtype]
    y = cp.full((n, c, ho, wo), 0x5A, cp.int8).view(x.dtype) if x.dtype == np.int8 else \
        cp.full((n, c, ho, wo), np.nan, x.dtype)
    fn = row_kernel("pool2d_wide", *options).function(ctype)
    fn((5,), (128,), (cp.asarray(x), y, np.int64(n * c), np.int32(h), np.int32(w), np.int32(ho),
                      np.int32(wo), np.int32(kh), np.int32(kw), np.int32(sh), np.int32(sw),
                      np.int32(ph), np.int32(pw), np.int32(fields["mode"] == "avg"),
                      np.float32(scales[0]), np.float32(scales[1])))
    return cp.asnumpy(y)


#: Rows of whole 16-byte chunks, heights odd and even (the last unit's second output row
#: unused), one output row; more units than the 5 x 128 threads (the grid-stride loop).
PACKED_SHAPES = [(2, 3, 17, 32), (1, 2, 10, 16), (1, 1, 3, 48), (3, 5, 33, 64)]


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("dtype", [np.float16, np.int8])
def test_gpu_5x5_packed_rows_equal_the_unpacked_path(mode, dtype):
    """The packed reduction is the same function as widening every element: bit for bit (max is
    exact, INT8 sums are exact integers, half sums are the same float additions in order)."""
    fields = window_fields(mode, 5, 2, 2)
    if dtype == np.int8:  # the INT8 reference needs the scales the launch uses (1.0, 1.0)
        fields = dict(fields, in_scale=1.0, out_scale=1.0)
    for i, shape in enumerate(PACKED_SHAPES):
        x = data(shape, dtype, seed=40 + i)
        new = _launch_wide(x, fields)
        old = _launch_wide(x, fields, ("-DPP_POOL_PACKED=0",))
        assert np.array_equal(new.view(np.uint8), old.view(np.uint8)), f"{mode} {shape}"
        if dtype == np.int8:
            assert np.array_equal(new, ref(x, fields)), f"{mode} {shape}"
        else:
            assert_close(new, ref(x, fields), dtype, what=f"{fields} {shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("scales", [(1.0, 1.0), (0.75, 0.25)])
def test_gpu_5x5_packed_int8_extremes_exact(mode, scales):
    """All -128 and all 127 windows (the 16-bit lanes' least and largest sums), and ties of
    sum / count, exact against the reference at ratio 1 and 3."""
    rng = np.random.default_rng(3)
    x = rng.choice(np.array([-128, -127, -1, 0, 1, 2, 126, 127], np.int8), size=(2, 3, 12, 32))
    x[0, 0] = -128
    x[0, 1] = 127
    x[1, 2, :, :16] = 127
    x[1, 2, :, 16:] = -128
    fields = dict(window_fields(mode, 5, 2, 2), in_scale=scales[0], out_scale=scales[1])
    y = _launch_wide(x, fields, scales=scales)
    expected = ref(x, fields, *scales)
    bad = np.flatnonzero(y != expected)
    assert bad.size == 0, f"{bad.size} differ, first {y.flat[bad[0]]} != {expected.flat[bad[0]]}"
