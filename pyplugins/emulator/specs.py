"""Network inputs for the lifecycle driver: :class:`TensorSpec`, its text form and its profile.

A spec is what an ONNX graph and an optimization profile tell TensorRT about one plugin input:
the network-time shape (``-1`` where dynamic), the type, the profile's min/opt/max shapes and,
for the run, the data. :func:`pyplugins.checker.lifecycle.run` takes one per plugin input.

Example:
    >>> spec = TensorSpec.parse("1-2-4x3x8x8:float16")
    >>> spec.shape, spec.min, spec.opt, spec.max, spec.datatype.name
    ((-1, 3, 8, 8), (1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8), 'HALF')
"""

from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from pyplugins import dtypes
from pyplugins.emulator.enums import DataType, TensorFormat

#: The form of :meth:`TensorSpec.parse`, for messages.
INPUT_FORM = ("SHAPE:DTYPE, e.g. 2x3x8x8:float32, or with a dynamic dim given as min-opt-max, "
         "e.g. 1-2-4x3x8x8:float16")

__all__ = ["INPUT_FORM", "TensorSpec", "datatype_from_text", "host_dtype", "random_data",
           "spec_from_input"]

def datatype_from_text(text: str) -> DataType:
    """A dtype as a user types it -> the emulator's ``DataType``.

    Accepts every spelling :func:`pyplugins.dtypes.from_text` does (member, short, NumPy and
    ``tensorrt`` names, and the aliases of the one table).

    Raises:
        ValueError: the text names no data type, or one TensorRT does not have (``float64``);
            the message lists what is accepted.

    Example:
        >>> datatype_from_text("bfloat16").name, datatype_from_text("fp16").name
        ('BF16', 'HALF')
    """
    return DataType[dtypes.from_text(text).trt_name]


def host_dtype(datatype: Any) -> Optional[np.dtype]:
    """The NumPy dtype that holds a tensor of ``datatype`` on the host, byte for byte.

    NumPy's own dtype where it has one; otherwise an unsigned integer of the element's size that
    carries the bit pattern (BF16 -> uint16, FP8 and E8M0 -> uint8), so buffers get the right
    byte sizes. None for the sub-byte types (INT4, FP4), which no dtype holds.

    Example:
        >>> host_dtype(DataType.HALF), host_dtype(DataType.BF16), host_dtype(DataType.INT4)
        (dtype('float16'), dtype('uint16'), None)
    """
    row = dtypes.info(datatype)
    if row.numpy is not None:
        return row.numpy
    if row.itemsize in (1, 2, 4, 8):
        return np.dtype(f"<u{row.itemsize}")
    return None


def random_data(datatype: Any, shape: Tuple[int, ...], seed: int) -> Optional[np.ndarray]:
    """Seeded test data of ``datatype`` and ``shape``, in :func:`host_dtype` (None: sub-byte).

    Floats are standard normal; BF16 holds the top 16 bits of float32 normals, FP8 (E4M3) and
    E8M0 bytes that are finite numbers; integers lie in [-8, 16) ([0, 16) unsigned); BOOL 0/1.

    Example:
        >>> bits = random_data(DataType.BF16, (2, 3), seed=0)
        >>> bits.dtype, bits.shape
        (dtype('uint16'), (2, 3))
    """
    dt = host_dtype(datatype)
    if dt is None:
        return None
    rng = np.random.default_rng(seed)
    name = dtypes.info(datatype).trt_name
    if name == "BF16":
        floats = rng.standard_normal(shape).astype(np.float32)
        data = (floats.view(np.uint32) >> 16).astype(np.uint16)
    elif name == "FP8":
        data = rng.integers(0, 0x7F, shape).astype(np.uint8) | (rng.integers(0, 2, shape) << 7)
    elif name == "E8M0":
        data = rng.integers(120, 135, shape)
    elif dt.kind == "f":
        data = rng.standard_normal(shape)
    elif dt.kind == "b":
        data = rng.integers(0, 2, shape)
    else:
        data = rng.integers(0 if dt.kind == "u" else -8, 16, shape)
    return np.ascontiguousarray(np.asarray(data).astype(dt))


def _datatype(value: Any) -> DataType:
    """A DataType member (emulated or real, by name), a DataType name, a short name (``fp16``)
    or anything ``numpy.dtype`` accepts -> the emulator's DataType."""
    if isinstance(value, DataType):
        return value
    name = getattr(value, "name", None)
    if isinstance(name, str) and name in DataType.__members__ and not isinstance(value, np.dtype):
        return DataType[name]
    if isinstance(value, str):
        return datatype_from_text(value)
    return DataType[dtypes.trt_name_from_numpy(value)]


