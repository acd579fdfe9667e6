"""QDP nodes of an ONNX model: what TensorRT's parser does with a node whose creator is a
``tensorrt.plugin`` (QDP) creator, and the refusals a model check owes its author.

TensorRT's ONNX parser (onnx-tensorrt ``FallbackPluginImporter``, ``addPluginWithCreator``,
``createPlugin``; docs/trt-protocol.md §4.4, §8.6) finds the creator by op type,
``plugin_version`` and ``plugin_namespace`` (then the node's domain), builds the fields with the
same ``loadFields`` as for any plugin (types from the ONNX attribute: INT -> INT32, FLOAT ->
FLOAT32, STRING -> CHAR with a NUL, ...), and calls ``createPlugin(op_type, namespace, fc,
BUILD, request)``. The request: the node's ``aot`` attribute, when present, asks STRICT_AOT
(non-zero) or STRICT_JIT (0); otherwise the network flags PREFER_AOT_PYTHON_PLUGINS /
PREFER_JIT_PYTHON_PLUGINS ask PREFER_AOT / PREFER_JIT (both set: the import fails), and no flag
UNKNOWN, which a plugin with both implementations refuses.

``tensorrt.plugin``'s ``create_plugin`` then converts each field by the register function's
annotation, and a QDP attribute has no default. So where TensorRT would build a plugin that fails
later (a missing attribute: the register function's call fails in the build; a FLOAT32 field for
a float16 array: its bytes reinterpreted) or silently drops what the author meant (an attribute
the plugin does not declare), :func:`inspect` refuses the node with a :class:`FieldError` naming
the node and the attribute. Those refusals are pyplugins', not TensorRT's, and say so.

Example:
    >>> from onnx import helper
    >>> onnx_type_names(helper.make_node("X", [], [], a=1.5, b=[1, 2]).attribute)
    {'a': 'FLOAT', 'b': 'INTS'}
    >>> request_name(node_aot=None, flag="jit", has_jit=True, has_aot=True)
    'PREFER_JIT'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional

import numpy as np

from pyplugins.emulator.bases_quick import IPluginCreatorV3Quick
from pyplugins.emulator.onnx_import import SHAPE_INPUT_INDICES
from pyplugins.emulator.plugin.attributes import is_numpy_array, numpy_dtype_of
from pyplugins.emulator.plugin.creator import QDP_REGISTRY
from pyplugins.emulator.version import emulated_version
from pyplugins.errors import FieldError

__all__ = ["FLAGS", "QDPNode", "inspect", "is_qdp", "onnx_type_names", "request_name"]

#: The network flags a model path may set: ``"jit"`` (PREFER_JIT_PYTHON_PLUGINS) or ``"aot"``.
FLAGS = ("jit", "aot")
#: Node attributes the parser reads itself; none of them is a plugin attribute.
_PARSER_ATTRS = ("plugin_namespace", "plugin_version", "aot", SHAPE_INPUT_INDICES)
_ONNX_TYPES = {0: "UNDEFINED", 1: "FLOAT", 2: "INT", 3: "STRING", 4: "TENSOR", 5: "GRAPH",
               6: "FLOATS", 7: "INTS", 8: "STRINGS", 9: "SPARSE_TENSOR", 10: "GRAPHS",
               11: "SPARSE_TENSORS", 12: "TYPE_PROTO", 13: "TYPE_PROTOS"}
_INTEGRAL = ("INT", "INTS", "TENSOR")
_NUMERIC = ("FLOAT", "FLOATS", "INT", "INTS", "TENSOR")


def is_qdp(creator: Any) -> bool:
    """Whether ``creator`` makes ``tensorrt.plugin`` (QDP) plugins (an ``IPluginCreatorV3Quick``)."""
    return isinstance(creator, IPluginCreatorV3Quick)


def onnx_type_names(attributes: Iterable[Any]) -> Dict[str, str]:
    """``{name: ONNX attribute type name}`` of ``node.attribute`` (the first of duplicates, as
    the parser keeps it)."""
    out: Dict[str, str] = {}
    for attr in attributes:
        out.setdefault(attr.name, _ONNX_TYPES.get(int(attr.type), str(attr.type)))
    return out


def request_name(*, node_aot: Optional[bool], flag: Optional[str], has_jit: bool,
                 has_aot: bool) -> Optional[str]:
    """The ``QuickPluginCreationRequest`` member the parser passes (None before TensorRT 10.9,
    which has no request: the plugin is JIT).

    Raises:
        ValueError: ``flag`` is not None, ``"jit"`` or ``"aot"``.
    """
    if flag not in (None, *FLAGS):
        msg = f"the network flag must be None, 'jit' or 'aot' (got {flag!r})"
        raise ValueError(msg)
    if emulated_version() < (10, 9):
        return None
    if node_aot is not None:
        return "STRICT_AOT" if node_aot else "STRICT_JIT"
    if flag is not None:
        return "PREFER_AOT" if flag == "aot" else "PREFER_JIT"
    return "UNKNOWN"


@dataclass
class QDPNode:
    """What :func:`inspect` found on one QDP node.

    Attributes:
        plugin_id: ``"namespace::name"``.
        aot: the node's ``aot`` attribute (None when absent, or ignored before 10.9).
        has_jit, has_aot: which implementations the plugin registered.
        warnings: what the author should know although TensorRT accepts it.
    """

    plugin_id: str
    aot: Optional[bool]
    has_jit: bool
    has_aot: bool
    warnings: List[str] = field(default_factory=list)

    def request(self, flag: Optional[str]) -> Optional[str]:
        """The request for this node under network flag ``flag`` (:func:`request_name`)."""
        return request_name(node_aot=self.aot, flag=flag, has_jit=self.has_jit,
                            has_aot=self.has_aot)


def _accepted(annotation: Any) -> tuple:
    """The ONNX attribute types whose fields ``create_plugin`` converts to ``annotation``
    faithfully [infer: from loadFields' field types and _lib.py's conversions]."""
    if is_numpy_array(annotation):
        try:
            dtype = np.dtype(numpy_dtype_of(annotation))
        except Exception:  # noqa: BLE001 - a bare np.ndarray (lazy_register): any number
            return _NUMERIC
        if dtype == np.float16:  # converted from the field's raw bytes: only FLOAT16 data fits
            return ("TENSOR",)
        return _INTEGRAL if dtype.kind in "iub" else _NUMERIC
    if annotation in (str, bytes):
        return ("STRING",)
    if annotation in (int, bool):
        return ("INT",)
    return ("FLOAT", "INT")


def _type_text(annotation: Any) -> str:
    if is_numpy_array(annotation):
        try:
            return f"an array of {np.dtype(numpy_dtype_of(annotation))}"
        except Exception:  # noqa: BLE001
            return "an array"
    return getattr(annotation, "__name__", str(annotation))


def inspect(node: Any, creator: Any, node_name: str) -> QDPNode:
    """Check a QDP node against its plugin's registration (module docstring).

    Raises:
        FieldError: an attribute the plugin does not declare; one it declares that the node
            lacks; an ONNX type ``create_plugin`` cannot convert to the registered annotation; an
            ``aot`` attribute that is not an INT, or that asks for an implementation the plugin
            lacks. Each names the node and the attribute.
    """
    plugin_id = f"{creator.plugin_namespace}::{creator.name}"
    definition = QDP_REGISTRY.get(plugin_id)
    declared: Dict[str, Any] = dict(getattr(definition, "input_attrs", None) or {})
    if not declared:
        declared = {f.name: None for f in creator.field_names or []}
    types = onnx_type_names(node.attribute)
    who = f"Node {node_name!r} (QDP plugin '{plugin_id}')"
    listed = ", ".join(declared) or "none"
    for name in types:
        if name not in declared and name not in _PARSER_ATTRS:
            msg = (f"{who}: attribute {name!r} is not an attribute of the plugin (its attributes: "
                   f"{listed}); TensorRT's parser never passes it on, so the plugin would not see "
                   "it. Remove or rename it (pyplugins refuses it: TensorRT drops it silently).")
            raise FieldError(msg)
    for name, annotation in declared.items():
        if name not in types:
            msg = (f"{who}: the node has no attribute {name!r}; QDP attributes have no defaults "
                   "(TensorRT's parser skips it with a warning and create_plugin makes a plugin "
                   f"without it, which then fails). Write every attribute: {listed}.")
            raise FieldError(msg)
        ok = _accepted(annotation) if annotation is not None else _NUMERIC + ("STRING",)
        if types[name] not in ok:
            msg = (f"{who}: attribute {name!r} is {types[name]}, but the plugin registers it as "
                   f"{_type_text(annotation)}, which create_plugin converts only from "
                   f"{' or '.join(ok)} attributes; write it as {ok[0]}.")
            raise FieldError(msg)
    warnings = [f"{who}: attribute {name!r} arrives as the string plus a NUL: TensorRT's parser "
                "appends one and tensorrt.plugin decodes it with the rest (docs/trt-protocol.md "
                "§10.6)" for name, annotation in declared.items() if annotation is str]
    has_jit = getattr(definition, "impl_func", None) is not None
    has_aot = getattr(definition, "aot_impl_func", None) is not None
    aot = _aot_attribute(node, who, types, has_jit, has_aot, warnings)
    return QDPNode(plugin_id, aot, has_jit, has_aot, warnings)


def _aot_attribute(node: Any, who: str, types: Dict[str, str], has_jit: bool, has_aot: bool,
                   warnings: List[str]) -> Optional[bool]:
    if "aot" not in types:
        return None
    if emulated_version() < (10, 9):
        warnings.append(f"{who}: attribute 'aot' is ignored before TensorRT 10.9 (no "
                        "QuickPluginCreationRequest): the plugin is JIT")
        return None
    if types["aot"] != "INT":
        msg = (f"{who}: attribute 'aot' is {types['aot']}; TensorRT's parser reads it as an INT "
               "(1: the AOT implementation, 0: the JIT one). Write aot=1 or aot=0.")
        raise FieldError(msg)
    value = bool(next(a.i for a in node.attribute if a.name == "aot"))
    if value and not has_aot:
        msg = (f"{who}: attribute aot=1 asks for the AOT implementation (STRICT_AOT), but the "
               "plugin has no @tensorrt.plugin.aot_impl, so create_plugin refuses it. Set aot=0 "
               "or define aot_impl.")
        raise FieldError(msg)
    if not value and not has_jit:
        msg = (f"{who}: attribute aot=0 asks for the JIT implementation (STRICT_JIT), but the "
               "plugin has no @tensorrt.plugin.impl, so create_plugin refuses it. Set aot=1 or "
               "define impl.")
        raise FieldError(msg)
    return value
