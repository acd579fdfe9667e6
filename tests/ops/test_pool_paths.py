"""Pool's vector paths (both kernels, every window that has one) and INT8 requantization, on the
GPU against the NumPy reference: shapes whose rows are whole 16-byte chunks (so the vector path
runs), odd heights, clipped windows on every border, and exact INT8 at any scale ratio."""

from __future__ import annotations

import numpy as np
import pytest

from pyplugins.ops.pool import WIDE_WINDOWS, Pool
from pyplugins.testing import assert_close

from .test_pool import data, ref, run_gpu

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