@dataclass
class TensorSpec:
    """One network input: its network-time shape (``-1`` = dynamic), type and profile.

    ``min``/``opt``/``max`` default to ``shape`` when it is static; for a dynamic shape ``opt``
    is required (or taken from ``data``) and ``min``/``max`` default to ``opt``. ``data`` (shape
    ``opt``) is what ``enqueue`` gets; random when None.

    Example:
        >>> spec = TensorSpec((2, -1, 4), "float16", min=(2, 1, 4), opt=(2, 5, 4), max=(2, 9, 4))
        >>> spec.datatype.name, spec.opt
        ('HALF', (2, 5, 4))
    """

    shape: Tuple[int, ...]
    dtype: Any
    min: Optional[tuple] = None
    opt: Optional[tuple] = None
    max: Optional[tuple] = None
    data: Any = None
    format: TensorFormat = TensorFormat.LINEAR
    scale: float = -1.0

    def __post_init__(self) -> None:
        self.shape = tuple(int(v) for v in self.shape)
        self.datatype = _datatype(self.dtype)
        if self.opt is None and self.data is not None:
            self.opt = tuple(self.data.shape)
        if self.opt is None:
            if any(v < 0 for v in self.shape):
                msg = (f"TensorSpec{self.shape}: a dynamic (-1) shape needs opt=... (and usually "
                       f"min=/max=), e.g. TensorSpec.parse('1-2-4x3x8x8:float32')")
                raise ValueError(msg)
            self.opt = self.shape
        self.opt = tuple(int(v) for v in self.opt)
        self.min = tuple(int(v) for v in (self.opt if self.min is None else self.min))
        self.max = tuple(int(v) for v in (self.opt if self.max is None else self.max))
        for name in ("min", "opt", "max"):
            dims = getattr(self, name)
            ok = len(dims) == len(self.shape) and all(
                (s < 0 or s == d) and d >= 0 for s, d in zip(self.shape, dims))
            if not ok:
                msg = (f"TensorSpec: {name}={dims} does not fit shape={self.shape} (same rank, "
                       f"static dims equal, no negative dims)")
                raise ValueError(msg)
        if not all(a <= b <= c for a, b, c in zip(self.min, self.opt, self.max)):
            msg = f"TensorSpec: need min <= opt <= max (got {self.min}, {self.opt}, {self.max})"
            raise ValueError(msg)
        if self.data is not None and tuple(self.data.shape) != self.opt:
            msg = f"TensorSpec: data has shape {tuple(self.data.shape)}, expected opt={self.opt}"
            raise ValueError(msg)

    @classmethod
    def parse(cls, text: str, *, what: str = "tensor spec", dtype_required: bool = False
              ) -> "TensorSpec":
        """The one text form of a tensor (``--input`` on the command line, spec strings in
        :func:`~pyplugins.checker.lifecycle.run`): ``SHAPE[:DTYPE[:FORMAT]]``.

        ``SHAPE`` is dims joined by ``x``, each an int or ``min-opt-max`` (a dynamic dim); empty
        (``":int32"``) is 0-D. ``DTYPE`` is any spelling of :func:`pyplugins.dtypes.from_text`
        (float32 when left out, unless ``dtype_required``); ``FORMAT`` a ``TensorFormat`` name.

        Args:
            text: the spec.
            what: how messages name it (``"--input"`` for the command line).
            dtype_required: refuse a spec without a dtype.

        Raises:
            ValueError: a malformed spec; the message quotes it and shows the form.

        Example:
            >>> s = TensorSpec.parse("1-2-4x3:fp16")
            >>> s.shape, s.min, s.max, s.datatype.name
            ((-1, 3), (1, 3), (4, 3), 'HALF')
        """
        where = f"{what} {text!r}"
        parts = text.strip().split(":")
        if len(parts) > 3 or (dtype_required and (len(parts) < 2 or not parts[0] or not parts[1])):
            raise ValueError(f"{where}: expected {INPUT_FORM}")
        shape_text, dtype_text = parts[0], (parts[1] if len(parts) > 1 and parts[1] else "float32")
        try:
            fmt = TensorFormat[parts[2].upper()] if len(parts) > 2 and parts[2] else TensorFormat.LINEAR
        except KeyError:
            formats = ", ".join(TensorFormat.__members__)
            raise ValueError(f"{where}: unknown format {parts[2]!r}; use one of {formats}") from None
        try:
            dtype = dtypes.from_text(dtype_text)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        shape, lo, mid, hi = [], [], [], []
        body = shape_text.strip().lower()
        for item in (body.split("x") if body not in ("", "scalar") else []):  # "" / scalar: 0-D
            if re.fullmatch(r"\d+", item):
                for dims in (shape, lo, mid, hi):
                    dims.append(int(item))
                continue
            match = re.fullmatch(r"(\d+)-(\d+)-(\d+)", item)
            if not match:
                hint = " (a dynamic dim is written min-opt-max, not -1)" if item in ("-1", "?") else ""
                raise ValueError(f"{where}: bad dimension {item!r}{hint}; expected {INPUT_FORM}")
            a, b, c = (int(g) for g in match.groups())
            if not a <= b <= c:
                raise ValueError(f"{where}: dynamic dim {item!r} must satisfy min <= opt <= max "
                                 f"(got {a}, {b}, {c})")
            shape.append(-1)
            lo.append(a)
            mid.append(b)
            hi.append(c)
        if len(shape) > 8:
            raise ValueError(f"{where}: TensorRT tensors have at most 8 dimensions "
                             f"(got {len(shape)})")
        host = dtype.numpy if dtype.numpy is not None else DataType[dtype.trt_name]
        return cls(tuple(shape), host, tuple(lo), tuple(mid), tuple(hi), format=fmt)

    @classmethod
    def from_array(cls, array: Any) -> "TensorSpec":
        """A static spec whose data is ``array`` (NumPy or CuPy)."""
        return cls(tuple(array.shape), array.dtype, data=array)


def spec_from_input(item: Any) -> TensorSpec:
    """One of :func:`~pyplugins.checker.lifecycle.run`'s ``inputs`` -> a :class:`TensorSpec`.

    Args:
        item: a :class:`TensorSpec` (returned as is), a spec string (:meth:`TensorSpec.parse`)
            or an array (:meth:`TensorSpec.from_array`).

    Raises:
        TypeError: ``item`` is none of these.

    Example:
        >>> spec_from_input(np.zeros((2, 3), np.int32)).datatype.name
        'INT32'
    """
    if isinstance(item, TensorSpec):
        return item
    if isinstance(item, str):
        return TensorSpec.parse(item)
    if hasattr(item, "shape") and hasattr(item, "dtype"):
        return TensorSpec.from_array(item)
    msg = f"inputs must be TensorSpec objects, spec strings or arrays (got {item!r})"
    raise TypeError(msg)
