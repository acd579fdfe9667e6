"""TensorRT's memory layouts of a tensor in each ``TensorFormat``, as NumPy transforms.

A plugin that accepts a format in ``supports_format_combination`` gets (and must write) its
tensors laid out in that format. :func:`to_format` lays a LINEAR (row-major) array out as TensorRT
does and :func:`from_format` reads such a buffer back; docs/formats.md describes each layout. The
channel axis is ``dims[-3]`` (``dims[-4]`` for the 3-D formats); the axes before it are batch-like.
Vectorized formats pad the channels with zeros to a multiple of the vector length.

Example:
    >>> x = np.arange(2 * 3 * 2, dtype=np.float32).reshape(1, 3, 2, 2)[:, :, :1, :]  # C=3 H=1 W=2
    >>> to_format(x, TensorFormat.HWC8).reshape(2, 8)
    array([[0., 4., 8., 0., 0., 0., 0., 0.],
           [1., 5., 9., 0., 0., 0., 0., 0.]], dtype=float32)
    >>> from_format(to_format(x, TensorFormat.CHW4), x.shape, TensorFormat.CHW4).tolist() == x.tolist()
    True
"""

from __future__ import annotations

from typing import Dict, Sequence, Tuple

import numpy as np

from pyplugins.emulator.enums import TensorFormat

__all__ = ["LAYOUTS", "from_format", "layout_rank", "runnable", "to_format"]

#: Format -> (spatial dims after the channel, vector length, channels last). CHW<v>/CDHW32 keep
#: the channel blocks before the spatial dims and the <v> channels of a block innermost;
#: HWC<v>/DHWC<v>/HWC/DHWC put all (padded) channels innermost.
LAYOUTS: Dict[TensorFormat, Tuple[int, int, bool]] = {
    TensorFormat.CHW2: (2, 2, False), TensorFormat.CHW4: (2, 4, False),
    TensorFormat.CHW16: (2, 16, False), TensorFormat.CHW32: (2, 32, False),
    TensorFormat.CDHW32: (3, 32, False),
    TensorFormat.HWC8: (2, 8, True), TensorFormat.HWC16: (2, 16, True),
    TensorFormat.HWC: (2, 1, True), TensorFormat.DHWC8: (3, 8, True),
    TensorFormat.DHWC: (3, 1, True),
}


def layout_rank(fmt: TensorFormat) -> int:
    """The least rank a tensor needs for ``fmt`` (channel plus spatial dims; LINEAR: 0)."""
    return LAYOUTS[fmt][0] + 1 if fmt in LAYOUTS else 0


def runnable(fmt: TensorFormat, rank: int) -> bool:
    """Whether the emulator can lay out a rank-``rank`` tensor in ``fmt`` (not DLA formats)."""
    return fmt == TensorFormat.LINEAR or (fmt in LAYOUTS and rank >= layout_rank(fmt))


def _split(shape: Sequence[int], fmt: TensorFormat) -> Tuple[int, int, Tuple[int, ...], int, bool]:
    spatial, vec, last = LAYOUTS[fmt]
    dims = tuple(int(d) for d in shape)
    if len(dims) < spatial + 1:
        msg = f"format {fmt.name} needs a tensor of rank >= {spatial + 1} (got shape {dims})"
        raise ValueError(msg)
    lead = int(np.prod(dims[:-(spatial + 1)], dtype=np.int64))
    channels = dims[-(spatial + 1)]
    return lead, channels, dims[-spatial:], vec, last


def to_format(array: np.ndarray, fmt: TensorFormat) -> np.ndarray:
    """``array`` (LINEAR, row-major) laid out in ``fmt``: a 1-D array of the padded volume."""
    array = np.asarray(array)
    if fmt == TensorFormat.LINEAR:
        return np.ascontiguousarray(array).reshape(-1)
    if fmt not in LAYOUTS:
        msg = f"format {fmt.name} has no host layout here (DLA formats run on DLA only)"
        raise ValueError(msg)
    lead, channels, spatial, vec, last = _split(array.shape, fmt)
    padded = -(-channels // vec) * vec
    x = np.zeros((lead, padded, *spatial), dtype=array.dtype)
    x[:, :channels] = array.reshape(lead, channels, *spatial)
    if last:  # [lead, Cp, *S] -> [lead, *S, Cp]
        x = np.moveaxis(x, 1, -1)
    else:  # [lead, Cp/v, v, *S] -> [lead, Cp/v, *S, v]
        x = np.moveaxis(x.reshape(lead, padded // vec, vec, *spatial), 2, -1)
    return np.ascontiguousarray(x).reshape(-1)


def from_format(flat: np.ndarray, shape: Sequence[int], fmt: TensorFormat) -> np.ndarray:
    """The LINEAR array of ``shape`` that a buffer laid out in ``fmt`` holds (padding dropped)."""
    flat = np.asarray(flat).reshape(-1)
    dims = tuple(int(d) for d in shape)
    if fmt == TensorFormat.LINEAR:
        return flat[:int(np.prod(dims, dtype=np.int64))].reshape(dims)
    if fmt not in LAYOUTS:
        msg = f"format {fmt.name} has no host layout here (DLA formats run on DLA only)"
        raise ValueError(msg)
    lead, channels, spatial, vec, last = _split(dims, fmt)
    padded = -(-channels // vec) * vec
    body = flat[:lead * padded * int(np.prod(spatial, dtype=np.int64))]
    if last:
        x = np.moveaxis(body.reshape(lead, *spatial, padded), -1, 1)
    else:
        x = np.moveaxis(body.reshape(lead, padded // vec, *spatial, vec), -1, 2)
        x = x.reshape(lead, padded, *spatial)
    return np.ascontiguousarray(x[:, :channels]).reshape(dims)
