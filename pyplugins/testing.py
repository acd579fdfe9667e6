"""Reference checks: the per-dtype tolerance table and ``assert_close`` for op outputs.

Each shipped op states its semantics as a NumPy method, ``Plugin.reference`` (see
:class:`pyplugins.runtime.plugin.Plugin`); a kernel's output compares with it through :func:`assert_close`.

Example:
    >>> import numpy as np
    >>> from pyplugins.ops import LeakyReLU
    >>> x = np.float32([[-1.0, 2.0]])
    >>> (y,) = LeakyReLU(neg_slope=0.5).reference(x)
    >>> assert_close(y, np.float32([[-0.5, 2.0]]), np.float32, what="LReLU_TRT")
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TOLERANCES", "Tolerance", "assert_close", "round_to"]


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
        AssertionError: demo: 1 of 2 elements out of tolerance (rtol=1e-05, atol=1e-05); worst at
        (1,): actual 2.0, expected 2.0999999046325684, |error| 0.0999999, allowed 3.1e-05
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


def round_to(values: np.ndarray, dtype) -> np.ndarray:
    """float64 values cast to ``dtype``: round half to even, then saturate, for integer types.

    The op references compute in float64 and return their input's dtype through this.

    Example:
        >>> round_to(np.array([2.5, 3.5, -300.0]), np.int8)
        array([   2,    4, -128], dtype=int8)
    """
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(values), info.min, info.max).astype(dtype)
    return values.astype(dtype)
