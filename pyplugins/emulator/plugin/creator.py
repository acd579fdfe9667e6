"""The QDP registry and creator: ``QDP_REGISTRY`` (definitions by id), the ``IPluginCreatorV3Quick``
each plugin registers, and the JIT/AOT choice of ``create_plugin`` (§8).

``@register`` (unless ``lazy_register``) registers one creator per plugin in TensorRT's plugin
registry under (name, "1", namespace), whose ``field_names`` list the attributes typed as they
travel. TensorRT calls ``create_plugin(name, namespace, fc, phase[, request])``: with the fields of
an op call or an ONNX node in the build phase, with ``get_fields_to_serialize()``'s at run time.
From 10.9 a ``QuickPluginCreationRequest`` picks JIT or AOT: STRICT_* demand one, PREFER_* pick
one when both exist, and UNKNOWN (no network flag) is refused when both exist; without a request
the plugin is JIT. Before 10.9 ``create_plugin`` takes four arguments and makes JIT plugins.

Example:
    >>> from pyplugins.emulator.registry import get_plugin_registry
    >>> creator = TemplatePluginCreator("demo_op", "demo", {"alpha": (True, float)})
    >>> creator.name, creator.plugin_version, [(f.name, f.type.name) for f in creator.field_names]
    ('demo_op', '1', [('alpha', 'FLOAT64')])
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from pyplugins.emulator import surface
from pyplugins.emulator.bases_quick import IPluginCreatorV3Quick
from pyplugins.emulator.plugin.attributes import attrs_from_fields, field_names_of
from pyplugins.emulator.plugin.plugin_class import TemplateAOTPlugin, TemplateJITPlugin
from pyplugins.emulator.version import emulated_version
from pyplugins.emulator.registry import get_plugin_registry
from pyplugins.errors import QDPDefinitionError, QDPTypeError

__all__ = ["QDP_CREATORS", "QDP_REGISTRY", "TemplatePluginCreator", "register_plugin_creator"]

#: ``"ns::name"`` -> the plugin's definition (``definitions.PluginDef``), filled by ``@register``.
QDP_REGISTRY: Dict[str, Any] = {}
#: ``"ns::name"`` -> the creator registered for it.
QDP_CREATORS: Dict[str, "TemplatePluginCreator"] = {}


def _request(name: str) -> Any:
    return getattr(surface.resolve("QuickPluginCreationRequest", emulated_version()[0]), name)


def _jit(desc: Any, name: str, namespace: str, attrs: Dict[str, Any]) -> TemplateJITPlugin:
    plugin = TemplateJITPlugin(name, namespace, desc.num_outputs)
    plugin.init(desc.register_func, attrs, desc.impl_attr_names, desc.impl_func,
                desc.autotune_attr_names, desc.autotune_func, desc.expects_tactic)
    return plugin


def _aot(desc: Any, name: str, namespace: str, attrs: Dict[str, Any]) -> TemplateAOTPlugin:
    plugin = TemplateAOTPlugin(name, namespace, desc.num_outputs)
    plugin.init(desc.register_func, attrs, desc.aot_impl_attr_names, desc.aot_impl_func,
                desc.autotune_attr_names, desc.autotune_func)
    return plugin


def _wants_jit(desc: Any, request: Any) -> bool:
    """JIT (True) or AOT (False) for a QuickPluginCreationRequest, as TensorRT decides."""
    has_aot, has_jit = desc.aot_impl_func is not None, desc.impl_func is not None
    if request == _request("STRICT_AOT"):
        if not has_aot:
            msg = (f"An AOT implementation was requested for QDP plugin '{desc.plugin_id}', which "
                   "has none: define @tensorrt.plugin.aot_impl")
            raise QDPDefinitionError(msg)
        return False
    if request == _request("STRICT_JIT"):
        if not has_jit:
            msg = (f"A JIT implementation was requested for QDP plugin '{desc.plugin_id}', which "
                   "has none: define @tensorrt.plugin.impl")
            raise QDPDefinitionError(msg)
        return True
    if has_aot and has_jit:
        if request == _request("PREFER_AOT"):
            return False
        if request == _request("PREFER_JIT"):
            return True
        msg = (f"QDP plugin '{desc.plugin_id}' has both an AOT and a JIT implementation: create "
               "the network with NetworkDefinitionCreationFlag.PREFER_AOT_PYTHON_PLUGINS or "
               "PREFER_JIT_PYTHON_PLUGINS, or pass aot=True/False to add_plugin")
        raise QDPDefinitionError(msg)
    if has_aot:
        return False
    if has_jit:
        return True
    msg = (f"QDP plugin '{desc.plugin_id}' has neither an AOT nor a JIT implementation: define "
           "@tensorrt.plugin.impl or @tensorrt.plugin.aot_impl")
    raise QDPDefinitionError(msg)


class TemplatePluginCreator(IPluginCreatorV3Quick):
    """The creator of one QDP plugin: plugin version "1", ``field_names`` from the attributes.

    ``attrs_types`` maps each attribute to ``(is_builtin, type)``, a Python type or NumPy dtype.
    """

    def __init__(self, name: str, namespace: str, attrs_types: Dict[str, tuple]) -> None:
        IPluginCreatorV3Quick.__init__(self)
        self.name = name
        self.plugin_namespace = namespace
        self.plugin_version = "1"
        self.field_names = field_names_of(attrs_types)

    def create_plugin(self, name: str, namespace: str, fc: Any, phase: Any,
                      qpcr: Optional[Any] = None) -> Any:
        """A JIT or AOT plugin for the attribute values in ``fc`` (see the module docstring)."""
        if qpcr is not None and emulated_version() < (10, 9):
            msg = ("create_plugin() takes (name, namespace, fc, phase) before TensorRT 10.9: "
                   "QuickPluginCreationRequest does not exist yet")
            raise QDPTypeError(msg)
        desc = QDP_REGISTRY[f"{namespace}::{name}"]
        attrs = attrs_from_fields(fc, desc.input_attrs, desc.plugin_id)
        if qpcr is None or _wants_jit(desc, qpcr):
            return _jit(desc, name, namespace, attrs)
        return _aot(desc, name, namespace, attrs)


def register_plugin_creator(name: str, namespace: str, attrs_types: Dict[str, tuple]
                            ) -> TemplatePluginCreator:
    """Register a creator for ``namespace::name`` (the registry keeps an earlier one of the same
    key) and return the registered creator."""
    registry = get_plugin_registry()
    registry.register_creator(TemplatePluginCreator(name, namespace, attrs_types), namespace)
    creator = registry.get_creator(name, "1", namespace)
    QDP_CREATORS[f"{namespace}::{name}"] = creator
    return creator
