"""``import tensorrt.plugin`` under the emulator: an import hook that hands out ``pyplugins.emulator.plugin``.

Once :func:`pyplugins.emulator.install` has put the emulator at ``sys.modules["tensorrt"]``,
Python would find ``pyplugins/emulator/plugin/`` through ``tensorrt.__path__`` and import it a
second time under the name ``tensorrt.plugin``: a second QDP registry, and plugins registered
through one invisible to the other. This finder, first on ``sys.meta_path`` while the emulator
is installed, answers ``tensorrt.plugin`` (and its submodules) with the one module object
``pyplugins.emulator.plugin``, imported on first use as TensorRT imports it on first use (so the
experimental warning and the version check of §8 happen then, not at ``install()``).

Example:
    >>> import sys
    >>> from pyplugins import emulator
    >>> _ = emulator.install()
    >>> import tensorrt.plugin as trtp
    >>> sys.modules["tensorrt.plugin"] is sys.modules["pyplugins.emulator.plugin"]
    True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any, Dict, Optional, Sequence

__all__ = ["ALIAS", "TARGET", "SubpackageAlias", "install_alias", "uninstall_alias"]

#: The name plugin code imports, and the emulator's module it resolves to.
ALIAS, TARGET = "tensorrt.plugin", "pyplugins.emulator.plugin"


class SubpackageAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder and loader for ``tensorrt.plugin[.x]`` -> ``pyplugins.emulator.plugin[.x]``."""

    def __init__(self) -> None:
        self._specs: Dict[str, Any] = {}

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        """A spec for the alias names while ``tensorrt`` is the emulator; None otherwise."""
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        if sys.modules.get("tensorrt") is not sys.modules.get("pyplugins.emulator"):
            return None  # real TensorRT (or nothing) is ``tensorrt``: not ours to answer
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """Import (once) and return the emulator's module for ``spec.name``."""
        module = importlib.import_module(TARGET + spec.name[len(ALIAS):])
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run; give the module back its own ``__spec__`` (the import system set the
        alias's)."""
        for spec in self._specs.values():
            if spec is not None and spec.name == module.__name__:
                module.__spec__ = spec


_finder = SubpackageAlias()


def install_alias() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def uninstall_alias() -> None:
    """Remove the finder and the ``tensorrt.plugin`` entries it made."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if n == ALIAS or n.startswith(ALIAS + ".")]:
        if getattr(sys.modules[name], "__name__", "").startswith(TARGET):
            del sys.modules[name]
