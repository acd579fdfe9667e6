"""The ops' NumPy references (``Plugin.reference``), each against an independent formulation of
its op, and the tolerance checks of :mod:`pyplugins.testing`."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pyplugins.ops
from pyplugins.errors import FieldError, ShapeError
from pyplugins.ops import BarPlugin, CircPad, LeakyReLU, Pool, RMSNorm, RoPE, SeqRepeat
from pyplugins.runtime.plugin import Plugin
from pyplugins.testing import TOLERANCES, assert_close


@pytest.fixture
def rng():
    return np.random.default_rng()


def test_reference_contract_default_none_and_every_shipped_op_has_one():
    assert Plugin.reference is None
    for name in pyplugins.ops.__all__:
        cls = getattr(pyplugins.ops, name)
        assert callable(getattr(cls, "reference", None)), name


class _NoRef(Plugin):
    name = "NoRefDoc"


def test_a_plugin_without_reference_reads_none():
    assert getattr(_NoRef(), "reference", None) is None


# -- tolerance table and assert_close ---------------------------------------------------------

def test_tolerance_table_covers_the_catalogue_dtypes():
    for dtype in (np.float32, np.float16, np.int8):
        tol = TOLERANCES[np.dtype(dtype)]
        assert tol.rtol >= 0 and tol.atol >= 0 and tol.why
    assert TOLERANCES[np.dtype(np.int8)].atol == 1.0  # +-1 LSB, exactly
    assert TOLERANCES[np.dtype(np.float16)].rtol >= 2.0 ** -10  # one half ulp step


def test_assert_close_names_the_worst_element():
    expected = np.zeros((3, 4), dtype=np.float32)
    actual = expected.copy()
    actual[1, 2] = 0.5
    actual[2, 3] = 0.25
    with pytest.raises(AssertionError, match=r"op: 2 of 12 elements .* worst at \(1, 2\)"):
        assert_close(actual, expected, np.float32, what="op")


def test_assert_close_fails_on_nan_poison_but_not_on_matching_nan():
    expected = np.float32([1.0, np.nan])
    assert_close(np.float32([1.0, np.nan]), expected, np.float32)
    with pytest.raises(AssertionError, match=r"worst at \(0,\)"):
        assert_close(np.float32([np.nan, np.nan]), expected, np.float32)


def test_assert_close_checks_shape_and_dtype():
    with pytest.raises(AssertionError, match="shape"):
        assert_close(np.zeros(3, np.float32), np.zeros(4, np.float32), np.float32)
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(np.zeros(3, np.float64), np.zeros(3, np.float32), np.float32)


def test_assert_close_int8_allows_one_lsb_only():
    expected = np.int8([10, -128, 127])
    assert_close(np.int8([11, -127, 126]), expected, np.int8)
    with pytest.raises(AssertionError):
        assert_close(np.int8([12, -128, 127]), expected, np.int8)


# -- circ_pad, leaky_relu, bar, seq_repeat ----------------------------------------------------

@pytest.mark.parametrize("shape, pads", [
    ((5,), (2, 3)),
    ((3, 4), (1, 2)),
    ((3, 4), (1, 2, 2, 0)),
    ((2, 3, 4), (5, 0, 0, 7)),   # pads larger than the dim repeat the pattern
    ((2, 1, 3, 2), (1, 1, 1, 1)),
])
def test_circ_pad_matches_modular_indexing(rng, shape, pads):
    x = rng.standard_normal(shape).astype(np.float32)
    (out,) = CircPad(pads=list(pads)).reference(x)
    before = [0] * x.ndim
    for i in range(len(pads) // 2):
        before[x.ndim - 1 - i] = pads[2 * i]
    expected_shape = list(shape)
    for i in range(len(pads) // 2):
        expected_shape[x.ndim - 1 - i] += pads[2 * i] + pads[2 * i + 1]
    assert out.shape == tuple(expected_shape) and out.dtype == x.dtype
    for idx in itertools.product(*(range(n) for n in out.shape)):
        src = tuple((i - b) % n for i, b, n in zip(idx, before, shape))
        assert out[idx] == x[src]


def test_circ_pad_rejects_bad_pads():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ShapeError, match="rank 2"):
        CircPad(pads=[1, 1, 1, 1, 1, 1]).reference(x)
    with pytest.raises(ShapeError, match="nothing to wrap"):
        CircPad(pads=[1, 1]).reference(np.zeros((2, 0), np.float32))
    for pads in ([1], [-1, 0]):  # the field refuses these before any reference runs
        with pytest.raises(FieldError):
            CircPad(pads=pads)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_leaky_relu_elementwise(rng, dtype):
    x = rng.standard_normal(101).astype(dtype)
    (out,) = LeakyReLU(neg_slope=0.2).reference(x)
    slope = float(np.float32(0.2))  # the kernel's float argument
    for xi, yi in zip(x, out):
        want = float(xi) if xi >= 0 else float(xi) * slope
        assert yi == np.asarray(want, dtype=dtype)
    with pytest.raises(TypeError):
        LeakyReLU().reference(np.int8([1]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32])
@pytest.mark.parametrize("a0, b0, rest", [(3, 5, (2, 7)), (0, 4, (3,)), (2, 0, ()), (1, 1, (1, 1, 5))])
def test_bar_concatenates_by_slices(rng, dtype, a0, b0, rest):
    a = (rng.standard_normal((a0,) + rest) * 50).astype(dtype)
    b = (rng.standard_normal((b0,) + rest) * 50).astype(dtype)
    out0, out1 = BarPlugin().reference(a, b)
    assert out0.shape == (a0 + b0,) + rest and out0.dtype == dtype
    np.testing.assert_array_equal(out0[:a0], a)
    np.testing.assert_array_equal(out0[a0:], b)
    np.testing.assert_array_equal(out1, b)
    assert not np.shares_memory(out1, b)


def test_bar_rejects_mismatched_inputs():
    with pytest.raises(ShapeError, match="dim 1"):
        BarPlugin().reference(np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32))
    with pytest.raises(ShapeError, match="float16"):
        BarPlugin().reference(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float16))


@pytest.mark.parametrize("shape, factor", [((2, 3), 1), ((2, 3), 4), ((3, 5, 7), 3), ((1, 0, 2), 2),
                                           ((2, 2, 3, 2), 2)])
def test_seq_repeat_indexes_j_div_factor(rng, shape, factor):
    x = rng.standard_normal(shape).astype(np.float16)
    (y,) = SeqRepeat(factor=factor).reference(x)
    assert y.shape == (shape[0], shape[1] * factor) + shape[2:]
    for j in range(y.shape[1]):
        np.testing.assert_array_equal(y[:, j], x[:, j // factor])


def test_seq_repeat_rejects_rank_one():
    with pytest.raises(ShapeError, match="rank >= 2"):
        SeqRepeat(factor=2).reference(np.zeros(4, np.float32))


# -- pool2d ------------------------------------------------------------------------------------

def _pool_loops(x, mode, kernel, stride, padding, in_scale=None, out_scale=None):
    """Plain loops over outputs and window elements, in Python floats and ints."""
    kh, kw = kernel
    sh, sw = stride
    ph, pw = padding
    h, w = x.shape[-2:]
    ho = (h + 2 * ph - kh) // sh + 1
    wo = (w + 2 * pw - kw) // sw + 1
    flat = x.reshape(-1, h, w)
    out = np.zeros((flat.shape[0], ho, wo), dtype=x.dtype)
    for p in range(flat.shape[0]):
        for oh in range(ho):
            for ow in range(wo):
                vals = [flat[p, i, j].item()
                        for i in range(oh * sh - ph, oh * sh - ph + kh)
                        for j in range(ow * sw - pw, ow * sw - pw + kw)
                        if 0 <= i < h and 0 <= j < w]
                if x.dtype == np.int8:
                    ratio = float(np.float32(in_scale)) / float(np.float32(out_scale))
                    if mode == "max":
                        q = max(vals) if ratio == 1.0 else round(max(vals) * ratio)
                    else:
                        q = round(sum(vals) / len(vals) * ratio)  # Python round: half to even
                    out[p, oh, ow] = min(127, max(-128, q))
                else:
                    out[p, oh, ow] = max(vals) if mode == "max" else sum(vals) / len(vals)
    return out.reshape(x.shape[:-2] + (ho, wo))


POOL_CASES = [
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0)),
    ((1, 2, 7, 9), (3, 3), (2, 2), (1, 1)),
    ((2, 1, 5, 6), (3, 2), (1, 2), (2, 1)),
    ((1, 1, 4, 11), (1, 4), (3, 1), (0, 3)),
    ((3, 6, 5), (5, 5), (1, 1), (0, 0)),        # rank 3: leading dims flatten
]


def _pool(mode, kernel, stride, padding, in_scale=0.0, out_scale=0.0):
    return Pool(mode=mode, kernel=list(kernel), stride=list(stride), padding=list(padding),
                in_scale=in_scale, out_scale=out_scale)


@pytest.mark.parametrize("shape, kernel, stride, padding", POOL_CASES)
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_pool2d_float_matches_loops(rng, shape, kernel, stride, padding, mode, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    (got,) = _pool(mode, kernel, stride, padding).reference(x)
    want = _pool_loops(x, mode, kernel, stride, padding)
    assert got.shape == want.shape and got.dtype == dtype
    assert_close(got, want, dtype, what=f"{mode} {shape}")


def _pool(mode, kernel, stride, padding, in_scale=0.0, out_scale=0.0):
    return Pool(mode=mode, kernel=list(kernel), stride=list(stride), padding=list(padding),
                in_scale=in_scale, out_scale=out_scale)


@pytest.mark.parametrize("shape, kernel, stride, padding", POOL_CASES)
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("scales", [(1.0, 1.0), (0.05, 0.1), (0.3, 0.07)])
def test_pool2d_int8_matches_loops_exactly(rng, shape, kernel, stride, padding, mode, scales):
    x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    (got,) = _pool(mode, kernel, stride, padding, *scales).reference(x)
    want = _pool_loops(x, mode, kernel, stride, padding, *scales)
    np.testing.assert_array_equal(got, want)


def test_pool2d_int8_average_rounds_ties_to_even():
    # Windows of two: sums 3, 5, -3, -5, 7, 1 -> means 1.5, 2.5, -1.5, -2.5, 3.5, 0.5.
    x = np.int8([[[[1, 2, 2, 3, -1, -2, -2, -3, 3, 4, 0, 1]]]])
    (got,) = _pool("avg", (1, 2), (1, 2), (0, 0), 0.5, 0.5).reference(x)
    np.testing.assert_array_equal(got.ravel(), [2, 2, -2, -2, 4, 0])


def test_pool2d_int8_requantizes_with_saturation():
    x = np.int8([[[[100, -100, 120, -120]]]])
    (got,) = _pool("max", (1, 1), (1, 1), (0, 0), 1.0, 0.5).reference(x)
    np.testing.assert_array_equal(got.ravel(), [127, -128, 127, -128])
    (got,) = _pool("max", (1, 1), (1, 1), (0, 0), 0.5, 1.0).reference(x)  # 50, -50, 60, -60
    np.testing.assert_array_equal(got.ravel(), [50, -50, 60, -60])


def test_pool2d_padding_never_counts():
    x = np.ones((1, 1, 2, 2), np.float32)
    (avg,) = _pool("avg", (3, 3), (1, 1), (1, 1)).reference(x)
    np.testing.assert_array_equal(avg, np.ones((1, 1, 2, 2), np.float32))
    neg = -np.ones((1, 1, 2, 2), np.float32)
    np.testing.assert_array_equal(_pool("max", (3, 3), (1, 1), (1, 1)).reference(neg)[0], neg)


def test_pool2d_output_size_and_errors():
    (got,) = _pool("max", (3, 3), (1, 1), (0, 0)).reference(np.zeros((1, 1, 2, 2), np.float32))
    assert got.shape == (1, 1, 0, 0)
    x = np.zeros((1, 1, 4, 4), np.float32)
    with pytest.raises(ValueError, match="rank|H, W"):
        _pool("max", (2, 2), (1, 1), (0, 0)).reference(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="in_scale > 0"):
        _pool("max", (2, 2), (1, 1), (0, 0)).reference(x.astype(np.int8))  # scales missing
    with pytest.raises(ValueError, match="float32, float16 and int8"):
        _pool("max", (2, 2), (1, 1), (0, 0)).reference(x.astype(np.float64))


# -- rope ---------------------------------------------------------------------------------------

def _inv_freq(rotary_dim, theta):
    return np.array([theta ** (-2.0 * i / rotary_dim) for i in range(rotary_dim // 2)])


@pytest.mark.parametrize("rotary_dim, head_dim", [(8, 8), (4, 10), (16, 16)])
def test_rope_interleaved_is_complex_multiplication(rng, rotary_dim, head_dim):
    x = rng.standard_normal((2, 5, 3, head_dim)).astype(np.float32)
    (got,) = RoPE(rotary_dim=rotary_dim, theta=500.0, layout="gptj", position_offset=7).reference(x)
    z = x[..., 0:rotary_dim:2].astype(np.float64) + 1j * x[..., 1:rotary_dim:2]
    pos = 7 + np.arange(5)
    z = z * np.exp(1j * pos[None, :, None, None] * _inv_freq(rotary_dim, 500.0))
    want = x.astype(np.float64).copy()
    want[..., 0:rotary_dim:2] = z.real
    want[..., 1:rotary_dim:2] = z.imag
    assert_close(got, want.astype(np.float32), np.float32)


def test_rope_rotate_half_is_the_neox_formula(rng):
    # GPT-NeoX / HF: q * cos + rotate_half(q) * sin, cos and sin repeated over both halves.
    x = rng.standard_normal((3, 6, 2, 12)).astype(np.float32)
    rotary_dim = 8
    (got,) = RoPE(rotary_dim=rotary_dim, layout="neox", position_offset=3).reference(x)
    q = x[..., :rotary_dim].astype(np.float64)
    ang = (3 + np.arange(6))[:, None] * _inv_freq(rotary_dim, 10000.0)
    emb = np.concatenate([ang, ang], axis=-1)[None, :, None, :]
    rotated = np.concatenate([-q[..., rotary_dim // 2:], q[..., :rotary_dim // 2]], axis=-1)
    want = x.astype(np.float64).copy()
    want[..., :rotary_dim] = q * np.cos(emb) + rotated * np.sin(emb)
    assert_close(got, want.astype(np.float32), np.float32)
    np.testing.assert_array_equal(got[..., rotary_dim:], x[..., rotary_dim:])


def test_rope_layouts_are_a_feature_permutation(rng):
    x = rng.standard_normal((2, 4, 3, 8)).astype(np.float32)
    perm = np.array([0, 4, 1, 5, 2, 6, 3, 7])  # rotate-half feature order -> interleaved order
    (a,) = RoPE(rotary_dim=8, layout="neox", position_offset=11).reference(x)
    gptj = RoPE(rotary_dim=8, layout="gptj", position_offset=11)
    (b,) = gptj.reference(np.ascontiguousarray(x[..., perm]))
    assert_close(b, a[..., perm], np.float32)


def test_rope_positions_input_equals_offset(rng):
    x = rng.standard_normal((2, 5, 2, 6)).astype(np.float16)
    positions = np.broadcast_to(np.arange(40, 45, dtype=np.int32), (2, 5)).copy()
    (a,) = RoPE(rotary_dim=6).reference(x, positions)
    (b,) = RoPE(rotary_dim=6, position_offset=40).reference(x)
    np.testing.assert_array_equal(a, b)
    positions[1] = [3, 1, 4, 1, 5]
    (c,) = RoPE(rotary_dim=6).reference(x, positions)
    np.testing.assert_array_equal(c[0], b[0])
    (one,) = RoPE(rotary_dim=6, position_offset=1).reference(x[1:, 1:2])
    np.testing.assert_array_equal(c[1, 1], one[0, 0])


def test_rope_position_zero_is_identity_and_norm_is_kept(rng):
    x = rng.standard_normal((1, 1, 4, 16)).astype(np.float32)
    np.testing.assert_array_equal(RoPE(rotary_dim=16).reference(x)[0], x)  # s = 0 -> angle 0
    (y,) = RoPE(rotary_dim=16, layout="neox", position_offset=1234).reference(x)
    assert_close(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), np.float32)


def test_rope_rejects_bad_arguments():
    x = np.zeros((1, 2, 1, 8), np.float32)
    with pytest.raises(ShapeError, match="exceeds"):
        RoPE(rotary_dim=10).reference(x)
    with pytest.raises(ShapeError, match="positions"):
        RoPE(rotary_dim=8).reference(x, np.zeros((2, 1), np.int32))
    with pytest.raises(FieldError, match="position_offset"):
        RoPE(position_offset=3).reference(x, np.zeros((1, 2), np.int32))
    with pytest.raises(ShapeError, match="rank 4"):
        RoPE(rotary_dim=8).reference(np.zeros((2, 8), np.float32))
    for fields in (dict(rotary_dim=3), dict(theta=0.0), dict(layout="spiral")):
        with pytest.raises(FieldError):  # the fields refuse these before any reference runs
            RoPE(**fields)


# -- rmsnorm -----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 7), (2, 3, 64), (1, 1), (5, 1000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_rmsnorm_matches_row_norms(rng, shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal(shape[-1]).astype(dtype)
    eps = 1e-5
    (got,) = RMSNorm(eps=eps).reference(x, w)
    rows = x.reshape(-1, shape[-1]).astype(np.float64)
    want = np.empty_like(rows)
    for r, row in enumerate(rows):
        rms = np.sqrt(np.linalg.norm(row) ** 2 / len(row) + eps)
        want[r] = [v / rms * float(wi) for v, wi in zip(row, w)]
    assert_close(got, want.reshape(shape).astype(dtype), dtype)


def test_rmsnorm_scale_invariance_and_errors(rng):
    x = rng.standard_normal((3, 32)).astype(np.float32)
    w = np.ones(32, np.float32)
    tiny = RMSNorm(eps=1e-30)
    assert_close(tiny.reference(x * 8, w)[0], tiny.reference(x, w)[0], np.float32)
    empty = RMSNorm().reference(np.zeros((3, 0), np.float32), np.zeros(0, np.float32))
    assert empty[0].shape == (3, 0)
    with pytest.raises(ShapeError, match="31 elements"):
        RMSNorm().reference(x, np.ones(31, np.float32))
