"""``PluginTensorDesc`` and ``DynamicPluginTensorDesc``: what plugins see of a tensor (§2.1, §3).

As through pybind11 (§12), ``type`` and ``format`` give a new enum object on every read: compare
them with ``==``.

Example:
    >>> from pyplugins.emulator import PluginTensorDesc, DataType, TensorFormat, Dims
    >>> d = PluginTensorDesc(Dims([2, 3]), DataType.HALF, TensorFormat.LINEAR, -1.0)
    >>> d.type.name, tuple(d.dims), d.scale, d.type == DataType.HALF, d.type is DataType.HALF
    ('HALF', (2, 3), -1.0, True, False)
    >>> PluginTensorDesc().scale   # TensorRT's no-argument constructor
    0.0
"""

from __future__ import annotations

from typing import Iterable, Optional, Union

from pyplugins.emulator.dims import Dims
from pyplugins.emulator.enums import DataType, TensorFormat, fresh


def _dims(value: Union[Dims, Iterable[int], None]) -> Dims:
    return value if isinstance(value, Dims) else Dims(() if value is None else value)


class PluginTensorDesc:
    """``trt.PluginTensorDesc``: ``dims`` (Dims), ``type`` (DataType), ``format`` (TensorFormat),
    ``scale`` (float; only meaningful for INT8; TensorRT fills -1.0 otherwise, and its
    no-argument constructor leaves 0.0).

    TensorRT binds only the no-argument constructor; the emulator's own code also passes the
    fields positionally (plugins never construct descriptors).
    """

    __slots__ = ("_dims", "_type", "_format", "scale")

    def __init__(self, dims: Union[Dims, Iterable[int], None] = None,
                 type: DataType = DataType.FLOAT,  # noqa: A002 - TensorRT's name
                 format: TensorFormat = TensorFormat.LINEAR,  # noqa: A002
                 scale: float = 0.0) -> None:
        self._dims = _dims(dims)
        self.type = type
        self.format = format
        self.scale = float(scale)

    @property
    def type(self) -> DataType:  # TensorRT's name
        """The tensor's DataType (a new object on every read, as through pybind11)."""
        return fresh(self._type)

    @type.setter  # noqa: A003 - the property, not the builtin
    def type(self, value: DataType) -> None:
        if not isinstance(value, DataType):
            msg = f"PluginTensorDesc.type must be a trt.DataType (got {value!r})"
            raise TypeError(msg)
        self._type = DataType.__members__.get(value.name, value)

    @property
    def format(self) -> TensorFormat:  # TensorRT's name
        """The tensor's TensorFormat (a new object on every read, as through pybind11)."""
        return fresh(self._format)

    @format.setter  # noqa: A003 - the property, not the builtin
    def format(self, value: TensorFormat) -> None:
        if not isinstance(value, TensorFormat):
            msg = f"PluginTensorDesc.format must be a trt.TensorFormat (got {value!r})"
            raise TypeError(msg)
        self._format = TensorFormat.__members__.get(value.name, value)

    @property
    def dims(self) -> Dims:
        """The tensor's shape (``-1`` for runtime dims during the build phase)."""
        return self._dims

    @dims.setter
    def dims(self, value: Union[Dims, Iterable[int]]) -> None:
        self._dims = _dims(value)

    def _copy(self) -> "PluginTensorDesc":
        """An independent copy (the bindings hand plugins copies)."""
        return PluginTensorDesc(Dims(self._dims), self._type, self._format, self.scale)

    def __repr__(self) -> str:
        return (f"PluginTensorDesc(dims={self._dims!r}, type={self._type.name}, "
                f"format={self._format.name}, scale={self.scale})")


class DynamicPluginTensorDesc:
    """``trt.DynamicPluginTensorDesc``: ``desc`` plus the profile's ``min``, ``opt``, ``max`` Dims."""

    __slots__ = ("desc", "_min", "_opt", "_max")

    def __init__(self, desc: Optional[PluginTensorDesc] = None,
                 min: Union[Dims, Iterable[int], None] = None,  # noqa: A002 - TensorRT's name
                 opt: Union[Dims, Iterable[int], None] = None,
                 max: Union[Dims, Iterable[int], None] = None) -> None:  # noqa: A002
        self.desc = desc if desc is not None else PluginTensorDesc()
        self._min, self._opt, self._max = _dims(min), _dims(opt), _dims(max)

    min = property(lambda self: self._min, lambda self, v: setattr(self, "_min", _dims(v)),
                   doc="The profile's kMIN shape.")
    opt = property(lambda self: self._opt, lambda self, v: setattr(self, "_opt", _dims(v)),
                   doc="The profile's kOPT shape (TensorRT 10.0+).")
    max = property(lambda self: self._max, lambda self, v: setattr(self, "_max", _dims(v)),
                   doc="The profile's kMAX shape.")

    def _copy(self) -> "DynamicPluginTensorDesc":
        return DynamicPluginTensorDesc(self.desc._copy(), Dims(self._min), Dims(self._opt),
                                       Dims(self._max))

    def __repr__(self) -> str:
        return (f"DynamicPluginTensorDesc(desc={self.desc!r}, min={self._min!r}, "
                f"opt={self._opt!r}, max={self._max!r})")
