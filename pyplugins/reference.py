"""NumPy references of the shipped ops, one per-dtype tolerance table, and a closeness check.

Each reference computes in float64 (exact integer math where the op is a pure copy or an INT8
max) and returns the input's dtype, so a kernel's output compares with it directly through
:func:`assert_close`. They state the semantics the kernels in ``kernels_cu/`` implement.

Example:
    >>> import numpy as np
    >>> from pyplugins import reference
    >>> x = np.arange(6, dtype=np.float32).reshape(1, 6)
    >>> reference.seq_repeat(x, 2).shape
    (1, 12)
    >>> reference.assert_close(reference.leaky_relu(x, 0.1), x, np.float32)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

__all__ = [
    "ROPE_LAYOUTS",
    "TOLERANCES",
    "Tolerance",
    "assert_close",
    "bar",
    "circ_pad",
    "leaky_relu",
    "pool2d",
    "pool_output_size",
    "rmsnorm",
    "rope",
    "seq_repeat",
]


@dataclass(frozen=True)
class Tolerance:
    """Allowed difference ``|actual - expected| <= atol + rtol * |expected|`` for one dtype.

    Attributes:
        rtol: relative part.
        atol: absolute part (in LSB for integer types).
        why: what the numbers are derived from.
    """

    rtol: float
    atol: float
    why: str


#: The one tolerance table, by output dtype. Kernels compute in float32 (float16 I/O too), the
#: references in float64; the bounds cover that difference on the catalogue's ops.
TOLERANCES = {
    np.dtype(np.float32): Tolerance(
        1e-5, 1e-5,
        "a few float32 ulp of the result (rsqrtf's 2 ulp, a float sum of squares, sincosf on "
        "an angle accurate to float), plus an absolute floor for values that cancel"),
    np.dtype(np.float16): Tolerance(
        1e-3, 1e-3,
        "one float16 ulp (2^-10 relative at worst): float math rounded to half may land on the "
        "other side of a rounding boundary than the float64 result"),
    np.dtype(np.int8): Tolerance(
        0.0, 1.0,
        "+-1 LSB: requantization rne(v / out_scale) may resolve a near-tie differently in float "
        "than in float64 (average pooling, max pooling across different scales). Copies and max "
        "pooling with in_scale == out_scale are exact; tests check those with array_equal"),
    np.dtype(np.int32): Tolerance(0.0, 0.0, "integer copies are exact"),
}

#: Layout names of :func:`rope` and the ``layout`` int its kernel takes.
ROPE_LAYOUTS = {"rotate_half": 0, "neox": 0, "interleaved": 1, "gptj": 1}


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype, *, what: str = "") -> None:
    """Raise AssertionError unless ``actual`` matches ``expected`` within ``TOLERANCES[dtype]``.

    Both arrays must have the same shape, and ``actual`` the dtype ``dtype``. NaN anywhere in
    ``actual`` where ``expected`` has none (an unwritten, NaN-poisoned output) fails. The
    message names the worst element: its index, both values, the error and the bound.

    Args:
        actual: the result under test (a NumPy array; call ``.get()`` on CuPy arrays first).
        expected: the reference result.
        dtype: the output dtype whose tolerance applies.
        what: a label for the message (op, shape, case).

    Raises:
        AssertionError: on a shape or dtype mismatch or an element out of tolerance.
        KeyError: for a dtype the table does not cover.

    Example:
        >>> import numpy as np
        >>> assert_close(np.float16([1.0, 2.0]), np.float16([1.0, 2.001]), np.float16)
        >>> assert_close(np.float32([1.0, 2.0]), np.float32([1.0, 2.1]), np.float32, what="demo")
        Traceback (most recent call last):
        ...
        AssertionError: demo: 1 of 2 elements out of tolerance (rtol=1e-05, atol=1e-05); worst at (1,): actual 2.0, expected 2.0999999046325684, |error| 0.0999999, allowed 3.1e-05
    """
    dtype = np.dtype(dtype)
    tol = TOLERANCES[dtype]
    label = f"{what}: " if what else ""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        msg = f"{label}shape {actual.shape} differs from the expected {expected.shape}"
        raise AssertionError(msg)
    if actual.dtype != dtype:
        msg = f"{label}dtype {actual.dtype} differs from the expected {dtype}"
        raise AssertionError(msg)
    if actual.size == 0:
        return
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    with np.errstate(invalid="ignore"):
        allowed = tol.atol + tol.rtol * np.nan_to_num(np.abs(e), nan=0.0, posinf=0.0)
        # Equal values (infinities, NaN against NaN) pass; any other NaN is infinitely wrong.
        same = (a == e) | (np.isnan(a) & np.isnan(e))
        err = np.where(same, 0.0, np.nan_to_num(np.abs(a - e), nan=np.inf))
        excess = err - allowed
    bad = excess > 0
    if not bad.any():
        return
    flat = int(np.argmax(excess))
    idx = np.unravel_index(flat, actual.shape)
    msg = (f"{label}{int(bad.sum())} of {actual.size} elements out of tolerance "
           f"(rtol={tol.rtol:g}, atol={tol.atol:g}); worst at {tuple(int(i) for i in idx)}: "
           f"actual {float(a[idx])!r}, expected {float(e[idx])!r}, |error| {err[idx]:g}, "
           f"allowed {allowed[idx]:g}")
    raise AssertionError(msg)


def _result(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float64 values cast back to ``dtype`` (round-half-even then saturate for integers)."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(values), info.min, info.max).astype(dtype)
    return values.astype(dtype)


def circ_pad(x: np.ndarray, pads: Sequence[int]) -> np.ndarray:
    """Circular (periodic) padding in the TensorRT sample's pad order.

    ``pads[2 i]`` and ``pads[2 i + 1]`` are the (before, after) amounts of dimension
    ``rank - 1 - i``: the first pair pads the last dimension. Pads may exceed the dimension
    (the pattern repeats).

    Args:
        x: input of any rank and dtype.
        pads: an even number of non-negative ints, at most ``2 * rank``.

    Returns:
        The padded array, ``x``'s dtype.

    Raises:
        ValueError: for an odd count, too many pairs, a negative pad, or padding a 0-size dim.

    Example:
        >>> circ_pad(np.array([[1, 2, 3]], dtype=np.float32), [1, 2])
        array([[3., 1., 2., 3., 1., 2.]], dtype=float32)
    """
    pads = [int(p) for p in pads]
    if len(pads) % 2 or len(pads) > 2 * x.ndim:
        msg = (f"pads must hold (before, after) pairs for at most {x.ndim} dims "
               f"(got {len(pads)} values)")
        raise ValueError(msg)
    if any(p < 0 for p in pads):
        msg = f"pads must be non-negative (got {pads!r})"
        raise ValueError(msg)
    width = [(0, 0)] * x.ndim
    for i in range(len(pads) // 2):
        dim = x.ndim - 1 - i
        width[dim] = (pads[2 * i], pads[2 * i + 1])
        if x.shape[dim] == 0 and (pads[2 * i] or pads[2 * i + 1]):
            msg = f"cannot pad dimension {dim} circularly: it has size 0"
            raise ValueError(msg)
    return np.pad(x, width, mode="wrap")


def leaky_relu(x: np.ndarray, neg_slope: float) -> np.ndarray:
    """``x`` where ``x >= 0``, else ``neg_slope * x``; float64 math, ``x``'s float dtype.

    Example:
        >>> leaky_relu(np.float32([-2.0, 0.0, 3.0]), 0.1)
        array([-0.2,  0. ,  3. ], dtype=float32)
    """
    if not np.issubdtype(x.dtype, np.floating):
        msg = f"leaky_relu needs a float input (got {x.dtype})"
        raise TypeError(msg)
    v = x.astype(np.float64)
    return _result(np.where(v >= 0, v, v * float(neg_slope)), x.dtype)


def bar(a: np.ndarray, b: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """BarPlugin: ``(concatenate([a, b], axis=0), copy of b)``.

    Args:
        a: ``[a0, r...]``.
        b: ``[b0, r...]``, same trailing dims and dtype as ``a``.

    Raises:
        ValueError: for a rank-0 input, different trailing dims, or different dtypes.

    Example:
        >>> out0, out1 = bar(np.int8([[1, 2]]), np.int8([[3, 4], [5, 6]]))
        >>> out0.tolist(), out1.tolist()
        ([[1, 2], [3, 4], [5, 6]], [[3, 4], [5, 6]])
    """
    if a.ndim == 0 or b.ndim == 0 or a.shape[1:] != b.shape[1:] or a.dtype != b.dtype:
        msg = (f"bar needs A [a0, r...] and B [b0, r...] of one dtype (got {a.shape} "
               f"{a.dtype} and {b.shape} {b.dtype})")
        raise ValueError(msg)
    return np.concatenate([a, b], axis=0), b.copy()


def pool_output_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """``floor((size + 2 padding - kernel) / stride) + 1``, or 0 when the window does not fit.

    Example:
        >>> pool_output_size(7, 3, 2, 1), pool_output_size(1, 3, 1, 0)
        (4, 0)
    """
    span = size + 2 * padding - kernel
    return span // stride + 1 if span >= 0 else 0


def pool2d(x: np.ndarray, mode: str, kernel: Sequence[int], stride: Sequence[int],
           padding: Sequence[int], in_scale: Optional[float] = None,
           out_scale: Optional[float] = None) -> np.ndarray:
    """2-D max or average pooling over the last two dims (NCHW).

    Padding (symmetric, ``padding = (ph, pw)``) is never read: max ignores it and average
    divides by the number of in-bounds elements of each window. A window with none (possible
    only on a 0-size input) gives 0. INT8 values mean ``q * scale`` with per-tensor scales: max
    takes the max of ``q`` (exact, kept as is when the scales are equal), average sums ``q``
    exactly; the result is requantized as ``clip(rint(v * in_scale / out_scale), -128, 127)``
    (round half to even), the scales taken as float32 like the kernel's arguments.

    Args:
        x: ``[..., H, W]``, float32, float16 or int8.
        mode: ``"max"`` or ``"average"``.
        kernel: ``(kh, kw)``, each >= 1.
        stride: ``(sh, sw)``, each >= 1.
        padding: ``(ph, pw)`` with ``0 <= ph < kh`` and ``0 <= pw < kw``.
        in_scale, out_scale: the INT8 scales (> 0); required for int8, ignored otherwise.

    Returns:
        ``[..., Ho, Wo]`` in ``x``'s dtype, with ``Ho = pool_output_size(H, kh, sh, ph)``.

    Raises:
        ValueError: for a bad mode, window, stride, padding or scale, or rank < 2.

    Example:
        >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> pool2d(x, "max", (2, 2), (2, 2), (0, 0))[0, 0]
        array([[ 5.,  7.],
               [13., 15.]], dtype=float32)
        >>> pool2d(x, "average", (3, 3), (2, 2), (1, 1))[0, 0]
        array([[ 2.5,  4. ],
               [ 8.5, 10. ]], dtype=float32)
        >>> pool2d(np.int8([[[[1, 2, 2, 3]]]]), "average", (1, 2), (1, 2), (0, 0), 1.0, 1.0)
        array([[[[2, 2]]]], dtype=int8)
    """
    kh, kw = (int(v) for v in kernel)
    sh, sw = (int(v) for v in stride)
    ph, pw = (int(v) for v in padding)
    if mode not in ("max", "average"):
        msg = f"pool2d mode must be 'max' or 'average' (got {mode!r})"
        raise ValueError(msg)
    if x.ndim < 2:
        msg = f"pool2d needs [..., H, W] (got shape {x.shape})"
        raise ValueError(msg)
    if min(kh, kw, sh, sw) < 1 or not (0 <= ph < kh and 0 <= pw < kw):
        msg = (f"pool2d needs kernel, stride >= 1 and 0 <= padding < kernel (got kernel "
               f"{(kh, kw)}, stride {(sh, sw)}, padding {(ph, pw)})")
        raise ValueError(msg)
    quantized = x.dtype == np.int8
    if quantized:
        if in_scale is None or out_scale is None or not (in_scale > 0 and out_scale > 0):
            msg = f"int8 pooling needs in_scale > 0 and out_scale > 0 (got {in_scale!r}, {out_scale!r})"
            raise ValueError(msg)
    elif x.dtype not in (np.float32, np.float16):
        msg = f"pool2d supports float32, float16 and int8 (got {x.dtype})"
        raise ValueError(msg)

    h, w = x.shape[-2:]
    ho, wo = pool_output_size(h, kh, sh, ph), pool_output_size(w, kw, sw, pw)
    lead = x.shape[:-2]
    pad = [(0, 0)] * len(lead) + [(ph, ph), (pw, pw)]
    values = np.pad(x.astype(np.float64), pad)
    inside = np.pad(np.ones((h, w), dtype=bool), [(ph, ph), (pw, pw)])
    best = np.full(lead + (ho, wo), -np.inf)
    total = np.zeros(lead + (ho, wo))
    count = np.zeros((ho, wo))
    for dy in range(kh):
        rows = slice(dy, dy + sh * (ho - 1) + 1, sh)
        for dx in range(kw):
            cols = slice(dx, dx + sw * (wo - 1) + 1, sw)
            v, m = values[..., rows, cols], inside[rows, cols]
            best = np.where(m, np.maximum(best, v), best)
            total += np.where(m, v, 0.0)
            count += m
    if mode == "max":
        result = np.where(count > 0, best, 0.0)
    else:
        result = total / np.maximum(count, 1)
    if quantized:
        ratio = float(np.float32(in_scale)) / float(np.float32(out_scale))
        if not (mode == "max" and ratio == 1.0):
            result = result * ratio
    return _result(result, x.dtype)


def rope(x: np.ndarray, rotary_dim: int, theta: float = 10000.0, layout: str = "rotate_half",
         position_offset: int = 0, positions: Optional[np.ndarray] = None) -> np.ndarray:
    """Rotary position embedding of ``x`` ``[batch, seq, heads, head_dim]``.

    ``inv_freq[i] = theta ** (-2 i / rotary_dim)`` for ``i < rotary_dim / 2``; the position of
    token ``(b, s)`` is ``positions[b, s]`` when given (``position_offset`` is then not added),
    else ``position_offset + s``. Pair ``i`` is ``(x[i], x[i + rotary_dim / 2])`` for
    ``layout="rotate_half"`` (GPT-NeoX, alias ``"neox"``) and ``(x[2 i], x[2 i + 1])`` for
    ``layout="interleaved"`` (GPT-J, alias ``"gptj"``); it becomes ``(a cos - b sin,
    b cos + a sin)`` of the angle ``pos * inv_freq[i]``. Features past ``rotary_dim`` are copied.

    Args:
        x: float32 or float16, rank 4.
        rotary_dim: even, ``0 < rotary_dim <= head_dim``.
        theta: frequency base, > 0.
        layout: see above; ``ROPE_LAYOUTS`` maps names to the kernel's int.
        position_offset: first position when ``positions`` is None.
        positions: int ``[batch, seq]`` or None.

    Raises:
        ValueError: for a bad rank, rotary_dim, theta, layout or positions shape.

    Example:
        >>> x = np.float32([1, 0, 0, 1]).reshape(1, 1, 1, 4)
        >>> rope(x, 4, position_offset=1).round(4)  # angles 1 and 0.01 rad
        array([[[[ 0.5403, -0.01  ,  0.8415,  1.    ]]]], dtype=float32)
        >>> rope(x, 4, layout="interleaved", position_offset=1).round(4)
        array([[[[ 0.5403,  0.8415, -0.01  ,  1.    ]]]], dtype=float32)
    """
    if x.ndim != 4:
        msg = f"rope needs x [batch, seq, heads, head_dim] (got shape {x.shape})"
        raise ValueError(msg)
    batch, seq, _, head_dim = x.shape
    rotary_dim = int(rotary_dim)
    if rotary_dim % 2 or not 0 < rotary_dim <= head_dim:
        msg = f"rotary_dim must be even and in (0, head_dim={head_dim}] (got {rotary_dim})"
        raise ValueError(msg)
    if not theta > 0:
        msg = f"theta must be > 0 (got {theta!r})"
        raise ValueError(msg)
    if layout not in ROPE_LAYOUTS:
        msg = f"rope layout must be one of {sorted(ROPE_LAYOUTS)} (got {layout!r})"
        raise ValueError(msg)
    if positions is None:
        pos = np.broadcast_to(position_offset + np.arange(seq, dtype=np.float64), (batch, seq))
    else:
        if positions.shape != (batch, seq):
            msg = f"positions must be [batch, seq] = {(batch, seq)} (got {positions.shape})"
            raise ValueError(msg)
        pos = positions.astype(np.float64)
    half = rotary_dim // 2
    inv_freq = float(theta) ** (-(2.0 * np.arange(half)) / rotary_dim)
    ang = pos[:, :, None, None] * inv_freq  # [batch, seq, 1, half]
    cos, sin = np.cos(ang), np.sin(ang)
    v = x.astype(np.float64)
    out = v.copy()
    if ROPE_LAYOUTS[layout] == 0:
        a_at, b_at = slice(0, half), slice(half, rotary_dim)
    else:
        a_at, b_at = slice(0, rotary_dim, 2), slice(1, rotary_dim, 2)
    a, b = v[..., a_at], v[..., b_at]
    out[..., a_at] = a * cos - b * sin
    out[..., b_at] = b * cos + a * sin
    return _result(out, x.dtype)


def rmsnorm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """``x / sqrt(mean(x^2 over the last dim) + eps) * weight``; ``weight`` is ``[D]``.

    Example:
        >>> rmsnorm(np.float32([[3.0, 4.0]]), np.float32([1.0, 2.0]), 0.0)
        array([[0.84852815, 2.2627418 ]], dtype=float32)
    """
    if x.ndim < 1 or weight.shape != x.shape[-1:]:
        msg = f"rmsnorm needs weight [D] for x [..., D] (got x {x.shape}, weight {weight.shape})"
        raise ValueError(msg)
    if x.shape[-1] == 0:
        return x.copy()
    v = x.astype(np.float64)
    ms = np.mean(v * v, axis=-1, keepdims=True)
    return _result(v / np.sqrt(ms + float(eps)) * weight.astype(np.float64), x.dtype)


def seq_repeat(x: np.ndarray, factor: int) -> np.ndarray:
    """Nearest-neighbour repeat along dim 1: ``y[:, j] = x[:, j // factor]``.

    Equals ``np.repeat(x, factor, axis=1)``.

    Raises:
        ValueError: for rank < 2 or a factor that is not an int >= 1.

    Example:
        >>> seq_repeat(np.int8([[1, 2], [3, 4]]), 2)
        array([[1, 1, 2, 2],
               [3, 3, 4, 4]], dtype=int8)
    """
    if x.ndim < 2 or int(factor) != factor or factor < 1:
        msg = f"seq_repeat needs rank >= 2 and an int factor >= 1 (got shape {x.shape}, {factor!r})"
        raise ValueError(msg)
    return np.repeat(x, int(factor), axis=1)
