"""``supports_format_combination`` helpers that keep TensorRT's lower-position rule.

TensorRT asks ``supports_format_combination(pos, in_out, num_inputs)`` for one position at a
time, inputs first then outputs. ``in_out[0..pos-1]`` hold values the plugin already accepted,
``in_out[pos]`` is the candidate, and entries **after** ``pos`` are junk that must not be read
(docs/trt-protocol.md §2.1). A constraint between two tensors ("the output has the input's type") therefore
has to be checked when TensorRT asks about the *later* of the two. :func:`check` does that for
you: give it the allowed types and the equalities, it reads only ``in_out[pos]`` and the earlier
entries a constraint names.

Example (a plugin taking FLOAT or HALF, every tensor of the same type, LINEAR only)::

    def supports_format_combination(self, pos, in_out, num_inputs):
        return formats.check(pos, in_out, num_inputs,
                             dtypes=(trt.DataType.FLOAT, trt.DataType.HALF), same_as=0)

:class:`pyplugins.Plugin` does exactly this by default, from its ``dtypes`` and ``same_as``
class attributes. Per-tensor types: ``dtypes={0: ("float32", "float16"), -1: ("int32",)}``
(negative indices count from the last output).

Example:
    >>> import pyplugins.trt as trt
    >>> from pyplugins.runtime import formats
    >>> F, H = trt.DataType.FLOAT, trt.DataType.HALF
    >>> desc = lambda t: trt.PluginTensorDesc([2, 3], t, trt.TensorFormat.LINEAR)
    >>> formats.check(1, [desc(H), desc(F)], 1, dtypes=(F, H), same_as=0)
    False
    >>> formats.check(1, [desc(H), desc(H)], 1, dtypes=(F, H), same_as=0)
    True
"""

from __future__ import annotations

import functools
from typing import Any, Hashable, List, Mapping, Optional, Sequence, Tuple, Union

import pyplugins.trt as trt
from pyplugins import dtypes as _dtypes
from pyplugins.errors import PluginDefinitionError

DTypeLike = Any
DTypes = Union[None, Sequence[DTypeLike], Mapping[int, Sequence[DTypeLike]]]
SameAs = Union[None, int, Mapping[int, int]]


def data_type(value: DTypeLike) -> Any:
    """A ``trt.DataType`` from a member, a member name (``"HALF"``), a short name (``"fp16"``) or
    a NumPy dtype-like (``"float16"``, ``np.float16``).

    Raises:
        PluginDefinitionError: for something that names no TensorRT data type.
    """
    if isinstance(value, trt.DataType):
        return value
    try:
        return _data_type_cached(value)
    except TypeError:  # unhashable (a dtype object is hashable; lists are not)
        return _data_type_uncached(value)


@functools.lru_cache(maxsize=256)
def _data_type_cached(value: Hashable) -> Any:
    return _data_type_uncached(value)


