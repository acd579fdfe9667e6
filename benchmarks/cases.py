"""The benchmarked ops as *cases*: plugin class, fields, input shapes for a byte size, bytes moved.

A case names its plugin by module and class (``pyplugins.ops.leaky_relu.LeakyReLU``) and is
skipped, with a note, while that class cannot be imported. Shapes are chosen from the byte size
of the main input; ``out_shapes`` is the op's shape rule, cross-checked against the plugin's own
``get_output_dimensions`` when it runs. Bytes moved count each input read once and each output
written once: the fewest bytes the op must move through device memory.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

Shape = Tuple[int, ...]

#: Default input byte sizes: 64 KiB to 1 GiB.
DEFAULT_SIZES = ("64K", "1M", "16M", "64M", "256M", "1G")

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}


def parse_bytes(text: str) -> int:
    """``"64K"`` -> 65536, ``"1G"`` -> 2**30 (binary units; ``"MiB"`` spellings too).

    Raises:
        ValueError: for text that is not a number with an optional K/M/G unit.
    """
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    unit = match.group(2).upper() if match else None
    if match is None or unit not in _UNITS:
        msg = f"byte size {text!r} is not understood; expected e.g. 64K, 16M, 1G"
        raise ValueError(msg)
    return int(match.group(1)) * _UNITS[unit]


def format_bytes(n: int) -> str:
    """65536 -> "64 KiB", 133136 -> "130.0 KiB": binary units, exact where they divide."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n // size} {unit}" if n % size == 0 else f"{n / size:.1f} {unit}"
    return f"{n} B"


@dataclass(frozen=True)
class Problem:
    """One concrete configuration of a case: inputs, outputs and the bytes they move."""

    case: str
    dtype: str
    in_bytes: int
    in_shapes: Tuple[Shape, ...]
    in_dtypes: Tuple[str, ...]
    out_shapes: Tuple[Shape, ...]
    out_dtypes: Tuple[str, ...]

    @property
    def moved_bytes(self) -> int:
        sizes = [int(np.prod(s)) * np.dtype(d).itemsize
                 for s, d in zip(self.in_shapes + self.out_shapes, self.in_dtypes + self.out_dtypes)]
        return int(sum(sizes))


