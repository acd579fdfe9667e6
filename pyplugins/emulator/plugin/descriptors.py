"""Tensor descriptors of ``tensorrt.plugin``: ``Shape`` (concrete dims), ``TensorDesc`` and ``SizeTensorDesc`` (§8).

A ``TensorDesc`` always has ``shape_expr`` (symbolic) and ``dtype``; ``shape``, ``format`` and
``scale`` exist only where TensorRT knows them (``has_shape``: in ``autotune`` and ``aot_impl``).
The descriptors QDP hands a register, autotune or aot_impl function are immutable; ``like()``
gives a mutable copy, ``aliased()`` an immutable one that shares the input's buffer at run time.

Two of TensorRT's behaviours are kept because plugins meet them: ``like()`` copies the shape
expressions from 10.8 (before, the copy shares the input's ``ShapeExprs``, so editing the output
edits the input), and ``Shape()`` with no descriptor builds ``trt.Dims(0)``, which TensorRT's
``Dims`` refuses, so ``like()``/``aliased()`` of a descriptor that has a concrete shape raise
TypeError in TensorRT 10.8+ (copy ``shape_expr`` with ``from_shape_expr`` there instead).

Example:
    >>> from pyplugins.emulator.enums import DataType
    >>> from pyplugins.emulator.plugin.sym_lists import ShapeExprs
    >>> inp = TensorDesc(ShapeExprs(2, _is_dummy=True), DataType.HALF)
    >>> out = inp.like()
    >>> out.dtype = DataType.FLOAT
    >>> out.dtype.name, inp.dtype.name, out.has_shape, inp.aliased().get_aliased() is inp
    ('FLOAT', 'HALF', False, True)
"""

from __future__ import annotations

from typing import Any, Iterator, Optional, Tuple, Union

import numpy as np

from pyplugins.emulator.descs import DynamicPluginTensorDesc, PluginTensorDesc
from pyplugins.emulator.dims import Dims
from pyplugins.emulator.enums import DataType
from pyplugins.emulator.plugin.sym_exprs import ShapeExpr, SizeTensorShapeExpr
from pyplugins.emulator.plugin.sym_lists import ShapeExprs
from pyplugins.emulator.version import emulated_version
from pyplugins.errors import QDPDefinitionError, QDPTypeError

__all__ = ["Shape", "SizeTensorDesc", "TensorDesc"]

_NO_SHAPE = ("TensorDesc has no concrete shape here (has_shape is False): shape, format, scale "
             "and numel() exist only in autotune and aot_impl; use shape_expr")


