"""``Pool``: 2-D max and average pooling over NCHW tensors (FP32, FP16, INT8) as a TensorRT plugin.

What it computes: for ``x`` of shape ``[N, C, H, W]`` and each output position, the max or the
average of the window of ``kernel = [kh, kw]`` elements that starts at ``(oh * sh - ph,
ow * sw - pw)``. The output is ``[N, C, Ho, Wo]`` with ``Ho = floor((H + 2 ph - kh) / sh) + 1``
and ``Wo`` likewise. **Padding is never read**: max ignores it, and the average divides by the
number of *in-bounds* elements of each window (``count_include_pad=False`` in PyTorch terms), so
border outputs are not pulled towards zero. The CUDA kernel is ``kernels_cu/pool.cu``; its NumPy
twin is :meth:`Pool.reference`.

Fields (ONNX attributes of the ``Pool`` node; plugin version ``"1"``, namespace ``""``):

=============  =========================  ==================================================
``mode``       STRING, required           ``"max"`` or ``"avg"`` (the parser's trailing NUL is
                                          stripped by the field)
``kernel``     INTS ``[kh, kw]``, required  window size, each >= 1
``stride``     INTS ``[sh, sw]``          each >= 1; default ``[]`` = the window size
``padding``    INTS ``[ph, pw]``          default ``[0, 0]``; ``0 <= p < k`` per axis
``in_scale``   FLOAT                      INT8 only: input scale when TensorRT gives none
``out_scale``  FLOAT                      INT8 only: output scale when TensorRT gives none
=============  =========================  ==================================================

Data types: every tensor FP32, or every tensor FP16 (float math inside), or every tensor INT8
(real value = ``q * scale``, per-tensor scales). For INT8 the scales come from the tensor
descriptors (``desc.scale``) when TensorRT provides them (``> 0``; it is ``-1`` otherwise), else
from ``in_scale`` / ``out_scale``, which are then required. Max pooling takes the max of ``q``
(exact when the two scales are equal); average pooling sums ``q`` exactly and requantizes
``clip(rne(sum / count * in_scale / out_scale), -128, 127)`` (round to nearest even, saturate).

How each TensorRT callback serves this op: ``docs/ops/pool.md``.
INT8 is exact at every scale ratio (the kernel requantizes as the reference does).

Example (the eager runner needs a GPU)::

    import numpy as np
    from pyplugins.runtime.eager import run
    from pyplugins.ops.pool import Pool

    x = np.random.rand(2, 3, 9, 9).astype(np.float32)
    y = run(Pool, x, mode="avg", kernel=[3, 3], stride=[2, 2], padding=[1, 1])  # (2, 3, 5, 5)
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

import pyplugins.trt as trt
from pyplugins import dtypes
from pyplugins.runtime import aot, shapes
from pyplugins.runtime.creator import register
from pyplugins.errors import FieldError, ShapeError
from pyplugins.runtime.fields import Field
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import POINTER, Launch
from pyplugins.runtime.tactics import Variant, choose, define_options, find, launch
from pyplugins.runtime.plugin import Plugin
from pyplugins.testing import round_to

__all__ = ["AOT_KERNELS", "COLS_BLOCK", "COLS_SEGMENT_ROWS", "COLS_WINDOW", "DEFINES", "MODES", "OUTPUTS_PER_THREAD",
           "VARIANTS", "WIDE_WINDOWS", "Pool", "PoolFacts", "cols_blocks", "output_size"]

#: Field value of ``mode`` -> the kernel's ``mode`` argument.
MODES = {"max": 0, "avg": 1}
_INT32_MAX = 2**31 - 1


# -- the variant table: every pool.cu kernel computes every window (each falls back to the generic
# path), so every row fits every input (a PoolFacts); rows differ in where the op prefers them
# (wins: the measured choices of docs/ops/pool.md), compile options, block and grid.

#: Threads per block of the pool2d_cols row (its ``__launch_bounds__``, ``PP_POOL_COLS_THREADS``;
#: a multiple of 32: a warp is one column group).
COLS_BLOCK = 256
#: Output rows a pool2d_cols warp walks per work item (``PP_POOL_COLS_S``); a resident wave of
#: warps takes the items grid-stride.
COLS_SEGMENT_ROWS = 4
#: Outputs one thread of the generic path computes per grid-stride trip (``PP_POOL_OUTPUTS``).
OUTPUTS_PER_THREAD = 4
#: Every ``pool.cu`` kernel is compiled with these ``-D`` options: the constants it shares with
#: this module (``pool.cu`` stops with an ``#error`` when one is missing).
DEFINES: Dict[str, int] = {"PP_POOL_OUTPUTS": OUTPUTS_PER_THREAD,
                           "PP_POOL_COLS_S": COLS_SEGMENT_ROWS, "PP_POOL_COLS_THREADS": COLS_BLOCK}
#: Windows ``(kh, kw, sh, sw, pw)`` that ``pool2d_wide`` has a vector path for (``pool2d`` has
#: the others; both compute every window, with the same arguments).
WIDE_WINDOWS = frozenset({(5, 5, 2, 2, 2), (3, 3, 2, 2, 0), (2, 2, 1, 1, 0)})
#: ``(kh, kw, sh, sw, pw)`` of ``pool2d_cols``'s column path (any ph <= 4).
COLS_WINDOW = (5, 5, 2, 2, 2)


class PoolFacts(NamedTuple):
    """One concrete Pool launch: what the rows of :data:`VARIANTS` read.

    Attributes:
        window: ``(kh, kw, sh, sw, ph, pw)``.
        nc, h, w, ho, wo: planes (N * C), input and output height and width.
        itemsize: bytes per element (4, 2 or 1).
        mode: the kernel's ``mode`` (0 max, 1 average).
        in_scale, out_scale: the INT8 scales (1.0 for float types).
    """

    window: Tuple[int, int, int, int, int, int]
    nc: int
    h: int
    w: int
    ho: int
    wo: int
    itemsize: int
    mode: int
    in_scale: float
    out_scale: float

    @property
    def unit_ratio(self) -> bool:
        """in_scale == out_scale, as the kernel's float32 arguments."""
        return bool(np.float32(self.in_scale) == np.float32(self.out_scale))


