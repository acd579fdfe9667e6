"""The ``clone_shares_state`` check: a clone must be a new, whole object that shares nothing
mutable with its source (§1.2, §10.2).

Example:
    >>> class Obj:
    ...     pass
    >>> a, b = Obj(), Obj()
    >>> a._pp_num_outputs = b._pp_num_outputs = 1
    >>> a._pp_type = b._pp_type = "X"
    >>> a.pads = b.pads = (1, 1)
    >>> clone_violations(a, b)
    []
"""

from __future__ import annotations

import enum
import types
from typing import Any, List

import numpy as np

from pyplugins.emulator.checks import Violation
from pyplugins.emulator.enums import PybindEnum

__all__ = ["clone_violations"]

_IMMUTABLE_TYPES = (int, float, complex, str, bytes, bool, type(None), range, type(Ellipsis),
                    enum.Enum, PybindEnum, np.generic, np.dtype, type, types.FunctionType,
                    types.BuiltinFunctionType, types.ModuleType)


# Compiled CuPy kernels are immutable handles; sharing them between clones is safe.
_CUPY_IMMUTABLE = frozenset(("RawKernel", "RawModule", "Function", "Module", "ElementwiseKernel"))


def _immutable(value: Any) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable(v) for v in value)
    kind = type(value)
    if getattr(kind, "__pp_shared__", False):  # pyplugins types that declare it
        return True
    if kind.__module__.startswith("cupy") and kind.__name__ in _CUPY_IMMUTABLE:
        return True
    return isinstance(value, _IMMUTABLE_TYPES)


def clone_violations(source: Any, clone: Any, label: str = "clone()") -> List[Violation]:
    """What is wrong with ``clone`` as a clone of ``source`` (identity, shared mutable state)."""
    if clone is source:
        msg = (f"{label} returned the source object itself: TensorRT destroys and configures "
               f"each object separately, so both would be one plugin. Build a new instance.")
        return [Violation("clone_shares_state", msg, "clone")]
    found = []
    missing = []
    if getattr(clone, "_pp_num_outputs", None) is None:
        missing.append("num_outputs is unset (-1)")
    if getattr(clone, "_pp_type", None) is None:
        missing.append("plugin_type is None")
    if missing:
        msg = (f"{label} returned a {type(clone).__name__} whose {' and '.join(missing)}: it did "
               f"not run IPluginV2DynamicExt.__init__ and set the identity properties. They live "
               f"in C++, not in __dict__, so __dict__.update() does not copy them; construct the "
               f"clone with the class constructor, then copy the state (§1.2, §10.2).")
        found.append(Violation("clone_shares_state", msg, "clone"))
    try:
        src_dict, clone_dict = vars(source), vars(clone)
    except TypeError:
        return found
    for name, value in clone_dict.items():
        if name in src_dict and src_dict[name] is value and not _immutable(value):
            msg = (f"{label}: attribute {name!r} of the clone is the same "
                   f"{type(value).__module__}.{type(value).__qualname__} object as the source's; "
                   f"TensorRT configures, runs and destroys clones independently, so a change "
                   f"through one shows in the other (and device buffers get freed twice). Copy "
                   f"it in clone() (copy.deepcopy, list(...), arr.copy()).")
            found.append(Violation("clone_shares_state", msg, "clone"))
    return found


