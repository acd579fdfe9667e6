"""``LeakyReLU``, registered as TensorRT's ``LReLU_TRT`` plugin: ``y = x if x >= 0 else a * x``.

TensorRT shipped a C++ plugin named ``LReLU_TRT`` (version ``"1"``, namespace ``""``) until
TensorRT 11 removed it. Models and scripts that ask the registry for it keep working once
``pyplugins.ops.leaky_relu`` (or ``pyplugins.ops``) is imported: this module registers a creator
under the same name, version and namespace. The kernel is ``kernels_cu/leaky_relu.cu``; its
NumPy twin is :meth:`LeakyReLU.reference`. :class:`LeakyReLUNumba` is the same op with a numba
kernel (namespace ``"numba"``; it also runs in numba's CUDA simulator without a GPU).

Field (the ONNX attribute of an ``LReLU_TRT`` node):

``neg_slope`` (FLOAT, default 0.01): the slope ``a`` for negative inputs, any finite float.
TensorRT's own creator called this field ``negSlope``; every model and script written for it
passes that name, so ``create_plugin`` also accepts ``negSlope`` (not both at once), and the
creator lists it in ``field_names`` so the ONNX parser hands it over. The price: the parser logs
"Attribute ... not found in plugin node!" for whichever of the two names a node does not carry.

Data types: FP32 or FP16, the output of the input's type, LINEAR; any shape (the kernel is
elementwise over the flat tensor). The product is computed in float and rounded once to the
output type. Tolerances (:data:`pyplugins.testing.TOLERANCES`): FP32 1e-5 relative + 1e-5
absolute, FP16 1e-3 + 1e-3.

How each TensorRT callback serves this op: ``docs/ops/leaky_relu.md``. Registered as
``tensorrt.plugin`` (``interface="qdp"``), it also has an ahead-of-time kernel
(``leaky_relu_aot``, :meth:`LeakyReLU.aot_launch`): ``docs/aot.md``.

Example (what a script written for TensorRT's built-in plugin does)::

    import numpy as np
    import pyplugins.ops.leaky_relu  # noqa: F401 - registers LReLU_TRT
    import pyplugins.trt as trt

    creator = trt.get_plugin_registry().get_creator("LReLU_TRT", "1", "")
    fc = trt.PluginFieldCollection([trt.PluginField(
        "neg_slope", np.array([0.2], np.float32), trt.PluginFieldType.FLOAT32)])
    plugin = creator.create_plugin("lrelu", fc)   # then network.add_plugin_v2([x], plugin)
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

import pyplugins.trt as trt
from pyplugins.runtime import aot, shapes
from pyplugins.runtime.creator import register
from pyplugins.runtime.device import usable_device
from pyplugins.dtypes import ctype_from_trt, itemsize_from_trt, numpy_from_trt
from pyplugins.errors import FieldError
from pyplugins.runtime.fields import Field
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import MAX_GRID, POINTER, Launch
from pyplugins.runtime.numba_launch import (ArraySlot, NumbaKernel, NumbaLaunch, numba_cuda,
                                            simulated)
from pyplugins.runtime.plugin import Plugin
from pyplugins.testing import round_to

__all__ = ["BLOCK", "NUMBA_BLOCK", "NUMBA_NAMESPACE", "NUMBA_PER_THREAD", "NVIDIA_FIELD_NAME", "LeakyReLU",
           "LeakyReLUNumba", "grid_size", "leaky_relu_kernel", "numba_grid"]

#: Threads per block (any multiple of 32 works; 256 is the kernel's recommendation).
BLOCK = 256
#: The name TensorRT's own ``LReLU_TRT`` creator gave the slope field.
NVIDIA_FIELD_NAME = "negSlope"


def _finite(value: float) -> bool:
    if not math.isfinite(value):
        msg = "the slope must be a finite number"
        raise ValueError(msg)
    return True


def grid_size(n: Any, itemsize: int, max_blocks: int = MAX_GRID[0]) -> Any:
    """Blocks for ``n`` elements, per ``leaky_relu.cu``'s recommendation (0 when ``n`` is 0).

    One 16-byte vector (``16 // itemsize`` elements) per thread of a ``BLOCK``-thread block, so
    the kernel's grid-stride loop runs once: the structure that copied at ``cudaMemcpy`` speed
    on an H200 (4.24 TB/s at 1 GiB), ahead of 2 to 8 vectors per thread (3 to 3.5% slower),
    512-thread blocks (1%) and a grid capped at a few waves of resident blocks (6%). With 512
    threads and write-back stores, the former launch, LeakyReLU ran at 0.97 to 0.98 of
    ``F.leaky_relu`` (``benchmarks/results/2026-11-24-nvidia-h200.md``). ``max_blocks`` caps
    the grid (CUDA's limit by default); the kernel loops over whatever a smaller grid leaves.
    ``n`` may be a symbolic :class:`~pyplugins.runtime.shapes.Dim` (the AOT launch).

    Example:
        >>> grid_size(0, 4), grid_size(1000, 4), grid_size(2**28, 4), grid_size(10**9, 2, 528)
        (0, 1, 262144, 528)
    """
    per_block = (16 // itemsize) * BLOCK
    return shapes.minimum(shapes.cdiv(n, per_block), max_blocks)


class _Renamed:
    """A ``PluginField`` seen under another name (``negSlope`` read as ``neg_slope``)."""

    def __init__(self, field: Any, name: str) -> None:
        self._field = field
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._field, attr)


@register
class LeakyReLU(Plugin):
    """Leaky ReLU as ``LReLU_TRT``; the callbacks are walked through in ``docs/ops/``.

    Example:
        >>> LeakyReLU().neg_slope, LeakyReLU(neg_slope=0.2).neg_slope
        (0.01, 0.2)
        >>> LeakyReLU.creator.name, [f.name for f in LeakyReLU.creator.field_names]
        ('LReLU_TRT', ['neg_slope', 'negSlope'])
    """

    name = "LReLU_TRT"
    inputs = 1
    dtypes = (trt.DataType.FLOAT, trt.DataType.HALF)
    same_as = 0

    neg_slope = Field.float(default=0.01, validate=_finite, doc="slope for negative inputs")
    kernel = Kernel("leaky_relu.cu", "leaky_relu<{T}>")
    aot_kernel = Kernel("leaky_relu.cu", "leaky_relu_aot<{T}>")

    @classmethod
    def from_fields(cls, fc: Any, layer_name: str = "") -> "LeakyReLU":
        """Accept TensorRT's field name ``negSlope`` as well as ``neg_slope``, then build.

        Raises:
            FieldError: both names are given, or a bad value (see :mod:`pyplugins.runtime.fields`).
        """
        items = [fc[i] for i in range(len(fc))]  # fc has no negative indexing (§10.7)
        names = [f.name for f in items]
        if NVIDIA_FIELD_NAME in names and "neg_slope" in names:
            msg = (f"plugin 'LReLU_TRT' (layer {layer_name!r}) got both 'neg_slope' and "
                   f"{NVIDIA_FIELD_NAME!r} (TensorRT's name for the same slope); give one.")
            raise FieldError(msg)
        items = [_Renamed(f, "neg_slope") if f.name == NVIDIA_FIELD_NAME else f for f in items]
        return super().from_fields(items, layer_name)

    @classmethod
    def advertised_fields(cls) -> List[Any]:
        """``neg_slope`` and TensorRT's name ``negSlope``, so the ONNX parser passes either."""
        return [*super().advertised_fields(),
                trt.PluginField(NVIDIA_FIELD_NAME, np.array([], dtype=np.float32),
                                trt.PluginFieldType.FLOAT32)]

    @classmethod
    def missing_field_note(cls, name: str, given: Sequence[str]) -> Optional[str]:
        """``negSlope`` and ``neg_slope`` name one slope: a node gives one of them (or neither:
        the default applies).

        Example:
            >>> LeakyReLU.missing_field_note("negSlope", ["neg_slope"])
            "negSlope is TensorRT's name for neg_slope, which the node gives"
        """
        if name == NVIDIA_FIELD_NAME:
            gives = ", which the node gives" if "neg_slope" in given else ""
            return f"{name} is TensorRT's name for neg_slope{gives}"
        if name == "neg_slope" and NVIDIA_FIELD_NAME in given:
            return f"the node gives the slope as {NVIDIA_FIELD_NAME}"
        return super().missing_field_note(name, given)

    def get_output_dimensions(self, output_index: int, inputs: Sequence[Any],
                              expr_builder: Any) -> Any:
        """The input's dims."""
        return inputs[0]

    def plan(self, inputs: Sequence[Any], outputs: Sequence[Any], device: int) -> Launch:
        """``leaky_relu<T>(x, y, n, neg_slope)`` over the flat tensor (the base class runs it)."""
        desc = inputs[0]
        n = shapes.volume(desc.dims)
        ctype = ctype_from_trt(desc.type)
        fn = self.kernel.function(ctype, device)
        grid = grid_size(n, itemsize_from_trt(desc.type))
        return Launch(fn, grid=grid, block=BLOCK, device=device, name=f"leaky_relu<{ctype}>",
                      args=(POINTER, POINTER, np.int64(n), np.float32(self.neg_slope)))

    def aot_launch(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> aot.AotLaunch:
        """:meth:`plan`'s launch as expressions of the shape, for TensorRT to run without
        Python: ``leaky_relu_aot<T>(x, n, slope bits, y)`` (int32 ``n``: under 2**31 elements).
        """
        x = inputs[0]
        n = aot.volume(x.dims)
        grid = aot.at_least_one(grid_size(n, itemsize_from_trt(x.type)))
        return aot.AotLaunch(self.aot_kernel, ctype_from_trt(x.type), grid=grid, block=BLOCK,
                             args=(n, aot.float32_bits(self.neg_slope)))

    def reference(self, x: np.ndarray) -> Tuple[np.ndarray]:
        """``x`` where ``x >= 0``, else ``neg_slope * x``, in float64 with the slope the kernel
        gets (float32), rounded to ``x``'s float dtype.

        Raises:
            TypeError: ``x`` is not a float array.

        Example:
            >>> LeakyReLU(neg_slope=0.5).reference(np.float32([-2.0, 0.0, 3.0]))
            (array([-1.,  0.,  3.], dtype=float32),)
        """
        if not np.issubdtype(x.dtype, np.floating):
            msg = f"plugin 'LReLU_TRT' needs a float input (got {x.dtype})"
            raise TypeError(msg)
        v = x.astype(np.float64)
        slope = float(np.float32(self.neg_slope))
        return (round_to(np.where(v >= 0, v, v * slope), x.dtype),)


#: The plugin namespace the numba variant is registered in.
NUMBA_NAMESPACE = "numba"
#: Threads per block of the numba kernel.
NUMBA_BLOCK = 256
#: Elements each thread of the numba kernel takes (:func:`leaky_relu_kernel`).
NUMBA_PER_THREAD = 4


def numba_grid(n: int) -> int:
    """Blocks of :data:`NUMBA_BLOCK` threads :func:`leaky_relu_kernel` needs for ``n`` elements.

    Raises:
        ValueError: ``n`` needs more blocks than CUDA allows (a grid of 2**31 - 1 blocks takes
            2**41 elements).

    Example:
        >>> numba_grid(0), numba_grid(1), numba_grid(1024), numba_grid(1025)
        (0, 1, 1, 2)
    """
    blocks = shapes.cdiv(n, NUMBA_PER_THREAD * NUMBA_BLOCK)
    if blocks > MAX_GRID[0]:
        msg = (f"plugin 'LReLU_TRT' (namespace 'numba'): {n} elements need {blocks} blocks of "
               f"{NUMBA_BLOCK} threads taking {NUMBA_PER_THREAD} each, over CUDA's "
               f"{MAX_GRID[0]}; split the tensor")
        raise ValueError(msg)
    return blocks


def leaky_relu_kernel(x: Any, y: Any, n: Any, neg_slope: Any) -> None:
    """``y[i] = x[i] if x[i] >= 0 else neg_slope * x[i]`` for ``i < n``.

    Launch contract: ``x``, ``y`` 1-D arrays of ``n`` elements of one float type; ``n`` int64;
    ``neg_slope`` float32; a 1-D block; a 1-D grid of at least :func:`numba_grid` blocks
    (``cdiv(n, 4 * blockDim.x)``). Thread ``t`` of block ``b`` takes the four elements
    ``4 * b * blockDim.x + t + k * blockDim.x``, ``k < 4``: each of the four accesses of a warp
    is coalesced, and a thread issues its four loads before its stores, which is what brings a
    numba kernel to the CUDA C++ kernel's bandwidth (docs/numba.md). ``cuda`` is bound to
    ``numba.cuda`` by :class:`~pyplugins.runtime.numba_launch.NumbaKernel` when it compiles (no
    numba import here).
    """
    d = cuda.blockDim.x  # noqa: F821 - numba.cuda, bound by NumbaKernel (see above)
    i = cuda.blockIdx.x * (d * 4) + cuda.threadIdx.x  # noqa: F821
    if i + 3 * d < n:
        a, b, c, e = x[i], x[i + d], x[i + 2 * d], x[i + 3 * d]
        y[i] = a if a >= 0 else a * neg_slope
        y[i + d] = b if b >= 0 else b * neg_slope
        y[i + 2 * d] = c if c >= 0 else c * neg_slope
        y[i + 3 * d] = e if e >= 0 else e * neg_slope
    else:  # the last block's tail
        for k in range(4):
            j = i + k * d
            if j < n:
                v = x[j]
                y[j] = v if v >= 0 else v * neg_slope


@register
class LeakyReLUNumba(LeakyReLU):
    """``LReLU_TRT`` in namespace ``"numba"``: the same plugin, launching
    :func:`leaky_relu_kernel` (compiled by numba-cuda per device and type) instead of
    ``kernels_cu/leaky_relu.cu``. Without a GPU the kernel runs in numba's CUDA simulator, so
    ``pyplugins check`` and ``pp.run(..., check=True)`` execute ``enqueue`` on a CPU machine
    (docs/numba.md).
    FP32 and FP16.

    Example:
        >>> LeakyReLUNumba.creator.name, LeakyReLUNumba.creator.plugin_namespace
        ('LReLU_TRT', 'numba')
        >>> LeakyReLUNumba(neg_slope=0.5).neg_slope
        0.5
    """

    namespace = NUMBA_NAMESPACE
    numba_kernel = NumbaKernel(leaky_relu_kernel, name="leaky_relu_numba")

    def launch_device(self) -> Optional[int]:
        """A usable GPU's device, or 0 in numba's CUDA simulator; None when neither runs here
        (numba was imported before ``NUMBA_ENABLE_CUDASIM=1`` could be set: docs/numba.md)."""
        device = usable_device()
        if device is None and numba_cuda() is not None and simulated():
            return 0
        return device

    def plan(self, inputs: Sequence[Any], outputs: Sequence[Any], device: int) -> NumbaLaunch:
        """The numba kernel compiled for the type, and its launch over the flat tensor."""
        n = shapes.volume(inputs[0].dims)
        dt = numpy_from_trt(inputs[0].type)
        grid = numba_grid(n)
        if not simulated():
            device = int(numba_cuda().get_current_device().id)
        return NumbaLaunch(
            self.numba_kernel, grid=grid, block=NUMBA_BLOCK, device=device,
            args=(ArraySlot((max(n, 1),), dt), ArraySlot((max(n, 1),), dt), np.int64(n),
                  np.float32(self.neg_slope)))
