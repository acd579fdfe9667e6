"""ONNX TENSOR attributes -> plugin fields, as TensorRT's parser converts weights
(``WeightsContext::convertOnnxWeights``, then ``loadFields``' switch; docs/trt-protocol.md §4.4).

A TENSOR keeps its element type where the parser's switch has a case for it (see
:data:`TENSOR_FIELD_TYPES`); DOUBLE becomes FLOAT32 values, INT4/FLOAT4E2M1 are packed two per
byte with ``size`` the element count. External data is read only from inside the model's
directory (``model_dir``), never from the working directory, and not at all without one, through
:func:`pyplugins.emulator.onnx_external.external_bytes` (absolute paths, ``..``, symlinks,
special files and sizes past the file are refused). Data that does not match the dims is an error
naming the attribute. :mod:`pyplugins.emulator.onnx_import` calls :func:`tensor_field` for every
TENSOR attribute.

Example:
    >>> f = tensor_field("w", np.array([[1.0, 2.0]], dtype=np.float64))
    >>> f.type.name, f.size, f.data.view(np.float32).tolist()
    ('FLOAT32', 2, [1.0, 2.0])
"""

from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from pyplugins.emulator.enums import PluginFieldType
from pyplugins.emulator.onnx_external import ExternalDataError, external_bytes
from pyplugins.emulator.plugin_field import PluginField
from pyplugins.errors import FieldError

__all__ = ["TENSOR_FIELD_TYPES", "tensor_field"]

# onnx.TensorProto.DataType numbers (stable across onnx releases), so onnx need not be imported.
_ONNX_DTYPE_NAMES = {
    0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32",
    7: "INT64", 8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64",
    14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ",
    19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1",
}

#: ONNX tensor element type -> the PluginFieldType the plugin sees, or an error string.
#:
#: This is ``loadFields``' switch *after* ``convertOnnxWeights`` has run on the attribute's
#: TensorProto (docs/trt-protocol.md §4.4), which departs from what the switch alone would
#: give: DOUBLE weights are converted to FLOAT first, so they arrive as FLOAT32 (the
#: switch's DOUBLE case is unreachable); INT16 and STRING tensors are refused by the weight
#: conversion ("Unable to convert ONNX weights") before the switch's INT16/STRING cases are
#: reached. FLOAT8E4M3FN, INT4 and FLOAT4E2M1 pass the conversion but have no case in the switch,
#: so the field keeps the value-initialised type ``PluginFieldType{}`` = FLOAT16.
TENSOR_FIELD_TYPES = {
    "FLOAT": PluginFieldType.FLOAT32,
    "DOUBLE": PluginFieldType.FLOAT32,  # converted to float32 values by convertOnnxWeights
    "INT8": PluginFieldType.INT8,
    "INT32": PluginFieldType.INT32,
    "FLOAT16": PluginFieldType.FLOAT16,
    "BFLOAT16": PluginFieldType.BF16,
    "FLOAT8E4M3FN": PluginFieldType.FLOAT16,  # no case in loadFields' switch: type stays 0
    "INT4": PluginFieldType.FLOAT16,
    "FLOAT4E2M1": PluginFieldType.FLOAT16,
    "INT64": "Tensor type: INT64 is unsupported in plugin fields.",
    "BOOL": "Tensor type: BOOL is unsupported in plugin fields.",
    "UINT8": "Tensor type: UINT8 is unsupported in plugin fields.",
}
_WEIGHTS_REFUSED = "Unable to convert ONNX weights (TensorRT has no {dtype} weights)"

# numpy dtype name -> ONNX tensor element type name, for numpy arrays given as attribute values.
_NUMPY_TO_ONNX = {
    "float32": "FLOAT", "float64": "DOUBLE", "int8": "INT8", "int16": "INT16", "int32": "INT32",
    "int64": "INT64", "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32",
    "uint64": "UINT64", "bool": "BOOL", "float16": "FLOAT16", "complex64": "COMPLEX64",
    "complex128": "COMPLEX128", "bfloat16": "BFLOAT16", "float8_e4m3fn": "FLOAT8E4M3FN",
    "int4": "INT4", "float4_e2m1fn": "FLOAT4E2M1",
}
_PACKED = ("INT4", "FLOAT4E2M1")  # two elements per byte
_MAX_DIMS = 8


