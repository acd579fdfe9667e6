"""Helpers for the QDP tests: load a QDP module fresh, make the objects TensorRT hands plugins."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any, Dict, Sequence

from pyplugins import emulator as trt
from pyplugins.emulator.plugin.attributes import fields_from_attrs
from pyplugins.emulator.plugin_field import PluginFieldCollection_

MODULES = Path(__file__).resolve().parent / "modules"
_count = itertools.count()


def load(name: str) -> Any:
    """Import ``modules/<name>.py`` under a fresh module name (its decorators run again)."""
    spec = importlib.util.spec_from_file_location(f"qdp_module_{name}_{next(_count)}",
                                                  MODULES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fc(attrs: Dict[str, Any]) -> PluginFieldCollection_:
    """The fields TensorRT hands ``create_plugin`` for these attribute values."""
    return PluginFieldCollection_(fields_from_attrs(attrs))


def creator(plugin_id: str) -> Any:
    namespace, name = plugin_id.split("::")
    return trt.get_plugin_registry().get_creator(name, "1", namespace)


def create(plugin_id: str, attrs: Dict[str, Any], request: Any = None) -> Any:
    """``create_plugin`` of the registered creator, build phase."""
    namespace, name = plugin_id.split("::")
    extra = () if request is None else (request,)
    return creator(plugin_id).create_plugin(name, namespace, fc(attrs), trt.TensorRTPhase.BUILD,
                                            *extra)


def dyn(shape: Sequence[int], dtype: Any = trt.DataType.FLOAT,
        fmt: Any = trt.TensorFormat.LINEAR) -> trt.DynamicPluginTensorDesc:
    """A DynamicPluginTensorDesc whose desc dims, min, opt and max are ``shape``."""
    desc = trt.PluginTensorDesc(shape, dtype, fmt, -1.0)
    return trt.DynamicPluginTensorDesc(desc, shape, shape, shape)


def desc(shape: Sequence[int], dtype: Any = trt.DataType.FLOAT) -> trt.PluginTensorDesc:
    return trt.PluginTensorDesc(shape, dtype, trt.TensorFormat.LINEAR, -1.0)


def combos(flat: Sequence[Any], n_io: int) -> list:
    """``get_supported_format_combinations``' flat list as [(type names, format names), ...]."""
    return [(tuple(d.type.name for d in flat[i:i + n_io]),
             tuple(d.format.name for d in flat[i:i + n_io])) for i in range(0, len(flat), n_io)]