def cols_blocks(nc: int, ho: int, w: int, itemsize: int, block: int = COLS_BLOCK) -> int:
    """Blocks that give each pool2d_cols warp one work item of :data:`COLS_SEGMENT_ROWS` output
    rows: the grid to cap at the resident-block count (its warps then take the items
    grid-stride).

    A work item is one plane's column group (32 16-byte chunks of ``w`` elements of ``itemsize``
    bytes) times a segment of output rows.

    Example:
        >>> cols_blocks(64, 256, 512, 4)  # 64 planes x 4 groups x 64 segments, 8 warps a block
        2048
        >>> cols_blocks(1, 1, 16, 1), cols_blocks(0, 5, 16, 1)
        (1, 0)
    """
    groups = shapes.cdiv(w * itemsize // 16, 32)
    warps = nc * groups * shapes.cdiv(ho, COLS_SEGMENT_ROWS)
    return shapes.cdiv(warps * 32, block)


def _cols_window(f: PoolFacts) -> bool:
    kh, kw, sh, sw, ph, pw = f.window
    return (kh, kw, sh, sw, pw) == COLS_WINDOW and ph <= 4 and f.w * f.itemsize % 16 == 0


def _args(f: PoolFacts) -> Tuple[Any, ...]:
    kh, kw, sh, sw, ph, pw = f.window
    return (POINTER, POINTER, np.int64(f.nc), np.int32(f.h), np.int32(f.w), np.int32(f.ho),
            np.int32(f.wo), np.int32(kh), np.int32(kw), np.int32(sh), np.int32(sw),
            np.int32(ph), np.int32(pw), np.int32(f.mode), np.float32(f.in_scale),
            np.float32(f.out_scale))


def _outputs_blocks(f: PoolFacts, block: int) -> int:
    return shapes.cdiv(f.nc * f.ho * f.wo, block * OUTPUTS_PER_THREAD)


def _cols_blocks(f: PoolFacts, block: int) -> int:
    return cols_blocks(f.nc, f.ho, f.w, f.itemsize, block)


def _kernel(expression: str, *extra: str, dtypes: Any = None) -> Kernel:
    return Kernel("pool.cu", expression, options=define_options(DEFINES) + extra, dtypes=dtypes)


def _always(f: PoolFacts) -> bool:
    return True


#: The rows, in the order ``Pool.plan`` tries them (the first that fits and wins).
VARIANTS: Tuple[Variant, ...] = (
    # 5x5 stride 2 on whole-chunk rows: 4-row segments taken grid-stride by one resident wave.
    # 64 MiB, fraction of copy (2026-11-27, docs/ops/pool.md), against the former rows (INT8:
    # one item a warp, segments sized to the wave; float, half: every block of 4-row items): H200
    # INT8 avg / max 0.91 / 0.93 (0.82 / 0.84), half 0.90 / 0.94 (0.87 / 0.92), float 0.93 /
    # 0.93 (0.90 / 0.90); H100 INT8 0.96 / 0.96 (0.87 / 0.87), half 0.95 / 0.96 (0.94 / 0.96),
    # float 0.97 / 0.97 (0.95 / 0.95).
    Variant("pool2d_cols", _kernel("pool2d_cols<{T}>"), needs="nothing", fits=_always,
            args=_args, blocks=_cols_blocks, block=COLS_BLOCK, waves=1, wins=_cols_window),
    # INT8 2x2 stride 2 padding 0 at in_scale == out_scale: byte-SIMD.
    Variant("pool2d_i8", _kernel("pool2d_i8<{T}>", dtypes=("int8",)), needs="INT8 elements",
            fits=lambda f: f.itemsize == 1, args=_args, blocks=_outputs_blocks, block=128,
            waves=1, wins=lambda f: f.unit_ratio and f.window == (2, 2, 2, 2, 0, 0)),
    # The vector path's later windows. 128 threads measured faster than 256 on an H100: 5x5
    # stride 2 0.91 / 0.65 / 0.44 of copy for float / half / INT8 against 0.85 / 0.58 / 0.40.
    Variant("pool2d_wide", _kernel("pool2d_wide<{T}>"), needs="nothing", fits=_always,
            args=_args, blocks=_outputs_blocks, block=128, waves=1,
            wins=lambda f: (f.window[:4] + f.window[5:]) in WIDE_WINDOWS),
    # Everything else: float and half on 256 threads ...
    Variant("pool2d", _kernel("pool2d<{T}>"), needs="nothing", fits=_always, args=_args,
            blocks=_outputs_blocks, block=256, waves=1, wins=lambda f: f.itemsize > 1),
    # ... and INT8 on 128 (INT8 2x2 0.54 / 0.95 of copy (avg / max) against 0.48 / 0.90 on 256).
    Variant("pool2d_b128", _kernel("pool2d<{T}>"), needs="nothing", fits=_always, args=_args,
            blocks=_outputs_blocks, block=128, waves=1),
)

#: Each row's AOT entry (``<kernel>_aot<T>`` in pool.cu), by row name: :meth:`Pool.aot_launch`.
AOT_KERNELS = aot.entry_kernels(VARIANTS)


def output_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """``floor((size + 2 padding - kernel) / stride) + 1``: one output dim (may be <= 0).

    Example:
        >>> output_size(7, 3, 2, 1), output_size(2, 3, 1, 0)
        (4, 0)
    """
    return (size + 2 * padding - kernel) // stride + 1


def finite(value: float) -> bool:
    """Field check: the value is a finite number (no NaN, no infinity)."""
    return math.isfinite(value)


def _empty_or_pair(value: List[int]) -> bool:
    if len(value) not in (0, 2):
        msg = "expected [] (the window size) or two strides [sh, sw]"
        raise ValueError(msg)
    return True


@register
class Pool(Plugin):
    """2-D max / average pooling over NCHW.

    Example:
        >>> p = Pool(mode="avg", kernel=[3, 3], padding=[1, 1])
        >>> p.window()
        (3, 3, 3, 3, 1, 1)
        >>> Pool(mode="max", kernel=[2, 2], padding=[2, 0])
        Traceback (most recent call last):
        ...
        pyplugins.errors.FieldError: Field 'padding' of plugin 'Pool' must be smaller than
        'kernel' on each axis (got padding [2, 0], kernel [2, 2]): a window made only of
        padding has nothing to pool. Use padding <= kernel - 1.
    """

    name = "Pool"
    dtypes = (trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.INT8)
    same_as = 0
    inputs = 1

    mode = Field.enum("max", "avg", doc="'max' or 'avg' (average over in-bounds elements)")
    kernel = Field.ints(len=2, min=1, doc="window [kh, kw]")
    stride = Field.ints(default=[], min=1, validate=_empty_or_pair,
                        doc="[sh, sw]; [] means the window size")
    padding = Field.ints(default=[0, 0], len=2, min=0, doc="[ph, pw], each < the window")
    in_scale = Field.float(default=0.0, min=0.0, validate=finite,
                           doc="INT8 input scale, used when TensorRT gives none (0 = unset)")
    out_scale = Field.float(default=0.0, min=0.0, validate=finite,
                            doc="INT8 output scale, used when TensorRT gives none (0 = unset)")

    # The kernels of the variant table (pyplugins.ops.pool), by name; plan launches
    # the row the table chooses.
    pool2d = find(VARIANTS, "pool2d").kernel
    pool2d_wide = find(VARIANTS, "pool2d_wide").kernel
    pool2d_i8 = find(VARIANTS, "pool2d_i8").kernel
    pool2d_cols = find(VARIANTS, "pool2d_cols").kernel
    #: The AOT entries (:data:`AOT_KERNELS`; pool2d_b128's is pool2d's), for the kernel check.
    pool2d_aot, pool2d_wide_aot, pool2d_i8_aot, pool2d_cols_aot = (
        AOT_KERNELS[n] for n in ("pool2d", "pool2d_wide", "pool2d_i8", "pool2d_cols"))

    def setup(self) -> None:
        """Cross-field check (padding < kernel); the INT8 scales until configure_plugin."""
        kh, kw, _, _, ph, pw = self.window()
        if ph >= kh or pw >= kw:
            msg = (f"Field 'padding' of plugin 'Pool' must be smaller than 'kernel' on each axis "
                   f"(got padding {self.padding!r}, kernel {self.kernel!r}): a window made only "
                   f"of padding has nothing to pool. Use padding <= kernel - 1.")
            raise FieldError(msg)
        self.scales: Tuple[float, float] = (1.0, 1.0)

    def window(self) -> Tuple[int, int, int, int, int, int]:
        """``(kh, kw, sh, sw, ph, pw)`` with the default stride resolved to the window size."""
        kh, kw = self.kernel
        sh, sw = self.stride or self.kernel
        ph, pw = self.padding
        return kh, kw, sh, sw, ph, pw

    def reference(self, x: np.ndarray) -> Tuple[np.ndarray]:
        """Max or average pooling of ``x`` ``[..., H, W]`` in float64, as the kernel defines it.

        Padding is never read: max ignores it, average divides by the in-bounds count of each
        window (a window with none, only on a 0-size input, gives 0). INT8 uses the fields
        ``in_scale`` and ``out_scale`` (both must be > 0; set them to the tensors' scales):
        max keeps ``q`` when the scales are equal, otherwise the result is requantized as
        ``clip(rint(v * in_scale / out_scale), -128, 127)``, the scales taken as float32 like
        the kernel's arguments. The output is ``[..., Ho, Wo]`` in ``x``'s dtype (an output dim
        whose window does not fit is 0).

        Raises:
            ValueError: rank < 2, a dtype other than float32/float16/int8, or a missing scale.

        Example:
            >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
            >>> Pool(mode="max", kernel=[2, 2]).reference(x)[0][0, 0]
            array([[ 5.,  7.],
                   [13., 15.]], dtype=float32)
            >>> Pool(mode="avg", kernel=[3, 3], stride=[2, 2], padding=[1, 1]).reference(x)[0][0, 0]
            array([[ 2.5,  4. ],
                   [ 8.5, 10. ]], dtype=float32)
        """
        kh, kw, sh, sw, ph, pw = self.window()
        if x.ndim < 2:
            msg = f"plugin 'Pool' needs x [..., H, W] (got shape {x.shape})"
            raise ValueError(msg)
        quantized = x.dtype == np.int8
        if quantized and not (self.in_scale > 0 and self.out_scale > 0):
            msg = (f"plugin 'Pool': the INT8 reference needs fields in_scale > 0 and out_scale > 0 "
                   f"(got {self.in_scale!r}, {self.out_scale!r})")
            raise ValueError(msg)
        if not quantized and x.dtype not in (np.float32, np.float16):
            msg = f"plugin 'Pool' supports float32, float16 and int8 (got {x.dtype})"
            raise ValueError(msg)
        h, w = x.shape[-2:]
        ho, wo = max(output_size(h, kh, sh, ph), 0), max(output_size(w, kw, sw, pw), 0)
        lead = x.shape[:-2]
        values = np.pad(x.astype(np.float64), [(0, 0)] * len(lead) + [(ph, ph), (pw, pw)])
        inside = np.pad(np.ones((h, w), dtype=bool), [(ph, ph), (pw, pw)])
        best = np.full(lead + (ho, wo), -np.inf)
        total = np.zeros(lead + (ho, wo))
        count = np.zeros((ho, wo))
        for dy in range(kh):
            rows = slice(dy, dy + sh * (ho - 1) + 1, sh)
            for dx in range(kw):
                cols = slice(dx, dx + sw * (wo - 1) + 1, sw)
                v, m = values[..., rows, cols], inside[rows, cols]
                best = np.where(m, np.maximum(best, v), best)
                total += np.where(m, v, 0.0)
                count += m
        if self.mode == "max":
            result = np.where(count > 0, best, 0.0)
        else:
            result = total / np.maximum(count, 1)
        if quantized:
            ratio = float(np.float32(self.in_scale)) / float(np.float32(self.out_scale))
            if not (self.mode == "max" and ratio == 1.0):
                result = result * ratio
        return (round_to(result, x.dtype),)

    # -- shape inference ---------------------------------------------------------------------------

    def get_output_dimensions(self, output_index: int, inputs: Sequence[Any],
                              expr_builder: Any) -> List[shapes.Dim]:
        """``[N, C, Ho, Wo]``, with ``Ho``/``Wo`` symbolic when ``H``/``W`` are dynamic."""
        if len(inputs) != 1:
            msg = (f"plugin 'Pool' takes exactly 1 input, x [N, C, H, W] (got {len(inputs)} "
                   f"inputs); connect only the tensor to pool.")
            raise ShapeError(msg)
        x = shapes.dims(inputs[0], expr_builder)
        if len(x) != 4:
            msg = (f"plugin 'Pool': input 0 must be NCHW, rank 4 (got rank {len(x)}); reshape it "
                   f"to [N, C, H, W] first.")
            raise ShapeError(msg)
        kh, kw, sh, sw, ph, pw = self.window()
        out = x[:2]
        for axis, k, s, p in ((2, kh, sh, ph), (3, kw, sw, pw)):
            if x[axis].is_constant:
                self._check_output(axis, x[axis].value, k, s, p, "the network input shape")
            out.append((x[axis] + 2 * p - k) // s + 1)
        return out

    def _check_output(self, axis: int, size: int, k: int, s: int, p: int, where: str) -> int:
        n = output_size(size, k, s, p)
        if n <= 0:
            dim = "HW"[axis - 2]
            msg = (f"plugin 'Pool': input {dim} = {size} (in {where}) gives output {dim} = "
                   f"floor(({size} + 2*{p} - {k}) / {s}) + 1 = {n}; the window {k} with padding "
                   f"{p} must fit: need {dim} >= {k - 2 * p}. Use a larger input or a smaller "
                   f"kernel.")
            raise ShapeError(msg)
        return n

    # -- configuration -----------------------------------------------------------------------------

    def check_configure(self, inp: Sequence[Any], out: Sequence[Any]) -> None:
        """Resolve the INT8 scales and check the profile's min (every configure_plugin call)."""
        self.scales = self._resolve_scales(inp[0].desc, out[0].desc)
        kh, kw, sh, sw, ph, pw = self.window()
        profile_min = tuple(int(d) for d in inp[0].min)
        if len(profile_min) == 4 and shapes.is_concrete(profile_min):
            self._check_output(2, profile_min[2], kh, sh, ph, "the profile's min shape")
            self._check_output(3, profile_min[3], kw, sw, pw, "the profile's min shape")

    def check_shapes(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """Raise ShapeError when the window does not fit or H/W pass the kernel's int32."""
        kh, kw, sh, sw, ph, pw = self.window()
        _, _, h, w = (int(d) for d in inputs[0].dims)
        self._check_output(2, h, kh, sh, ph, "the input shape")
        self._check_output(3, w, kw, sw, pw, "the input shape")
        for what, value in (("H", h), ("W", w)):
            if value > _INT32_MAX:
                msg = (f"plugin 'Pool': input {what} = {value} exceeds the kernel's int32 "
                       f"limit {_INT32_MAX}; split the tensor.")
                raise ShapeError(msg)

    def plan(self, inputs: Sequence[Any], outputs: Sequence[Any], device: int, *,
             variant: Optional[str] = None) -> Launch:
        """``<kernel>(x, y, nc, h, w, ho, wo, kh, kw, sh, sw, ph, pw, mode, in_s, out_s)``: the
        launch of the row of :data:`~pyplugins.ops.pool.VARIANTS` that takes this
        input (the first that wins), or of the row named ``variant`` (tests and benchmarks).

        Raises:
            VariantError: ``variant`` names no row, or one whose kernel cannot run this input.
        """
        x = inputs[0]
        kh, kw, sh, sw, ph, pw = self.window()
        n, c, h, w = (int(d) for d in x.dims)
        ho, wo = output_size(h, kh, sh, ph), output_size(w, kw, sw, pw)
        in_scale, out_scale = self.scales
        facts = PoolFacts(self.window(), n * c, h, w, ho, wo, dtypes.itemsize_from_trt(x.type),
                          MODES[self.mode], in_scale, out_scale)
        row = choose(VARIANTS, facts, variant=variant, plugin=self.name)
        return launch(row, facts, dtypes.ctype_from_trt(x.type), device)

    def aot_launch(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> aot.AotLaunch:
        """:meth:`plan`'s launch as expressions of x's shape (QDP ``aot_impl``): the row plan
        takes at the profile's max shape (W alone can change it between shapes, by pool2d_cols's
        whole 16-byte chunks; every row computes every window), its grid as plan's, and its
        entry ``<kernel>_aot<T>(x, nc, h, w, ho, wo, kh, kw, sh, sw, ph, pw, mode, in_scale
        bits, out_scale bits, y)``. INT8 scales are the fields (QDP gives none).

        Raises:
            ShapeError: N * C passes 2**31 - 1 at the profile's max (the entry's int32 nc).
            FieldError: INT8 without ``in_scale``/``out_scale``.
        """
        x = inputs[0]
        window = self.window()
        kh, kw, sh, sw, ph, pw = window
        int8 = x.type == trt.DataType.INT8
        scales = (self._scale(-1.0, "in_scale", "input 0"),
                  self._scale(-1.0, "out_scale", "output 0")) if int8 else (1.0, 1.0)
        n, c, h, w = x.max
        aot.int32_bound(self.name, "N * C", n * c, "lower the profile's max N or C")
        facts = PoolFacts(window, n * c, h, w, output_size(h, kh, sh, ph),
                          output_size(w, kw, sw, pw), dtypes.itemsize_from_trt(x.type),
                          MODES[self.mode], *scales)
        row = choose(VARIANTS, facts, plugin=self.name)
        n, c, h, w = x.dims
        facts = facts._replace(nc=n * c, h=h, w=w, ho=output_size(h, kh, sh, ph),
                               wo=output_size(w, kw, sw, pw))
        ctype = dtypes.ctype_from_trt(x.type)
        return aot.AotLaunch(
            AOT_KERNELS[row.name], ctype, grid=aot.variant_grid(row, row.blocks(facts, row.block),
                                                               ctype), block=row.block,
            args=(facts.nc, h, w, facts.ho, facts.wo, *window, facts.mode,
                  *(aot.float32_bits(v) for v in scales)))

    def _resolve_scales(self, x: Any, y: Any) -> Tuple[float, float]:
        """(in_scale, out_scale): the descriptors' scales when set, else the fields (INT8)."""
        if x.type != trt.DataType.INT8:
            return 1.0, 1.0
        return (self._scale(x.scale, "in_scale", "input 0"),
                self._scale(y.scale, "out_scale", "output 0"))

    def _scale(self, desc_scale: float, field: str, tensor: str) -> float:
        if desc_scale > 0 and math.isfinite(desc_scale):
            return float(desc_scale)
        value = getattr(self, field)
        if value > 0:
            return value
        msg = (f"plugin 'Pool': {tensor} is INT8 but has no quantization scale: TensorRT gave "
               f"none (desc.scale = {desc_scale!r}) and field {field!r} is {value!r}. Set the "
               f"{field!r} attribute to the tensor's per-tensor scale (> 0), e.g. "
               f"{field}=0.05.")
        raise FieldError(msg)
