"""Read raw field values into plain Python values: NumPy scalars and arrays, and the
``PluginField`` data the ONNX parser delivers (int32 arrays, NUL-terminated CHAR bytes).

Nothing here knows a field's declaration: :class:`pyplugins.runtime.fields.Field` converts what these
readers return to its type and validates it, once (``Field.convert``).

Example:
    >>> import numpy as np
    >>> import pyplugins.trt as trt
    >>> from pyplugins.runtime.field_readers import python_from_plugin_field, scalar_from_python
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

from typing import Any, List, Optional, Union

import numpy as np

from pyplugins._config import knobs
from pyplugins.echo import echo
from pyplugins.errors import PyPluginsError

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
            try:
                return float(value)
            except OverflowError:  # an int beyond the float range (10**400): not silently inf
                return None
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


class UnreadablePluginField(PyPluginsError, ValueError):
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
        UnreadablePluginField: unreadable data, more values than ``knobs.max_field_elements``,
            a number type where text is wanted, several NUL-separated strings, bytes that are
            not UTF-8, or a type that holds no numbers.
    """
    type_name = getattr(pf.type, "name", repr(pf.type))
    try:
        data = pf.data
    except (AttributeError, ValueError) as err:
        msg = f"arrived as a PluginField of type {type_name}, which cannot be read ({err})"
        hint = "Use an INT32/INT64/FLOAT32/FLOAT64/CHAR field."
        raise UnreadablePluginField(msg, hint) from None
    data = np.asarray(data).reshape(-1)
    limit = knobs.max_field_elements
    if data.size > limit:  # before tolist(): a hostile engine's field costs no memory
        msg = (f"holds {data.size} values, over the limit of {limit} for one field "
               "(PYPLUGINS_MAX_FIELD_ELEMENTS)")
        raise UnreadablePluginField(msg, "Raise PYPLUGINS_MAX_FIELD_ELEMENTS if the field "
                                         "really is that large.")
    if as_text or type_name == "CHAR":
        if type_name not in _BYTE_TYPES:
            raise UnreadablePluginField(f"must be a string (got a PluginField of type "
                                        f"{type_name} holding {echo(data)})")
        raw = data.astype(np.int8).tobytes()
        if raw.endswith(b"\0"):
            raw = raw[:-1]  # the ONNX parser appends a NUL to STRING attributes
        if b"\0" in raw:
            raise UnreadablePluginField(f"must be a single string (got several NUL-separated "
                                        f"strings {echo(raw)})")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UnreadablePluginField(f"must be UTF-8 text (got bytes {echo(raw)})") from None
    if type_name not in _INT_TYPES | _FLOAT_TYPES:
        raise UnreadablePluginField(f"cannot be read from a PluginField of type {type_name}")
    return data.tolist()


def read_plugin_field(pf: Any, base: str, expected: str) -> Any:
    """The raw value a ``trt.PluginField`` carries for a field of kind ``base`` (``"int"``,
    ``"float"``, ``"bool"``, ``"str"``, ``"ints"`` or ``"floats"``): a ``str``, one number, or a
    list of numbers; not yet converted to the field's type (``Field.convert`` does that).

    Raises:
        UnreadablePluginField: what :func:`python_from_plugin_field` refuses, a string where
            ``expected`` (e.g. "an int") is a number, or several values for a single-value kind.

    Example:
        >>> import pyplugins.trt as trt
        >>> k = trt.PluginField("k", np.array([3], np.int32), trt.PluginFieldType.INT32)
        >>> read_plugin_field(k, "int", "an int")
        3
    """
    raw = python_from_plugin_field(pf, as_text=base == "str")
    if isinstance(raw, str):
        if base in ("str", "bool"):
            return raw
        raise UnreadablePluginField(f"must be {expected} (got the string {echo(raw)})")
    if base in ("ints", "floats"):
        return raw
    if len(raw) != 1:
        raise UnreadablePluginField(f"must be a single value (got {len(raw)} values "
                                    f"{echo(raw)})")
    return raw[0]


__all__ = ["UnreadablePluginField", "list_from_python", "python_from_plugin_field",
           "read_plugin_field", "scalar_from_python"]
