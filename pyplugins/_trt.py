"""Picks the TensorRT API pyplugins works against: the real ``tensorrt`` or the emulator.

``PYPLUGINS_TRT`` decides (see :mod:`pyplugins._config`): ``auto`` takes real TensorRT when it
imports and otherwise the emulator, warning once; ``tensorrt`` insists on the real one;
``emulator`` always takes the emulator. The choice is made once per process, on first use.

Example:
    >>> from pyplugins import _trt
    >>> trt = _trt.load()
    >>> hasattr(trt, "IPluginV2DynamicExt")
    True
"""

from __future__ import annotations

import os
import sys
import warnings
from types import ModuleType
from typing import Optional

from pyplugins import emulator
from pyplugins._config import knobs
from pyplugins.errors import install_hint
from pyplugins.emulator.real import import_real

_chosen: Optional[ModuleType] = None


def load() -> ModuleType:
    """Return the active TensorRT module, choosing it on the first call.

    Raises:
        ImportError: when ``PYPLUGINS_TRT=tensorrt`` and real TensorRT cannot be imported.
    """
    global _chosen
    if _chosen is None:
        _chosen = _choose(knobs.trt)
    return _chosen


def _choose(choice: str) -> ModuleType:
    if choice == "emulator":
        return emulator
    real = import_real()
    if real is not None:
        return real
    if choice == "tensorrt":
        msg = ("PYPLUGINS_TRT=tensorrt but the real TensorRT could not be imported; install it "
               f"with: {install_hint('tensorrt')}, or set PYPLUGINS_TRT=auto to fall back to "
               "pyplugins' emulator.")
        raise ImportError(msg)
    _warn_at_caller("TensorRT is not installed: pyplugins uses its emulator of TensorRT's plugin "
                    "API (set PYPLUGINS_TRT=emulator to silence this).")
    return emulator


def _warn_at_caller(message: str) -> None:
    """Warn, attributed to the first frame outside pyplugins and the import machinery."""
    package_dir = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename.startswith(package_dir)
                                 or frame.f_code.co_filename.startswith("<frozen")):
        frame = frame.f_back
    if frame is None:
        warnings.warn(message, UserWarning, stacklevel=2)
        return
    warnings.warn_explicit(message, UserWarning, frame.f_code.co_filename, frame.f_lineno,
                           module=frame.f_globals.get("__name__", "?"),
                           registry=frame.f_globals.setdefault("__warningregistry__", {}))
