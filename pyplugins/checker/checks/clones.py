"""The ``clone_shares_state`` check: a clone must be a new, whole object, and state it shares with
its source must not change under either of them (§1.2, §10.2).

NVIDIA's samples clone with ``cloned.__dict__.update(self.__dict__)``, so clones share every
attribute value with their source. That is harmless while nobody changes the shared objects (a
``pads`` array read by both, a list that ``configure_plugin`` replaces rather than edits), and a
bug when one object changes one in place: TensorRT configures, runs and destroys clones
independently, so the other object sees the change. :class:`SharedState` therefore records,
when a clone is made, a fingerprint of every mutable object reachable from both (lists, dicts,
sets, bytearrays, writeable NumPy/CuPy arrays, plain objects' ``__dict__``), and after every
later callback compares: a changed object is reported with the attribute, the object whose
callback changed it and the live objects that saw the change. Immutable values (numbers,
strings, tuples of them, read-only arrays, types marked ``__pp_shared__ = True``) are not
watched. :func:`clone_violations` checks the clone itself (not the source, identity set).

Example:
    >>> class Obj:
    ...     pass
    >>> a, b = Obj(), Obj()
    >>> a.pads = b.pads = [1, 1]
    >>> a.dims = b.dims = (2, 3)
    >>> watch = SharedState()
    >>> watch.track(a, "P1", b, "P2")
    >>> watch.changes(b, "configure_plugin", {}.get)  # nothing changed yet
    []
    >>> b.pads.append(2)
    >>> [v.check for v in watch.changes(b, "configure_plugin", {}.get)]
    ['clone_shares_state']
"""

from __future__ import annotations

import enum
import hashlib
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from pyplugins.checker.checks import Violation
from pyplugins.emulator.enums import PybindEnum

__all__ = ["SharedState", "clone_violations"]

_IMMUTABLE_TYPES = (int, float, complex, str, bytes, bool, type(None), range, type(Ellipsis),
                    enum.Enum, PybindEnum, np.generic, np.dtype, type, types.FunctionType,
                    types.BuiltinFunctionType, types.ModuleType)


# Compiled CuPy kernels are immutable handles; sharing them between clones is safe.
_CUPY_IMMUTABLE = frozenset(("RawKernel", "RawModule", "Function", "Module", "ElementwiseKernel"))


def _immutable(value: Any) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable(v) for v in value)
    if isinstance(value, np.ndarray):
        return not value.flags.writeable
    kind = type(value)
    if getattr(kind, "__pp_shared__", False):  # pyplugins types that declare it
        return True
    if kind.__module__.startswith("cupy") and kind.__name__ in _CUPY_IMMUTABLE:
        return True
    return isinstance(value, _IMMUTABLE_TYPES)


def clone_violations(source: Any, clone: Any, label: str = "clone()") -> List[Violation]:
    """What is wrong with ``clone`` itself as a clone of ``source``: it is ``source``, or it lacks
    the identity properties (shared state is :class:`SharedState`'s business)."""
    if clone is source:
        msg = (f"{label} returned the source object itself: TensorRT destroys and configures "
               f"each object separately, so both would be one plugin. Build a new instance.")
        return [Violation("clone_shares_state", msg, "clone")]
    found = []
    missing = []
    v3 = hasattr(type(clone), "plugin_name")  # IPluginV3: plugin_name, and no num_outputs at runtime
    for slot, text in (("_pp_num_outputs", "num_outputs is unset (-1)"),
                       ("_pp_name", "plugin_name is None") if v3 else
                       ("_pp_type", "plugin_type is None")):
        if getattr(clone, slot, None) is None and (not v3 or getattr(source, slot, None)):
            missing.append(text)
    if missing:
        base = "the base __init__s" if v3 else "IPluginV2DynamicExt.__init__"
        msg = (f"{label} returned a {type(clone).__name__} whose {' and '.join(missing)}: it did "
               f"not run {base} and set the identity properties. They live "
               f"in C++, not in __dict__, so __dict__.update() does not copy them; construct the "
               f"clone with the class constructor, then copy the state (§1.2, §10.2).")
        found.append(Violation("clone_shares_state", msg, "clone"))
    return found


# -- shared state that changes -----------------------------------------------------------------

_DEPTH = 4  # how deep the walk goes into containers and plain objects


def _is_cupy_array(value: Any) -> bool:
    kind = type(value)
    return kind.__name__ == "ndarray" and (kind.__module__ or "").startswith("cupy")


def _key(value: Any) -> int:
    """Identity of what a change goes through: an array's memory owner, else the object."""
    while isinstance(value, np.ndarray) and isinstance(value.base, np.ndarray):
        value = value.base
    return id(value)


def _reachable(value: Any, path: str, depth: int = _DEPTH) -> Iterator[Tuple[str, Any]]:
    """``(path, object)`` for every mutable object reachable from ``value`` (itself included)."""
    if _immutable(value) or depth < 0:
        return
    if isinstance(value, tuple):  # immutable itself, but holds something mutable
        for i, item in enumerate(value):
            yield from _reachable(item, f"{path}[{i}]", depth - 1)
        return
    yield path, value
    if isinstance(value, (list, set)):
        items = enumerate(value) if isinstance(value, list) else ((None, v) for v in value)
        for i, item in items:
            yield from _reachable(item, f"{path}[{'…' if i is None else i}]", depth - 1)
    elif isinstance(value, dict):
        for k, item in value.items():
            yield from _reachable(item, f"{path}[{k!r}]", depth - 1)
    elif hasattr(value, "__dict__") and not isinstance(value, type) \
            and not hasattr(value, "enqueue") and not _is_cupy_array(value):
        for k, item in vars(value).items():
            yield from _reachable(item, f"{path}.{k}", depth - 1)


