"""``LeakyReLU`` with a numba kernel instead of ``kernels_cu/leaky_relu.cu``: the same plugin otherwise.

:class:`LeakyReLUNumba` subclasses :class:`pyplugins.ops.leaky_relu.LeakyReLU` and changes only
what ``configure_plugin`` packs: a :class:`~pyplugins.numba_launch.NumbaLaunch` of
:func:`leaky_relu_kernel` (Python, compiled by numba-cuda per device and type) instead of a
``Launch`` of the CUDA C++ kernel. Fields, shapes, formats, serialization and ``enqueue``
(``self.launch(stream, inputs[0], outputs[0])``) and the NumPy ``reference`` are inherited. It is registered as
``LReLU_TRT`` version ``"1"`` in namespace ``"numba"`` (:data:`NAMESPACE`), so both kernels can be
registered at once; a model picks one with the node's ``plugin_namespace``.

Without a GPU the kernel runs in numba's CUDA simulator, so ``pyplugins check`` and ``pp.run``
execute ``enqueue`` on a CPU machine (see ``docs/numba.md``)::

    pyplugins check pyplugins.ops.leaky_relu_numba --plugin LReLU_TRT:1:numba \
        --input 2x3x8:float32 --attr neg_slope=0.2

Data types: FP32 and FP16 (the CUDA C++ kernel also has BF16, which NumPy cannot hold). The
kernel computes in the element type's own precision on FP32 and in float32 on FP16, as the CUDA
C++ kernel does; one thread per element, no vectorized loads: it runs near memory bandwidth but
behind the CUDA C++ kernel (benchmarks/numba_cases.py measures both).

Example:
    >>> LeakyReLUNumba.creator.name, LeakyReLUNumba.creator.plugin_namespace
    ('LReLU_TRT', 'numba')
    >>> LeakyReLUNumba(neg_slope=0.5).neg_slope
    0.5
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from pyplugins import shapes
from pyplugins.creator import register
from pyplugins.dtypes import numpy_from_trt
from pyplugins.device import usable_device
from pyplugins.launch import MAX_GRID
from pyplugins.numba_launch import ArraySlot, NumbaKernel, NumbaLaunch, numba_cuda, simulated
from pyplugins.ops.leaky_relu import LeakyReLU

__all__ = ["BLOCK", "NAMESPACE", "LeakyReLUNumba", "leaky_relu_kernel"]

#: The plugin namespace this variant is registered in.
NAMESPACE = "numba"
#: Threads per block.
BLOCK = 256


def leaky_relu_kernel(x: Any, y: Any, n: Any, neg_slope: Any) -> None:
    """``y[i] = x[i] if x[i] >= 0 else neg_slope * x[i]`` for ``i < n``, grid-stride.

    Launch contract: ``x``, ``y`` 1-D arrays of ``n`` elements of one float type; ``n`` int64;
    ``neg_slope`` float32; any 1-D grid and block. ``cuda`` is bound to ``numba.cuda`` by
    :class:`~pyplugins.numba_launch.NumbaKernel` when it compiles (no numba import here).
    """
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for i in range(start, n, step):
        v = x[i]
        y[i] = v if v >= 0 else v * neg_slope


@register
class LeakyReLUNumba(LeakyReLU):
    """``LReLU_TRT`` (namespace ``"numba"``) launching :func:`leaky_relu_kernel` through numba."""

    namespace = NAMESPACE
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
        grid = min(shapes.cdiv(n, BLOCK), MAX_GRID[0])
        if not simulated():
            device = int(numba_cuda().get_current_device().id)
        return NumbaLaunch(
            self.numba_kernel, grid=grid, block=BLOCK, device=device,
            args=(ArraySlot((max(n, 1),), dt), ArraySlot((max(n, 1),), dt), np.int64(n),
                  np.float32(self.neg_slope)))
