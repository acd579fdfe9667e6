"""The shipped plugins; importing this package imports every module in it, which registers each
op with TensorRT's registry, and exports each module's :class:`pyplugins.Plugin` subclasses.

Adding an op is adding a module here (see ``docs/adding-an-op.md``); nothing in this file lists
them. All shipped ops are version ``"1"`` in namespace ``""``.

Example:
    >>> import pyplugins.ops
    >>> from pyplugins import trt
    >>> trt.get_plugin_registry().get_creator("LReLU_TRT", "1", "") is pyplugins.ops.LeakyReLU.creator
    True
    >>> "CircPad" in pyplugins.ops.__all__
    True
"""

import importlib
import pkgutil
from typing import Dict, List

from pyplugins.runtime.plugin import Plugin


def _plugins_of_modules() -> Dict[str, type]:
    """Every Plugin subclass defined in a module of this package, by class name."""
    found: Dict[str, type] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Plugin) and value is not Plugin
                    and value.__module__ == module.__name__):
                found[value.__name__] = value
    return found


_FOUND = _plugins_of_modules()
globals().update(_FOUND)
__all__: List[str] = sorted(_FOUND)
