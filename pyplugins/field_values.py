"""Field values from where they arrive: Python keywords and NumPy scalars, and the
``PluginFieldCollection`` the ONNX parser delivers (int32 arrays, NUL-terminated CHAR bytes).

:class:`pyplugins.fields.Field` declares and validates one field; this module turns raw inputs
into the Python values it checks, and gathers every field of a plugin from keywords
(:func:`values_from_python`) or from ``create_plugin``'s collection (:func:`values_from_fc`).

Example:
    >>> import numpy as np
    >>> import pyplugins.trt as trt
    >>> from pyplugins.field_values import python_from_plugin_field, scalar_from_python
    >>> scalar_from_python("bool", "yes"), scalar_from_python("int", np.int32(3))
    (True, 3)
    >>> scalar_from_python("int", 1.5) is None
    True
    >>> mode = trt.PluginField("mode", np.frombuffer(b"max\\0", np.int8), trt.PluginFieldType.CHAR)
    >>> python_from_plugin_field(mode, as_text=True)      # the parser's trailing NUL is gone
    'max'
    >>> size = trt.PluginField("k", np.array([3, 3], np.int32), trt.PluginFieldType.INT32)
    >>> python_from_plugin_field(size, as_text=False)
    [3, 3]
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Union

import numpy as np

from pyplugins.errors import FieldError

if TYPE_CHECKING:
    from pyplugins.fields import Field

_INT_TYPES = {"INT8", "INT16", "INT32", "INT64"}
_FLOAT_TYPES = {"FLOAT32", "FLOAT64"}
_BYTE_TYPES = {"CHAR", "INT8", "UNKNOWN"}
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def scalar_from_python(kind: str, value: Any) -> Any:
    """``value`` as a Python ``kind`` scalar (``"int"``, ``"float"``, ``"bool"``, ``"str"``),
    or None when it is not one.

    NumPy scalars and 0-d arrays are unwrapped; a bool is never an int or a float; a float takes
    ints; a bool takes 0/1 and "true"/"false"/"yes"/"no"/"on"/"off"; a str takes UTF-8 bytes
    (trailing NULs stripped).
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    elif isinstance(value, np.generic):
        value = value.item()
    is_bool = isinstance(value, bool)
    if kind == "int":
        return value if isinstance(value, int) and not is_bool else None
    if kind == "float":
        if isinstance(value, (int, float)) and not is_bool:
            return float(value)
        return None
    if kind == "bool":
        if is_bool:
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        return None
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).rstrip(b"\0").decode("utf-8")
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def list_from_python(value: Any) -> Optional[list]:
    """``value`` (a list, tuple or 1-d NumPy array) as a list, or None when it is not one."""
    if isinstance(value, np.ndarray):
        return value.reshape(-1).tolist() if value.ndim == 1 else None
    if isinstance(value, (list, tuple)):
        return list(value)
    return None


class UnreadablePluginField(ValueError):
    """A ``PluginField`` whose data cannot become a field value.

    Attributes:
        what: completes "Field 'x' of plugin 'P' ..." (e.g. ``must be UTF-8 text (got ...)``).
        hint: how to fix it, or "".
    """

    def __init__(self, what: str, hint: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.hint = hint


def python_from_plugin_field(pf: Any, as_text: bool) -> Union[str, List[Any]]:
    """The data of a ``trt.PluginField`` (ONNX parser, QDP or hand-made) as Python values.

    CHAR fields, and any byte-typed field when ``as_text``, become a ``str`` without the
    parser's trailing NUL; integer and float fields become a ``list`` of Python numbers.

    Raises:
        UnreadablePluginField: unreadable data, a number type where text is wanted, several
            NUL-separated strings, bytes that are not UTF-8, or a type that holds no numbers.
    """
    type_name = getattr(pf.type, "name", repr(pf.type))
    try:
        data = pf.data
    except (AttributeError, ValueError) as err:
        msg = f"arrived as a PluginField of type {type_name}, which cannot be read ({err})"
        hint = "Use an INT32/INT64/FLOAT32/FLOAT64/CHAR field."
        raise UnreadablePluginField(msg, hint) from None
    data = np.asarray(data).reshape(-1)
    if as_text or type_name == "CHAR":
        if type_name not in _BYTE_TYPES:
            raise UnreadablePluginField(f"must be a string (got a PluginField of type "
                                        f"{type_name} holding {data.tolist()!r})")
        raw = data.astype(np.int8).tobytes()
        if raw.endswith(b"\0"):
            raw = raw[:-1]  # the ONNX parser appends a NUL to STRING attributes
        if b"\0" in raw:
            raise UnreadablePluginField(f"must be a single string (got several NUL-separated "
                                        f"strings {raw!r})")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UnreadablePluginField(f"must be UTF-8 text (got bytes {raw!r})") from None
    if type_name not in _INT_TYPES | _FLOAT_TYPES:
        raise UnreadablePluginField(f"cannot be read from a PluginField of type {type_name}")
    return data.tolist()


# -- every field of a plugin ----------------------------------------------------------------------

def _unknown(fields: Mapping[str, Field], names: Iterable[str], plugin: str,
             source: str) -> FieldError:
    parts = []
    for name in names:
        close = difflib.get_close_matches(name, list(fields), n=1)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    known = ", ".join(fields) or "none"
    return FieldError(f"Plugin {plugin!r} has no field {', '.join(parts)} ({source}); its fields "
                      f"are: {known}.")


def _finish(fields: Mapping[str, Field], values: Dict[str, Any], plugin: str,
            source: str) -> Dict[str, Any]:
    missing = [name for name, spec in fields.items() if name not in values and spec.required]
    if missing:
        names = ", ".join(map(repr, missing))
        msg = (f"Plugin {plugin!r} needs field(s) {names}, which {source} did not give (they "
               f"have no default).")
        raise FieldError(msg)
    return {name: values[name] if name in values else spec.default_value()
            for name, spec in fields.items()}


def values_from_python(fields: Mapping[str, Field], given: Mapping[str, Any],
                       plugin: str) -> Dict[str, Any]:
    """Every field's value from Python keyword values (defaults filled in), validated.

    Raises:
        FieldError: an unknown name (with a suggestion), a missing required field, a bad value.
    """
    unknown = [name for name in given if name not in fields]
    if unknown:
        raise _unknown(fields, unknown, plugin, "given as a keyword")
    values = {name: fields[name].convert(value, plugin) for name, value in given.items()}
    return _finish(fields, values, plugin, "the call")


def values_from_fc(fields: Mapping[str, Field], fc: Any, plugin: str) -> Dict[str, Any]:
    """Every field's value from a ``PluginFieldCollection_`` as ``create_plugin`` receives it.

    Raises:
        FieldError: an unknown or repeated field, a missing required one, or a bad value.
    """
    values: Dict[str, Any] = {}
    for index in range(len(fc)):  # no negative indexing on fc (§10.7)
        pf = fc[index]
        name = pf.name
        if name not in fields:
            raise _unknown(fields, [name], plugin, "in the PluginFieldCollection")
        if name in values:
            msg = f"Field {name!r} of plugin {plugin!r} appears twice in the PluginFieldCollection."
            raise FieldError(msg)
        values[name] = fields[name].from_plugin_field(pf, plugin)
    return _finish(fields, values, plugin, "the PluginFieldCollection (the ONNX node's attributes)")


__all__ = ["UnreadablePluginField", "list_from_python", "python_from_plugin_field",
           "scalar_from_python", "values_from_fc", "values_from_python"]
