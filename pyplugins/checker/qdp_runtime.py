"""The GPU and run-time side of a QDP check: JIT ``enqueue`` calls, and the AOT artifact run in a
child process that never imports the plugin.

A JIT plugin's ``enqueue`` (``IPluginV3QuickRuntime``) takes descriptors, pointers, strides in
elements and the stream, without a workspace: :func:`jit_call` adapts it to the
``enqueue(inputs, outputs, workspace, stream)`` form :mod:`pyplugins.checker.runtime_v3`'s timing
and guarded run take. An AOT plugin has no Python at run time: :func:`run_artifact` hands the
artifact's bytes and the input data to ``python -m pyplugins.checker.aot_launch`` in a new
process, which evaluates the launch and, on a GPU, launches the kernel through the driver;
:func:`artifact_run_violations` reads what it did. :func:`time_aot` times an AOT candidate
in-process, as the builder times it.

Example:
    >>> contiguous_strides((2, 3, 4))
    (12, 4, 1)
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins.checker import buffers
from pyplugins.checker.aot_artifact import AOTArtifact
from pyplugins.checker.checks import Violation
from pyplugins.checker.checks.outputs import output_violations, poisoned_elements
from pyplugins.emulator import trampoline_quick as tq

__all__ = ["CHILD_TIMEOUT_S", "any_poisoned", "aot_output_violations", "artifact_run_violations",
           "body", "contiguous_strides", "jit_call", "run_artifact", "time_aot"]

#: Seconds the AOT child process may take (imports, module load, launch).
CHILD_TIMEOUT_S = 120.0
_ROOT = str(Path(__file__).resolve().parents[2])


def contiguous_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    """Strides in elements of a LINEAR tensor, as TensorRT passes them to ``enqueue``."""
    out, step = [], 1
    for d in reversed(list(shape)):
        out.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(out))


def jit_call(runtime: Any, in_desc: Sequence[Any], out_desc: Sequence[Any]
             ) -> Callable[[List[int], List[int], int, int], int]:
    """``enqueue(inputs, outputs, workspace, stream)`` through the Quick trampoline (the
    workspace is dropped: QDP plugins have none)."""
    in_strides = [contiguous_strides(d.dims) for d in in_desc]
    out_strides = [contiguous_strides(d.dims) for d in out_desc]

    def call(i: List[int], o: List[int], w: int, s: int) -> int:
        return tq.enqueue(runtime, in_desc, out_desc, i, o, in_strides, out_strides, s)
    return call


def run_artifact(data: bytes, inputs: Sequence[np.ndarray], input_shapes: Sequence[Sequence[int]],
                 out_dtypes: Sequence[np.dtype], *, launch: bool, plugin_module: Optional[str],
                 alt: bool = False) -> Tuple[Dict[str, Any], Optional[List[np.ndarray]]]:
    """Run the engine's AOT artifact (``data``) in a new Python process.

    Args:
        data: :meth:`AOTArtifact.to_bytes` of the kept kernel.
        inputs: the input arrays (written for the child only when ``launch``).
        input_shapes: the shapes the run is for.
        out_dtypes: the outputs' NumPy dtypes.
        launch: launch the kernel (a GPU is here); otherwise only evaluate the artifact.
        plugin_module: the plugin module's name in ``sys.modules``, which the child reports on.
        alt: poison the outputs with the second pattern.

    Returns:
        The child's ``result.json`` (``error``, ``plan``, ``ran``, ``modules``) and, when it
        launched, the raw output buffers (guards included, uint8).
    """
    with tempfile.TemporaryDirectory(prefix="pyplugins-aot-run-") as work:
        path = Path(work)
        (path / "artifact.bin").write_bytes(data)
        request = {"input_shapes": {str(k): list(s) for k, s in enumerate(input_shapes)},
                   "out_dtypes": [np.dtype(d).str for d in out_dtypes], "launch": launch,
                   "plugin_module": plugin_module, "alt": alt}
        (path / "request.json").write_text(json.dumps(request))
        if launch:
            np.savez(path / "inputs.npz", **{f"in{k}": np.asarray(a) for k, a in enumerate(inputs)})
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
        try:
            done = subprocess.run([sys.executable, "-m", "pyplugins.checker.aot_launch", work],
                                  check=False, capture_output=True, text=True,
                                  timeout=CHILD_TIMEOUT_S,
                                  cwd=work, env=env)
        except subprocess.TimeoutExpired:
            return {"error": f"the AOT run took more than {CHILD_TIMEOUT_S:.0f} s"}, None
        result_file = path / "result.json"
        if not result_file.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return {"error": f"the AOT child exited {done.returncode} without a result: "
                             f"{' | '.join(tail)}"}, None
        result = json.loads(result_file.read_text())
        raw = None
        if result.get("ran"):
            with np.load(path / "outputs.npz") as npz:
                raw = [npz[f"out{j}"] for j in range(len(out_dtypes))]
    return result, raw


def artifact_run_violations(result: Dict[str, Any], plugin_id: str) -> List[Violation]:
    """``aot_artifact`` when the child could not evaluate or launch the artifact, or when
    ``tensorrt``, ``tensorrt.plugin``, the emulator or the plugin's module was imported there."""
    found = []
    if result.get("error"):
        frames = [line.strip() for line in str(result.get("traceback") or "").splitlines()
                  if line.strip().startswith("File ")]
        where = f" ({frames[-1]})" if frames else ""  # where the child raised
        found.append(Violation("aot_artifact", f"the engine's AOT kernel of QDP plugin "
                               f"'{plugin_id}' did not run in a process without the plugin's "
                               f"Python: {result['error']}{where}", "get_launch_params"))
    imported = sorted(name for name, seen in (result.get("modules") or {}).items() if seen)
    if imported:
        found.append(Violation("aot_artifact", f"running the AOT artifact of QDP plugin "
                               f"'{plugin_id}' imported {imported}: it does not run without "
                               f"Python plugin code", "get_launch_params"))
    return found