class Shape:
    """A tensor's concrete dims (``-1`` for a dimension not known yet), from a descriptor or a
    tuple; with a ``DynamicPluginTensorDesc`` also the profile's ``min``/``opt``/``max``.

    Example:
        >>> s = Shape((2, 3))
        >>> len(s), s.numel(), str(s), s.is_dynamic
        (2, 6, 'Shape(2, 3)', False)
    """

    def __init__(self, tensor_desc: Union[Tuple[int, ...], DynamicPluginTensorDesc,
                                          PluginTensorDesc, None] = None) -> None:
        self._is_dynamic: Optional[bool] = None  # computed on first use, then kept
        if isinstance(tensor_desc, DynamicPluginTensorDesc):
            self._length = len(tensor_desc.desc.dims)
            self._shapes = tensor_desc.desc.dims
            self._desc = tensor_desc
        elif isinstance(tensor_desc, PluginTensorDesc):
            self._length = len(tensor_desc.dims)
            self._shapes = tensor_desc.dims
        elif isinstance(tensor_desc, tuple):
            self._shapes = Dims(tensor_desc)
            self._length = len(self._shapes)
        elif tensor_desc is None:
            msg = ("Shape() without a descriptor builds trt.Dims(0), which TensorRT's Dims "
                   "constructor refuses (it takes a list or a tuple); this is also why like() and "
                   "aliased() of a TensorDesc with a concrete shape fail in TensorRT 10.8+")
            raise QDPTypeError(msg)
        else:
            msg = ("Shape() takes a tuple of ints, a trt.DynamicPluginTensorDesc or a "
                   f"trt.PluginTensorDesc (got {type(tensor_desc).__name__})")
            raise QDPDefinitionError(msg)

    def numel(self) -> int:
        """The number of elements (raises QDPDefinitionError while a dim is dynamic)."""
        if self.is_dynamic:
            msg = f"Shape{tuple(self)} has a dynamic dimension (-1): it has no element count"
            raise QDPDefinitionError(msg)
        return int(np.prod(list(self._shapes)))

    def __iter__(self) -> Iterator[int]:
        yield from self._shapes

    def __getitem__(self, index: Any) -> Any:
        return self._shapes[index]

    def __len__(self) -> int:
        return self._length

    def __str__(self) -> str:
        return "Shape" + str(tuple(self))

    @property
    def is_dynamic(self) -> bool:
        """True when a dimension is -1 (read once; later edits do not change it, as TensorRT)."""
        if self._is_dynamic is None:
            self._is_dynamic = any(d == -1 for d in self._shapes)
        return self._is_dynamic

    def _bound(self, which: str) -> Tuple[int, ...]:
        if not self.is_dynamic:
            msg = f"Shape.{which} exists only when is_dynamic is True"
            raise QDPDefinitionError(msg)
        if not hasattr(self, "_desc"):
            msg = (f"Shape.{which}: this Shape has a dynamic dimension but was not built from a "
                   "DynamicPluginTensorDesc, so it knows no profile")
            raise AttributeError(msg)
        return tuple(getattr(self._desc, which))

    @property
    def opt(self) -> Tuple[int, ...]:
        """The profile's opt dims (dynamic shapes built from a DynamicPluginTensorDesc only)."""
        return self._bound("opt")

    @property
    def min(self) -> Tuple[int, ...]:  # TensorRT's name
        """The profile's min dims."""
        return self._bound("min")

    @property
    def max(self) -> Tuple[int, ...]:  # TensorRT's name
        """The profile's max dims."""
        return self._bound("max")

    def __setitem__(self, index: int, val: int) -> None:
        if index >= self._length:
            msg = f"index {index} out of range for a Shape of {self._length} dimensions"
            raise IndexError(msg)
        self._shapes[index] = val

    def _clone(self) -> "Shape":
        ret = Shape()  # raises, as TensorRT's trt.Dims(0) does
        ret.__dict__.update(self.__dict__)
        return ret


