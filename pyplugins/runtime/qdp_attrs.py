"""``pp.Field``s as ``tensorrt.plugin`` (QDP) attributes: the annotation each field registers with,
and the conversions both ways.

QDP re-creates an attribute from its field by the register function's annotation:
``int(f.data)`` for ``int``, ``float(f.data)`` for ``float`` (protocol §8.3). ``f.data`` is a
one-element 1-D array, which NumPy 2.x refuses to convert (measured with 2.4: TypeError), so with
a current NumPy no QDP plugin with an ``int`` or ``float`` attribute can be created, on TensorRT
as under the emulator.
Every numeric field therefore registers as a one-dimensional ``np.ndarray``, which QDP converts
with ``astype`` (any NumPy):

=============================  =============================  ==================================
``pp.Field``                   QDP annotation                 a value as an attribute
=============================  =============================  ==================================
``int``, ``enum`` of ints      ``np.ndarray[Any, np.dtype[np.int64]]``      ``np.array([3], np.int64)``
``float``                      ``np.ndarray[Any, np.dtype[np.float64]]``    ``np.array([0.5])``
``bool``                       ``np.ndarray[Any, np.dtype[np.bool_]]``      ``np.array([True])``
``ints`` / ``floats``          ``np.ndarray[Any, np.dtype[np.int64]]`` /    ``np.array([1, 2], np.int64)``
                               ``np.ndarray[Any, np.dtype[np.float64]]``
``str``, ``enum`` of strings   ``str``                        ``"max"``
=============================  =============================  ==================================

An ONNX node's INT(S)/FLOAT(S) attributes arrive as int32/float32 arrays and convert losslessly;
a STRING keeps the parser's trailing NUL, which :func:`raw_value` strips. The values then go
through the plugin's own fields (``cls(**values)``), so validation and messages are the V2/V3
ones: ``Field 'factor' of plugin 'SeqRepeat' must be >= 1 (got 0).`` A scalar field given an
array of several elements fails there too, with the array in the message.

Example:
    >>> from pyplugins.ops.seq_repeat import SeqRepeat
    >>> field = SeqRepeat.__pp_fields__["factor"]
    >>> from typing import Any
    >>> annotation(field) == np.ndarray[Any, np.dtype[np.int64]]
    True
    >>> attr_from_value(field, 3), raw_value(field, np.array([3], np.int32))
    (array([3]), np.int32(3))
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from pyplugins.runtime.fields import Field

__all__ = ["annotation", "attr_from_value", "attrs_from_values", "raw_value"]

_ARRAY_DTYPE = {"int": np.int64, "ints": np.int64, "float": np.float64, "floats": np.float64,
                "bool": np.bool_}
_SCALAR = ("int", "float", "bool")


def annotation(field: Field) -> Any:
    """The annotation ``field`` registers with in the QDP register function (module table)."""
    if field.base == "str":
        return str
    # np.ndarray[Any, np.dtype[...]], not npt.NDArray[...]: NumPy 2.5 made NDArray a PEP 695
    # alias that TensorRT's issubclass check of annotations cannot read (docs/qdp.md).
    return np.ndarray[Any, np.dtype[_ARRAY_DTYPE[field.base]]]


def attr_from_value(field: Field, value: Any) -> Any:
    """The QDP attribute value of a (converted) field value: what ``trtp.op...(x, name=...)``
    and ``create_plugin``'s fields take."""
    if field.base == "str":
        return str(value)
    dtype = _ARRAY_DTYPE[field.base]
    return np.array([value] if field.base in _SCALAR else list(value), dtype=dtype)


def attrs_from_values(cls: Any, values: Dict[str, Any]) -> Dict[str, Any]:
    """Every field of ``cls`` as a QDP attribute, in declaration order: ``values`` (Python values,
    converted and validated by the fields) over the defaults.

    Raises:
        FieldError: a bad value, or a required field missing (the plugin's own message).

    Example:
        >>> from pyplugins.ops.rmsnorm import RMSNorm
        >>> attrs_from_values(RMSNorm, {"eps": 1e-5})
        {'eps': array([1.e-05])}
    """
    plugin = cls(**values)
    return {name: attr_from_value(field, getattr(plugin, name))
            for name, field in cls.__pp_fields__.items()}


def raw_value(field: Field, attr: Any) -> Any:
    """What ``field.convert`` gets for a QDP attribute value: the element of a one-element array
    for a scalar field (the array itself otherwise, which the field then refuses by name), the
    list of an array field, a string without the ONNX parser's trailing NUL."""
    if isinstance(attr, str):
        return attr[:-1] if attr.endswith("\0") else attr
    if isinstance(attr, np.ndarray) and field.base in _SCALAR and attr.size == 1:
        return attr.reshape(-1)[0]
    return attr
