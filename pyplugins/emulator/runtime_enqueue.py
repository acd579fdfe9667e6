"""The runtime ``enqueue`` of a lifecycle run: its inputs, the GPU call, and the checks on both.

The execution context's plugin (Pc) gets one ``enqueue`` at the profile's opt shapes, on device
buffers from :class:`~pyplugins.emulator.buffers.DeviceRun`: outputs poisoned and guarded, so the
checks see elements left unwritten and writes past the end (a second run on another poison
pattern tells an unwritten element from one that legitimately holds the first). With
``check_capture`` the same ``enqueue`` is then captured into a CUDA graph and replayed, as an
application capturing ``execute_async_v3`` would (§9).

Example:
    >>> from pyplugins.emulator.specs import TensorSpec, host_dtype, random_data
    >>> combo = [(DataType.INT32, TensorFormat.LINEAR)] * 2
    >>> arrays, why = input_arrays([TensorSpec.parse("2x3:int32")], combo, [DataType.INT32])
    >>> arrays[0].dtype, arrays[0].shape, why
    (dtype('int32'), (2, 3), None)
    >>> input_arrays([TensorSpec.parse("2x3:int32")], combo, [DataType.INT4])[1]
    'output 0 is INT4, which NumPy cannot hold'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins.emulator import buffers, checks, trampoline
from pyplugins.emulator.checks import Recorder, Violation, output_violations
from pyplugins.emulator.enums import DataType, TensorFormat
from pyplugins.emulator.specs import TensorSpec, host_dtype, random_data

__all__ = ["EnqueueOutcome", "capture_violation", "enqueue_and_check", "input_arrays"]


def _np_dtype(t: DataType) -> Optional[np.dtype]:
    return host_dtype(t)  # BF16/FP8/E8M0 as their bit patterns; None for INT4/FP4


def input_arrays(specs: Sequence[TensorSpec], combo: Sequence[Tuple[DataType, TensorFormat]],
                 out_types: Sequence[DataType]) -> Tuple[Optional[List[Any]], Optional[str]]:
    """The data ``enqueue`` gets: each spec's ``data``, else seeded random values.

    Args:
        specs: the inputs' specs (shape ``opt``).
        combo: the chosen (type, format) per tensor, inputs then outputs.
        out_types: the outputs' types.

    Returns:
        The input arrays, of the chosen types, and None; or None and why ``enqueue`` cannot run
        (a type NumPy cannot hold, a format other than LINEAR).
    """
    arrays = []
    for k, spec in enumerate(specs):
        dt = _np_dtype(combo[k][0])
        if dt is None:
            return None, (f"input {k} is {combo[k][0].name}, which NumPy and CuPy cannot hold, "
                          f"so enqueue was not run")
        if spec.data is None:
            arrays.append(random_data(combo[k][0], spec.opt, seed=1234 + k))
        else:
            arrays.append(spec.data.astype(dt, copy=False))
    for k, cand in enumerate(combo):
        if cand[1] is not TensorFormat.LINEAR:
            return None, (f"in_out[{k}] uses format {cand[1].name}; the emulator runs enqueue on "
                          f"LINEAR tensors only")
    for j, t in enumerate(out_types):
        if _np_dtype(t) is None:
            return None, f"output {j} is {t.name}, which NumPy cannot hold"
    return arrays, None


@dataclass
class EnqueueOutcome:
    """What :func:`enqueue_and_check` saw.

    Attributes:
        ran: ``enqueue`` ran on the device and returned 0.
        violations: ``device_error``, ``output_mismatch`` and ``capture_unsafe`` findings.
        host_outputs: the outputs as NumPy arrays, when it ran.
        outputs: the outputs to report (CuPy arrays with ``keep_on_device``), when it ran.
    """

    ran: bool = False
    violations: List[Violation] = field(default_factory=list)
    host_outputs: Optional[List[np.ndarray]] = None
    outputs: Optional[list] = None


def enqueue_and_check(plugin: Any, in_desc: list, out_desc: list, arrays: List[Any],
                      out_shapes: Sequence[Tuple[int, ...]], out_types: Sequence[DataType],
                      workspace: int, recorder: Recorder, *, check_capture: bool,
                      keep_on_device: bool) -> EnqueueOutcome:
    """Run ``plugin.enqueue`` through the trampoline on poisoned, guarded device buffers.

    Args:
        plugin: the execution context's plugin, configured at opt.
        in_desc, out_desc: the ``PluginTensorDesc`` lists at opt.
        arrays: the input data (:func:`input_arrays`).
        out_shapes, out_types: the outputs' shapes at opt and their types.
        workspace: bytes of workspace ``get_workspace_size`` asked for.
        recorder: the run's recorder; its ``step`` names what the trampoline is in.
        check_capture: also capture ``enqueue`` into a CUDA graph and replay it.
        keep_on_device: report the outputs as CuPy arrays.

    Returns:
        An :class:`EnqueueOutcome`. A non-zero status is not a violation here: the trampoline's
        ``[ERROR]`` line becomes a ``callback_error``.
    """
    outcome = EnqueueOutcome()
    metas = [(shape, _np_dtype(t)) for shape, t in zip(out_shapes, out_types)]

    def call(i: List[int], o: List[int], w: int, s: int) -> int:
        return trampoline.enqueue(plugin, in_desc, out_desc, i, o, w, s)

    try:
        run = buffers.DeviceRun(arrays, metas, workspace)
        recorder.step = "enqueue"
        status = run.call(call)
        raw = run.read_raw()
    except Exception as err:
        recorder.step = "runtime"
        outcome.violations.append(Violation(
            "device_error", f"the work enqueue launched failed on the device: "
            f"{buffers.cuda_error_text(err)} (the CUDA context may be unusable now)",
            "enqueue"))
        return outcome
    recorder.step = "runtime"
    if status != 0:
        return outcome  # the [ERROR] line is reported as a callback_error
    outcome.ran = True
    raw_alt: List[Any] = [None] * len(raw)
    if any(checks.poisoned_elements(buf, shape, dt).size
           for (shape, dt), buf in zip(metas, raw)):
        # Some outputs hold the poison: unwritten, or a legitimate value equal to it (int8
        # -91). Run again on the second pattern; only elements holding both are unwritten.
        if run.call(call, alt=True) == 0:
            raw_alt = run.read_raw()
    for i, ((shape, dt), buf, alt) in enumerate(zip(metas, raw, raw_alt)):
        outcome.violations.extend(output_violations(i, buf, shape, dt, raw_alt=alt))
    outcome.host_outputs = run.outputs()
    outcome.outputs = run.outputs(on_device=True) if keep_on_device else outcome.host_outputs
    if check_capture:
        found = capture_violation(run, call, raw, recorder)
        if found is not None:
            outcome.violations.append(found)
    return outcome


def capture_violation(run: buffers.DeviceRun, call: buffers.EnqueueFn, eager: List[np.ndarray],
                      recorder: Recorder) -> Optional[Violation]:
    """Capture ``call`` on ``run``'s stream, replay the graph, compare with the eager outputs.

    Args:
        run: the buffers the eager ``enqueue`` used.
        call: that ``enqueue``, through the trampoline.
        eager: the raw output buffers (guards included) after the eager run.
        recorder: the run's recorder (errors raised during the capture are read from it).

    Returns:
        A ``capture_unsafe`` violation listing every problem, or None.
    """
    recorder.step = "capture"
    try:
        outcome = run.capture(call)
    except Exception as err:
        outcome = buffers.CaptureOutcome(status=-1, errors=[buffers.cuda_error_text(err)])
    recorder.step = "runtime"
    problems = []
    if outcome.allocations:
        problems.append(f"enqueue allocated device memory while the stream was captured "
                        f"({len(outcome.allocations)} allocation(s), "
                        f"{sum(outcome.allocations)} bytes through CuPy): the graph would "
                        f"replay into memory it does not own")
    raised = [e[1] for e in recorder.errors if e[2] == "capture"]
    if outcome.status != 0 or raised:
        problems.append("enqueue raised while the stream was captured: "
                        + (" | ".join(raised) or "(no message)"))
    problems.extend(outcome.errors)
    if not problems and outcome.replay is not None:
        differ = [i for i, (a, b) in enumerate(zip(eager, outcome.replay))
                  if not np.array_equal(a, b)]
        if differ:
            problems.append(f"replaying the captured graph left output(s) {differ} different "
                            f"from the eager run: work enqueue launched outside the given "
                            f"stream (the legacy default stream, another stream) is not in "
                            f"the graph")
    if problems:
        msg = ("enqueue is not CUDA-graph capture safe: " + "; ".join(problems) + ". Launch "
               "only on the stream TensorRT passes (cp.cuda.ExternalStream(stream)); allocate "
               "in configure_plugin/initialize; never synchronize or copy to the host in "
               "enqueue (§9).")
        return Violation("capture_unsafe", msg, "enqueue")
    return None
