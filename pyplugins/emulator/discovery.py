"""Creator discovery: register the creators a plugin module defines but registers only in ``__main__``.

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

from types import ModuleType
from typing import Any, Dict, List

from pyplugins.emulator.bases import IPluginCreatorInterface
from pyplugins.emulator.registry import get_plugin_registry

__all__ = ["notes_for", "register_defined_creators"]

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
        except Exception as err:  # a creator needing arguments: not ours to guess
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