class TensorDesc:
    """A tensor's descriptor: ``shape_expr``, ``dtype`` and, where known, ``shape``, ``format``,
    ``scale``. Never holds data."""

    def __init__(self, shape_expr: Optional[ShapeExprs] = None, dtype: Optional[DataType] = None,
                 format: Any = None, scale: Optional[float] = None) -> None:  # noqa: A002
        self._shape_expr = shape_expr
        self._dtype = dtype
        self._shape: Optional[Shape] = None
        self._format = format
        self._scale = scale
        self._aliased_to: Optional["TensorDesc"] = None
        self._immutable = False

    def numel(self) -> int:
        """The concrete element count (only where ``has_shape``)."""
        self._validate_has_shape()
        return int(np.prod(list(self.shape)))

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._shape_expr)

    @property
    def is_size_tensor(self) -> bool:
        """False (True on :class:`SizeTensorDesc`)."""
        return False

    def like(self) -> "TensorDesc":
        """A mutable descriptor with this one's properties (the usual output of a register
        function: ``return inp.like()``)."""
        if emulated_version() < (10, 8):  # a shallow copy: shape_expr is shared with self
            cloned = TensorDesc()
            cloned.__dict__.update(self.__dict__)
            cloned._immutable = False
            return cloned
        cloned = self._clone()
        cloned._immutable = False
        return cloned

    def aliased(self) -> "TensorDesc":
        """An immutable descriptor like this one whose tensor shares this one's buffer."""
        cloned = TensorDesc() if emulated_version() < (10, 8) else self._clone()
        if emulated_version() < (10, 8):
            cloned.__dict__.update(self.__dict__)
        cloned._immutable = False
        cloned._aliased_to = self
        cloned._immutable = True
        return cloned

    def _clone(self) -> "TensorDesc":
        cloned = TensorDesc()
        cloned.__dict__.update(self.__dict__)
        cloned._immutable = False
        cloned._shape_expr = self._shape_expr._clone()
        if self._shape is not None:
            cloned._shape = self._shape._clone()
        cloned._immutable = True
        return cloned

    def get_aliased(self) -> Optional["TensorDesc"]:
        """The descriptor this one is aliased to, or None."""
        return self._aliased_to

    def _validate_has_shape(self) -> None:
        if not self.has_shape:
            raise QDPDefinitionError(_NO_SHAPE)

    def _validate_not_immutable(self) -> None:
        if getattr(self, "_immutable", False):
            msg = "This TensorDesc is immutable (an input, or aliased()): modify a like() copy"
            raise QDPDefinitionError(msg)

    @property
    def shape_expr(self) -> ShapeExprs:
        """The symbolic shape."""
        return self._shape_expr

    @shape_expr.setter
    def shape_expr(self, value: ShapeExprs) -> None:
        self._shape_expr = value

    @property
    def dtype(self) -> DataType:
        """The data type."""
        return self._dtype

    @dtype.setter
    def dtype(self, value: DataType) -> None:
        self._dtype = value

    @property
    def shape(self) -> Shape:
        """The concrete shape (only where ``has_shape``)."""
        self._validate_has_shape()
        return self._shape

    @shape.setter
    def shape(self, value: Shape) -> None:
        self._validate_not_immutable()
        self._shape = value

    @property
    def format(self) -> Any:  # TensorRT's name
        """The TensorFormat (only where ``has_shape``)."""
        self._validate_has_shape()
        return self._format

    @format.setter
    def format(self, value: Any) -> None:
        self._validate_not_immutable()
        self._format = value

    @property
    def scale(self) -> Optional[float]:
        """The INT8 scale (only where ``has_shape``)."""
        self._validate_has_shape()
        return self._scale

    @scale.setter
    def scale(self, value: float) -> None:
        self._validate_not_immutable()
        self._scale = value

    @property
    def is_aliased(self) -> bool:
        """True when aliased to another descriptor."""
        return self._aliased_to is not None

    @property
    def has_shape(self) -> bool:
        """True where the concrete shape, format and scale are known."""
        return self._shape is not None

    @property
    def is_dynamic(self) -> bool:
        """True when the concrete shape has a -1 (only where ``has_shape``)."""
        self._validate_has_shape()
        return self.shape.is_dynamic

    @property
    def has_shape_expr(self) -> bool:
        """True when symbolic shape expressions are present."""
        return self.shape_expr is not None

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_immutable", False) and name != "_immutable":
            msg = (f"Cannot set {name.lstrip('_')!r} of an immutable TensorDesc (an input or an "
                   "aliased() descriptor): modify a like() copy")
            raise QDPDefinitionError(msg)
        super().__setattr__(name, value)


class SizeTensorDesc(TensorDesc):
    """The descriptor of a size tensor: a 0-D INT32 (or INT64) output holding the extent of a
    data-dependent dimension, with the expressions ``opt`` (for autotuning) and ``upper_bound``.
    Make one with ``tensorrt.plugin.size_tensor(opt, upper_bound)``; use ``expr()`` in the shape
    of the output it sizes."""

    def __init__(self, opt: ShapeExpr, upper_bound: ShapeExpr) -> None:
        super().__init__(ShapeExprs(0), DataType.INT32)
        self._opt = opt
        self._upper_bound = upper_bound
        self._index: Optional[int] = None
        self._expr = SizeTensorShapeExpr(self)

    @property
    def is_size_tensor(self) -> bool:
        """True."""
        return True

    @property
    def opt(self) -> ShapeExpr:
        """The extent to autotune with."""
        return self._opt

    @property
    def upper_bound(self) -> ShapeExpr:
        """The largest extent; TensorRT allocates the sized output for it."""
        return self._upper_bound

    @property
    def index(self) -> Optional[int]:
        """The output index of this size tensor (set by ``get_output_shapes``)."""
        return self._index

    def _set_index(self, idx: int) -> None:
        self._index = idx

    def expr(self) -> SizeTensorShapeExpr:
        """The expression standing for this size tensor's value."""
        return self._expr
