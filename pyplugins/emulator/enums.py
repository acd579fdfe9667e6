"""TensorRT's plugin-facing enums with TensorRT's numeric values (docs/trt-protocol.md §3-§11).

Members behave like pybind11 enums: ``.name``, ``.value``, ``int(member)``, and they do **not**
compare equal to plain ints (``DataType.FLOAT == 0`` is False in real TensorRT too).

Example:
    >>> from pyplugins.emulator import DataType, DimensionOperation
    >>> int(DataType.HALF), DimensionOperation.CEIL_DIV.value
    (1, 8)
"""

from __future__ import annotations

import enum


class TrtEnum(enum.Enum):
    """Base of the emulated enums: pybind11-like ``int()`` and ``repr``."""

    def __int__(self) -> int:
        return int(self.value)

    def __index__(self) -> int:
        return int(self.value)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.value))


class DataType(TrtEnum):
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


class TensorFormat(TrtEnum):
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


class PluginFieldType(TrtEnum):
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


class DimensionOperation(TrtEnum):
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


class TensorRTPhase(TrtEnum):
    """``trt.TensorRTPhase`` (V3 creators; listed for completeness)."""

    BUILD = 0
    RUNTIME = 1


class PluginCapabilityType(TrtEnum):
    """``trt.PluginCapabilityType`` (V3; listed for completeness)."""

    CORE = 0
    BUILD = 1
    RUNTIME = 2


class PluginVersion(TrtEnum):
    """What ``IPluginV2.tensorrt_version`` reports; Python V2 plugins report ``V2_DYNAMICEXT_PYTHON``."""

    V2 = 0
    V2_EXT = 1
    V2_IOEXT = 2
    V2_DYNAMICEXT = 3
    V2_DYNAMICEXT_PYTHON = 0x40 | 3
