"""The runtime ``enqueue`` of a lifecycle run: its inputs, the GPU call, and the checks on both.

The execution context's plugin (Pc) gets one ``enqueue`` at the profile's opt shapes, on device
buffers from :class:`~pyplugins.checker.buffers.DeviceRun`: outputs poisoned and guarded, so the
checks see elements left unwritten and writes past the end (a second run on another poison
pattern tells an unwritten element from one that legitimately holds the first). With
``check_capture`` the same ``enqueue`` is then captured into a CUDA graph and replayed, as an
application capturing ``execute_async_v3`` would (§9). :func:`format_runs` then runs ``enqueue``
once on each other accepted format combination (the builder picks one by timing, §12), with the
inputs laid out in its formats, and compares the outputs with the LINEAR run's.

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

from pyplugins.checker import buffers
from pyplugins.emulator import trampoline
from pyplugins.checker.checks import Violation
from pyplugins.checker.checks.capture import capture_violation
from pyplugins.checker.checks.formats import combo_label, format_mismatch, runs_note
from pyplugins.checker.checks.outputs import written_outputs
from pyplugins.checker.checks.recorder import Recorder
from pyplugins.emulator.enums import DataType, TensorFormat
from pyplugins.emulator.layouts import from_format, runnable, to_format
from pyplugins.emulator.specs import TensorSpec, host_dtype, random_data

__all__ = ["EnqueueOutcome", "enqueue_and_check", "format_runs", "input_arrays"]


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
        if cand[1] != TensorFormat.LINEAR:  # by value: TensorRT hands over fresh enum objects
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

    def step(name: str) -> None:
        recorder.step = name

    try:
        run = buffers.DeviceRun(arrays, metas, workspace)
        raw, found = written_outputs(run, call, metas, step)
    except Exception as err:  # noqa: BLE001 - CUDA fails in CuPy's many types
        recorder.step = "runtime"
        outcome.violations.append(Violation(
            "device_error", f"the work enqueue launched failed on the device: "
            f"{buffers.cuda_error_text(err)} (the CUDA context may be unusable now)",
            "enqueue"))
        return outcome
    if raw is None:
        return outcome  # the [ERROR] line is reported as a callback_error
    outcome.ran = True
    outcome.violations.extend(found)
    outcome.host_outputs = run.outputs()
    outcome.outputs = run.outputs(on_device=True) if keep_on_device else outcome.host_outputs
    if check_capture:
        unsafe = capture_violation(run, call, raw, recorder)
        if unsafe is not None:
            outcome.violations.append(unsafe)
    return outcome


def _host(array: Any) -> np.ndarray:
    return array.get() if hasattr(array, "get") and not isinstance(array, np.ndarray) \
        else np.asarray(array)


def format_runs(plugin: Any, tensors: Any, combos: Sequence[Sequence[Tuple[DataType,
                TensorFormat]]], arrays: Sequence[Any], baseline: Sequence[np.ndarray],
                baseline_combo: Sequence[Tuple[DataType, TensorFormat]],
                recorder: Recorder, gpu: bool) -> Tuple[List[Violation], List[str]]:
    """Run ``enqueue`` once per accepted combination other than the baseline's, and compare.

    Each run configures ``plugin`` for the combination (execution phase, opt), lays each input
    out in its format (:func:`pyplugins.emulator.layouts.to_format`, channels zero-padded),
    gives every output a buffer of its padded size, reads the outputs back to LINEAR and
    compares them with ``baseline`` (:func:`~pyplugins.checker.checks.formats.format_mismatch`).
    The plugin is configured for ``baseline_combo`` again at the end.

    Args:
        plugin: the execution context's plugin.
        tensors: the run's :class:`~pyplugins.emulator.tensors.PluginTensors`.
        combos: the accepted combinations with the network's types (the baseline's included).
        arrays: the input data (LINEAR).
        baseline, baseline_combo: the outputs of the run on ``baseline_combo`` and that combo.
        recorder: the run's recorder.
        gpu: whether a GPU is usable (without one, nothing runs and the note says so).

    Returns:
        ``format_unimplemented`` and ``device_error`` violations, and at most one note for the
        report listing the combinations run and those not run, with why.
    """
    others = [list(c) for c in combos if list(c) != list(baseline_combo)]
    if not others:
        return [], []
    if not gpu:  # the report's verdict says why (no GPU) once; the note names what did not run
        return [], [f"not run on the other accepted format combination(s) either: "
                    f"{'; '.join(combo_label(c) for c in others)}"]
    found: List[Violation] = []
    ran, not_run = [], []
    n_in, base_label = tensors.n_in, combo_label(baseline_combo)
    host = [_host(a) for a in arrays]
    for combo in others:
        label = combo_label(combo)
        ranks = [len(tensors.profile(k, "opt")) for k in range(len(combo))]
        if not all(runnable(f, r) for (_, f), r in zip(combo, ranks)):
            not_run.append(f"{label} (a format the emulator cannot lay out: DLA)")
            continue
        trampoline.configure_plugin(plugin, *tensors.dynamic(combo, build=False))
        in_desc, out_desc = tensors.plain(combo, "opt")
        workspace = max(trampoline.get_workspace_size(plugin, in_desc, out_desc), 0)
        laid = [to_format(a, combo[k][1]) for k, a in enumerate(host)]
        shapes = [tensors.profile(n_in + j, "opt") for j in range(len(combo) - n_in)]
        metas = [((buffers.padded_volume(shape, fmt),), _np_dtype(t))
                 for shape, (t, fmt) in zip(shapes, combo[n_in:])]

        def call(i: List[int], o: List[int], w: int, s: int, d: Any = (in_desc, out_desc)) -> int:
            return trampoline.enqueue(plugin, d[0], d[1], i, o, w, s)

        try:
            run = buffers.DeviceRun(laid, metas, workspace)
            recorder.step = "enqueue"
            status = run.call(call)
            flat = run.outputs() if status == 0 else None
        except Exception as err:  # noqa: BLE001 - CUDA fails in CuPy's many types
            found.append(Violation("device_error", f"enqueue on format combination {label} "
                                   f"failed on the device: {buffers.cuda_error_text(err)}",
                                   "enqueue"))
            break
        finally:
            recorder.step = "runtime"
        if flat is None:
            not_run.append(f"{label} (enqueue failed: see errors)")
            continue
        ran.append(label)
        outs = [from_format(f, shape, fmt) for f, shape, (_, fmt) in zip(flat, shapes, combo[n_in:])]
        mismatch = format_mismatch(label, base_label, baseline, outs)
        if mismatch is not None:
            found.append(mismatch)
    trampoline.configure_plugin(plugin, *tensors.dynamic(list(baseline_combo), build=False))
    return found, [runs_note([base_label] + ran, not_run)]