def aot_output_violations(raw: Sequence[np.ndarray], shapes: Sequence[Sequence[int]],
                          dtypes: Sequence[np.dtype],
                          raw_alt: Optional[Sequence[np.ndarray]] = None) -> List[Violation]:
    """``output_mismatch`` of the AOT kernel's outputs (written past the end, left unwritten)."""
    found = []
    for j, (buf, shape, dt) in enumerate(zip(raw, shapes, dtypes)):
        alt = None if raw_alt is None else raw_alt[j]
        for v in output_violations(j, buf, shape, dt, raw_alt=alt):
            v.message = "the AOT kernel: " + v.message.replace("get_output_dimensions/get_out"
                                                                "put_datatype", "the register "
                                                                "function")
            v.method = "get_launch_params"
            found.append(v)
    return found


def any_poisoned(raw: Sequence[np.ndarray], shapes: Sequence[Sequence[int]],
                 dtypes: Sequence[np.dtype]) -> bool:
    """Whether some declared element still holds the poison (a second run tells)."""
    return any(poisoned_elements(b, s, d).size for b, s, d in zip(raw, shapes, dtypes))


def time_aot(art: AOTArtifact, plan: Dict[str, Any], in_bytes: Sequence[int],
             out_bytes: Sequence[int], reps: int = 5) -> float:
    """Milliseconds per launch of ``art``'s kernel on zeroed scratch buffers (the builder's
    timing of one AOT candidate), in this process."""
    from pyplugins.checker.aot_launch import launch  # noqa: PLC0415 - GPU only

    cp, stream, ins, outs, _ = buffers.scratch_buffers(in_bytes, out_bytes, 0)
    ptrs = ([int(a.data.ptr) for a in ins], [int(a.data.ptr) for a in outs])
    launch(art, plan, *ptrs, int(stream.ptr))
    stream.synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    for _ in range(reps):
        launch(art, plan, *ptrs, int(stream.ptr))
    end.record(stream)
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / reps


def body(raw: np.ndarray, shape: Sequence[int], dt: np.dtype) -> np.ndarray:
    """The declared elements of a raw output buffer."""
    n = math.prod(shape)
    return np.ascontiguousarray(raw).view(np.uint8)[:n * dt.itemsize].view(dt).reshape(
        tuple(shape)).copy()
