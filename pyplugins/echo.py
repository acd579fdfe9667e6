"""Values echoed in error messages, capped to a head, a length and a tail.

Every message that repeats a user's value (fields, field readers, serialization) goes through
:func:`echo`, so a 1M-element INTS gives a one-line message, not a 3 MB one.

Example:
    >>> echo([1, -1, 0, 0])
    '[1, -1, 0, 0]'
    >>> echo(list(range(1_000_000)))
    '[0, 1, 2, 3, 4, 5, ..., 999998, 999999] (1000000 elements)'
    >>> echo("x" * 200)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxxx' (202 characters)"
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Longest echo of a value, in characters, before it is cut to head ... tail.
LIMIT = 80
_HEAD, _TAIL = 6, 2  # elements kept of a long sequence


def echo(value: Any, limit: int = LIMIT) -> str:
    """``repr(value)``, or for a long one its head, its length and its tail.

    A list, tuple or NumPy array of more than ``_HEAD + _TAIL`` elements keeps its first and
    last elements and states its length (without building the whole repr); any other repr longer
    than ``limit`` keeps its first half and last quarter and states its length in characters.
    """
    if isinstance(value, np.ndarray):
        if value.ndim != 1 and value.size > _HEAD + _TAIL:
            return f"<{value.dtype} array of shape {list(value.shape)}>"
        value = value.tolist()
    if isinstance(value, (list, tuple)) and len(value) > _HEAD + _TAIL:
        opener, closer = ("[", "]") if isinstance(value, list) else ("(", ")")
        head = ", ".join(_item(v) for v in value[:_HEAD])
        tail = ", ".join(_item(v) for v in value[len(value) - _TAIL:])
        return f"{opener}{head}, ..., {tail}{closer} ({len(value)} elements)"
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]}...{text[len(text) - limit // 4:]} ({len(text)} characters)"


def _item(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    text = repr(value)
    return text if len(text) <= 20 else text[:17] + "..."


__all__ = ["LIMIT", "echo"]