def _fingerprint(value: Any, depth: int = _DEPTH) -> Any:
    """A value that changes when ``value``'s contents change (arrays by a hash of their bytes)."""
    if depth < 0:
        return "…"
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value).view(np.uint8).tobytes() if value.size else b""
        return ("ndarray", value.shape, value.dtype.str, hashlib.sha1(data).hexdigest())
    if _is_cupy_array(value):
        return ("cupy", value.shape, value.dtype.str,
                hashlib.sha1(value.get().tobytes()).hexdigest())
    if isinstance(value, (bytearray, memoryview)):
        return ("bytes", bytes(value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_fingerprint(v, depth - 1) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), _fingerprint(v, depth - 1)) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(repr(v) for v in value)))
    if _immutable(value):
        return ("value", repr(value))
    if hasattr(value, "__dict__") and not hasattr(value, "enqueue"):
        return ("object", type(value).__qualname__,
                tuple((k, _fingerprint(v, depth - 1)) for k, v in vars(value).items()))
    return ("opaque", id(value))  # nothing to compare: a change cannot be seen


@dataclass
class _Shared:
    """One mutable object shared by several plugin objects, and its last fingerprint."""

    obj: Any
    fingerprint: Any
    holders: List[Tuple[Any, str, str]] = field(default_factory=list)  # (object, label, path)
    via: str = "clone"  # the call that made the objects share it: clone, attach_to_context


class SharedState:
    """The mutable objects clones share with their sources, watched for changes.

    :meth:`track` is called for each clone as it is made, :meth:`changes` after every later
    callback, :meth:`release` when an object is destroyed (it no longer sees anything).
    """

    def __init__(self) -> None:
        self._shared: Dict[int, _Shared] = {}

    def track(self, source: Any, source_label: str, clone: Any, clone_label: str,
              via: str = "clone") -> None:
        """Note every mutable object reachable from both ``source`` and ``clone`` (made by the
        callback ``via``: ``clone``, or V3's ``attach_to_context``)."""
        try:
            src_dict, clone_dict = vars(source), vars(clone)
        except TypeError:
            return
        mine: Dict[int, Tuple[str, Any]] = {}
        for name, value in src_dict.items():
            for path, obj in _reachable(value, name):
                mine.setdefault(_key(obj), (path, obj))
        for name, value in clone_dict.items():
            for path, obj in _reachable(value, name):
                key = _key(obj)
                if key not in mine:
                    continue
                entry = self._shared.get(key)
                if entry is None:
                    try:
                        fingerprint = _fingerprint(obj)
                    except Exception:  # noqa: BLE001 - a value we cannot read: not watched
                        continue
                    entry = self._shared[key] = _Shared(obj, fingerprint, via=via)
                for holder, label, where in ((source, source_label, mine[key][0]),
                                             (clone, clone_label, path)):
                    if not any(h is holder for h, _, _ in entry.holders):
                        entry.holders.append((holder, label, where))

    def release(self, obj: Any) -> None:
        """``obj`` was destroyed: it no longer sees changes."""
        for entry in self._shared.values():
            entry.holders = [h for h in entry.holders if h[0] is not obj]

    def changes(self, caller: Any, method: str, label: Callable[[Any], Optional[str]]
                ) -> List[Violation]:
        """After ``caller.method()`` returned: a violation per shared object it changed (or that
        changed during it) while another live object held it.

        Args:
            caller: the object whose callback just ran.
            method: the callback's name.
            label: the object's label (``"P2 CircPad"``), or None when it has none.
        """
        found = []
        for entry in self._shared.values():
            try:
                now = _fingerprint(entry.obj)
            except Exception:  # noqa: BLE001 - unreadable now (e.g. freed device memory)
                continue
            if now == entry.fingerprint:
                continue
            entry.fingerprint = now
            writer = next((h for h in entry.holders if h[0] is caller), None)
            seen = [h for h in entry.holders if h[0] is not caller]
            if not seen or (writer is None and len(entry.holders) < 2):
                continue
            kind = f"{type(entry.obj).__module__}.{type(entry.obj).__qualname__}"
            others = " and ".join(f"{lbl}" for _, lbl, _ in seen)
            if writer is not None:
                what = (f"{writer[1]}'s {method}() changed attribute {writer[2]!r} (a {kind}) "
                        f"that it shares with {others} since {entry.via}()")
            else:
                what = (f"attribute {seen[0][2]!r} (a {kind}), shared by {others} since "
                        f"{entry.via}(), changed during {method}() of "
                        f"{label(caller) or type(caller).__name__}")
            msg = (f"{what}: the change shows in every object holding it, but TensorRT "
                   f"configures, runs and destroys clones independently. Copy it in "
                   f"{entry.via}() (copy.deepcopy, list(...), arr.copy()), or assign a new "
                   f"object instead of changing the shared one in place.")
            check = "attach_shares_state" if entry.via == "attach_to_context" else \
                "clone_shares_state"
            found.append(Violation(check, msg, entry.via))
        return found
