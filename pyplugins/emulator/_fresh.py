"""The fresh-process check: deserialize the engine's plugin bytes in a new Python process.

TensorRT runs engines in processes that only import the plugin's module (§2.1, §9): nothing
defined under ``if __name__ == "__main__":`` or set on the module by a script exists there. The
parent writes the bytes, the inputs (``.npy``) and a JSON description into a temporary directory
and runs ``python -m pyplugins.emulator._fresh DIR``; the child imports the module (by name, or by
path under a name other than ``__main__``) with the emulator installed, looks up the creator,
``deserialize_plugin`` -> ``initialize`` -> ``clone`` -> ``configure_plugin`` at opt ->
``enqueue`` (GPU) and ``serialize``, and writes outputs and bytes back. Any ``[ERROR]`` line or
exception makes it exit non-zero. :func:`fresh_violations` runs the child and compares what it
wrote with this process's bytes and outputs.

Example:
    >>> mod = import_module("json")
    >>> mod.__name__
    'json'
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from pyplugins.emulator.checks import Violation

__all__ = ["FreshResult", "fresh_violations", "import_module", "module_of", "run_fresh"]

_TIMEOUT_S = 300
_TAIL = 2000


def import_module(spec: str) -> ModuleType:
    """Import a plugin module, with ``import tensorrt`` resolving to the emulator (when real
    TensorRT is absent).

    Args:
        spec: an importable module name (``"my_pkg.plugins"``) or a ``.py`` file path. A path is
            imported once per process, under a name derived from the path (never ``__main__``).
    """
    from pyplugins import emulator
    from pyplugins.emulator import discovery

    emulator.install()
    path = Path(spec)
    if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
        path = path.resolve()
        if not path.is_file():
            msg = f"plugin module {spec!r}: no such file"
            raise FileNotFoundError(msg)
        digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
        name = f"_pyplugins_user_{path.stem}_{digest}"
        module = sys.modules.get(name)
        if module is not None:
            return module
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            msg = f"plugin module {spec!r} cannot be imported as Python source"
            raise ImportError(msg)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        try:
            loader_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    else:
        module = importlib.import_module(spec)
    discovery.register_defined_creators(module)  # what the module's __main__ block would do
    return module


def module_of(obj: Any) -> Optional[str]:
    """The module spec (name or file path) that defines ``obj``'s class, for a fresh process."""
    name = type(obj).__module__
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if name == "__main__" or name.startswith("_pyplugins_user_"):
        return path
    return name if module is not None else None


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
            np.save(work / f"in_{i}.npy", np.ascontiguousarray(a))
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
            done = subprocess.run([sys.executable, "-m", "pyplugins.emulator._fresh", str(work)],
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
            result.outputs = [np.load(work / f"out_{i}.npy") for i in range(len(outputs))]
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


# -- the child ----------------------------------------------------------------------------------

def _descs(items: Sequence[Dict[str, Any]], dynamic: bool) -> List[Any]:
    from pyplugins.emulator import DataType, DynamicPluginTensorDesc, PluginTensorDesc, TensorFormat

    result = []
    for d in items:
        desc = PluginTensorDesc(d["opt"], DataType[d["type"]], TensorFormat[d["format"]],
                                d["scale"])
        result.append(DynamicPluginTensorDesc(desc, d["min"], d["opt"], d["max"]) if dynamic
                      else desc)
    return result


def _fail(message: str) -> int:
    sys.stderr.write(f"pyplugins fresh process: {message}\n")
    return 1


def _child(work: Path) -> int:
    spec = json.loads((work / "spec.json").read_text())
    import_module(spec["module"])
    from pyplugins.emulator import get_plugin_registry, trampoline

    errors: List[str] = []
    trampoline.listeners.append(lambda ev: errors.append(ev.error) if ev.error else None)
    key = tuple(spec["key"])
    creator = get_plugin_registry().get_creator(*key)
    if creator is None:
        return _fail(f"importing {spec['module']!r} registered no creator for {key!r}")
    plugin = trampoline.deserialize_plugin(creator, spec["node_name"],
                                           (work / "engine.bin").read_bytes())
    if plugin is None:
        return _fail("deserialize_plugin returned no plugin")
    if trampoline.initialize(plugin) != 0:
        return _fail("initialize() failed")
    context = trampoline.clone(plugin)
    if context is None:
        return _fail("clone() returned no plugin")
    trampoline.configure_plugin(context, _descs(spec["inputs"], True),
                                _descs(spec["outputs"], True))
    in_descs, out_descs = _descs(spec["inputs"], False), _descs(spec["outputs"], False)
    workspace = trampoline.get_workspace_size(context, in_descs, out_descs)
    if spec["gpu"]:
        from pyplugins import dtypes
        from pyplugins.emulator.buffers import DeviceRun

        arrays = [np.load(work / f"in_{i}.npy") for i in range(len(in_descs))]
        metas = [(tuple(d.dims), dtypes.numpy_from_trt(d.type)) for d in out_descs]
        run = DeviceRun(arrays, metas, workspace)
        status = run.call(lambda i, o, w, s: trampoline.enqueue(context, in_descs, out_descs,
                                                               i, o, w, s))
        if status != 0:
            return _fail("enqueue failed")
        for i, out in enumerate(run.outputs()):
            np.save(work / f"out_{i}.npy", out)
    data = trampoline.serialize(context)
    if data is not None:
        (work / "reserialized.bin").write_bytes(data)
    trampoline.destroy(context)
    trampoline.terminate(plugin)
    trampoline.destroy(plugin)
    if errors:
        return _fail(f"{len(errors)} plugin callback(s) failed (see [ERROR] lines above)")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Child entry point: ``python -m pyplugins.emulator._fresh DIR``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        return _fail("usage: python -m pyplugins.emulator._fresh DIR")
    try:
        return _child(Path(args[0]))
    except BaseException:  # report anything, including SystemExit from plugin code
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
