"""NVIDIA's own ``tensorrt``, when it is installed: what :func:`pyplugins.emulator.install` defers to.

Example:
    >>> from pyplugins import emulator
    >>> is_emulator(emulator)
    True
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Optional

__all__ = ["import_real", "is_emulator"]


def is_emulator(module: ModuleType) -> bool:
    """Whether ``module`` is pyplugins' emulator rather than NVIDIA's TensorRT."""
    return bool(getattr(module, "__pyplugins_emulator__", False))


def import_real() -> Optional[ModuleType]:
    """Import NVIDIA's ``tensorrt``; None when absent, broken, or already the emulator."""
    already = sys.modules.get("tensorrt")
    if already is not None:
        return None if is_emulator(already) else already
    try:
        import tensorrt  # noqa: PLC0415 - optional, heavy dependency
    except Exception:  # noqa: BLE001 - PyPI's stub packages fail in many ways
        sys.modules.pop("tensorrt", None)
        return None
    if not hasattr(tensorrt, "IPluginV2DynamicExt"):
        return None
    return tensorrt
