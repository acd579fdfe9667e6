"""The ``fresh_process`` check: the engine's plugin bytes deserialized in a new Python process.

TensorRT runs engines in processes that only import the plugin's module (§2.1, §9): nothing
defined under ``if __name__ == "__main__":`` or set on the module by a script exists there.
:func:`run_fresh` writes the bytes, the inputs (raw, :func:`~pyplugins.checker._fresh.save_array`)
and a JSON description into a temporary directory and runs the child ``python -m pyplugins.checker._fresh DIR``;
:func:`fresh_violations` compares what the child wrote with this process's bytes and outputs.

Example:
    >>> [v.check for v in fresh_violations(None, ("X", "1", ""), "n", b"", [], [], None, None)]
    ['fresh_process']
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from pyplugins.checker._fresh import load_array, save_array
from pyplugins.checker.checks import Violation

__all__ = ["FreshResult", "fresh_violations", "run_fresh"]

_TIMEOUT_S = 300
_TAIL = 2000


@dataclass
class FreshResult:
    """What the child process produced.

    Attributes:
        error: why the child failed (exit status and the tail of its stderr), or None.
        outputs: the outputs it computed (GPU only).
        reserialized: what ``serialize()`` returned there.
    """

    error: Optional[str] = None
    outputs: Optional[List[np.ndarray]] = None
    reserialized: Optional[bytes] = None
    stderr: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)


def _desc_json(desc: Any) -> Dict[str, Any]:
    return {"dims": list(desc.desc.dims), "min": list(desc.min), "opt": list(desc.opt),
            "max": list(desc.max), "type": desc.desc.type.name, "format": desc.desc.format.name,
            "scale": desc.desc.scale}


def run_fresh(module: str, key: Sequence[str], node_name: str, engine: bytes,
              inputs: Sequence[Any], outputs: Sequence[Any], arrays: Sequence[np.ndarray],
              gpu: bool) -> FreshResult:
    """Run the fresh-process half in a child and collect what it wrote.

    Args:
        module: plugin module name or ``.py`` path.
        key: the creator's (name, version, namespace).
        engine: the plugin bytes the build serialized.
        inputs, outputs: the runtime ``DynamicPluginTensorDesc`` lists (concrete dims = opt).
        arrays: the input data (host arrays, of the runtime types).
        gpu: whether the child should enqueue.
    """
    with tempfile.TemporaryDirectory(prefix="pyplugins_fresh_") as tmp:
        work = Path(tmp)
        (work / "engine.bin").write_bytes(engine)
        for i, a in enumerate(arrays):
            save_array(work / f"in_{i}.bin", a)
        spec = {"module": str(module), "key": list(key), "node_name": node_name,
                "gpu": bool(gpu), "inputs": [_desc_json(d) for d in inputs],
                "outputs": [_desc_json(d) for d in outputs]}
        (work / "spec.json").write_text(json.dumps(spec))
        env = dict(os.environ)
        paths = [p if p else os.getcwd() for p in sys.path]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        if not gpu:
            env["PYPLUGINS_DEVICE"] = "cpu"
        try:
            done = subprocess.run([sys.executable, "-m", "pyplugins.checker._fresh", str(work)],
                                  capture_output=True, text=True, env=env, timeout=_TIMEOUT_S,
                                  check=False)
        except subprocess.TimeoutExpired as err:
            tail = (err.stderr or b"")[-_TAIL:]
            text = tail.decode("utf-8", "replace") if isinstance(tail, bytes) else tail
            return FreshResult(error=f"the child process ran past {_TIMEOUT_S} s; stderr "
                                     f"tail:\n{text}")
        result = FreshResult(stderr=done.stderr)
        if done.returncode != 0:
            result.error = (f"the child process exited with status {done.returncode}; stderr "
                            f"tail:\n{done.stderr[-_TAIL:].rstrip()}")
            return result
        reser = work / "reserialized.bin"
        result.reserialized = reser.read_bytes() if reser.exists() else None
        if gpu:
            result.outputs = [load_array(work / f"out_{i}.bin") for i in range(len(outputs))]
        return result


def fresh_violations(module: Optional[str], key: Sequence[str], node_name: str, engine: bytes,
                     inputs: Sequence[Any], outputs: Sequence[Any],
                     arrays: Optional[Sequence[Any]],
                     host_outputs: Optional[List[np.ndarray]]) -> List[Violation]:
    """The fresh-process check: run the engine bytes in a child, compare with this process.

    Args:
        module: plugin module name or ``.py`` path (None: it could not be told).
        key: the built plugin's (plugin_type, plugin_version, plugin_namespace).
        node_name: the ONNX node's name.
        engine: the plugin bytes the build serialized.
        inputs, outputs: the runtime ``DynamicPluginTensorDesc`` lists (concrete dims = opt).
        arrays: the input data ``enqueue`` got here (NumPy or CuPy), or None.
        host_outputs: what ``enqueue`` produced here (NumPy), or None when it did not run; the
            child enqueues only when it did.

    Returns:
        ``fresh_process`` violations: the child failed, its plugin re-serializes to other bytes,
        or its outputs differ.
    """
    if module is None:
        return [Violation("fresh_process", "cannot tell which module registers the creator; "
                          "pass plugin_module=... (a module name or .py path)")]
    violations = []
    gpu = host_outputs is not None
    host = [a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else
            np.asarray(a) for a in (arrays or [])]
    result = run_fresh(module, key, node_name, engine, inputs, outputs, host, gpu)
    where = f"in a new process that only imports {module!r}"
    if result.error is not None:
        return [Violation("fresh_process", f"{where}: {result.error}")]
    if result.reserialized != engine:
        violations.append(Violation(
            "fresh_process", f"{where}, the deserialized plugin serializes to different "
            f"bytes ({len(result.reserialized or b'')} vs {len(engine)}): its state "
            f"depends on something outside the serialized bytes", "serialize"))
    if gpu and result.outputs is not None:
        differ = [i for i, (a, b) in enumerate(zip(host_outputs, result.outputs))
                  if a.tobytes() != b.tobytes()]
        if differ:
            violations.append(Violation(
                "fresh_process", f"{where}, enqueue produced different output(s) {differ} "
                f"from this process for the same inputs: the plugin reads state that is not "
                f"in its serialized bytes (module globals, __main__)", "enqueue"))
    return violations
