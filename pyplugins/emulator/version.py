"""The TensorRT version the emulator imitates (``PYPLUGINS_TRT_VERSION``, default 11.1).

Example:
    >>> from pyplugins._config import override
    >>> with override(trt_version="10.9"):
    ...     emulated_version()
    (10, 9)
"""

from __future__ import annotations

from typing import Tuple

from pyplugins._config import knobs

__all__ = ["emulated_version"]


def emulated_version() -> Tuple[int, int]:
    """(major, minor) of the TensorRT version being emulated (``PYPLUGINS_TRT_VERSION``)."""
    text = knobs.trt_version
    try:
        parts = [int(p) for p in text.split(".")[:2]]
    except ValueError:
        msg = f"PYPLUGINS_TRT_VERSION={text!r} is not a version like '11.1' or '10.16'"
        raise ValueError(msg) from None
    major, minor = (parts + [0])[:2]
    if not 10 <= major <= 11:
        msg = f"PYPLUGINS_TRT_VERSION={text!r}: the emulator imitates TensorRT 10.x and 11.x"
        raise ValueError(msg)
    return major, minor
