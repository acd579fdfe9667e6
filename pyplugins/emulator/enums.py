"""TensorRT's plugin-facing enums as pybind11 makes them (docs/trt-protocol.md §3, §4.3, §6, §11, §12).

Members behave like pybind11 enums: ``.name``, ``.value``, ``int(member)``, equality and hashing
by value, and no equality with plain ints (``DataType.FLOAT == 0`` is False in TensorRT too).
As in TensorRT, every value that crosses from C++ to Python is a **new object** (§12), so the
descriptors and argument lists handed to plugin callbacks never hold the class attributes
themselves: compare enums with ``==``, never with ``is``.

Example:
    >>> from pyplugins.emulator import DataType, DimensionOperation
    >>> int(DataType.HALF), DimensionOperation.CEIL_DIV.value
    (1, 8)
    >>> t = fresh(DataType.HALF)         # what a callback receives
    >>> t == DataType.HALF, t is DataType.HALF, hash(t) == hash(DataType.HALF)
    (True, False, True)
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Dict, Iterator, Optional, TypeVar

__all__ = ["DataType", "DimensionOperation", "PluginCapabilityType", "PluginFieldType",
           "PybindEnum",
           "PluginVersion", "TensorFormat", "TensorRTPhase", "fresh", "singletons"]

_E = TypeVar("_E", bound="PybindEnum")

class _Singletons(threading.local):
    """Per thread: set only inside :func:`singletons`, where :func:`fresh` returns the class
    attributes (the emulator's second opinion that tells a plugin comparing enums with ``is``
    apart, §12). Per thread, because checks run concurrently: with one process-wide flag, two
    threads' save-and-restore could interleave and leave it set for every later check."""

    on = False


_SINGLETONS = _Singletons()


class _EnumMeta(type):
    """Collects the integer class attributes of an enum class into members (pybind ``value()``)."""

    def __new__(mcs, name: str, bases: tuple, ns: Dict[str, Any]) -> Any:
        values = {k: v for k, v in ns.items() if not k.startswith("_") and isinstance(v, int)}
        for k in values:
            del ns[k]
        cls = super().__new__(mcs, name, bases, ns)
        members: Dict[str, Any] = {}
        for k, v in values.items():
            member = object.__new__(cls)
            member._value = v
            members[k] = member
            type.__setattr__(cls, k, member)
        type.__setattr__(cls, "__members__", members)
        type.__setattr__(cls, "_by_value", {m._value: k for k, m in reversed(members.items())})
        return cls

    def __getitem__(cls, name: str) -> Any:
        """``Enum["NAME"]`` (an emulator convenience; the class attribute itself)."""
        return cls.__members__[name]

    def __iter__(cls) -> Iterator[Any]:
        """The members in value order (an emulator convenience)."""
        return iter(cls.__members__.values())

    def __len__(cls) -> int:
        return len(cls.__members__)

    def __setattr__(cls, name: str, value: Any) -> None:
        if name in cls.__dict__.get("__members__", {}):
            msg = f"can't set attribute {name!r} of enum {cls.__name__}"
            raise AttributeError(msg)
        super().__setattr__(name, value)


class PybindEnum(metaclass=_EnumMeta):
    """Base of the emulated enums: a pybind11 ``py::enum_`` value (one object per crossing)."""

    __slots__ = ("_value",)

    def __init__(self, value: int) -> None:
        """``DataType(1)``: a new object for that value, as pybind's int constructor makes."""
        if isinstance(value, PybindEnum):
            value = value._value
        self._value = int(value.__index__())

    @property
    def name(self) -> str:
        """The member's name (``"???"`` for a value with no name, as pybind11)."""
        return type(self)._by_value.get(self._value, "???")

    @property
    def value(self) -> int:
        """The member's integer value."""
        return self._value

    def __int__(self) -> int:
        return self._value

    def __index__(self) -> int:
        return self._value

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._value == self._value  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {self._value}>"

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __getstate__(self) -> int:
        return self._value

    def __setstate__(self, state: int) -> None:
        self._value = int(state)

    def __reduce__(self) -> Any:
        return (type(self), (self._value,))


