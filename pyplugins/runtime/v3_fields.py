"""A ``pp.Plugin``'s fields as the typed ``PluginFieldCollection`` an ``IPluginV3`` serializes.

``IPluginV3`` has no ``serialize()``: TensorRT stores what ``get_fields_to_serialize()`` returns
in the engine and hands it back to ``create_plugin(name, fc, TensorRTPhase.RUNTIME)`` (protocol
§4.2). :func:`collection` writes one ``PluginField`` per declared field, in declaration order,
at full width so the round trip is exact (ints and int lists INT64, floats and float lists
FLOAT64, bools INT32 0/1, strings CHAR UTF-8 without a NUL), after a header field
``_pyplugins`` (CHAR, JSON ``{"format": 1, "plugin": name, "version": version}``); no user field
can be named like it (field names never start with ``_``). Equal fields give equal bytes.

:func:`values` reads it back: a missing or foreign header, another plugin's or version's header,
or a newer format raises :class:`~pyplugins.errors.SerializationError` saying so; unknown,
repeated or missing fields raise :class:`~pyplugins.errors.FieldError` (the schema changed
without a version bump).

Example:
    >>> import pyplugins as pp
    >>> class Scale(pp.Plugin):
    ...     name = "ScaleV3FieldsDoc"
    ...     alpha = pp.Field.float(default=1.0)
    ...     axes = pp.Field.ints(default=[0])
    >>> fc = collection(Scale(alpha=0.1, axes=[1, 2]))
    >>> [(f.name, f.type.name) for f in fc]
    [('_pyplugins', 'CHAR'), ('alpha', 'FLOAT64'), ('axes', 'INT64')]
    >>> values(Scale, fc)
    {'alpha': 0.1, 'axes': [1, 2]}
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

import numpy as np

import pyplugins.trt as trt
from pyplugins.runtime import fields as _fields
from pyplugins.errors import SerializationError
from pyplugins.runtime.json_header import object_from_json

__all__ = ["FORMAT_VERSION", "HEADER", "collection", "values"]

#: Name of the header field (user fields cannot start with ``_``).
HEADER = "_pyplugins"
#: Layout version of the fields; :func:`values` refuses a newer one.
FORMAT_VERSION = 1

# field base kind -> (PluginFieldType name, numpy dtype)
_WIDE = {"int": ("INT64", np.int64), "ints": ("INT64", np.int64),
         "float": ("FLOAT64", np.float64), "floats": ("FLOAT64", np.float64),
         "bool": ("INT32", np.int32)}


def _header_text(cls: Any) -> bytes:
    doc = {"format": FORMAT_VERSION, "plugin": cls.name, "version": cls.version}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _char(name: str, data: bytes) -> Any:
    return trt.PluginField(name, np.frombuffer(data, dtype=np.int8).copy(),
                           trt.PluginFieldType.CHAR)


def collection(plugin: Any) -> Any:
    """The ``trt.PluginFieldCollection`` of ``plugin``'s fields (header first, then declaration
    order); what ``get_fields_to_serialize`` returns.

    Raises:
        SerializationError: a value that does not fit its wide type (an int beyond int64).
    """
    cls = type(plugin)
    items: List[Any] = [_char(HEADER, _header_text(cls))]
    for name, spec in cls.__pp_fields__.items():
        value = plugin.__dict__[name]
        if spec.base == "str":
            items.append(_char(name, value.encode("utf-8")))
            continue
        type_name, dtype = _WIDE[spec.base]
        raw = value if isinstance(value, list) else [int(value) if spec.base == "bool" else value]
        try:
            data = np.array(raw, dtype=dtype)
        except (OverflowError, ValueError, TypeError) as err:
            msg = (f"cannot serialize field {name!r} of plugin {cls.name!r}: {value!r} does not "
                   f"fit {type_name} ({err})")
            raise SerializationError(msg) from err
        items.append(trt.PluginField(name, data, getattr(trt.PluginFieldType, type_name)))
    return trt.PluginFieldCollection(items)


def _check_header(cls: Any, pf: Any) -> None:
    where = (f"plugin {cls.name!r} version {cls.version!r}: the engine's serialized fields")
    try:  # bounded: nesting, size and non-finite numbers are refused (json_header)
        doc = object_from_json(np.asarray(pf.data).astype(np.int8).tobytes(),
                               what=f"{where} {HEADER!r} header")
        fmt, plugin, version = doc["format"], doc["plugin"], doc["version"]
    except SerializationError as err:
        msg = f"{err}; rebuild the engine."
        raise SerializationError(msg) from None
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        msg = f"{where} have an unreadable {HEADER!r} header ({err}); rebuild the engine."
        raise SerializationError(msg) from None
    if not isinstance(fmt, int) or fmt > FORMAT_VERSION:
        msg = (f"{where} use layout {fmt!r}, newer than this pyplugins reads "
               f"({FORMAT_VERSION}); upgrade pyplugins or rebuild the engine.")
        raise SerializationError(msg)
    if (plugin, version) != (cls.name, cls.version):
        msg = (f"{where} were written by plugin {plugin!r} version {version!r}; TensorRT "
               "handed them to the wrong creator. Rebuild the engine.")
        raise SerializationError(msg)


def values(cls: Any, fc: Any) -> Dict[str, Any]:
    """The raw field values (unconverted, by name) of a collection :func:`collection` wrote, as
    ``create_plugin(..., RUNTIME)`` receives it (indexable, ``len``); ``cls(**values)`` builds
    the plugin.

    Raises:
        SerializationError: no ``_pyplugins`` header first, or one of another plugin, version
            or a newer layout.
        FieldError: unknown, repeated, missing or unreadable fields.
    """
    items = [fc[i] for i in range(len(fc))]  # no negative indexing on fc (§10.7)
    if not items or items[0].name != HEADER:
        first = items[0].name if items else "nothing"
        msg = (f"plugin {cls.name!r}: create_plugin(phase=RUNTIME) got fields that pyplugins "
               f"did not write (the first is {first!r}, not the {HEADER!r} header); were they "
               "serialized by another implementation of this plugin? Rebuild the engine.")
        raise SerializationError(msg)
    _check_header(cls, items[0])
    return _fields.values_from_fc(cls.__pp_fields__, items[1:], cls.name)
