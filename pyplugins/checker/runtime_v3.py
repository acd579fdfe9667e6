"""The GPU side of a V3 run: tactics timed with CUDA events, and the runtime ``enqueue`` with
aliased outputs and size tensors.

The builder times each (format combination, tactic) candidate by running ``enqueue`` on scratch
buffers and measuring the stream with CUDA events (:func:`time_enqueue`); the fastest is kept,
as TensorRT keeps it. The execution context's ``enqueue`` (:func:`runtime_enqueue`) runs on
poisoned, guarded buffers like V2's, and adds what V3 allows: an output aliased to an input
(``get_aliased_input`` under ``PreviewFeature.ALIASED_PLUGIN_IO_10_03``) gets the input's pointer
and is read back from it; a data-dependent output is allocated at its upper bound and checked up
to the extent the size tensor ``enqueue`` wrote says.

Example:
    >>> alias_pointers([10, 20], [30, 40], {1: 0})  # output 1 aliases input 0
    [10, 30]
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from pyplugins.checker import buffers
from pyplugins.checker.checks import Violation
from pyplugins.checker.checks.outputs import output_violations, poisoned_elements
from pyplugins.checker.checks.recorder import Recorder
from pyplugins.checker.runtime_enqueue import EnqueueOutcome, capture_violation
from pyplugins.checker.size_tensors import value_violations

__all__ = ["alias_pointers", "runtime_enqueue", "time_enqueue"]

#: Timed enqueues per candidate after one untimed warm-up (which compiles and caches kernels).
TIMING_REPS = 5

#: ``enqueue(inputs, outputs, workspace, stream) -> status`` through the trampoline.
EnqueueFn = Callable[[List[int], List[int], int, int], int]


def alias_pointers(outputs: Sequence[int], inputs: Sequence[int],
                   aliases: Mapping[int, int]) -> List[int]:
    """The output pointers ``enqueue`` gets: an aliased output's is its input's (§7)."""
    return [inputs[aliases[j]] if j in aliases else int(p) for j, p in enumerate(outputs)]


def time_enqueue(in_bytes: Sequence[int], out_bytes: Sequence[int], workspace: int,
                 aliases: Mapping[int, int], enqueue: EnqueueFn) -> Tuple[int, float]:
    """Time one candidate as the builder does: a warm-up ``enqueue``, then :data:`TIMING_REPS`
    between two CUDA events on the stream, on zeroed scratch buffers.

    Returns:
        ``(status, milliseconds per enqueue)``; ``inf`` when an ``enqueue`` failed.
    """
    cp, stream, ins, outs, ws = buffers.scratch_buffers(in_bytes, out_bytes, workspace)
    in_ptrs = [int(a.data.ptr) for a in ins]
    out_ptrs = alias_pointers([int(a.data.ptr) for a in outs], in_ptrs, aliases)
    ws_ptr = 0 if ws is None else int(ws.data.ptr)
    status = enqueue(in_ptrs, out_ptrs, ws_ptr, int(stream.ptr))
    stream.synchronize()
    if status != 0:
        return status, math.inf
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    for _ in range(TIMING_REPS):
        status = enqueue(in_ptrs, out_ptrs, ws_ptr, int(stream.ptr))
        if status != 0:
            stream.synchronize()
            return status, math.inf
    end.record(stream)
    end.synchronize()
    buffers.settle(cp, stream)
    return 0, cp.cuda.get_elapsed_time(start, end) / TIMING_REPS


def _body(raw: np.ndarray, shape: Sequence[int], dt: np.dtype) -> np.ndarray:
    n = math.prod(shape)
    return raw[:n * dt.itemsize].view(dt).reshape(tuple(shape)).copy()


def runtime_enqueue(enqueue: Callable[..., int], arrays: List[Any],
                    out_shapes: Sequence[Tuple[int, ...]], out_dtypes: Sequence[np.dtype],
                    workspace: int, recorder: Recorder, *, aliases: Mapping[int, int],
                    size_outputs: Mapping[int, int],
                    real_shape: Callable[[int, Dict[int, int]], Tuple[int, ...]],
                    check_capture: bool) -> EnqueueOutcome:
    """Run the execution context's ``enqueue`` once on poisoned, guarded device buffers.

    Args:
        enqueue: ``enqueue(inputs, outputs, workspace, stream)`` through the V3 trampoline.
        arrays: the input data.
        out_shapes: the outputs' allocated shapes (data-dependent ones at their upper bound).
        out_dtypes: the outputs' NumPy dtypes.
        workspace: bytes of workspace.
        recorder: the run's recorder (its ``step`` is set while enqueue runs).
        aliases: output index -> the input index it aliases.
        size_outputs: size-tensor output index -> its upper bound at these input shapes.
        real_shape: ``real_shape(j, sizes)``: output ``j``'s shape given the size tensors' values.
        check_capture: also capture and replay (not with aliased outputs: a replay would apply
            the in-place update twice).

    Returns:
        An :class:`~pyplugins.checker.runtime_enqueue.EnqueueOutcome`; ``host_outputs`` are cut
        to their real extents.
    """
    outcome = EnqueueOutcome()
    metas = [(tuple(shape), np.dtype(dt)) for shape, dt in zip(out_shapes, out_dtypes)]

    def call(i: List[int], o: List[int], w: int, s: int) -> int:
        return enqueue(i, alias_pointers(o, i, aliases), w, s)

    try:
        run = buffers.DeviceRun(arrays, metas, workspace)
        recorder.step = "enqueue"
        status = run.call(call)
        raw = run.read_raw()
        aliased = {j: run.cp.asnumpy(run.inputs[k], stream=run.stream).view(np.uint8).reshape(-1)
                   for j, k in aliases.items()}
    except Exception as err:  # noqa: BLE001 - CUDA fails in CuPy's many types
        recorder.step = "runtime"
        outcome.violations.append(Violation(
            "device_error", f"the work enqueue launched failed on the device: "
            f"{buffers.cuda_error_text(err)} (the CUDA context may be unusable now)", "enqueue"))
        return outcome
    recorder.step = "runtime"
    if status != 0:
        return outcome
    outcome.ran = True
    sizes = {k: int(_body(raw[k], (), metas[k][1])) for k in size_outputs}
    outcome.violations += value_violations(sizes, size_outputs)
    bad_size = any(not 0 <= sizes[k] <= size_outputs[k] for k in sizes)
    shapes = [tuple(s) if bad_size else real_shape(j, sizes) for j, s in enumerate(out_shapes)]
    checked = [j for j in range(len(metas)) if j not in aliases]
    raw_alt: Dict[int, Any] = {}
    if any(poisoned_elements(raw[j], shapes[j], metas[j][1]).size for j in checked) \
            and not aliases and run.call(call, alt=True) == 0:
        raw_alt = dict(enumerate(run.read_raw()))
    outputs = []
    for j, ((upper, dt), buf) in enumerate(zip(metas, raw)):
        if j in aliases:
            outputs.append(_body(aliased[j], shapes[j], dt))
            continue
        real_bytes, upper_bytes = math.prod(shapes[j]) * dt.itemsize, math.prod(upper) * dt.itemsize
        view = np.concatenate([buf[:real_bytes], buf[upper_bytes:]])  # [real extent | guard]
        alt = raw_alt.get(j)
        alt_view = None if alt is None else np.concatenate([alt[:real_bytes], alt[upper_bytes:]])
        outcome.violations += output_violations(j, view, shapes[j], dt, raw_alt=alt_view)
        outputs.append(_body(buf, shapes[j], dt))
    outcome.host_outputs = outcome.outputs = outputs
    if check_capture and not aliases:
        found = capture_violation(run, call, raw, recorder)
        if found is not None:
            outcome.violations.append(found)
    return outcome
