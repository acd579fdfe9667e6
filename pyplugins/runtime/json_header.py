"""Strict, bounded JSON for the small headers pyplugins reads back from engines.

An engine file travels, so a header read from it may be corrupt or hostile. Python's ``json``
recurses once per nesting level (a header of ``[[[[...`` raises ``RecursionError``), turns
``1e400`` into inf and accepts ``NaN`` and ``Infinity``. :func:`object_from_json` refuses all of
these, with a :class:`~pyplugins.errors.SerializationError` saying what and how deep or large:
a header is at most :data:`MAX_BYTES` bytes, nested at most :data:`MAX_DEPTH` levels, and holds
only finite numbers. The nesting is measured by a scan before ``json`` parses anything.

Example:
    >>> object_from_json(b'{"format": 1, "plugin": "P"}', what="the header")
    {'format': 1, 'plugin': 'P'}
    >>> object_from_json(b'{"format": 1e400}', what="the header")
    Traceback (most recent call last):
    ...
    pyplugins.errors.SerializationError: the header holds the number 1e400, which is not finite (as
    a float it is inf); a header holds only finite numbers
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict

from pyplugins.errors import SerializationError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "object_from_json"]

#: The largest header accepted, in bytes (pyplugins writes about 60).
MAX_BYTES = 4096
#: The deepest nesting of arrays and objects accepted (pyplugins writes one object).
MAX_DEPTH = 8


def object_from_json(raw: bytes, *, what: str) -> Dict[str, Any]:
    """The JSON object ``raw`` holds (UTF-8), refusing what a header never holds.

    Args:
        raw: the bytes.
        what: names the header in messages (``"plugin 'P': the '_pyplugins' header"``).

    Raises:
        SerializationError: more than :data:`MAX_BYTES` bytes, nesting deeper than
            :data:`MAX_DEPTH`, a non-finite number (``NaN``, ``Infinity``, ``1e400``), bytes that
            are not UTF-8 JSON, or a value other than an object.
    """
    if len(raw) > MAX_BYTES:
        msg = f"{what} is {len(raw)} bytes, over the limit of {MAX_BYTES} for a header"
        raise SerializationError(msg)
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError as err:
        msg = f"{what} is not UTF-8 text ({err})"
        raise SerializationError(msg) from None
    depth = _depth(text)
    if depth > MAX_DEPTH:
        msg = (f"{what} nests arrays or objects {depth} levels deep, over the limit of "
               f"{MAX_DEPTH} for a header")
        raise SerializationError(msg)
    try:
        doc = json.loads(text, parse_constant=_refuse_constant(what),
                         parse_float=_finite_float(what))
    except SerializationError:
        raise
    except ValueError as err:
        msg = f"{what} is not valid JSON ({err})"
        raise SerializationError(msg) from None
    if not isinstance(doc, dict):
        msg = f"{what} must be a JSON object (got a {type(doc).__name__})"
        raise SerializationError(msg)
    return doc


def _depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside strings (unbalanced text is json's to refuse)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _refuse_constant(what: str) -> Any:
    def refuse(name: str) -> Any:
        msg = f"{what} holds {name}, which is not a finite number; a header holds only those"
        raise SerializationError(msg)
    return refuse


def _finite_float(what: str) -> Any:
    def parse(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            msg = (f"{what} holds the number {text}, which is not finite (as a float it is "
                   f"{value}); a header holds only finite numbers")
            raise SerializationError(msg)
        return value
    return parse
