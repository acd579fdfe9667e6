"""pyplugins: TensorRT plugins as small Python classes plus templated CUDA kernels.

Names are imported lazily, so ``import pyplugins`` loads neither CuPy nor TensorRT.

Example:
    >>> import pyplugins as pp
    >>> pp.__version__
    '0.1.0'
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it (imported on first access)
_LAZY = {
    "emulator": "pyplugins.emulator",
    "dtypes": "pyplugins.dtypes",
    "errors": "pyplugins.errors",
}

__all__ = [
    "__version__",
    "dtypes",
    "emulator",
    "errors",
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