@dataclass(frozen=True)
class Case:
    """An op to benchmark.

    Attributes:
        name: row label ("Pool-max").
        module, cls: where the plugin class lives (``pyplugins.ops.<module>``).
        dtypes: NumPy dtype names benchmarked.
        fields: the plugin's fields as Python values (ONNX-attribute style).
        inputs: (element count of the main input, dtype) -> [(shape, dtype), ...], or None
            when the size does not fit the op's shape rules.
        out_shapes: the op's shape rule, input shapes -> output shapes.
        torch: labels of the torch equivalents (see :mod:`benchmarks.versus_torch`).
    """

    name: str
    module: str
    cls: str
    dtypes: Tuple[str, ...]
    fields: Dict[str, Any]
    inputs: Callable[[int, str], Optional[List[Tuple[Shape, str]]]]
    out_shapes: Callable[[Sequence[Shape]], List[Shape]]
    torch: Tuple[str, ...] = ()
    note: str = ""
    out_dtypes: Optional[Callable[[Sequence[str]], List[str]]] = field(default=None)

    def problem(self, in_bytes: int, dtype: str) -> Optional[Problem]:
        """The configuration whose main input holds ``in_bytes`` bytes, or None if none fits."""
        itemsize = np.dtype(dtype).itemsize
        if in_bytes % itemsize:
            return None
        ins = self.inputs(in_bytes // itemsize, dtype)
        if not ins:
            return None
        shapes = tuple(tuple(int(d) for d in s) for s, _ in ins)
        dts = tuple(np.dtype(d).name for _, d in ins)
        outs = tuple(tuple(int(d) for d in s) for s in self.out_shapes(shapes))
        out_dts = tuple(self.out_dtypes(dts) if self.out_dtypes else [dts[0]] * len(outs))
        return Problem(self.name, np.dtype(dtype).name, in_bytes, shapes, dts, outs, out_dts)

    def plugin_class(self) -> Any:
        """The plugin class; ImportError/AttributeError while it does not exist yet."""
        return getattr(importlib.import_module(f"pyplugins.ops.{self.module}"), self.cls)


def _log2(n: int) -> Optional[int]:
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else None


def _rows(n: int, width: int = 1024) -> Optional[Shape]:
    """(n / width, width), or None when width does not divide n."""
    return (n // width, width) if n >= width and n % width == 0 else None


def _nchw(n: int, max_side: int = 512) -> Optional[Shape]:
    """(1, C, H, W) of n elements, H and W powers of two up to ``max_side``."""
    k = _log2(n)
    if k is None or k < 4:
        return None
    cap = _log2(max_side)
    h = min(cap, k // 2)
    w = min(cap, k - h)
    return (1, 1 << (k - h - w), 1 << h, 1 << w)


def _narrow(n: int, width: int = 8, max_h: int = 512) -> Optional[Shape]:
    """(1, C, H, width): narrow rows (CircPad's output rows of width + 2 are not 16-byte
    multiples), H up to ``max_h``."""
    if n < width or n % width:
        return None
    h = min(max_h, n // width)
    return (1, n // (width * h), h, width) if (n // width) % h == 0 else None


def _seq(n: int, width: int) -> Optional[Shape]:
    """(1, S, width): a batch of one sequence of S positions."""
    return (1, n // width, width) if n >= width and n % width == 0 else None


def _one(shape_fn: Callable[[int], Optional[Shape]]) -> Callable[[int, str], Any]:
    def inputs(n: int, dtype: str) -> Optional[List[Tuple[Shape, str]]]:
        shape = shape_fn(n)
        return [(shape, dtype)] if shape else None
    return inputs


def _circ_pad_out(pads: Sequence[int]) -> Callable[[Sequence[Shape]], List[Shape]]:
    def out(shapes: Sequence[Shape]) -> List[Shape]:
        dims = list(shapes[0])
        for i in range(len(pads) // 2):
            dims[len(dims) - 1 - i] += pads[2 * i] + pads[2 * i + 1]
        return [tuple(dims)]
    return out


def _pool_out(kernel: Sequence[int], stride: Sequence[int], pad: Sequence[int]) -> Callable:
    def out(shapes: Sequence[Shape]) -> List[Shape]:
        n, c, h, w = shapes[0]
        return [(n, c, (h + 2 * pad[0] - kernel[0]) // stride[0] + 1,
                 (w + 2 * pad[1] - kernel[1]) // stride[1] + 1)]
    return out


def _bar_inputs(n: int, dtype: str) -> Optional[List[Tuple[Shape, str]]]:
    half = _rows(n // 2) if n % 2 == 0 else None
    return [(half, dtype), (half, dtype)] if half else None


def _rmsnorm_inputs(n: int, dtype: str) -> Optional[List[Tuple[Shape, str]]]:
    x = _rows(n, 4096)
    return [(x, dtype), ((4096,), dtype)] if x else None


_ROPE_HEADS, _ROPE_DIM = 8, 128
_SEQ_WIDTH = 1024
SEQ_FACTOR = 2
POOL_FIELDS = {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "in_scale": 1.0,
               "out_scale": 1.0}
CIRC_PADS = [1, 1, 1, 1]
POOL5_FIELDS = dict(POOL_FIELDS, kernel=[5, 5], stride=[2, 2], padding=[2, 2])


def _rope_inputs(n: int, dtype: str) -> Optional[List[Tuple[Shape, str]]]:
    per_pos = _ROPE_HEADS * _ROPE_DIM
    if n < per_pos or n % per_pos:
        return None
    return [((1, n // per_pos, _ROPE_HEADS, _ROPE_DIM), dtype)]


CASES: Tuple[Case, ...] = (
    Case("LeakyReLU", "leaky_relu", "LeakyReLU", ("float32", "float16"), {"neg_slope": 0.01},
         _one(_rows), lambda s: [s[0]], ("F.leaky_relu",)),
    Case("CircPad", "circ_pad", "CircPad", ("float32", "float16"), {"pads": CIRC_PADS},
         _one(_nchw), _circ_pad_out(CIRC_PADS), ("F.pad circular",),
         note="NCHW, pads 1 on each side of H and W"),
    Case("CircPad-narrow", "circ_pad", "CircPad", ("float32", "float16"), {"pads": CIRC_PADS},
         _one(_narrow), _circ_pad_out(CIRC_PADS), ("F.pad circular",),
         note="NCHW with W = 8 (output rows of 10 elements), pads 1 on each side of H and W"),
    Case("BarPlugin", "bar", "BarPlugin", ("float32", "float16"), {}, _bar_inputs,
         lambda s: [(s[0][0] + s[1][0],) + s[0][1:], s[1]], ("torch.cat + clone",),
         note="two inputs of half the bytes each; out0 = cat(dim 0), out1 = copy of in1"),
    Case("Pool-max", "pool", "Pool", ("float32", "float16", "int8"),
         dict(POOL_FIELDS, mode="max"), _one(_nchw),
         _pool_out([2, 2], [2, 2], [0, 0]), ("F.max_pool2d",), note="2x2, stride 2"),
    Case("Pool-avg", "pool", "Pool", ("float32", "float16", "int8"),
         dict(POOL_FIELDS, mode="avg"), _one(_nchw),
         _pool_out([2, 2], [2, 2], [0, 0]), ("F.avg_pool2d",), note="2x2, stride 2"),
    Case("Pool-max-5x5s2", "pool", "Pool", ("float32", "float16", "int8"),
         dict(POOL5_FIELDS, mode="max"), _one(_nchw), _pool_out([5, 5], [2, 2], [2, 2]),
         ("F.max_pool2d",), note="5x5, stride 2, padding 2 (no fast path)"),
    Case("Pool-avg-5x5s2", "pool", "Pool", ("float32", "float16", "int8"),
         dict(POOL5_FIELDS, mode="avg"), _one(_nchw), _pool_out([5, 5], [2, 2], [2, 2]),
         ("F.avg_pool2d",), note="5x5, stride 2, padding 2 (no fast path)"),
    Case("RoPE", "rope", "RoPE", ("float32", "float16"),
         {"rotary_dim": _ROPE_DIM, "theta": 10000.0, "layout": "neox", "position_offset": 0},
         _rope_inputs, lambda s: [s[0]], ("RoPE composed (rotate-half)",),
         note=f"[1, S, {_ROPE_HEADS}, {_ROPE_DIM}], neox"),
    Case("RMSNorm", "rmsnorm", "RMSNorm", ("float32", "float16"), {"eps": 1e-6},
         _rmsnorm_inputs, lambda s: [s[0]], ("RMSNorm composed", "F.rms_norm"),
         note="[rows, 4096] with weight [4096]"),
    Case("SeqRepeat", "seq_repeat", "SeqRepeat", ("float32", "float16"),
         {"factor": SEQ_FACTOR}, _one(lambda n: _seq(n, _SEQ_WIDTH)),
         lambda s: [(s[0][0], s[0][1] * SEQ_FACTOR) + tuple(s[0][2:])],
         ("repeat_interleave",), note=f"[1, S, {_SEQ_WIDTH}] -> [1, {SEQ_FACTOR}S, {_SEQ_WIDTH}]"),
)


def select(names: Optional[Sequence[str]] = None) -> List[Case]:
    """The cases named (all when None or empty).

    Raises:
        KeyError: for a name no case has.
    """
    if not names:
        return list(CASES)
    by_name = {c.name.lower(): c for c in CASES}
    unknown = [n for n in names if n.lower() not in by_name]
    if unknown:
        msg = f"unknown case(s) {unknown}; known: {', '.join(c.name for c in CASES)}"
        raise KeyError(msg)
    return [by_name[n.lower()] for n in names]
