"""One table: TensorRT ``DataType`` <-> NumPy dtype <-> CUDA C++ type name <-> element size,
and every spelling of a data type that pyplugins accepts as text (:func:`from_text`).

Entries are keyed by the enum member's *name*, so the same table serves the real
``tensorrt.DataType`` and the emulator's.

Example:
    >>> from pyplugins import dtypes
    >>> from pyplugins.emulator import DataType
    >>> dtypes.numpy_from_trt(DataType.HALF), dtypes.ctype_from_trt(DataType.HALF)
    (dtype('float16'), '__half')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np


@dataclass(frozen=True)
class DTypeInfo:
    """What pyplugins knows about one TensorRT data type.

    Attributes:
        trt_name: the ``DataType`` member name (``"FLOAT"``).
        numpy: the NumPy dtype, or None where NumPy has none (BF16, FP8, INT4, FP4, E8M0).
        ctype: the CUDA C++ type a templated kernel is instantiated with, or None.
        itemsize: bytes per element (0 for the sub-byte types).
        short: the short name used in CLI specs and kernel cache keys (``"fp32"``).
        attr: the module-level alias ``tensorrt`` defines for it (``trt.float32``).
        aliases: further spellings accepted as text (``"float"``, ``"half"``).
    """

    trt_name: str
    numpy: Optional[np.dtype]
    ctype: Optional[str]
    itemsize: int
    short: str
    attr: str
    aliases: Tuple[str, ...] = ()


_TABLE = (
    DTypeInfo("FLOAT", np.dtype(np.float32), "float", 4, "fp32", "float32", ("float",)),
    DTypeInfo("HALF", np.dtype(np.float16), "__half", 2, "fp16", "float16", ("half",)),
    DTypeInfo("INT8", np.dtype(np.int8), "signed char", 1, "int8", "int8", ("i8",)),
    DTypeInfo("INT32", np.dtype(np.int32), "int", 4, "int32", "int32", ("i32",)),
    DTypeInfo("BOOL", np.dtype(np.bool_), "bool", 1, "bool", "bool"),
    DTypeInfo("UINT8", np.dtype(np.uint8), "unsigned char", 1, "uint8", "uint8", ("u8",)),
    DTypeInfo("FP8", None, "__nv_fp8_e4m3", 1, "fp8", "fp8", ("fp8_e4m3", "float8_e4m3fn")),
    DTypeInfo("BF16", None, "__nv_bfloat16", 2, "bf16", "bfloat16"),
    DTypeInfo("INT64", np.dtype(np.int64), "long long", 8, "int64", "int64", ("i64",)),
    DTypeInfo("INT4", None, None, 0, "int4", "int4"),
    DTypeInfo("FP4", None, None, 0, "fp4", "fp4"),
    DTypeInfo("E8M0", None, None, 1, "e8m0", "e8m0"),
)
_BY_NAME = {info.trt_name: info for info in _TABLE}
_BY_NUMPY = {info.numpy: info for info in _TABLE if info.numpy is not None}
_BY_TEXT = {text: info for info in _TABLE
            for text in (info.trt_name.lower(), info.short, info.attr, *info.aliases)}


def rows() -> Tuple[DTypeInfo, ...]:
    """Every row of the table, in ``DataType`` order."""
    return _TABLE


def from_text(text: str) -> DTypeInfo:
    """The row a user's spelling names: a member name (``"BF16"``), a short name (``"fp16"``),
    ``tensorrt``'s alias (``"bfloat16"``), an alias (``"half"``) or a NumPy name (``"float32"``).

    Raises:
        ValueError: the text names no data type, or one TensorRT does not have (``float64``);
            the message lists what is accepted.

    Example:
        >>> from_text("bfloat16").trt_name, from_text("HALF").short, from_text("<f4").trt_name
        ('BF16', 'fp16', 'FLOAT')
    """
    key = str(text).strip().lower()
    row = _BY_TEXT.get(key)
    if row is not None:
        return row
    accepted = ", ".join(info.attr for info in _TABLE)
    try:
        np_dtype = np.dtype(key)
    except Exception:  # noqa: BLE001 - TypeError for unknown names, others for odd strings
        raise ValueError(f"unknown dtype {text!r}; use one of {accepted}") from None
    row = _BY_NUMPY.get(np_dtype)
    if row is None:
        raise ValueError(f"dtype {text!r} has no TensorRT data type; use one of {accepted}")
    return row


def info(dtype: Any) -> DTypeInfo:
    """The table row for a ``DataType`` member (real or emulated) or a member name.

    Raises:
        KeyError: for a name the table does not know.
    """
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    row = _BY_NAME.get(name) if isinstance(name, str) else None
    if row is None:
        msg = f"unknown TensorRT data type {dtype!r}; known: {', '.join(_BY_NAME)}"
        raise KeyError(msg)
    return row


def numpy_from_trt(dtype: Any) -> np.dtype:
    """NumPy dtype of a TensorRT data type.

    Raises:
        TypeError: where NumPy has no such dtype (BF16, FP8, INT4, FP4, E8M0), like ``trt.nptype``.
    """
    row = info(dtype)
    if row.numpy is None:
        msg = f"TensorRT data type {row.trt_name} has no NumPy equivalent"
        raise TypeError(msg)
    return row.numpy


def ctype_from_trt(dtype: Any) -> str:
    """CUDA C++ type name of a TensorRT data type (the ``{T}`` of a templated kernel).

    Raises:
        TypeError: for the sub-byte types, which kernels address by hand.
    """
    row = info(dtype)
    if row.ctype is None:
        msg = f"TensorRT data type {row.trt_name} has no CUDA C++ element type"
        raise TypeError(msg)
    return row.ctype


def itemsize_from_trt(dtype: Any) -> int:
    """Bytes per element of a TensorRT data type (0 for INT4 and FP4)."""
    return info(dtype).itemsize


def trt_name_from_numpy(dtype: Any) -> str:
    """``DataType`` member name for a NumPy dtype or dtype-like (``"float16"`` -> ``"HALF"``).

    Raises:
        TypeError: for a NumPy dtype TensorRT has no data type for (float64, int16, ...).
    """
    np_dtype = np.dtype(dtype)
    try:
        return _BY_NUMPY[np_dtype].trt_name
    except KeyError:
        supported = ", ".join(str(d) for d in _BY_NUMPY)
        msg = f"NumPy dtype {np_dtype} has no TensorRT data type; supported: {supported}"
        raise TypeError(msg) from None


def trt_from_numpy(dtype: Any, trt_module: Any) -> Any:
    """The ``trt_module.DataType`` member for a NumPy dtype.

    Example:
        >>> import numpy as np
        >>> from pyplugins import emulator
        >>> trt_from_numpy(np.float32, emulator).name
        'FLOAT'
    """
    return getattr(trt_module.DataType, trt_name_from_numpy(dtype))
