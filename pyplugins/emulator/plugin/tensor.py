"""Run-time tensors and AOT launch parameters of ``tensorrt.plugin``: ``Tensor`` and ``KernelLaunchParams`` (§8).

A :class:`Tensor` is what a JIT ``impl`` receives: a device pointer with ``dtype``, ``shape``,
``format``, ``strides`` (in elements) and the ``__cuda_array_interface__`` (version 3, strides in
bytes, ``stream`` = TensorRT's stream, ``data`` never read-only) that ``torch.as_tensor`` or
``cupy.asarray`` read; BF16, FP8 and INT4 are refused there, as in TensorRT
(``_tensor.py:1055-1071``). Building the interface touches no memory, so it works on host
pointers too. :class:`KernelLaunchParams` is what an ``aot_impl`` returns: grid, block and
shared memory, each a ``SymInt32`` (10.9+).

Two TensorRT slips are kept because plugin code can observe them: ``Tensor.is_aliased`` is True
for a tensor that is *not* aliased (``_tensor.py:1086-1090``), and ``aliased(shape)`` checks volumes
only when the new shape is data-dependent (and then raises, since such a shape has no volume).

Example:
    >>> from pyplugins.emulator.enums import DataType, TensorFormat
    >>> from pyplugins.emulator.plugin.descriptors import Shape
    >>> t = Tensor()
    >>> t.dtype, t.shape, t.strides, t.data_ptr = DataType.HALF, Shape((2, 3)), (3, 1), 4096
    >>> t._stream = 7
    >>> cai = t.__cuda_array_interface__
    >>> cai["shape"], cai["typestr"], cai["strides"], cai["data"], cai["stream"], cai["version"]
    ((2, 3), '<f2', (6, 2), (4096, False), 7, 3)
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple, Union

import numpy as np

from pyplugins.emulator import nptype
from pyplugins.emulator.descs import PluginTensorDesc
from pyplugins.emulator.enums import DataType
from pyplugins.emulator.plugin.descriptors import Shape
from pyplugins.emulator.plugin.sym_exprs import SymInt32
from pyplugins.errors import QDPAttributeError, QDPDefinitionError

__all__ = ["KernelLaunchParams", "Tensor"]

_NO_CAI = (DataType.BF16, DataType.FP8, DataType.INT4)


class Tensor:
    """A tensor with data, as a JIT ``impl`` receives it (inputs read-only by convention)."""

    def __init__(self) -> None:
        self._data_ptr: Optional[int] = None
        self._shape: Optional[Shape] = None
        self._format: Any = None
        self._dtype: Optional[DataType] = None
        self._scale: Optional[float] = None
        self._strides: Any = None
        self._aliased_to: Optional["Tensor"] = None
        self._stream: Optional[int] = None
        self._read_only: Optional[bool] = None
        self._immutable = False

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    @property
    def data_ptr(self) -> Optional[int]:
        """The buffer's device address."""
        return self._data_ptr

    @data_ptr.setter
    def data_ptr(self, value: int) -> None:
        self._data_ptr = value

    @property
    def dtype(self) -> Optional[DataType]:
        """The data type."""
        return self._dtype

    @dtype.setter
    def dtype(self, value: DataType) -> None:
        self._dtype = value

    @property
    def shape(self) -> Optional[Shape]:
        """The concrete shape (a data-dependent dim is -1)."""
        return self._shape

    @shape.setter
    def shape(self, value: Shape) -> None:
        self._shape = value

    @property
    def format(self) -> Any:  # TensorRT's name
        """The TensorFormat."""
        return self._format

    @format.setter
    def format(self, value: Any) -> None:
        self._format = value

    @property
    def scale(self) -> Optional[float]:
        """The INT8 scale."""
        return self._scale

    @scale.setter
    def scale(self, value: float) -> None:
        self._scale = value

    @property
    def strides(self) -> Any:
        """Strides in elements (TensorRT's ``Dims``)."""
        return self._strides

    @strides.setter
    def strides(self, value: Any) -> None:
        self._strides = value

    def numel(self) -> int:
        """The number of elements (raises QDPDefinitionError for a data-dependent shape)."""
        if self.is_data_dependent:
            msg = (f"Tensor of shape {tuple(self._shape)} has a data-dependent dimension (-1): "
                   "it has no element count; look at Tensor.shape")
            raise QDPDefinitionError(msg)
        return int(np.prod(list(self._shape)))

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """The CUDA Array Interface (v3) of the buffer, for torch/CuPy/Numba."""
        if self._dtype in _NO_CAI:
            msg = (f"__cuda_array_interface__ cannot describe {self._dtype} tensors (no NumPy "
                   "type; TensorRT raises ValueError too): read data_ptr/shape/strides directly")
            raise QDPDefinitionError(msg)
        itemsize = np.dtype(nptype(self._dtype)).itemsize
        return {
            "shape": tuple(self._shape),
            "typestr": np.dtype(nptype(self._dtype)).str,
            "stream": self._stream,
            "version": 3,
            # TensorRT never marks inputs read-only here (torch refuses the flag)
            "data": (self._data_ptr, False),
            "strides": tuple(s * itemsize for s in self._strides),
        }

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_immutable", False) and name != "_immutable":
            msg = (f"Cannot set {name.lstrip('_')!r} of a Tensor handed to impl: use aliased() "
                   "for a view with another shape")
            raise QDPDefinitionError(msg)
        super().__setattr__(name, value)

    def get_aliased(self) -> Optional["Tensor"]:
        """The tensor this one is aliased to, or None."""
        return self._aliased_to

    @property
    def is_aliased(self) -> bool:
        """TensorRT's test, inverted there: True when *not* aliased (kept for fidelity)."""
        return self._aliased_to is None

    @property
    def is_data_dependent(self) -> bool:
        """True when a dimension is data-dependent (-1)."""
        return self._shape.is_dynamic

    def aliased(self, shape: Union[Shape, Tuple[int, ...], PluginTensorDesc, None] = None
                ) -> "Tensor":
        """A tensor on the same buffer with another ``shape`` (a Shape, a tuple or a
        PluginTensorDesc; default: the same shape)."""
        cloned = Tensor()
        cloned.__dict__.update(self.__dict__)
        cloned._immutable = False
        if isinstance(shape, PluginTensorDesc):
            cloned._shape = Shape(shape)
        elif isinstance(shape, Shape):
            cloned._shape = shape
        elif isinstance(shape, tuple):
            desc = PluginTensorDesc()
            desc.dims = shape
            desc.type = self._dtype
            desc.format = self._format
            desc.scale = self._scale
            cloned._shape = Shape(desc)
        elif shape is not None:
            msg = ("Tensor.aliased() takes a Shape, a tuple of ints or a trt.PluginTensorDesc "
                   f"(got {type(shape).__name__})")
            raise QDPDefinitionError(msg)
        if not self.is_data_dependent and cloned.is_data_dependent:
            if cloned._shape.numel() > self.numel():
                msg = (f"aliased shape {tuple(cloned._shape)} holds more elements than the "
                       f"tensor's {tuple(self._shape)}")
                raise QDPDefinitionError(msg)
        cloned._aliased_to = self
        return cloned


_LAUNCH_FIELDS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem")


class KernelLaunchParams:
    """Grid, block and dynamic shared memory of an AOT kernel, each a ``SymInt32`` (ints,
    ``ShapeExpr`` or ``trt.IDimensionExpr`` are converted); other attributes are refused.

    Example:
        >>> p = KernelLaunchParams(grid_x=4)
        >>> p.block_x = 128
        >>> type(p.grid_x).__name__, type(p.shared_mem).__name__
        ('SymInt32', 'SymInt32')
    """

    def __init__(self, grid_x: Any = 1, grid_y: Any = 1, grid_z: Any = 1, block_x: Any = 1,
                 block_y: Any = 1, block_z: Any = 1, shared_mem: Any = 0) -> None:
        self.grid_x, self.grid_y, self.grid_z = grid_x, grid_y, grid_z
        self.block_x, self.block_y, self.block_z = block_x, block_y, block_z
        self.shared_mem = shared_mem

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _LAUNCH_FIELDS:
            msg = (f"KernelLaunchParams has no attribute {name!r}: it holds "
                   f"{', '.join(_LAUNCH_FIELDS)}")
            raise QDPAttributeError(msg)
        self.__dict__[name] = SymInt32(value)
