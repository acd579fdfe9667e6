"""TensorDesc, Shape and Tensor: mutability, aliasing, concrete shapes, and the CUDA Array
Interface a JIT impl's tensors expose (built on host addresses; no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from pyplugins import emulator as trt
from pyplugins._config import override
from pyplugins.errors import QDPDefinitionError, QDPTypeError

from .support import desc, dyn


def _tensor(trtp, dtype=trt.DataType.FLOAT, shape=(2, 3), strides=(3, 1), ptr=4096, stream=9):
    t = trtp.Tensor()
    t.dtype, t.shape, t.strides, t.data_ptr = dtype, trtp.Shape(shape), trt.Dims(strides), ptr
    t.format, t.scale, t._stream = trt.TensorFormat.LINEAR, -1.0, stream
    return t


def test_cuda_array_interface_describes_a_host_buffer(trtp):
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = _tensor(trtp, ptr=host.ctypes.data, stream=42)
    cai = t.__cuda_array_interface__
    assert cai == {"shape": (2, 3), "typestr": "<f4", "stream": 42, "version": 3,
                   "data": (host.ctypes.data, False), "strides": (12, 4)}
    view = np.lib.stride_tricks.as_strided(np.frombuffer(host, np.float32), (2, 3), (12, 4))
    assert view.tolist() == host.tolist()  # the strides in bytes describe the buffer
    assert _tensor(trtp, trt.DataType.HALF).__cuda_array_interface__["typestr"] == "<f2"
    assert _tensor(trtp, trt.DataType.INT64).__cuda_array_interface__["strides"] == (24, 8)


@pytest.mark.parametrize("dtype", ["BF16", "FP8", "INT4"])
def test_cuda_array_interface_refuses_types_without_numpy_equivalent(trtp, dtype):
    with pytest.raises(ValueError, match="cannot describe"):
        _tensor(trtp, getattr(trt.DataType, dtype)).__cuda_array_interface__
    with pytest.raises(TypeError):  # FP4 and E8M0: trt.nptype itself refuses
        _tensor(trtp, trt.DataType.FP4).__cuda_array_interface__


def test_tensor_aliased_views_and_data_dependent_shapes(trtp):
    t = _tensor(trtp, shape=(4, 6), strides=(6, 1))
    view = t.aliased((2, 12))
    assert tuple(view.shape) == (2, 12) and view.data_ptr == t.data_ptr
    assert view.get_aliased() is t and t.get_aliased() is None
    assert t.is_aliased and not view.is_aliased  # TensorRT's test is inverted; kept
    assert t.numel() == 24 and tuple(t.aliased().shape) == (4, 6)
    dds = _tensor(trtp, shape=(-1, 2))
    assert dds.is_data_dependent
    with pytest.raises(QDPDefinitionError, match="data-dependent"):
        dds.numel()
    assert tuple(dds.aliased((5, 2)).shape) == (5, 2)
    with pytest.raises(QDPDefinitionError, match="no element count"):
        t.aliased((-1, 2))  # TensorRT checks volumes only here, and a -1 shape has none
    with pytest.raises(QDPDefinitionError, match="takes a Shape"):
        t.aliased([2, 12])


def test_descriptors_are_immutable_and_like_copies(trtp):
    inp = trtp.TensorDesc(trtp.ShapeExprs(2, _is_dummy=True), trt.DataType.HALF)
    inp._immutable = True
    with pytest.raises(QDPDefinitionError, match="immutable"):
        inp.dtype = trt.DataType.FLOAT
    out = inp.like()
    out.dtype = trt.DataType.FLOAT
    assert out.shape_expr is not inp.shape_expr and inp.dtype == trt.DataType.HALF
    aliased = inp.aliased()
    assert aliased.is_aliased and aliased.get_aliased() is inp
    with pytest.raises(QDPDefinitionError, match="immutable"):
        aliased.dtype = trt.DataType.FLOAT
    with pytest.raises(QDPDefinitionError, match="has_shape"):
        inp.shape
    with override(trt_version="10.7"):  # a shallow copy before 10.8
        assert inp.like().shape_expr is inp.shape_expr


def test_shapes_from_descriptors_know_the_profile(trtp):
    d = dyn((-1, 8))
    d.min, d.opt, d.max = (1, 8), (4, 8), (16, 8)
    shape = trtp.Shape(d)
    assert shape.is_dynamic and (shape.min, shape.opt, shape.max) == ((1, 8), (4, 8), (16, 8))
    with pytest.raises(QDPDefinitionError, match="dynamic dimension"):
        shape.numel()
    static = trtp.Shape(desc((2, 5)))
    assert static.numel() == 10 and str(static) == "Shape(2, 5)"
    with pytest.raises(QDPDefinitionError, match="only when is_dynamic"):
        static.opt
    with pytest.raises(QDPTypeError, match=r"Dims\(0\)"):
        trtp.Shape()  # TensorRT's Dims(0) raises too


def test_like_of_a_descriptor_with_a_shape_fails_as_in_tensorrt(trtp):
    d = trtp.TensorDesc(trtp.ShapeExprs(0), trt.DataType.FLOAT)
    d.shape, d.format, d.scale = trtp.Shape((2,)), trt.TensorFormat.LINEAR, -1.0
    assert d.has_shape and d.numel() == 2
    with pytest.raises(TypeError, match=r"Dims\(0\)"):
        d.like()


def test_kernel_launch_params_hold_sym_int32_and_nothing_else(trtp):
    params = trtp.KernelLaunchParams(grid_x=4)
    assert all(type(getattr(params, f)).__name__ == "SymInt32"
               for f in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
                         "shared_mem"))
    with pytest.raises(AttributeError, match="no attribute 'grid_w'"):
        params.grid_w = 1