def _onnx_array(name: str, tensor: Any, shape: Tuple[int, ...], model_dir: Optional[str]) -> Any:
    """``numpy_helper.to_array`` without its working-directory read, data checked against dims."""
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415 - onnx is optional

    if any(d < 0 for d in shape):
        raise FieldError(f"Attribute {name!r}: TENSOR has a negative dim {shape}")
    count = math.prod(shape)  # Python ints: huge dims must not wrap around int64
    if tensor.data_location == TensorProto.EXTERNAL:
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
        except Exception as err:
            raise FieldError(f"Attribute {name!r}: TENSOR element type {tensor.data_type} "
                             "cannot be read") from err
        local = TensorProto()
        local.CopyFrom(tensor)
        try:
            local.raw_data = external_bytes(f"Attribute {name!r}", tensor, model_dir,
                                            count * itemsize)
        except ExternalDataError as err:
            raise FieldError(str(err)) from err
        local.data_location = TensorProto.DEFAULT
        del local.external_data[:]
        tensor = local
    try:
        array = numpy_helper.to_array(tensor)
        if array.size != count:
            raise ValueError(f"{array.size} elements")
    except Exception as err:
        msg = (f"Attribute {name!r}: TENSOR data does not match its dims {shape} ({count} "
               f"elements): {type(err).__name__}: {str(err)[:200]}")
        raise FieldError(msg) from err
    return array


def tensor_field(name: str, tensor: Any, model_dir: Optional[str] = None) -> PluginField:
    """The PluginField TensorRT's parser builds from the TENSOR attribute ``name``.

    Args:
        name: the attribute's name, for the field and for messages.
        tensor: an ``onnx.TensorProto`` or a numpy array.
        model_dir: the model's directory, where external data is read from (None: refused).

    Raises:
        FieldError: a type the parser refuses (:data:`TENSOR_FIELD_TYPES`), more than 8 dims,
            data that does not match the dims, or external data outside ``model_dir``.
    """
    if isinstance(tensor, np.ndarray):
        dtype_name = _NUMPY_TO_ONNX.get(tensor.dtype.name)
        if dtype_name is None and tensor.dtype.kind in "USO":
            dtype_name = "STRING"
        array, shape = tensor, tensor.shape
    else:
        dtype_name = _ONNX_DTYPE_NAMES.get(int(tensor.data_type), f"<{tensor.data_type}>")
        shape = tuple(tensor.dims)
        array = None
    if len(shape) > _MAX_DIMS:
        msg = (f"Attribute {name!r}: TENSOR of rank {len(shape)} cannot be imported (TensorRT "
               f"weights have at most {_MAX_DIMS} dimensions): Unable to convert ONNX weights.")
        raise FieldError(msg)
    target = TENSOR_FIELD_TYPES.get(dtype_name)
    if target is None:
        msg = f"Attribute {name!r}: {_WEIGHTS_REFUSED.format(dtype=dtype_name)}."
        raise FieldError(msg)
    if isinstance(target, str):
        raise FieldError(f"Attribute {name!r}: {target}")
    if array is None:
        array = _onnx_array(name, tensor, shape, model_dir)
    count = math.prod(shape)
    if dtype_name == "DOUBLE":
        array = np.asarray(array, dtype=np.float64).astype(np.float32)
    raw = np.ascontiguousarray(array).tobytes()
    if dtype_name in _PACKED:
        if len(raw) == count:  # unpacked one-per-byte storage (ml_dtypes) -> pack two per byte
            nibbles = np.frombuffer(raw, dtype=np.uint8) & 0xF
            nibbles = np.concatenate([nibbles, np.zeros(count % 2, dtype=np.uint8)])
            raw = (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8).tobytes()
        f = PluginField(name, np.frombuffer(raw, dtype=np.uint8), target)
        object.__setattr__(f, "_size", count)  # length = element count, not bytes (copyField)
        return f
    return _field_from_raw(name, raw, target, count)


def _field_from_raw(name: str, raw: bytes, ftype: PluginFieldType, count: int) -> PluginField:
    """A PluginField over ``raw`` whose ``size`` is ``count`` elements."""
    itemsize = len(raw) // count if count else 1
    view_dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(itemsize, np.uint8)
    f = PluginField(name, np.frombuffer(raw, dtype=view_dtype), ftype)
    object.__setattr__(f, "_size", count)
    return f
