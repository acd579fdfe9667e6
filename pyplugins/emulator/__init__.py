"""A faithful stand-in for TensorRT's plugin-facing Python API (``import tensorrt as trt``).

It emulates the *plugin protocol* of docs/trt-protocol.md: the same class
and enum names, argument types, call order, error channel and fallbacks as TensorRT's bindings.
It is not an inference engine and builds no engines. Use it to unit-test and trace TensorRT
Python plugins on machines without TensorRT (or without a GPU):

- :func:`install` makes ``import tensorrt`` resolve to this module when real TensorRT is absent,
  so a plugin module written for TensorRT runs unmodified;
- :mod:`pyplugins.checker.lifecycle` drives a plugin through a build and a run as TensorRT does.

Every other public name of TensorRT's module (``ICudaEngine``, ``Builder``, ``trt.float32``,
``init_libnvinfer_plugins`` ...) resolves too, through :mod:`pyplugins.emulator.surface`: what
needs a real builder or runtime raises ``NeedsTensorRT`` when used, never at import. The
subpackage ``tensorrt.plugin`` (QDP, 10.6+) is :mod:`pyplugins.emulator.plugin`; as in TensorRT it
must be imported (``import tensorrt.plugin as trtp``) before ``trt.plugin`` exists.

Example:
    >>> from pyplugins import emulator as trt
    >>> trt.nptype(trt.DataType.HALF), trt.DataType.HALF.itemsize
    (<class 'numpy.float16'>, 2)
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy as np

from pyplugins.emulator import bases_quick, bases_v3, subpackage_alias, surface
from pyplugins.emulator import trampoline  # noqa: F401 - importing it installs the size path
from pyplugins.emulator.bases import (ILogger, IPluginCreator, IPluginCreatorInterface, IPluginV2,
                                      IPluginV2DynamicExt, IPluginV2DynamicExtBase, IPluginV2Ext,
                                      Logger)
from pyplugins.emulator.bases_v3 import (IPluginCapability, IPluginCreatorV3One,
                                         IPluginResourceContext, IPluginV3, IPluginV3OneBuild,
                                         IPluginV3OneCore, IPluginV3OneRuntime)
from pyplugins.emulator.descs import DynamicPluginTensorDesc, PluginTensorDesc
from pyplugins.emulator.dims import Dims, DimsExprs, IDimensionExpr, IExprBuilder
from pyplugins.emulator.enums import (DataType, DimensionOperation, PluginCapabilityType,
                                      PluginFieldType, TensorFormat, TensorRTPhase)
from pyplugins.emulator.plugin_field import PluginField, PluginFieldCollection, PluginFieldCollection_
from pyplugins.emulator.real import import_real
from pyplugins.emulator.registry import IPluginRegistry, get_plugin_registry
from pyplugins.emulator.surface_table import PLUGIN_SINCE
from pyplugins.emulator.version import emulated_version

__pyplugins_emulator__ = True

__all__ = [
    "DataType", "DimensionOperation", "Dims", "DimsExprs", "DynamicPluginTensorDesc",
    "IDimensionExpr", "IExprBuilder", "ILogger", "IPluginCreator", "IPluginCreatorInterface",
    "IPluginCapability", "IPluginCreatorV3One", "IPluginResourceContext", "IPluginV3",
    "IPluginV3OneBuild", "IPluginV3OneCore", "IPluginV3OneRuntime",
    "IPluginRegistry", "IPluginV2", "IPluginV2DynamicExt", "IPluginV2DynamicExtBase",
    "IPluginV2Ext", "Logger", "PluginCapabilityType", "PluginField",
    "PluginFieldCollection", "PluginFieldCollection_", "PluginFieldType", "PluginTensorDesc",
    "TensorFormat", "TensorRTPhase", "get_plugin_registry", "install", "nptype", "uninstall",
]

_NPTYPE = {
    DataType.FLOAT: np.float32, DataType.HALF: np.float16, DataType.INT8: np.int8,
    DataType.INT32: np.int32, DataType.INT64: np.int64, DataType.BOOL: np.bool_,
    DataType.UINT8: np.uint8,
}


def nptype(trt_type: DataType) -> type:
    """``trt.nptype``: the NumPy scalar type of a ``DataType`` (any object equal to one).

    Raises:
        TypeError: for BF16, FP8, INT4, FP4 and E8M0, as TensorRT does.
    """
    try:
        return _NPTYPE[trt_type]
    except KeyError:
        msg = f"Could not resolve TensorRT datatype to an equivalent numpy datatype: {trt_type!r}"
        raise TypeError(msg) from None


def __getattr__(name: str) -> Any:
    major, minor = emulated_version()
    if name == "__version__":
        return f"{major}.{minor}.0"
    if name == "IPluginV3OneBuildV2" and emulated_version() >= (10, 3):  # added in 10.3 (§7)
        return bases_v3.IPluginV3OneBuildV2
    if name == "IPluginV3OneBuildV2":  # before 10.3 the name does not exist
        msg = (f"module 'tensorrt' (pyplugins emulator, TensorRT {emulated_version()[0]}."
               f"{emulated_version()[1]}) has no attribute {name!r}")
        raise AttributeError(msg)
    if name.startswith("__"):
        msg = f"module 'tensorrt' (pyplugins emulator) has no attribute {name!r}"
        raise AttributeError(msg)
    since = PLUGIN_SINCE.get(name)
    if since is not None and (major, minor) < since:  # a plugin-facing name of a later 10.x
        msg = (f"module 'tensorrt' (pyplugins emulator, TensorRT {major}.{minor}) has no "
               f"attribute {name!r} (TensorRT binds it from {since[0]}.{since[1]})")
        raise AttributeError(msg)
    if name in bases_quick.EMULATED:
        return getattr(bases_quick, name)
    if name == "plugin":  # a subpackage: an attribute only once imported, as in TensorRT
        msg = ("module 'tensorrt' has no attribute 'plugin' until the subpackage is imported: "
               "`import tensorrt.plugin as trtp` (TensorRT 10.6+)")
        raise AttributeError(msg)
    return surface.resolve(name, major)


def __dir__() -> list:
    return sorted(set(globals()) | set(surface.names(emulated_version()[0])))


def install() -> ModuleType:
    """Make ``import tensorrt`` give this emulator, unless real TensorRT is importable.

    Returns the module ``import tensorrt`` now resolves to (real TensorRT when present).

    Example:
        >>> from pyplugins import emulator
        >>> trt = emulator.install()
        >>> import tensorrt
        >>> tensorrt is trt
        True
    """
    real = import_real()
    if real is not None:
        return real
    module = sys.modules[__name__]
    sys.modules["tensorrt"] = module
    subpackage_alias.install_alias()  # `import tensorrt.plugin` -> pyplugins.emulator.plugin
    return module


def uninstall() -> None:
    """Undo :func:`install` (only removes ``sys.modules["tensorrt"]`` if it is this emulator,
    and the ``tensorrt.plugin`` alias)."""
    subpackage_alias.uninstall_alias()
    if sys.modules.get("tensorrt") is sys.modules[__name__]:
        del sys.modules["tensorrt"]
