"""ONNX nodes for a ``pp.Plugin`` registered as ``tensorrt.plugin`` (QDP): the op type,
``plugin_namespace``, ``aot`` and every field written out.

TensorRT's ONNX parser finds a QDP plugin by op type and the node's ``plugin_namespace``
attribute, and an ``aot`` attribute (an int: 1 or 0) asks for the ahead-of-time or the JIT
implementation (protocol §4.4, §8.3; NVIDIA's QDP sample README). QDP attributes have no
defaults, so :func:`node_attributes` writes every field, defaults included, validated by the
plugin's own fields. The parser narrows INT and INTS attributes to int32, so larger values are
refused here rather than silently wrapped there.

Example:
    >>> from pyplugins.ops.leaky_relu import LeakyReLU
    >>> node = qdp_node(LeakyReLU, ["x"], ["y"], name="lrelu", neg_slope=0.2)
    >>> node.op_type, [(a.name, a.type) for a in node.attribute]
    ('LReLU_TRT', [('plugin_namespace', 3), ('plugin_version', 3), ('aot', 2), ('neg_slope', 1)])
    >>> node_attributes(LeakyReLU, aot=False)
    {'plugin_namespace': 'pyplugins', 'plugin_version': '1', 'aot': 0, 'neg_slope': 0.01}
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from pyplugins.errors import FieldError, require
from pyplugins.runtime import qdp

__all__ = ["node_attributes", "qdp_node"]

_INT32 = (-2**31, 2**31 - 1)


def _checked_int(cls: Any, name: str, value: int) -> int:
    if not _INT32[0] <= int(value) <= _INT32[1]:
        msg = (f"Field {name!r} of plugin {cls.name!r} is {int(value)}, but TensorRT's ONNX "
               "parser narrows INT attributes to int32; give a value in int32's range.")
        raise FieldError(msg)
    return int(value)


def node_attributes(cls: Any, *, aot: bool = True, **values: Any) -> Dict[str, Any]:
    """The attributes of a QDP node of ``cls`` (for ``onnx.helper`` or onnx-graphsurgeon's
    ``gs.Node(attrs=...)``): ``plugin_namespace``, ``plugin_version``, ``aot`` and every field
    as a Python value (bools as 0/1).

    Raises:
        PluginDefinitionError: the class cannot be a QDP plugin (:func:`~pyplugins.runtime.qdp.check_qdp`).
        AotUnsupportedError: ``aot`` is asked of a class without an ahead-of-time kernel.
        FieldError: a bad or missing field value, or an int outside int32.
    """
    qdp.check_qdp(cls)
    if aot:
        qdp.require_aot(cls)
    plugin = cls(**values)
    attrs: Dict[str, Any] = {"plugin_namespace": qdp.namespace_of(cls), "plugin_version": "1",
                             "aot": int(bool(aot))}
    for name, field in cls.__pp_fields__.items():
        value = getattr(plugin, name)
        if field.base == "bool":
            value = int(value)
        elif field.base == "int":
            value = _checked_int(cls, name, value)
        elif field.base == "ints":
            value = [_checked_int(cls, name, v) for v in value]
        attrs[name] = value
    return attrs


def qdp_node(cls: Any, inputs: Sequence[str], outputs: Sequence[str], *,
             name: Optional[str] = None, aot: bool = True, **values: Any) -> Any:
    """An ``onnx.NodeProto`` of ``cls`` as a QDP plugin (see :func:`node_attributes`).

    Raises:
        ValueError: not as many inputs and outputs as the class declares; and what
            :func:`node_attributes` raises.
    """
    onnx = require("onnx", "writing ONNX plugin nodes")
    n_in = qdp.input_count(cls)
    if len(inputs) != n_in or len(outputs) != cls.outputs:
        msg = (f"plugin {cls.name!r} takes {n_in} input(s) and gives {cls.outputs} output(s) "
               f"(got {len(inputs)} and {len(outputs)} tensor names)")
        raise ValueError(msg)
    attrs = node_attributes(cls, aot=aot, **values)
    node = onnx.helper.make_node(cls.name, list(inputs), list(outputs), name=name)
    kinds = {"ints": onnx.AttributeProto.INTS, "floats": onnx.AttributeProto.FLOATS}
    for key, value in attrs.items():
        field = cls.__pp_fields__.get(key)
        kind = kinds.get(field.base) if field is not None else None
        node.attribute.append(onnx.helper.make_attribute(key, value, attr_type=kind))
    return node
