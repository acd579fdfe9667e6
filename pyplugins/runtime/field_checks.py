"""The value rules a declared field applies: choices, lengths, bounds, int range, float32, NaN.

:meth:`pyplugins.runtime.fields.Field.convert` calls :func:`problem` once per value, after converting it
to the field's type, and :func:`nan_problem` after the field's own validator; the field turns the
answer into a :class:`~pyplugins.errors.FieldError` naming plugin and field (or a warning, for a
float narrowed to float32 with a loss). NaN fails every ``min``/``max`` bound (comparisons with
NaN are false, so a plain ``v < min`` would let it through), and is refused where the field does
not declare ``allow_nan=True``.

Example:
    >>> from pyplugins.runtime.fields import Field
    >>> problem(Field.int(int32=True), 2**31, "an int")
    ("must be in -2147483648 .. 2147483647, as the kernel's launch arithmetic holds it in int32 (got 2147483648)", '')
    >>> problem(Field.float(), 1e39, "a float")[0]
    'must be representable as float32 (|value| <= 3.4028234663852886e+38; 1e+39 becomes inf) (got 1e+39)'
    >>> problem(Field.float(), 1e-45, "a float")[1]
    '1e-45 loses precision as float32 (the kernel receives 1.401298464324817e-45)'
    >>> problem(Field.float(min=0.0), float("nan"), "a float")[0]
    'must be a finite number >= 0.0, which NaN is not (got nan); give a number in range'
"""

from __future__ import annotations

import math
from typing import Any, Tuple

import numpy as np

from pyplugins.echo import echo

INT64 = (-2**63, 2**63 - 1)  # what the serialized form stores
INT32 = (-2**31, 2**31 - 1)  # what int32 launch arithmetic holds
FLOAT32_MAX = float(np.finfo(np.float32).max)


def problem(spec: Any, value: Any, expected: str) -> Tuple[str, str]:
    """``(what is wrong, narrowing note)`` for a converted ``value`` of field ``spec``.

    ``what is wrong`` completes "Field 'x' of plugin 'P' ..." (``""`` when the value is good);
    the note (``""`` when none) says a float loses more than rounding as float32.
    ``spec`` has the attributes of a :class:`~pyplugins.runtime.fields.Field` (``base`` is its value
    kind: ``"int"``, ``"float"``, ``"ints"``, ``"floats"``, ``"str"`` or ``"bool"``).
    """
    shown = echo(value)
    if spec.kind == "enum" and value not in spec.choices:
        return f"must be {expected} (got {shown})", ""
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list):
        n = len(value)
        if spec.min_len is not None and spec.min_len == spec.max_len and n != spec.min_len:
            return f"must have exactly {spec.min_len} elements (got {n}: {shown})", ""
        if spec.min_len is not None and n < spec.min_len:
            return f"must have at least {spec.min_len} elements (got {n}: {shown})", ""
        if spec.max_len is not None and n > spec.max_len:
            return f"must have at most {spec.max_len} elements (got {n}: {shown})", ""
    where = "have every element" if isinstance(value, list) else "be"
    if _has_nan(items) and (spec.min is not None or spec.max is not None):
        bounds = " and ".join(f"{op} {b!r}" for op, b in ((">=", spec.min), ("<=", spec.max))
                              if b is not None)
        return (f"must {where} a finite number {bounds}, which NaN is not (got {shown}); give "
                "a number in range"), ""
    if spec.min is not None and any(v < spec.min for v in items):
        return f"must {where} >= {spec.min!r} (got {shown})", ""
    if spec.max is not None and any(v > spec.max for v in items):
        return f"must {where} <= {spec.max!r} (got {shown})", ""
    if spec.base in ("int", "ints"):
        return _int_range(spec, items, where, shown), ""
    if spec.base in ("float", "floats"):
        return _float32(items, where, shown)
    return "", ""


def nan_problem(spec: Any, value: Any) -> str:
    """What is wrong with NaN in a float field that does not declare ``allow_nan=True`` (it
    completes "Field 'x' of plugin 'P' ..."), or ``""``.

    Example:
        >>> from pyplugins.runtime.fields import Field
        >>> nan_problem(Field.floats(), [1.0, float("nan")])[:44]
        'must have every element a number, not NaN (g'
        >>> nan_problem(Field.float(allow_nan=True), float("nan"))
        ''
    """
    if spec.base not in ("float", "floats") or getattr(spec, "allow_nan", False):
        return ""
    items = value if isinstance(value, list) else [value]
    if not _has_nan(items):
        return ""
    where = "have every element" if isinstance(value, list) else "be"
    return (f"must {where} a number, not NaN (got {echo(value)}): NaN passes every comparison "
            "a kernel makes as false. Give a finite value, or declare the field with "
            "allow_nan=True if NaN has a meaning for it")


def type_hint(kind: str, value: Any) -> str:
    """How to fix a value that did not convert to ``kind``, where there is more to say than its
    type (an int beyond the float range, ``10**400``, which ``float()`` refuses), or ``""``.

    Example:
        >>> type_hint("float", 10**400)[:43]
        'It is an int beyond the range of a float (|'
    """
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return (f"It is an int beyond the range of a float (|value| <= {FLOAT32_MAX!r} as "
                "float32); give a value in range.")
    return ""


def _has_nan(items: list) -> bool:
    return any(isinstance(v, float) and math.isnan(v) for v in items)


def _int_range(spec: Any, items: list, where: str, shown: str) -> str:
    low, high = INT32 if spec.int32 else INT64
    if all(low <= v <= high for v in items):
        return ""
    why = "the kernel's launch arithmetic holds it in int32" if spec.int32 else \
        "it is serialized as int64"
    return f"must {where} in {low} .. {high}, as {why} (got {shown})"


def _float32(items: list, where: str, shown: str) -> Tuple[str, str]:
    note = ""
    for v in items:  # kernels take FLOAT fields as float32 (the ONNX FLOAT type)
        if not math.isfinite(v):
            continue
        with np.errstate(over="ignore"):
            narrowed = float(np.float32(v))
        if math.isinf(narrowed):
            return (f"must {where} representable as float32 (|value| <= {FLOAT32_MAX!r}; "
                    f"{v!r} becomes inf) (got {shown})"), ""
        if not note and abs(narrowed - v) > abs(v) * 2.0 ** -24:
            note = f"{v!r} loses precision as float32 (the kernel receives {narrowed!r})"
    return "", note


__all__ = ["FLOAT32_MAX", "INT32", "INT64", "nan_problem", "problem", "type_hint"]
