"""ONNX node attributes -> the ``fc`` a creator's ``create_plugin`` receives, as TensorRT's parser
builds it (docs/trt-protocol.md §4.4; onnx-tensorrt ``FallbackPluginImporter``, ``copyField``).

The rules, as the parser applies them:

- ``loadFields`` walks the creator's ``field_names`` (names only; the declared types are ignored).
  A name missing from the node is skipped with a warning; a node attribute the creator does not
  list never reaches the plugin.
- The field's type comes from the ONNX attribute: INT and INTS become INT32 (int64 narrowed the
  way C++ narrows, i.e. wrapped modulo 2**32), FLOAT and FLOATS FLOAT32 (a finite Python value
  beyond float32 is refused rather than silently made inf), STRING becomes CHAR with
  a trailing NUL, STRINGS every string NUL-terminated and concatenated.
- TENSOR attributes keep their element type, after the parser's weight conversion
  (``WeightsContext::convertOnnxWeights``): see :mod:`pyplugins.emulator.onnx_tensors`, which
  also reads external data, only from inside the model's directory (``model_dir``). Data that
  does not match the dims is an error naming the node and attribute.
- Of duplicate attribute names on one node the first wins (``OnnxAttrs`` fills its map with
  ``insert``), with a warning.

Plain Python values stand for the ONNX attribute ``onnx.helper.make_attribute`` would build from
them (int -> INT, float -> FLOAT, list of ints -> INTS, ...; a numpy array -> TENSOR), so the
``onnx`` package is only imported when it is given ``AttributeProto``/``NodeProto`` objects.

Example:
    >>> fc, warnings = fields_from_attributes({"pads": (1, 2), "mode": "wrap", "x": 3},
    ...                                       ["pads", "mode", "scale"])
    >>> [(f.name, f.type.name, f.size) for f in fc]
    [('pads', 'INT32', 2), ('mode', 'CHAR', 5)]
    >>> fc[1].data.tobytes()
    b'wrap\\x00'
    >>> warnings[0].startswith("Attribute scale not found in plugin node!")
    True
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from pyplugins.emulator.enums import PluginFieldType
from pyplugins.emulator.onnx_tensors import tensor_field
from pyplugins.emulator.plugin_field import PluginField, PluginFieldCollection_
from pyplugins.emulator.registry import get_plugin_registry
from pyplugins.emulator.version import emulated_version
from pyplugins.echo import echo
from pyplugins.errors import FieldError

#: The node attribute that marks IPluginV3 shape inputs (ONNX parser 10.1+).
SHAPE_INPUT_INDICES = "tensorrt_plugin_shape_input_indices"

__all__ = ["ImportedNode", "SHAPE_INPUT_INDICES", "fields_from_attributes", "import_node",
           "value_from_cli"]

_INT64_RANGE = (-(2**63), 2**63 - 1)
_NOTED = 3  # narrowing notes per attribute before "N more"

AttributeValue = Any


# -- the attribute -> (kind, payload) step ---------------------------------------------------------

def _classify(name: str, value: AttributeValue) -> Tuple[str, Any]:
    """(ONNX attribute type name, payload) for an AttributeProto or a plain Python value."""
    if type(value).__name__ == "AttributeProto" and hasattr(value, "ref_attr_name"):
        return _classify_proto(name, value)
    if type(value).__name__ == "TensorProto" and hasattr(value, "data_type"):
        return "TENSOR", value
    if isinstance(value, np.ndarray):
        return "TENSOR", value
    if isinstance(value, (bool, np.bool_, numbers.Integral)):
        return "INT", int(value)
    if isinstance(value, numbers.Real):
        return "FLOAT", float(value)
    if isinstance(value, (str, bytes)):
        return "STRING", value
    if isinstance(value, (list, tuple)):
        items = list(value)
        if not items:
            msg = (f"Attribute {name!r}: cannot tell the ONNX type of an empty list (onnx's "
                   "make_attribute refuses it too); pass onnx.helper.make_attribute("
                   f"{name!r}, [], attr_type=onnx.AttributeProto.INTS) or a non-empty list.")
            raise FieldError(msg)
        if all(isinstance(v, (bool, np.bool_, numbers.Integral)) for v in items):
            return "INTS", [int(v) for v in items]
        if all(isinstance(v, numbers.Real) for v in items):
            return "FLOATS", [float(v) for v in items]
        if all(isinstance(v, (str, bytes)) for v in items):
            return "STRINGS", items
        msg = (f"Attribute {name!r}: a list must hold only ints, only numbers or only strings "
               f"to be an ONNX attribute (got {echo(value)}).")
        raise FieldError(msg)
    msg = (f"Attribute {name!r}: {echo(value)} (a {type(value).__name__}) is not an ONNX attribute "
           "value; use an int, float, str, bytes, a list of those, a numpy array or an "
           "onnx.AttributeProto.")
    raise FieldError(msg)


def _classify_proto(name: str, attr: Any) -> Tuple[str, Any]:
    from onnx import AttributeProto  # noqa: PLC0415 - only when given AttributeProtos

    kind = AttributeProto.AttributeType.Name(attr.type)
    if kind == "INT":
        return kind, int(attr.i)
    if kind == "FLOAT":
        return kind, float(attr.f)
    if kind == "STRING":
        return kind, bytes(attr.s)
    if kind == "INTS":  # numpy arrays: a huge attribute converts at C speed
        return kind, np.array(attr.ints, dtype=np.int64)
    if kind == "FLOATS":
        return kind, np.array(attr.floats, dtype=np.float64)
    if kind == "STRINGS":
        return kind, [bytes(v) for v in attr.strings]
    if kind == "TENSOR":
        return kind, attr.t
    msg = f"Attribute {name!r}: Attributes of type: {kind} are unsupported as plugin fields."
    raise FieldError(msg)


# -- payload -> PluginField ------------------------------------------------------------------------

def _int32(name: str, values: Sequence[int], notes: List[str]) -> np.ndarray:
    """C++ narrowing of int64 attribute values to int32_t: modulo 2**32, as every compiler does.
    Vectorized, so a 10-million-value INTS converts in milliseconds; the first few values that
    change are noted, then how many more."""
    try:
        wide = np.array(values, dtype=np.int64)
    except OverflowError:
        bad = next(v for v in values if not _INT64_RANGE[0] <= v <= _INT64_RANGE[1])
        msg = (f"Attribute {name!r}: {echo(bad)} does not fit an ONNX INT attribute (int64); "
               "ONNX cannot store it.")
        raise FieldError(msg) from None
    narrow = wide.astype(np.int32)
    changed = np.flatnonzero(narrow != wide)
    for i in changed[:_NOTED]:
        notes.append(f"Attribute {name}: {int(wide[i])} does not fit int32; TensorRT's parser "
                     f"narrows INT/INTS to int32 and the plugin receives {int(narrow[i])}.")
    if len(changed) > _NOTED:
        notes.append(f"Attribute {name}: {len(changed) - _NOTED} more values do not fit int32 and "
                     "are narrowed the same way.")
    return narrow


def _float32(name: str, values: Sequence[float], notes: List[str]) -> np.ndarray:
    """ONNX FLOAT/FLOATS hold float32. A finite Python value beyond float32 would silently become
    inf (``onnx.helper.make_attribute`` stores it so): refused, naming the attribute; one that
    loses more than rounding (underflow to a subnormal or 0) is noted, as int32 narrowing is.
    An ``AttributeProto`` already holds float32, so its inf passes as the parser passes it."""
    wide = np.array(values, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        data = wide.astype(np.float32)
        finite = np.isfinite(wide)
        overflow = np.flatnonzero(finite & ~np.isfinite(data))
        if len(overflow):
            msg = (f"Attribute {name!r}: {float(wide[overflow[0]])!r} does not fit an ONNX FLOAT "
                   "attribute (float32, at most 3.4028235e+38) and would become inf; pass "
                   "float('inf') if inf is meant.")
            raise FieldError(msg)
        lossy = np.flatnonzero(finite & (np.abs(data.astype(np.float64) - wide)
                                         > np.abs(wide) * 2.0 ** -24))
    if len(lossy):
        i = lossy[0]
        notes.append(f"Attribute {name}: {float(wide[i])!r} loses precision as float32; TensorRT's "
                     f"parser narrows FLOAT/FLOATS to float32 and the plugin receives "
                     f"{data[i].item()!r}.")
    return data


def _as_bytes(value: Union[str, bytes]) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)



def _field(name: str, kind: str, payload: Any, notes: List[str],
           model_dir: Optional[str] = None) -> PluginField:
    if kind in ("INT", "INTS"):
        values = [payload] if kind == "INT" else payload
        return PluginField(name, _int32(name, values, notes), PluginFieldType.INT32)
    if kind in ("FLOAT", "FLOATS"):
        values = [payload] if kind == "FLOAT" else payload
        return PluginField(name, _float32(name, values, notes), PluginFieldType.FLOAT32)
    if kind in ("STRING", "STRINGS"):
        values = [payload] if kind == "STRING" else payload
        raw = b"".join(_as_bytes(v) + b"\0" for v in values)
        return PluginField(name, np.frombuffer(raw, dtype=np.int8), PluginFieldType.CHAR)
    return tensor_field(name, payload, model_dir)


def _names(field_names: Any) -> List[str]:
    if field_names is None:
        return []
    if isinstance(field_names, str):
        return [field_names]
    return [f if isinstance(f, str) else f.name for f in field_names]


def _as_mapping(attrs: Any, notes: List[str], node: str) -> Mapping[str, AttributeValue]:
    if attrs is None:
        return {}
    if isinstance(attrs, Mapping):
        return attrs
    mapping: Dict[str, AttributeValue] = {}
    for a in attrs:  # an iterable of AttributeProto (node.attribute)
        if a.name in mapping:
            notes.append(f"Attribute {a.name} appears more than once on node {node!r}; "
                         "TensorRT's parser keeps the first and ignores the others.")
            continue
        mapping[a.name] = a
    return mapping


def fields_from_attributes(attrs: Union[Mapping[str, AttributeValue], Iterable[Any], None],
                           field_names: Any, *, node: str = "",
                           model_dir: Optional[str] = None
                           ) -> Tuple[PluginFieldCollection_, List[str]]:
    """Build the ``fc`` TensorRT's ONNX parser passes to ``create_plugin`` (``loadFields``).

    Args:
        attrs: attribute name -> ``onnx.AttributeProto`` or a plain Python value (int, float,
            str/bytes, a list of one of those, a numpy array for a TENSOR attribute); or an
            iterable of AttributeProto such as ``node.attribute``.
        field_names: the creator's ``field_names`` (PluginFields; only their names are used) or
            a sequence of names.
        node: the node's name, for messages.
        model_dir: the model's directory, where TENSOR external data is read from (None: such
            data is refused, never read from the working directory).

    Returns:
        ``(fc, warnings)``: the collection, in ``field_names`` order, and the parser's warnings
        (one per name missing from ``attrs``) plus notes on int32 narrowing that changed a value
        and on duplicate attributes (the first wins).

    Raises:
        FieldError: for an attribute the parser refuses (INT64/BOOL/UINT8 tensors, INT16 and
            STRING tensors, GRAPH/TENSORS/... attributes, TENSOR data that does not match its
            dims, external data outside ``model_dir``), naming the attribute (and the node).
    """
    warnings: List[str] = []
    mapping = _as_mapping(attrs, warnings, node)
    fields: List[PluginField] = []
    for name in _names(field_names):
        if name not in mapping:
            warnings.append(f"Attribute {name} not found in plugin node! Ensure that the plugin "
                            "creator has a default value defined or the engine may fail to "
                            "build.")
            continue
        try:
            kind, payload = _classify(name, mapping[name])
            fields.append(_field(name, kind, payload, warnings, model_dir))
        except FieldError as err:
            if node and f"node {node!r}" not in str(err):
                raise FieldError(f"Node {node!r}: {err}") from err
            raise
    return PluginFieldCollection_(fields), warnings


def value_from_cli(text: str) -> Union[int, float, str, List[int], List[float]]:
    """Turn the VALUE of ``--attr NAME=VALUE`` into the Python value of an ONNX attribute.

    Rules, first match wins: ``'...'``/``"..."`` -> the string inside (to force a string);
    an int (``3``, ``-2``, ``0x10``) -> int (INT); a float (``0.5``, ``1e-3``, ``nan``) -> float
    (FLOAT); a comma list of ints (``1,1,2,2``; ``[1,1]``; ``5,`` for a one-item list) ->
    list[int] (INTS); a comma list of numbers -> list[float] (FLOATS); anything else -> str.

    Example:
        >>> value_from_cli("3"), value_from_cli("0.5"), value_from_cli("1,2"), value_from_cli("wrap")
        (3, 0.5, [1, 2], 'wrap')
    """
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    scalar = _number(text)
    if scalar is not None:
        return scalar
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    if "," in body:
        parts = body.split(",")
        if parts[-1].strip() == "":
            parts = parts[:-1]
        numbers_ = [_number(p) for p in parts]
        if parts and all(n is not None for n in numbers_):
            if all(isinstance(n, int) for n in numbers_):
                return [int(n) for n in numbers_]
            return [float(n) for n in numbers_]
    elif body != text.strip() and body.strip() == "":
        return []  # "[]" -> an empty list (classified later; an empty list is ambiguous)
    return text


def _number(text: str) -> Optional[Union[int, float]]:
    s = text.strip()
    if not s:
        return None
    for parse in (int, lambda v: int(v, 0)):
        try:
            return parse(s)
        except ValueError:
            pass
    try:
        return float(s)
    except ValueError:
        return None


# -- whole nodes -----------------------------------------------------------------------------------

@dataclass
class ImportedNode:
    """What the parser does with one plugin node before calling ``create_plugin``.

    Attributes:
        creator: the registered creator found for ``key``.
        name: the name ``create_plugin`` receives (the node's name, or ``node_of_<output0>``).
        fc: the field collection (see :func:`fields_from_attributes`).
        warnings: the parser's warnings for this node.
        key: ``(op_type, plugin_version, plugin_namespace)`` the creator was found under.
        shape_input_indices: the node inputs that are shape inputs of an IPluginV3 plugin
            (attribute ``tensorrt_plugin_shape_input_indices``, parser 10.1+): they go to
            ``add_plugin_v3``'s ``shape_inputs``, the others are its inputs.
    """

    creator: Any
    name: str
    fc: PluginFieldCollection_
    warnings: List[str] = field(default_factory=list)
    key: Tuple[str, str, str] = ("", "1", "")
    shape_input_indices: Tuple[int, ...] = ()

    def split_inputs(self, inputs: Sequence[Any]) -> Tuple[List[Any], List[Any]]:
        """``(inputs, shape_inputs)``: the node's inputs routed as the parser routes them.

        Example:
            >>> ImportedNode(None, "n", None, shape_input_indices=(1,)).split_inputs(["x", "s"])
            (['x'], ['s'])
        """
        shape = [x for i, x in enumerate(inputs) if i in self.shape_input_indices]
        return [x for i, x in enumerate(inputs) if i not in self.shape_input_indices], shape


def _shape_input_indices(node: Any) -> Tuple[int, ...]:
    """The node's ``tensorrt_plugin_shape_input_indices`` (INTS, or an integer TENSOR)."""
    for attr in node.attribute:
        if attr.name == SHAPE_INPUT_INDICES:
            if attr.type == 4:  # AttributeProto.TENSOR
                from onnx import numpy_helper  # noqa: PLC0415 - onnx is optional (the onnx extra)

                return tuple(int(v) for v in numpy_helper.to_array(attr.t).reshape(-1))
            return tuple(int(v) for v in attr.ints)
    return ()


def _string_attr(node: Any, name: str, default: str, notes: List[str]) -> str:
    """``OnnxAttrs::get<std::string>(name, default)``: reads ``.s`` whatever the type is."""
    for attr in node.attribute:
        if attr.name == name:
            value = bytes(attr.s).decode("utf-8", "replace")
            if attr.type != 3:  # AttributeProto.STRING
                notes.append(f"Attribute {name} is not a STRING attribute; TensorRT's parser reads "
                             f"its string value, which is {echo(value)}. Write it as a string.")
            return value
    return default


def _node_name(node: Any) -> str:
    if not node.name and len(node.output) > 0:
        return "node_of_" + node.output[0]
    return node.name


def import_node(node: Any, registry: Any = None, model_dir: Optional[str] = None) -> ImportedNode:
    """Find the creator for an ONNX plugin node and build its fields, as ``FallbackPluginImporter``.

    The creator is looked up by ``(op_type, plugin_version attr or "1", plugin_namespace attr or
    "")``; from TensorRT 10.10 the parser retries with the node's ``domain`` as the namespace.

    Args:
        node: an ``onnx.NodeProto``.
        registry: an ``IPluginRegistry``; the emulator's by default.
        model_dir: the model's directory, for TENSOR attributes with external data (None: they
            are refused).

    Raises:
        LookupError: when no creator is registered under the key (the message lists what is).
        FieldError: when an attribute named in ``field_names`` cannot become a plugin field.
    """
    reg = registry if registry is not None else get_plugin_registry()
    notes: List[str] = []
    op_type = node.op_type
    version = _string_attr(node, "plugin_version", "1", notes)
    namespace = _string_attr(node, "plugin_namespace", "", notes)
    key = (op_type, version, namespace)
    creator = reg.get_creator(*key)
    domain = getattr(node, "domain", "")
    if creator is None and domain and emulated_version() >= (10, 10):
        key = (op_type, version, domain)
        creator = reg.get_creator(*key)
    if creator is None:
        known = sorted(f"{c.name}:{c.plugin_version}:{c.plugin_namespace}"
                       for c in reg.all_creators) or ["(none)"]
        tried = f"({echo(op_type)}, {echo(version)}, {echo(namespace)})"
        if domain and emulated_version() >= (10, 10):
            tried += (f" and ({echo(op_type)}, {echo(version)}, {echo(domain)}) from the node's "
                      "domain")
        msg = (f"Plugin not found, are the plugin name, version, and namespace correct? Node "
               f"{echo(_node_name(node))} asks for (name, version, namespace) = {tried}; "
               f"registered creators (name:version:namespace): {', '.join(known)}. Register the "
               "creator (import the module that defines it) before importing the node.")
        if notes:
            msg += " " + " ".join(notes)
        raise LookupError(msg)
    fc, warnings = fields_from_attributes(list(node.attribute), creator.field_names,
                                          node=_node_name(node), model_dir=model_dir)
    return ImportedNode(creator, _node_name(node), fc, notes + warnings, key,
                        _shape_input_indices(node))
