"""Python idioms that pybind11 objects refuse in TensorRT: the error, and a note of its use (§12).

The emulator's stand-ins raise what pybind11 raises when plugin code copies or pickles a plugin,
compares ``Dims`` with ``Dims``, hashes a ``Dims`` or reads ``fc[-1]``, and note the idiom here;
:func:`pyplugins.checker.checks.pybind.idiom_violations` turns the notes into violations that say
what TensorRT does and how to write it instead. This module imports nothing from the emulator (its
package only defines the registry) so that every stand-in can use it.

Example:
    >>> _ = take()  # forget earlier notes
    >>> try:
    ...     refuse("dims_eq", TypeError("__eq__(): incompatible function arguments"))
    ... except TypeError as err:
    ...     print(err)
    __eq__(): incompatible function arguments
    >>> take()
    ['dims_eq']
"""

from __future__ import annotations

import threading
from typing import Dict, List, NoReturn

__all__ = ["IDIOMS", "refuse", "take"]

#: Idiom -> (what TensorRT does, how to write it instead).
IDIOMS: Dict[str, tuple] = {
    "copy": ("copy.copy/copy.deepcopy/pickle of a plugin or creator raises 'TypeError: cannot "
             "pickle ... object' in TensorRT (pybind11 objects cannot be copied or pickled), so a "
             "clone() written that way returns nullptr and the network build fails",
             "build the clone with the class constructor (which sets num_outputs and the names, "
             "held in C++) and copy __dict__, e.g. `c = type(self)(...); "
             "c.__dict__.update(copy.deepcopy(self.__dict__))`; serialize explicit fields"),
    "dims_eq": ("`Dims == Dims` (and `!=`, `in`) raises TypeError in TensorRT: Dims.__eq__ only "
                "accepts a list or a tuple",
                "compare `tuple(a.dims) == tuple(b.dims)`"),
    "dims_hash": ("a Dims is unhashable in TensorRT (TypeError: unhashable type: 'tensorrt.Dims'), so it "
                  "cannot be a dict key or a set member",
                  "use `tuple(desc.dims)` as the key"),
    "fc_negative": ("`fc[-1]` on the PluginFieldCollection_ that create_plugin receives reads out "
                    "of bounds in TensorRT (the binding checks only index < len; undefined "
                    "behaviour, usually a crash or garbage)",
                    "index with `fc[len(fc) - 1]`, or iterate and match `f.name`"),
}

# Per thread: checks run in several threads at once (a thread storm, Polygraphy's workers), and a
# plugin's idiom belongs to the check that runs it, never to a neighbour's report.
_local = threading.local()


def _seen() -> List[str]:
    if not hasattr(_local, "seen"):
        _local.seen = []
    return _local.seen


def refuse(idiom: str, error: BaseException) -> NoReturn:
    """Note, for this thread, that plugin code used ``idiom`` (a key of :data:`IDIOMS`), then
    raise ``error``."""
    if idiom not in IDIOMS:
        msg = f"unknown idiom {idiom!r} (known: {sorted(IDIOMS)})"
        raise KeyError(msg)
    if idiom not in _seen():
        _seen().append(idiom)
    raise error


def take() -> List[str]:
    """The idioms this thread noted since its last call, in first-use order (and forget them)."""
    found = list(_seen())
    _seen().clear()
    return found
