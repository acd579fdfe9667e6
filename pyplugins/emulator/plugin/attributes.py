"""QDP plugin attributes: annotation helpers and the attribute <-> ``PluginField`` conversions of
``tensorrt.plugin`` (§8).

TensorRT serializes an attribute by its Python type (``_utils.py:22-37``, ``_lib.py:172-200``):
int -> INT64, float -> FLOAT64, bool -> INT8, str -> CHAR (UTF-8, no NUL), bytes -> UNKNOWN, a
NumPy array -> the field type of its dtype (bool -> INT8, float16 -> UNKNOWN raw bytes), always
a one-element array for the scalars. ``create_plugin`` converts back by the *annotation* of the
register function (``_lib.py:261-279``): ``annotation(f.data)`` for int, float, bool and bytes,
``f.data.tobytes().decode()`` for str, ``f.data.astype(dtype)`` for arrays (float16 through
``tobytes``). ``int()`` and ``float()`` of a one-element array are refused by NumPy 2.x, so there
TensorRT itself fails to re-create a plugin with an int or float attribute; this module does what
TensorRT does and says so in the error.

Example:
    >>> import numpy as np
    >>> fields = fields_from_attrs({"name": "relu", "flag": True, "w": np.ones(2, np.float16)})
    >>> [(f.name, f.type.name, f.size) for f in fields]
    [('name', 'CHAR', 4), ('flag', 'INT8', 1), ('w', 'UNKNOWN', 4)]
    >>> from pyplugins.emulator.plugin_field import PluginFieldCollection_
    >>> import numpy.typing as npt
    >>> attrs_from_fields(PluginFieldCollection_(fields),
    ...                   {"name": str, "flag": bool, "w": np.ndarray[Any, np.dtype[np.float16]]}, "ns::p")
    {'name': 'relu', 'flag': True, 'w': array([1., 1.], dtype=float16)}
"""

from __future__ import annotations

import typing
from typing import Any, Dict, Iterable, List, Mapping

import numpy as np

from pyplugins.emulator.enums import DataType, PluginFieldType
from pyplugins.emulator.plugin_field import PluginField, PluginFieldCollection
from pyplugins.errors import QDPAssertionError, QDPAttributeError, QDPTypeError

__all__ = ["BUILTIN_FIELD_TYPE", "NUMPY_FIELD_TYPE", "attrs_from_fields", "data_type_from_str",
           "field_names_of", "fields_from_attrs", "is_npt_ndarray", "is_numpy_array",
           "numpy_dtype_of"]

#: NumPy dtype of an array attribute -> its PluginFieldType (float16 travels as UNKNOWN bytes).
NUMPY_FIELD_TYPE = {
    np.dtype("int32"): PluginFieldType.INT32, np.dtype("int16"): PluginFieldType.INT16,
    np.dtype("int8"): PluginFieldType.INT8, np.dtype("bool"): PluginFieldType.INT8,
    np.dtype("int64"): PluginFieldType.INT64, np.dtype("float32"): PluginFieldType.FLOAT32,
    np.dtype("float64"): PluginFieldType.FLOAT64, np.dtype("float16"): PluginFieldType.FLOAT16,
}

#: Python type of a scalar attribute -> its PluginFieldType (str and bytes are handled apart).
BUILTIN_FIELD_TYPE = {int: PluginFieldType.INT64, float: PluginFieldType.FLOAT64,
                      bool: PluginFieldType.INT8}


def data_type_from_str(name: str) -> DataType:
    """A ``DataType`` from its autotune spelling: "FP32", "FP16", or a member name ("INT8").

    Raises:
        QDPAttributeError: an unknown name (TensorRT's lookup raises AttributeError there).

    Example:
        >>> data_type_from_str("FP16").name, data_type_from_str("BF16").name
        ('HALF', 'BF16')
    """
    if name == "FP32":
        return DataType.FLOAT
    if name == "FP16":
        return DataType.HALF
    member = DataType.__members__.get(name)
    if member is None:
        msg = (f"Unknown data type {name!r} in an AutoTuneCombination: use 'FP32', 'FP16' or a "
               f"trt.DataType member name ({', '.join(DataType.__members__)}); TensorRT raises "
               "AttributeError here")
        raise QDPAttributeError(msg)
    return member


def is_npt_ndarray(annotation: Any) -> bool:
    """Whether ``annotation`` is a parametrized ``np.ndarray`` (``np.ndarray[Any, np.dtype[np.int32]]``)."""
    return (typing.get_origin(annotation) == np.ndarray
            or getattr(annotation, "__origin__", None) == np.ndarray)


def is_numpy_array(annotation: Any) -> bool:
    """Whether ``annotation`` is ``np.ndarray`` itself or a parametrized one."""
    return annotation == np.ndarray or is_npt_ndarray(annotation)


