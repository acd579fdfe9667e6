"""``PluginField``, ``PluginFieldCollection`` and the creator-side ``PluginFieldCollection_`` (§4.3).

``PluginField.data`` returns a fresh NumPy copy whose dtype follows ``type`` (not the buffer's
dtype, which TensorRT never checks); FLOAT16, BF16, DIMS, FP8, FP4 and INT4 cannot be read.

Example:
    >>> import numpy as np
    >>> from pyplugins.emulator import PluginField, PluginFieldType
    >>> f = PluginField("pads", np.array([1, 1], dtype=np.int32), PluginFieldType.INT32)
    >>> f.data, f.size
    (array([1, 1], dtype=int32), 2)
"""

from __future__ import annotations

from typing import Any, Iterable, List

import numpy as np

from pyplugins.emulator import idioms
from pyplugins.emulator.enums import PluginFieldType, fresh

# PluginFieldType -> dtype of f.data (10.1+); absent types raise on read.
_READ_DTYPE = {
    PluginFieldType.INT32: np.int32,
    PluginFieldType.FLOAT32: np.float32,
    PluginFieldType.FLOAT64: np.float64,
    PluginFieldType.INT8: np.int8,
    PluginFieldType.UNKNOWN: np.int8,
    PluginFieldType.INT16: np.int16,
    PluginFieldType.INT64: np.int64,
    PluginFieldType.CHAR: np.int8,  # C char is signed on x86-64
}


class PluginField:
    """``trt.PluginField(name="", data=None, type=PluginFieldType.UNKNOWN)``.

    ``data`` must support the buffer protocol (a NumPy array, ``bytes``); ``str`` is refused as
    the binding refuses it. ``size`` is the buffer's element count.
    """

    __slots__ = ("name", "_type", "_raw", "_size", "_itemsize")

    def __init__(self, name: str = "", data: Any = None,
                 type: PluginFieldType = PluginFieldType.UNKNOWN) -> None:  # noqa: A002 - TensorRT's name
        if isinstance(name, (bytes, bytearray)):  # pybind's string caster takes bytes too
            name = bytes(name).decode("utf-8", "surrogateescape")
        if not isinstance(name, str):
            msg = f"PluginField name must be a str (got {name!r})"
            raise TypeError(msg)
        self.name = name
        self.type = type
        if data is None:
            self._raw, self._size, self._itemsize = b"", 0, 1
            return
        if isinstance(data, str):
            msg = ("PluginField data must support the buffer protocol (a numpy array or bytes); "
                   f"got a str {data!r}: use np.frombuffer(s.encode(), dtype=np.int8)")
            raise TypeError(msg)
        try:
            view = memoryview(data)
        except TypeError:
            msg = ("PluginField data must support the buffer protocol (got a "
                   f"{data.__class__.__name__}); pass a numpy array with an explicit dtype")
            raise TypeError(msg) from None
        self._raw = view.tobytes()
        self._itemsize = view.itemsize or 1
        self._size = len(self._raw) // self._itemsize

    @property
    def type(self) -> PluginFieldType:  # TensorRT's name
        """The declared PluginFieldType (a new object on every read, as through pybind11)."""
        return fresh(self._type)

    @type.setter  # noqa: A003 - the property, not the builtin
    def type(self, value: PluginFieldType) -> None:
        if not isinstance(value, PluginFieldType):
            msg = f"PluginField type must be a PluginFieldType (got {value!r})"
            raise TypeError(msg)
        self._type = PluginFieldType.__members__.get(value.name, value)

    @property
    def size(self) -> int:
        """Element count of the buffer given as ``data``."""
        return self._size

    @property
    def data(self) -> np.ndarray:
        """A new NumPy array: ``size`` elements of the dtype ``type`` names.

        Raises:
            AttributeError: for FLOAT16, BF16, DIMS, FP8, FP4 and INT4, as TensorRT 10.1+ does.
            ValueError: when the buffer holds fewer bytes than ``size`` elements of ``type``
                (real TensorRT would read past the buffer; the emulator refuses).
        """
        dtype = _READ_DTYPE.get(self.type)
        if dtype is None:
            msg = f"No known conversion for returning data from PluginField of type {self.type.name}"
            raise AttributeError(msg)
        need = self._size * np.dtype(dtype).itemsize
        if need > len(self._raw):
            msg = (f"PluginField {self.name!r}: type {self.type.name} needs {need} bytes for "
                   f"{self._size} elements but the buffer holds {len(self._raw)} (its dtype does "
                   f"not match the declared type; TensorRT would read out of bounds). Pass data "
                   f"with dtype={np.dtype(dtype).name}.")
            raise ValueError(msg)
        return np.frombuffer(self._raw, dtype=dtype, count=self._size).copy()

    def __repr__(self) -> str:
        return f"PluginField({self.name!r}, size={self._size}, type={self.type.name})"


class PluginFieldCollection(list):
    """``trt.PluginFieldCollection``: a list of ``PluginField`` (pybind ``bind_vector``)."""

    def __init__(self, fields: Iterable[PluginField] = ()) -> None:
        items = list(fields)
        for f in items:
            if not isinstance(f, PluginField):
                msg = f"PluginFieldCollection takes PluginField items (got {f!r})"
                raise TypeError(msg)
        super().__init__(items)


class PluginFieldCollection_:  # noqa: N801 - TensorRT's name
    """``trt.PluginFieldCollection_``: the read-only ``fc`` a creator's ``create_plugin`` gets.

    Only ``len(fc)`` and ``fc[i]`` (iteration works through them); like TensorRT it has no
    negative indexing: ``fc[-1]`` reads out of bounds there (undefined behaviour), and raises
    IndexError here, reported as a TensorRT-undefined idiom.
    """

    def __init__(self, fields: Iterable[PluginField] = ()) -> None:
        self._fields: List[PluginField] = list(fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __getitem__(self, index: int) -> PluginField:
        if isinstance(index, (float, str, bytes)) or not hasattr(type(index), "__index__"):
            msg = f"PluginFieldCollection_ indices must be ints (got {index!r})"
            raise TypeError(msg)
        index = int(index.__index__())
        if index < 0:
            msg = (f"fc[{index}]: TensorRT's PluginFieldCollection_ has no negative indexing "
                   "(it checks only index < nbFields and reads out of bounds: undefined "
                   "behaviour in TensorRT); use fc[len(fc) - 1]")
            idioms.refuse("fc_negative", IndexError(msg))
        if index >= len(self._fields):
            msg = f"fc[{index}] out of range for {len(self._fields)} fields"
            raise IndexError(msg)
        return self._fields[index]

    def __repr__(self) -> str:
        return f"PluginFieldCollection_({self._fields!r})"