def _data_type_uncached(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return getattr(trt.DataType, _dtypes.from_text(value).trt_name)
        except (ValueError, AttributeError):
            pass  # reported below, with the plugin's context
    try:
        return _dtypes.trt_from_numpy(value, trt)
    except TypeError:
        pass
    msg = (f"{value!r} names no TensorRT data type; use trt.DataType.X, a name like 'HALF' or "
           f"'fp16', or a NumPy dtype like 'float16'.")
    raise PluginDefinitionError(msg)


def _index(i: int, n: int, what: str) -> int:
    if not isinstance(i, int) or isinstance(i, bool) or not -n <= i < n:
        msg = f"formats: {what} index {i!r} is out of range for {n} tensors (inputs + outputs)"
        raise PluginDefinitionError(msg)
    return i % n


def _allowed(dtypes: DTypes, pos: int, n: int) -> Optional[Tuple[Any, ...]]:
    if dtypes is None:
        return None
    if isinstance(dtypes, Mapping):
        for key, value in dtypes.items():
            if _index(key, n, "dtypes") == pos:
                return tuple(data_type(d) for d in _as_seq(value))
        return None
    return tuple(data_type(d) for d in _as_seq(dtypes))


def _as_seq(value: Any) -> Sequence[Any]:
    return value if isinstance(value, (list, tuple)) else (value,)


def partners(same_as: SameAs, pos: int, n: int) -> List[int]:
    """Earlier positions whose type ``in_out[pos]`` must equal (all of them < ``pos``).

    ``same_as=k`` means every tensor has tensor ``k``'s type; ``{i: k}`` means tensor ``i`` has
    tensor ``k``'s type. Each equality is checked at the later position of the pair.

    Example:
        >>> partners(0, 2, 3), partners({2: 0}, 1, 3), partners({0: 2}, 2, 3)
        ([0], [], [0])
    """
    if same_as is None:
        return []
    if isinstance(same_as, Mapping):
        pairs = [(_index(i, n, "same_as"), _index(k, n, "same_as")) for i, k in same_as.items()]
    else:
        k = _index(same_as, n, "same_as")
        pairs = [(i, k) for i in range(n) if i != k]
    out = set()
    for a, b in pairs:
        if a == pos and b < pos:
            out.add(b)
        elif b == pos and a < pos:
            out.add(a)
    return sorted(out)


def check(pos: int, in_out: Sequence[Any], num_inputs: int, *, dtypes: DTypes = None,
          same_as: SameAs = None, linear: bool = True) -> bool:
    """Whether ``in_out[pos]`` is acceptable, reading no entry after ``pos``.

    Args:
        pos: the position TensorRT asks about (inputs ``0..num_inputs-1``, then outputs).
        in_out: TensorRT's list of ``PluginTensorDesc`` (entries after ``pos`` are junk).
        num_inputs: the number of inputs (unused by the rules; kept for TensorRT's signature).
        dtypes: allowed data types: None (any), a sequence applying to every tensor, or
            ``{index: sequence}`` per tensor (negative indices count from the end; tensors not
            listed accept any type).
        same_as: ``k`` (every tensor has tensor ``k``'s type) or ``{i: k}`` pairs, or None.
        linear: accept only ``TensorFormat.LINEAR`` (what zero-copy views need).

    Returns:
        True when every rule that involves ``pos`` and earlier positions holds.
    """
    desc = in_out[pos]
    if linear and desc.format != trt.TensorFormat.LINEAR:
        return False
    n = len(in_out)
    allowed = _allowed(dtypes, pos, n)
    if allowed is not None and desc.type not in allowed:
        return False
    for k in partners(same_as, pos, n):
        if in_out[k].type != desc.type:
            return False
    return True


class Formats:
    """A reusable rule set: ``Formats(dtypes=..., same_as=..., linear=True)(pos, in_out, n_in)``.

    Normalizes the data types once, so a plugin can keep one as a class attribute.

    Example:
        >>> import pyplugins.trt as trt
        >>> rule = Formats(dtypes=("float32", "float16"), same_as=0)
        >>> d = trt.PluginTensorDesc([4], trt.DataType.HALF, trt.TensorFormat.LINEAR)
        >>> rule(0, [d], 1)
        True
    """

    def __init__(self, *, dtypes: DTypes = None, same_as: SameAs = None,
                 linear: bool = True) -> None:
        if isinstance(dtypes, Mapping):
            self.dtypes: DTypes = {k: tuple(data_type(d) for d in _as_seq(v))
                                   for k, v in dtypes.items()}
        elif dtypes is not None:
            self.dtypes = tuple(data_type(d) for d in _as_seq(dtypes))
        else:
            self.dtypes = None
        self.same_as = dict(same_as) if isinstance(same_as, Mapping) else same_as
        self.linear = linear

    def __call__(self, pos: int, in_out: Sequence[Any], num_inputs: int) -> bool:
        return check(pos, in_out, num_inputs, dtypes=self.dtypes, same_as=self.same_as,
                     linear=self.linear)

    def __repr__(self) -> str:
        return f"Formats(dtypes={self.dtypes!r}, same_as={self.same_as!r}, linear={self.linear})"


def combinations(rule: Any, n_in: int, n_out: int, candidates: Sequence[Any]
                 ) -> List[Tuple[Any, ...]]:
    """Every (type, format) tuple ``rule`` accepts, found the way TensorRT's search asks:
    position by position, with junk after ``pos``. For documentation and tests.

    Args:
        rule: a callable ``(pos, in_out, num_inputs) -> bool``.
        candidates: ``PluginTensorDesc`` values to try at each position.
    """
    n = n_in + n_out
    found: List[Tuple[Any, ...]] = []

    def search(prefix: List[Any]) -> None:
        pos = len(prefix)
        if pos == n:
            found.append(tuple((d.type, d.format) for d in prefix))
            return
        for cand in candidates:
            junk = [cand] * (n - pos - 1)
            if rule(pos, prefix + [cand] + junk, n_in):
                search(prefix + [cand])

    search([])
    return found


__all__ = ["Formats", "check", "combinations", "data_type", "partners"]
