"""The checks ``pp.Plugin`` runs on each subclass as it is defined: names that would shadow
TensorRT's C++-backed properties, IPluginV3 (or misspelled) method names a V2 plugin never
receives, class attributes of the wrong type, and field names ``pp.Plugin`` or TensorRT reserve.

Example:
    >>> class Bad:
    ...     num_outputs = 2
    >>> check_class(Bad)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pyplugins.errors.PluginDefinitionError: Bad defines 'num_outputs', which would shadow ...
"""

from __future__ import annotations

from typing import Iterable

from pyplugins.errors import PluginDefinitionError

__all__ = ["PROTOCOL_METHODS", "check_class", "check_field_names"]


#: Class attribute names that would shadow TensorRT's C++-backed properties -> what to use.
_RENAMED = {"num_outputs": "outputs", "plugin_type": "name", "plugin_version": "version",
            "plugin_namespace": "namespace", "plugin_name": "name"}
_READ_ONLY = ("tensorrt_version", "serialization_size", "FORMAT_COMBINATION_LIMIT")
#: IPluginV3 (or misspelled) method names a V2 plugin never receives -> the V2 method.
_NO_TACTICS = "nothing: IPluginV2DynamicExt has no tactics"
_V2_NAME = {"get_output_data_types": "get_output_datatype(index, input_types)",
            "get_output_data_type": "get_output_datatype(index, input_types)",
            "get_output_shapes": "get_output_dimensions(output_index, inputs, expr_builder)",
            "get_output_dims": "get_output_dimensions(output_index, inputs, expr_builder)",
            "on_shape_change": "configure_plugin(inp, out)", "attach_to_context": "clone()",
            "get_fields_to_serialize": "nothing: fields are serialized for you",
            "get_capability_interface": "nothing: pp.Plugin is an IPluginV2DynamicExt",
            "set_tactic": _NO_TACTICS, "get_valid_tactics": _NO_TACTICS}
#: Every method TensorRT calls on a V2 plugin (wrapped for error reports).
PROTOCOL_METHODS = ("get_output_datatype", "get_output_dimensions", "supports_format_combination",
                    "configure_plugin", "get_workspace_size", "enqueue", "initialize",
                    "terminate", "serialize", "get_serialization_size", "clone", "destroy")
_RESERVED = frozenset(("name", "version", "namespace", "outputs", "inputs", "dtypes", "same_as",
                       "shared", "aot_launch", "creator", "layer_name", "setup", "reference",
                       "launch_device", "plan", "check_configure", "check_shapes",
                       "launch", "field_values", "from_fields", "advertised_fields",
                       "tactics", "tactic", "shape_inputs", "size_tensors", "aliases",
                       "from_bytes", *PROTOCOL_METHODS, *_RENAMED, *_READ_ONLY, *_V2_NAME))


def check_class(cls: type) -> None:
    """Refuse a plugin class whose own attributes TensorRT would not see or never call.

    Raises:
        PluginDefinitionError: naming the class, the attribute and what to write instead.
    """
    own = vars(cls)
    for attr, use in _RENAMED.items():
        if attr in own:
            msg = (f"{cls.__name__} defines {attr!r}, which would shadow TensorRT's C++-backed "
                   f"property of that name (C++ would never see the value); set {use!r} on the "
                   f"class instead, e.g. {use} = {own[attr]!r}.")
            raise PluginDefinitionError(msg)
    for attr in _READ_ONLY:
        if attr in own:
            msg = (f"{cls.__name__} defines {attr!r}, a read-only TensorRT property; remove it.")
            raise PluginDefinitionError(msg)
    for attr, use in _V2_NAME.items():
        if attr in own:
            msg = (f"{cls.__name__} defines {attr}(), which TensorRT never calls on an "
                   f"IPluginV2DynamicExt (it is an IPluginV3 or misspelled name); use {use}.")
            raise PluginDefinitionError(msg)
    for attr in ("name", "version", "namespace"):
        if attr in own and not isinstance(own[attr], str):
            value = own[attr]
            msg = (f"{cls.__name__}.{attr} must be a str (got {value!r}, a "
                   f"{type(value).__name__}); e.g. {attr} = {str(value)!r}.")
            raise PluginDefinitionError(msg)
    if "outputs" in own:
        value = own["outputs"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            msg = f"{cls.__name__}.outputs must be an int >= 1 (got {value!r})."
            raise PluginDefinitionError(msg)
    if "inputs" in own and own["inputs"] is not None:
        value = own["inputs"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            msg = f"{cls.__name__}.inputs must be None or an int >= 0 (got {value!r})."
            raise PluginDefinitionError(msg)
    if "shared" in own and (isinstance(own["shared"], str)
                            or not all(isinstance(s, str) for s in own["shared"])):
        msg = f"{cls.__name__}.shared must be a tuple of attribute names (got {own['shared']!r})."
        raise PluginDefinitionError(msg)



def check_field_names(cls: type, names: Iterable[str]) -> None:
    """Refuse a field named like something ``pp.Plugin`` or TensorRT uses, or starting with ``_``.

    Example:
        >>> check_field_names(type("P", (), {}), ["pads", "mode"])  # fine: no error
    """
    for field_name in names:
        if field_name in _RESERVED or field_name.startswith("_"):
            msg = (f"{cls.__name__}: a field cannot be named {field_name!r} (reserved by "
                   f"pp.Plugin or TensorRT); choose another attribute name.")
            raise PluginDefinitionError(msg)
