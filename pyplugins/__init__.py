"""pyplugins: TensorRT plugins as small Python classes plus templated CUDA kernels.

Names are imported lazily, so ``import pyplugins`` loads neither CuPy nor TensorRT.

Example:
    >>> import pyplugins as pp
    >>> pp.__version__
    '0.1.0'

A plugin is a subclass of :class:`pyplugins.Plugin` registered with :func:`pyplugins.register`;
see :mod:`pyplugins.runtime.plugin` for a complete example.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the lazy names below, as type checkers see them (nothing runs here)
    from pyplugins import dtypes, emulator, errors
    from pyplugins.checker.checked_run import run
    from pyplugins.runtime import fields, formats, serialize, shapes
    from pyplugins.runtime.creator import register, unregister
    from pyplugins.runtime.eager import EagerRunError
    from pyplugins.runtime.fields import Field
    from pyplugins.runtime.kernels import Kernel
    from pyplugins.runtime.launch import POINTER, Launch
    from pyplugins.runtime.plugin import Plugin

__version__ = "0.1.0"

# public name -> module that defines it (imported on first access)
_LAZY = {
    "Plugin": "pyplugins.runtime.plugin",
    "Field": "pyplugins.runtime.fields",
    "register": "pyplugins.runtime.creator",
    "unregister": "pyplugins.runtime.creator",
    "Kernel": "pyplugins.runtime.kernels",
    "Launch": "pyplugins.runtime.launch",
    "POINTER": "pyplugins.runtime.launch",
    "run": "pyplugins.checker.checked_run",
    "EagerRunError": "pyplugins.runtime.eager",
    "dtypes": "pyplugins.dtypes",
    "emulator": "pyplugins.emulator",
    "errors": "pyplugins.errors",
    "fields": "pyplugins.runtime.fields",
    "formats": "pyplugins.runtime.formats",
    "serialize": "pyplugins.runtime.serialize",
    "shapes": "pyplugins.runtime.shapes",
}

__all__ = [
    "EagerRunError",
    "Field",
    "Kernel",
    "Launch",
    "POINTER",
    "Plugin",
    "__version__",
    "dtypes",
    "emulator",
    "errors",
    "fields",
    "formats",
    "register",
    "run",
    "serialize",
    "shapes",
    "unregister",
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        msg = f"module 'pyplugins' has no attribute {name!r}"
        raise AttributeError(msg)
    module = importlib.import_module(module_name)
    value = module if module_name.endswith("." + name) else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
