"""Creator discovery: register the creators a plugin module defines but registers only in ``__main__``.

It also finds the other half of that pattern (:func:`unbound_global_violations`): plugin methods
that read a module global only the ``__main__`` block defines (the samples' ``pads``, §10.11),
a NameError in every process TensorRT runs the plugin in, found here without running ``enqueue``.

NVIDIA's sample plugin modules define an ``IPluginCreator`` subclass and register an instance only
under ``if __name__ == "__main__":``. ``pyplugins check`` imports such a module (never as
``__main__``), so :func:`register_defined_creators` does what that block would: it instantiates
each creator class the module defines, when none of them is registered, registers it in the
default namespace ``""``, keeps it alive on the module, and remembers a note that the report shows
(:func:`notes_for`). A creator class whose constructor needs arguments or raises is left alone
and named in the note.

Example:
    >>> import types
    >>> from pyplugins import emulator as trt
    >>> mod = types.ModuleType("_discovery_doc")
    >>> class DocCreator(trt.IPluginCreator):
    ...     def __init__(self):
    ...         trt.IPluginCreator.__init__(self)
    ...         self.name, self.plugin_version = "DocPlugin", "1"
    >>> DocCreator.__module__ = mod.__name__
    >>> mod.DocCreator = DocCreator
    >>> [type(c).__name__ for c in register_defined_creators(mod)]
    ['DocCreator']
    >>> print(notes_for(trt.get_plugin_registry().get_creator("DocPlugin", "1"))[0][:66])
    the module registers no creator at import (NVIDIA's samples do so
    >>> _ = trt.get_plugin_registry().deregister_creator(mod._pyplugins_discovered[0])
"""

from __future__ import annotations

import builtins
import dis
import functools
import sys
from types import CodeType, ModuleType
from typing import Any, Dict, Iterator, List, Set, Tuple

from pyplugins.emulator.bases import IPluginCreatorInterface, IPluginV2
from pyplugins.checker.checks import Violation
from pyplugins.emulator.registry import get_plugin_registry

__all__ = ["notes_for", "register_defined_creators", "unbound_global_violations"]

_NOTES: Dict[int, List[str]] = {}


def _defined_creator_classes(module: ModuleType) -> List[type]:
    found = []
    for value in list(vars(module).values()):
        if (isinstance(value, type) and issubclass(value, IPluginCreatorInterface)
                and value.__module__ == module.__name__ and value not in found):
            found.append(value)
    return found


def register_defined_creators(module: ModuleType) -> List[Any]:
    """Register an instance of each creator class ``module`` defines, if it registered none.

    Args:
        module: a freshly imported plugin module.

    Returns:
        The creators registered here (empty when the module registered one itself, defines
        none, or every constructor failed).
    """
    classes = _defined_creator_classes(module)
    registry = get_plugin_registry()
    if not classes or any(isinstance(c, tuple(classes)) for c in registry.all_creators):
        return []
    registered, failed = [], []
    for cls in classes:
        try:
            creator = cls()
        except Exception as err:  # noqa: BLE001 - a creator needing arguments: not ours to guess
            failed.append(f"{cls.__name__}() raised {type(err).__name__}: {err}")
            continue
        if registry.register_creator(creator, ""):
            registered.append(creator)
        else:
            failed.append(f"{cls.__name__}: register_creator returned False (name or "
                          f"plugin_version unset, or the key is taken)")
    text = (f"the module registers no creator at import (NVIDIA's samples do so only under "
            f"`if __name__ == \"__main__\":`), so check instantiated and registered "
            f"{', '.join(type(c).__name__ for c in registered) or 'none'} in namespace \"\" "
            f"as that block would")
    if failed:
        text += f"; not registered: {'; '.join(failed)}"
    for creator in registered:
        _NOTES[id(creator)] = [text]
    module._pyplugins_discovered = registered  # the registry's keep-alive, as __main__ globals
    return registered


def notes_for(creator: Any) -> List[str]:
    """The discovery notes about ``creator`` (empty unless this module registered it)."""
    return list(_NOTES.get(id(creator), []))


def _codes(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


def _global_uses(cls: type) -> Iterator[Tuple[str, str, Set[str], Set[str], dict]]:
    """(method, qualname, globals read, globals written, the function's globals) of each function
    ``cls`` defines."""
    for name, value in vars(cls).items():
        func = getattr(value, "__func__", value)
        code = getattr(func, "__code__", None)
        if not isinstance(code, CodeType):
            continue
        reads, writes = _global_names(code)
        yield name, f"{cls.__name__}.{name}", set(reads), set(writes), func.__globals__


@functools.lru_cache(maxsize=4096)
def _global_names(code: CodeType) -> Tuple[frozenset, frozenset]:
    """(globals read, globals written) by ``code`` and its nested code objects. Cached: a model
    with many nodes of one plugin checks the same methods again and again, and the bytecode
    walk was half of each node's check time."""
    reads: Set[str] = set()
    writes: Set[str] = set()
    for sub in _codes(code):
        for ins in dis.get_instructions(sub):
            if ins.opname == "LOAD_GLOBAL":
                reads.add(str(ins.argval))
            elif ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
                writes.add(str(ins.argval))
    return frozenset(reads), frozenset(writes)


def unbound_global_violations(creator: Any) -> List[Violation]:
    """Plugin/creator methods that read a global the module does not define after import.

    Args:
        creator: the creator under check; its module's plugin and creator classes are scanned.

    Returns:
        One ``fresh_process`` violation per method reading such names (none are read when a
        method also assigns the name with ``global``).
    """
    module = sys.modules.get(type(creator).__module__)
    if module is None:
        return []
    classes = [v for v in vars(module).values() if isinstance(v, type)
               and issubclass(v, (IPluginV2, IPluginCreatorInterface))
               and v.__module__ == module.__name__]
    uses = [use for cls in classes for use in _global_uses(cls)]
    written = set().union(*(w for _, _, _, w, _ in uses)) if uses else set()
    known = set(vars(builtins)) | written
    found = []
    for method, qualname, reads, _, scope in uses:
        missing = sorted(reads - known - set(scope))
        if missing:
            names = ", ".join(f"`{n}`" for n in missing)
            msg = (f"{qualname} reads the module global {names}, which the module does not "
                   f"define when imported (only its `if __name__ == \"__main__\":` block or "
                   f"another script does): in the process TensorRT runs the plugin in, that is a "
                   f"NameError. Keep the value on the plugin (self.{missing[0]}), set from its "
                   f"fields or serialized bytes.")
            found.append(Violation("fresh_process", msg, method))
    return found