def numpy_dtype_of(annotation: Any) -> Any:
    """The element type of ``npt.NDArray[dtype]`` (``np.ndarray[shape, np.dtype[dtype]]``).

    Raises:
        QDPAttributeError: the annotation names no dtype (TensorRT raises AttributeError too).

    Example:
        >>> import numpy.typing as npt
        >>> numpy_dtype_of(np.ndarray[Any, np.dtype[np.int32]])
        <class 'numpy.int32'>
    """
    args = typing.get_args(annotation) or getattr(annotation, "__args__", ())
    if len(args) >= 2:
        inner = typing.get_args(args[1]) or getattr(args[1], "__args__", ())
        if len(inner) >= 1:
            return inner[0]
    msg = (f"Array attribute annotated {annotation!r} names no dtype: annotate it "
           "numpy.typing.NDArray[dtype] with the array's NumPy dtype")
    raise QDPAttributeError(msg)


def fields_from_attrs(attrs: Mapping[str, Any]) -> PluginFieldCollection:
    """The ``PluginField`` of each attribute value, typed as TensorRT types it (module docstring).

    Raises:
        KeyError: a value of a type TensorRT has no field type for (a NumPy scalar, a list), as
            TensorRT's table lookup does.
    """
    fields: List[PluginField] = []
    for key, value in attrs.items():
        if isinstance(value, np.ndarray):
            dtype = np.dtype(value.dtype)
            if dtype == np.float16:
                fields.append(PluginField(key, value.tobytes(), PluginFieldType.UNKNOWN))
            else:
                fields.append(PluginField(key, value, NUMPY_FIELD_TYPE[dtype]))
        elif isinstance(value, str):
            fields.append(PluginField(key, value.encode(), PluginFieldType.CHAR))
        elif isinstance(value, bytes):
            fields.append(PluginField(key, value, PluginFieldType.UNKNOWN))
        else:
            fields.append(PluginField(key, np.array([value]), BUILTIN_FIELD_TYPE[type(value)]))
    return PluginFieldCollection(fields)


def field_names_of(attrs_types: Mapping[str, tuple]) -> PluginFieldCollection:
    """The creator's ``field_names``: one empty field per attribute, typed as it will travel.

    ``attrs_types`` maps a name to ``(is_builtin, type)``: a Python type, or a NumPy dtype.
    """
    fields = []
    for name, (builtin, type_) in attrs_types.items():
        if builtin and type_ is str:
            fields.append(PluginField(name, b"", PluginFieldType.CHAR))
        elif builtin and type_ is bytes:
            fields.append(PluginField(name, b"", PluginFieldType.UNKNOWN))
        elif builtin:
            fields.append(PluginField(name, np.array([]), BUILTIN_FIELD_TYPE[type_]))
        else:
            fields.append(PluginField(name, np.array([]), NUMPY_FIELD_TYPE[np.dtype(type_)]))
    return PluginFieldCollection(fields)


def attrs_from_fields(fc: Iterable[PluginField], input_attrs: Mapping[str, Any],
                      plugin_id: str) -> Dict[str, Any]:
    """Attribute values from the fields ``create_plugin`` receives, by the registered annotations.

    Raises:
        QDPAssertionError: a field the register function does not declare.
        QDPTypeError: ``int(f.data)`` / ``float(f.data)`` refused by this NumPy (see module doc).
    """
    attrs: Dict[str, Any] = {}
    for f in fc:
        if f.name not in input_attrs:
            msg = (f"create_plugin of QDP plugin '{plugin_id}' got field {f.name!r}, which its "
                   f"register function does not declare (attributes: {list(input_attrs)})")
            raise QDPAssertionError(msg)
        annotation = input_attrs[f.name]
        if is_numpy_array(annotation):
            np_type = numpy_dtype_of(annotation)
            if np_type == np.float16:
                attrs[f.name] = np.frombuffer(f.data.tobytes(), dtype=np.float16)
            else:
                attrs[f.name] = f.data.astype(np_type)
        elif issubclass(annotation, str):
            attrs[f.name] = f.data.tobytes().decode("utf-8")
        else:
            data = f.data
            try:
                attrs[f.name] = annotation(data)
            except TypeError as err:
                msg = (f"create_plugin of QDP plugin '{plugin_id}': attribute {f.name!r} "
                       f"({annotation.__name__}) is converted as {annotation.__name__}(f.data) on "
                       f"a {data.shape} array, as tensorrt.plugin does (_lib.py:279), and this "
                       f"NumPy {np.__version__} refuses it ({err}); TensorRT fails the same way "
                       "with this NumPy (older ones converted with a DeprecationWarning). An "
                       "npt.NDArray attribute of one element avoids it.")
                raise QDPTypeError(msg) from err
    return attrs
