"""QDP plugin definitions and ``tensorrt.plugin.op``:
``trtp.op.<namespace>.<name>(*tensors, **attrs)`` makes what ``network.add_plugin`` takes (§8).

Calling a definition checks the call against the register function's schema (``ITensor``s
first, then attributes by keyword, each of its registered type), registers the creator if
``lazy_register`` deferred it, and builds the fields. From 10.9 it returns a function of an
optional ``QuickPluginCreationRequest`` that ``add_plugin`` calls; before, it creates the plugin at
once and returns ``(inputs, [], plugin)``. Inputs must be ``trt.ITensor``, which only a real
network makes, so under the emulator the creator is driven directly (``creator.QDP_CREATORS``).

Example:
    >>> from pyplugins.emulator.plugin.definitions import op
    >>> ns = op.define_or_get("demo_ns")
    >>> ns is op.demo_ns, repr(ns)
    (True, '_PluginNamespace(namespace="demo_ns")')
"""

from __future__ import annotations

import types
import typing
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from pyplugins.emulator import surface
from pyplugins.emulator.enums import TensorRTPhase
from pyplugins.emulator.plugin.attributes import fields_from_attrs
from pyplugins.emulator.plugin.creator import QDP_CREATORS, QDP_REGISTRY, register_plugin_creator
from pyplugins.emulator.version import emulated_version
from pyplugins.emulator.registry import get_plugin_registry
from pyplugins.errors import QDPAssertionError, QDPDefinitionError

__all__ = ["PluginDef", "op", "unregister"]


class _PluginNamespace(types.ModuleType):
    """``tensorrt.plugin.op.<namespace>``: the plugins of one namespace, as attributes."""

    def __init__(self, namespace: str) -> None:
        super().__init__("tensorrt.plugin.op." + namespace)
        self._namespace = namespace

    def define(self, name: str, plugin_def: "PluginDef") -> None:
        """Bind ``name`` to ``plugin_def`` (once)."""
        if hasattr(self, name):
            msg = f"tensorrt.plugin.op.{self._namespace} already defines {name!r}"
            raise QDPAssertionError(msg)
        setattr(self, name, plugin_def)

    def __getattr__(self, name: str) -> Any:
        msg = f"'_PluginNamespace' object {self._namespace!r} has no attribute {name!r}"
        raise AttributeError(msg)

    def __repr__(self) -> str:
        return f'_PluginNamespace(namespace="{self._namespace}")'


class _Op(types.ModuleType):
    """``tensorrt.plugin.op``: one attribute per plugin namespace."""

    def __init__(self) -> None:
        super().__init__("tensorrt.plugin.op")

    def define_or_get(self, namespace: str) -> _PluginNamespace:
        """The namespace object, made on first use."""
        if hasattr(self, namespace):
            return getattr(self, namespace)
        ns = _PluginNamespace(namespace)
        setattr(self, namespace, ns)
        return ns

    def __getattr__(self, name: str) -> Any:
        msg = f"'_Op' object has no attribute {name!r}"
        raise AttributeError(msg)


#: ``tensorrt.plugin.op``.
op = _Op()


def _check_attr(plugin_id: str, key: str, value: Any, annotation: Any) -> None:
    if isinstance(value, np.ndarray):
        if typing.get_origin(annotation) == np.ndarray:
            want = typing.get_args(typing.get_args(annotation)[1])[0]
            if np.dtype(want) != np.dtype(value.dtype):
                msg = (f"QDP plugin '{plugin_id}': attribute {key!r} has dtype "
                       f"{np.dtype(value.dtype)}, registered {np.dtype(want)}")
                raise QDPDefinitionError(msg)
    elif annotation is not type(value):
        msg = (f"QDP plugin '{plugin_id}': attribute {key!r} is a {type(value).__name__} "
               f"({value!r}), registered {annotation!r} (the type must match exactly)")
        raise QDPDefinitionError(msg)


class PluginDef:
    """What ``@register``, ``@impl``, ``@autotune`` and ``@aot_impl`` record about a plugin;
    calling it (``trtp.op.ns.name(...)``) prepares the plugin for ``network.add_plugin``."""

    def __init__(self) -> None:
        self.plugin_id: Optional[str] = None  # "ns::name"
        self.register_func: Optional[Callable] = None
        self.impl_func: Optional[Callable] = None
        self.aot_impl_func: Optional[Callable] = None
        self.autotune_func: Optional[Callable] = None
        self.autotune_attr_names: Optional[List[str]] = None
        self.input_tensor_names: Optional[List[str]] = None
        self.input_attrs: Optional[Dict[str, Any]] = None  # name -> annotation, register order
        self.impl_attr_names: Optional[List[str]] = None
        self.aot_impl_attr_names: Optional[List[str]] = None
        self.num_outputs: Optional[int] = None
        self.input_arg_schema: Optional[str] = None
        self.expects_tactic: Optional[bool] = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        namespace, name = self.plugin_id.split("::")
        itensor = surface.resolve("ITensor", emulated_version()[0])
        chunks = []
        for t in args:
            if not isinstance(t, itensor):
                msg = (f"QDP plugin '{self.plugin_id}' takes trt.ITensor inputs positionally "
                       f"(got a {type(t).__name__}); pass attributes by keyword")
                raise QDPDefinitionError(msg)
            chunks.append("ITensor")
        for key, value in kwargs.items():
            if key not in self.input_attrs:
                msg = (f"QDP plugin '{self.plugin_id}' has no attribute {key!r} "
                       f"(attributes: {list(self.input_attrs)})")
                raise QDPDefinitionError(msg)
            _check_attr(self.plugin_id, key, value, self.input_attrs[key])
            chunks.append(key)
        expected = ", ".join(["ITensor"] * len(self.input_tensor_names) + list(self.input_attrs))
        if ", ".join(chunks) != expected:
            msg = (f"QDP plugin '{self.plugin_id}' called as ({', '.join(chunks)}); expected "
                   f"({expected}): every input tensor, then every attribute by keyword")
            raise QDPDefinitionError(msg)
        creator = self._creator(namespace, name, kwargs)
        fields = fields_from_attrs(kwargs)
        inputs = list(args)

        def create_plugin_instance(quick_plugin_creation_request: Any = None) -> tuple:
            extra = () if quick_plugin_creation_request is None else \
                (quick_plugin_creation_request,)
            plugin = creator.create_plugin(name, namespace, fields, TensorRTPhase.BUILD, *extra)
            return inputs, [], plugin

        if emulated_version() < (10, 9):  # the plugin at once, as a tuple for add_plugin
            return create_plugin_instance()
        return create_plugin_instance

    def _creator(self, namespace: str, name: str, kwargs: Dict[str, Any]) -> Any:
        if self.plugin_id in QDP_CREATORS:
            return get_plugin_registry().get_creator(name, "1", namespace)
        attrs_types = {k: ((False, v.dtype) if isinstance(v, np.ndarray) else (True, type(v)))
                       for k, v in kwargs.items()}
        return register_plugin_creator(name, namespace, attrs_types)


def unregister(plugin_id: str) -> None:
    """Emulator-only (TensorRT has no undo): forget a QDP plugin's definition, its ``op`` entry
    and its creator, so that a test or a fresh import can define it again."""
    QDP_REGISTRY.pop(plugin_id, None)
    namespace, name = plugin_id.split("::")
    ns = op.__dict__.get(namespace)
    if ns is not None and name in ns.__dict__:
        delattr(ns, name)
    creator = QDP_CREATORS.pop(plugin_id, None)
    if creator is not None:
        get_plugin_registry().deregister_creator(creator)