def fresh(member: Optional[_E]) -> Optional[_E]:
    """What Python receives when TensorRT hands over the enum value ``member``: a new object
    equal to it (or the member itself inside :func:`singletons`; None stays None).

    Example:
        >>> fresh(TensorFormat.LINEAR) is TensorFormat.LINEAR
        False
    """
    if member is None or _SINGLETONS.on or not isinstance(member, PybindEnum):
        return member
    copy = object.__new__(type(member))
    copy._value = member._value
    return copy


@contextlib.contextmanager
def singletons() -> Iterator[None]:
    """Within the block, in this thread, hand plugins the class attributes instead of fresh
    objects (what a plugin comparing with ``is`` expects; TensorRT never does this).

    Example:
        >>> with singletons():
        ...     fresh(DataType.HALF) is DataType.HALF
        True
    """
    saved, _SINGLETONS.on = _SINGLETONS.on, True
    try:
        yield
    finally:
        _SINGLETONS.on = saved


class DataType(PybindEnum):
    """``trt.DataType`` (NvInferRuntimeBase.h)."""

    FLOAT = 0
    HALF = 1
    INT8 = 2
    INT32 = 3
    BOOL = 4
    UINT8 = 5
    FP8 = 6
    BF16 = 7
    INT64 = 8
    INT4 = 9
    FP4 = 10
    E8M0 = 11

    @property
    def itemsize(self) -> float:
        """Bytes per element (0.5 for INT4 and FP4), as ``trt.DataType.itemsize``; None for a
        type TensorRT's table lacks (E8M0)."""
        return _ITEMSIZE.get(self._value)


_ITEMSIZE = {0: 4, 1: 2, 7: 2, 2: 1, 3: 4, 8: 8, 4: 1, 5: 1, 6: 1, 9: 0.5, 10: 0.5}


class TensorFormat(PybindEnum):
    """``trt.TensorFormat`` (NvInferRuntime.h)."""

    LINEAR = 0
    CHW2 = 1
    HWC8 = 2
    CHW4 = 3
    CHW16 = 4
    CHW32 = 5
    DHWC8 = 6
    CDHW32 = 7
    HWC = 8
    DLA_LINEAR = 9
    DLA_HWC4 = 10
    HWC16 = 11
    DHWC = 12


class PluginFieldType(PybindEnum):
    """``trt.PluginFieldType`` (NvInferPluginBase.h; FP4 since 10.8)."""

    FLOAT16 = 0
    FLOAT32 = 1
    FLOAT64 = 2
    INT8 = 3
    INT16 = 4
    INT32 = 5
    CHAR = 6
    DIMS = 7
    UNKNOWN = 8
    BF16 = 9
    INT64 = 10
    FP8 = 11
    INT4 = 12
    FP4 = 13


class DimensionOperation(PybindEnum):
    """``trt.DimensionOperation``: the nine operations of ``IExprBuilder.operation``."""

    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    SUB = 4
    EQUAL = 5
    LESS = 6
    FLOOR_DIV = 7
    CEIL_DIV = 8


class TensorRTPhase(PybindEnum):
    """``trt.TensorRTPhase`` (V3 creators; listed for completeness)."""

    BUILD = 0
    RUNTIME = 1


class PluginCapabilityType(PybindEnum):
    """``trt.PluginCapabilityType`` (V3; listed for completeness)."""

    CORE = 0
    BUILD = 1
    RUNTIME = 2


class PluginVersion(PybindEnum):
    """What ``IPluginV2.tensorrt_version`` reports; Python V2 plugins report ``V2_DYNAMICEXT_PYTHON``."""

    V2 = 0
    V2_EXT = 1
    V2_IOEXT = 2
    V2_DYNAMICEXT = 3
    V2_DYNAMICEXT_PYTHON = 0x40 | 3
