"""The serialization checks: ``serialize()`` deterministic across TensorRT's calls, sizes agreeing.

Example:
    >>> [v.check for v in serialization_violations([b"ab", b"ac"], 2, b"ab")]
    ['serialize_nondeterministic']
    >>> [v.check for v in serialization_violations([b"ab"], 5, b"ab")]
    ['serialize']
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from pyplugins.checker.checks import Violation

__all__ = ["serialization_violations"]


def _first_difference(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def serialization_violations(results: Sequence[Optional[bytes]], size: int,
                             written: Optional[bytes]) -> List[Violation]:
    """Check one serialization: every ``serialize()`` result, the size TensorRT used, the bytes.

    Args:
        results: what each ``serialize()`` call returned (None where it failed), in call order.
        size: what ``getSerializationSize`` gave TensorRT.
        written: the bytes ``serialize`` put in TensorRT's buffer (None: buffer unwritten).
    """
    found = []
    good = [r for r in results if r is not None]
    distinct = list(dict.fromkeys(good))
    if len(distinct) > 1:
        a, b = distinct[0], distinct[1]
        msg = (f"serialize() returned {len(distinct)} different results in {len(results)} calls "
               f"(lengths {[len(r) for r in good]}; first difference at byte "
               f"{_first_difference(a, b)}): TensorRT calls it 2-3 times for one serialization and "
               f"mixes the results, so the engine would hold corrupt bytes. Make serialize() "
               f"depend only on the plugin's state (no counters, clocks, ids or unordered sets).")
        found.append(Violation("serialize_nondeterministic", msg, "serialize"))
    if written is None:
        msg = ("serialize() failed, so TensorRT's buffer was left unwritten and the engine holds "
               f"{size} uninitialised bytes for this plugin.")
        found.append(Violation("serialize", msg, "serialize"))
    elif size != len(written):
        msg = (f"get_serialization_size() returned {size} but serialize() returns {len(written)} "
               f"bytes: TensorRT copies get_serialization_size() bytes, so the engine gets "
               f"{'bytes read past the end' if size > len(written) else 'truncated state'}. "
               f"Remove get_serialization_size() (the default is len(serialize())) or fix it.")
        found.append(Violation("serialize", msg, "get_serialization_size"))
    return found


