"""The runtime ``enqueue`` without a GPU: numba kernels run in numba's CUDA simulator on host buffers.

When no GPU is usable and ``numba.cuda`` is the simulator (see :mod:`pyplugins.runtime.numba_launch`),
the lifecycle driver still runs the execution context's ``enqueue`` for a plugin whose kernels are
numba kernels. TensorRT's integer pointers are then the addresses of host NumPy buffers, laid out
as on the GPU: each output is followed by :data:`~pyplugins.checker.checks.outputs.GUARD_BYTES` of poison
and starts poisoned, so the same output checks apply (unwritten elements, writes past the end; a
second run on the other poison pattern tells an unwritten element from one that holds it). The
outputs are then compared with the plugin's ``reference(*inputs)`` when it has one. CUDA-graph
capture is not checked here (the simulator has no streams or graphs).

Example:
    >>> import ctypes
    >>> import numpy as np
    >>> run = HostRun([np.arange(3, dtype=np.float32)], [((3,), np.float32)], 0)
    >>> def copy(i, o, w, s):
    ...     n = 3 * 4
    ...     np.frombuffer((ctypes.c_char * n).from_address(o[0]), np.uint8)[:] = (
    ...         np.frombuffer((ctypes.c_char * n).from_address(i[0]), np.uint8))
    ...     return 0
    >>> run.call(copy), run.outputs()[0].tolist()
    (0, [0.0, 1.0, 2.0])
"""

from __future__ import annotations

import threading

import math
import sys
from typing import Any, List, Sequence, Tuple

import numpy as np

from pyplugins import dtypes
from pyplugins.emulator import trampoline
from pyplugins.checker.buffers import EnqueueFn
from pyplugins.checker.checks.outputs import (GUARD_BYTES, poison_pattern, reference_violation,
                                               written_outputs)
from pyplugins.checker.checks.recorder import Recorder
from pyplugins.emulator.enums import DataType
from pyplugins.checker.runtime_enqueue import EnqueueOutcome
from pyplugins.runtime.numba_launch import NumbaLaunch, simulated

__all__ = ["HostRun", "SIMULATED", "simulated_enqueue_and_check", "simulator_applies"]

#: What the report says about where ``enqueue`` ran.
SIMULATED = ("enqueue ran in numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1) on host buffers, "
             "not on a GPU")


#: numba's CUDA simulator is not thread-safe (26 of 30 concurrent numba checks failed): one
#: simulated enqueue at a time in this process.
_SIMULATOR = threading.Lock()


def simulator_applies(plugin: Any) -> bool:
    """Whether ``plugin``'s ``enqueue`` can run here in numba's CUDA simulator.

    True when ``numba.cuda`` is imported as the simulator and the plugin launches numba
    kernels: an attribute holding a :class:`~pyplugins.runtime.numba_launch.NumbaLaunch`, or a numba
    kernel (``@cuda.jit``) in the global namespace of the module defining its class.
    """
    if not simulated():
        return False
    if any(isinstance(v, NumbaLaunch) for v in vars(plugin).values()):
        return True
    module = sys.modules.get(type(plugin).__module__)
    return any(type(v).__module__.startswith("numba.cuda.simulator")
               for v in vars(module).values()) if module is not None else False


class HostRun:
    """Inputs, poisoned and guarded outputs and a workspace in host memory, for one plugin object.

    Args:
        inputs: the input arrays, of the types TensorRT chose.
        outputs: ``(shape, numpy dtype)`` per output.
        workspace: bytes of workspace (0: ``enqueue`` gets a null pointer).
    """

    def __init__(self, inputs: Sequence[Any], outputs: Sequence[Tuple[Sequence[int], Any]],
                 workspace: int) -> None:
        self.meta = [(tuple(int(v) for v in s), np.dtype(d)) for s, d in outputs]
        self.inputs = [np.ascontiguousarray(np.array(a)) for a in inputs]  # our own copies
        self.raw = [np.empty(math.prod(s) * d.itemsize + GUARD_BYTES, np.uint8)
                    for s, d in self.meta]
        self.workspace = np.zeros(workspace, np.uint8) if workspace > 0 else None
        self.in_ptrs = [int(a.ctypes.data) for a in self.inputs]
        self.out_ptrs = [int(r.ctypes.data) for r in self.raw]
        self.ws_ptr = 0 if self.workspace is None else int(self.workspace.ctypes.data)

    def poison(self, alt: bool = False) -> None:
        """Fill every output buffer, guard included, with poison (``alt``: the second pattern)."""
        for raw, (_, dt) in zip(self.raw, self.meta):
            count = raw.size // max(dt.itemsize, 1)
            raw[:] = np.frombuffer(poison_pattern(dt, count, alt), np.uint8)

    def call(self, enqueue: EnqueueFn, alt: bool = False) -> int:
        """Run ``enqueue`` on poisoned outputs (stream handle 0: the simulator has no streams)."""
        self.poison(alt)
        return enqueue(self.in_ptrs, self.out_ptrs, self.ws_ptr, 0)

    def read_raw(self) -> List[np.ndarray]:
        """Copies of every output buffer, guard included."""
        return [r.copy() for r in self.raw]

    def outputs(self) -> List[np.ndarray]:
        """Copies of the declared part of each output."""
        return [raw[:math.prod(shape) * dt.itemsize].view(dt).reshape(shape).copy()
                for raw, (shape, dt) in zip(self.raw, self.meta)]


def simulated_enqueue_and_check(plugin: Any, in_desc: list, out_desc: list, arrays: List[Any],
                                out_shapes: Sequence[Tuple[int, ...]],
                                out_types: Sequence[DataType], workspace: int,
                                recorder: Recorder) -> Tuple[EnqueueOutcome, List[str]]:
    """Run ``plugin.enqueue`` through the trampoline on host buffers, in numba's simulator.

    Args and return value as :func:`pyplugins.checker.runtime_enqueue.enqueue_and_check`
    (without capture), plus notes for the report: where ``enqueue`` ran, and whether the outputs
    matched the plugin's reference. An exception inside the kernel (the simulator's ``IndexError`` for an
    index past a tensor) reaches the trampoline, which prints it and returns -1: it is reported
    as a ``callback_error``. A mismatch with the plugin's ``reference`` is a
    ``reference_mismatch``.
    """
    outcome = EnqueueOutcome()
    notes = [SIMULATED]
    metas = [(shape, dtypes.numpy_from_trt(t)) for shape, t in zip(out_shapes, out_types)]

    def call(i: List[int], o: List[int], w: int, s: int) -> int:
        return trampoline.enqueue(plugin, in_desc, out_desc, i, o, w, s)

    def step(name: str) -> None:
        recorder.step = name

    run = HostRun(arrays, metas, workspace)
    with _SIMULATOR:  # numba's CUDA simulator keeps per-launch state in module globals
        raw, found = written_outputs(run, call, metas, step)
    if raw is None:
        return outcome, notes
    outcome.ran = True
    outcome.violations.extend(found)
    outcome.host_outputs = outcome.outputs = run.outputs()
    mismatch = reference_violation(plugin, arrays, outcome.host_outputs, SIMULATED)
    if mismatch is not None:
        outcome.violations.append(mismatch)
    elif callable(getattr(plugin, "reference", None)):
        notes.append("the outputs matched the plugin's reference() within the tolerances of "
                     "pyplugins.testing.TOLERANCES")
    return outcome, notes
