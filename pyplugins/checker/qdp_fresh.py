"""The fresh-process check of a QDP (``tensorrt.plugin``) engine: what a new process that only
imports the plugin's module makes of it.

JIT: the engine keeps the fields ``get_fields_to_serialize()`` gave (§8.3). ``python -m
pyplugins.checker.qdp_fresh DIR`` imports the module (nothing else of the check's process), finds
the creator under the engine's (name, version, namespace), re-creates the plugin
``create_plugin(name, namespace, fields, RUNTIME, STRICT_JIT)`` [infer, as
:mod:`pyplugins.checker.qdp_execution`: the request on deserialization is not documented], asks
it for its fields again and, on a GPU, runs one execution context (a clone, ``set_tactic``,
``enqueue`` at opt); the check compares both with this process's. What the plugin reads from
elsewhere (a module global set by a script, ``__main__``) shows there.

AOT: the engine keeps the artifact, and :mod:`pyplugins.checker.aot_launch` already runs it in a
process that never imports the module (the check's AOT run): that run is the fresh process, and
its report says what it imported.

Example:
    >>> from pyplugins.emulator.plugin.attributes import fields_from_attrs
    >>> fields = fields_from_attrs({"k": np.int32([3]), "mode": "wrap"})
    >>> [(f.name, f.type.name) for f in fields_from_json(fields_to_json(fields))]
    [('k', 'INT32'), ('mode', 'CHAR')]
"""

from __future__ import annotations

import base64
import importlib.machinery
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from pyplugins import dtypes
from pyplugins.checker._fresh import child_entry, import_module, load_array, save_array
from pyplugins.checker.checks import Violation
from pyplugins.checker.checks.fresh_process import FreshResult
from pyplugins.emulator import surface
from pyplugins.emulator import trampoline_quick as tq
from pyplugins.emulator import trampoline_v3 as tv3
from pyplugins.emulator.descs import PluginTensorDesc
from pyplugins.emulator.enums import DataType, PluginFieldType, TensorFormat, TensorRTPhase
from pyplugins.emulator.enums import PluginCapabilityType as Cap
from pyplugins.emulator.plugin_field import PluginField
from pyplugins.emulator.registry import get_plugin_registry
from pyplugins.emulator.version import emulated_version

__all__ = ["fields_from_json", "fields_to_json", "jit_fresh_violations", "main", "module_spec",
           "run_fresh_jit"]

_TIMEOUT_S = 300
_TAIL = 2000


def fields_to_json(fields: Sequence[Any]) -> List[Dict[str, Any]]:
    """The fields as the engine stores them: name, field type, element dtype and raw bytes."""
    out = []
    for f in fields:
        data = np.asarray(f.data)
        out.append({"name": f.name, "type": f.type.name, "dtype": data.dtype.str,
                    "data": base64.b64encode(data.tobytes()).decode("ascii")})
    return out


def fields_from_json(items: Sequence[Dict[str, Any]]) -> List[PluginField]:
    """What :func:`fields_to_json` wrote, as ``PluginField``s."""
    return [PluginField(i["name"], np.frombuffer(base64.b64decode(i["data"]),
                                                 dtype=np.dtype(i["dtype"])).copy(),
                        PluginFieldType[i["type"]]) for i in items]


def module_spec(module_name: Optional[str], plugin_module: Optional[str],
                source: Optional[str] = None) -> Optional[str]:
    """What the child imports: ``plugin_module`` when given, else the module that registered
    the plugin: its name when that name imports it, else its file (a ``.py`` path imported under
    a made-up name, or not kept in ``sys.modules``: ``source``, the register function's file)."""
    if plugin_module is not None:
        return plugin_module
    module = sys.modules.get(module_name or "")
    if module is None:
        return source if source and os.path.isfile(source) else module_name
    # sys.path alone, not sys.modules (where a module loaded from a file is found by any name)
    importable = "." in module.__name__ or \
        importlib.machinery.PathFinder.find_spec(module.__name__) is not None
    if module.__name__.startswith("_pyplugins_user_") or not importable:
        return getattr(module, "__file__", None)
    return module.__name__


def _desc_json(desc: Any) -> Dict[str, Any]:
    return {"dims": [int(d) for d in desc.dims], "type": desc.type.name,
            "format": desc.format.name, "scale": float(desc.scale)}


def _desc(item: Dict[str, Any]) -> PluginTensorDesc:
    return PluginTensorDesc(item["dims"], DataType[item["type"]], TensorFormat[item["format"]],
                            item["scale"])


def run_fresh_jit(module: str, key: Sequence[str], fields: Sequence[Any], in_desc: Sequence[Any],
                  out_desc: Sequence[Any], tactic: int, arrays: Sequence[np.ndarray],
                  gpu: bool, *, interface: Optional[str] = None) -> FreshResult:
    """Run the child (module docstring); ``reserialized`` holds its fields as JSON bytes.

    ``interface``: ``"qdp"`` for a ``pp.Plugin`` class the check's process registered as QDP
    (``pyplugins.runtime.qdp.define``): the child gets ``PYPLUGINS_INTERFACE=qdp``, so importing
    the class's module registers it as QDP there too, as a deployment that loads the engine
    must (docs/aot.md); without it, the module's ``pp.register`` picks V2 or V3 and the child
    finds no QDP creator."""
    with tempfile.TemporaryDirectory(prefix="pyplugins_qdp_fresh_") as tmp:
        work = Path(tmp)
        for i, a in enumerate(arrays):
            save_array(work / f"in_{i}.bin", np.asarray(a))
        spec = {"module": module, "key": list(key), "fields": fields_to_json(fields),
                "inputs": [_desc_json(d) for d in in_desc],
                "outputs": [_desc_json(d) for d in out_desc], "tactic": int(tactic),
                "gpu": bool(gpu)}
        (work / "spec.json").write_text(json.dumps(spec))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p or os.getcwd() for p in sys.path))
        if not gpu:
            env["PYPLUGINS_DEVICE"] = "cpu"
        if interface is not None:
            env["PYPLUGINS_INTERFACE"] = interface
        try:
            done = subprocess.run([sys.executable, "-m", "pyplugins.checker.qdp_fresh", str(work)],
                                  capture_output=True, text=True, env=env, timeout=_TIMEOUT_S,
                                  check=False)
        except subprocess.TimeoutExpired:
            return FreshResult(error=f"the child process ran past {_TIMEOUT_S} s")
        result = FreshResult(stderr=done.stderr)
        if done.returncode != 0:
            result.error = (f"the child process exited with status {done.returncode}; stderr "
                            f"tail:\n{done.stderr[-_TAIL:].rstrip()}")
            return result
        result.reserialized = (work / "fields.json").read_bytes()
        if gpu:
            result.outputs = [load_array(work / f"out_{j}.bin") for j in range(len(out_desc))]
        return result


def jit_fresh_violations(module: Optional[str], key: Sequence[str], fields: Sequence[Any],
                         in_desc: Sequence[Any], out_desc: Sequence[Any], tactic: int,
                         arrays: Optional[Sequence[np.ndarray]],
                         outputs: Optional[Sequence[np.ndarray]], *,
                         interface: Optional[str] = None) -> List[Violation]:
    """``fresh_process`` violations of a JIT engine: the child failed, its re-created plugin
    serializes other fields, or (when ``outputs`` ran here) it computes other outputs.
    ``interface`` as for :func:`run_fresh_jit`."""
    if module is None:
        return [Violation("fresh_process", "cannot tell which module registers the QDP plugin; "
                          "pass plugin_module=... (a module name or .py path)")]
    gpu = outputs is not None and arrays is not None
    result = run_fresh_jit(module, key, fields, in_desc, out_desc, tactic,
                           list(arrays or []) if gpu else [], gpu, interface=interface)
    where = f"in a new process that only imports {module!r}" + (
        f" (PYPLUGINS_INTERFACE={interface})" if interface else "")
    if result.error is not None:
        return [Violation("fresh_process", f"{where}: {result.error}")]
    found = []
    if json.loads(result.reserialized or b"[]") != fields_to_json(fields):
        found.append(Violation(
            "fresh_process", f"{where}, the plugin create_plugin(RUNTIME) re-created from the "
            "engine's fields serializes other fields: its state depends on something outside "
            "them", "get_fields_to_serialize"))
    if gpu and result.outputs is not None:
        differ = [j for j, (a, b) in enumerate(zip(outputs or [], result.outputs))
                  if np.asarray(a).tobytes() != b.tobytes()]
        if differ:
            found.append(Violation(
                "fresh_process", f"{where}, impl produced different output(s) {differ} from "
                "this process for the same inputs: it reads state that is not in the engine's "
                "fields (module globals, __main__)", "enqueue"))
    return found


# -- the child -------------------------------------------------------------------------------------

def _fail(message: str) -> int:
    sys.stderr.write(f"pyplugins QDP fresh process: {message}\n")
    return 1


def _child(work: Path) -> int:
    from pyplugins.checker.buffers import DeviceRun  # noqa: PLC0415 - the child only
    from pyplugins.checker.qdp_runtime import jit_call  # noqa: PLC0415 - the child only

    spec = json.loads((work / "spec.json").read_text())
    import_module(spec["module"])
    key = tuple(spec["key"])
    creator = get_plugin_registry().get_creator(*key)
    if creator is None:
        return _fail(f"importing {spec['module']!r} registered no creator for {key!r}, so "
                     "TensorRT cannot deserialize the engine there")
    request = None
    if emulated_version() >= (10, 9):
        request = surface.resolve("QuickPluginCreationRequest", emulated_version()[0]).STRICT_JIT
    plugin = tq.create_plugin(creator, key[0], key[2], fields_from_json(spec["fields"]),
                              TensorRTPhase.RUNTIME, request)
    if plugin is None:
        return _fail("create_plugin(name, namespace, fields, RUNTIME) returned no plugin")
    runtime = tq.get_capability_interface(plugin, Cap.RUNTIME)
    rebuilt = tq.get_fields_to_serialize(runtime) if runtime is not None else None
    if rebuilt is None:
        return _fail("the re-created plugin gave no fields to serialize")
    (work / "fields.json").write_text(json.dumps(fields_to_json(list(rebuilt))))
    if spec["gpu"]:
        context = tv3.clone(plugin)
        rt = tq.get_capability_interface(context, Cap.RUNTIME) if context is not None else None
        if rt is None or tq.set_tactic(rt, spec["tactic"]) != 0:
            return _fail("the execution context's clone or set_tactic failed")
        in_desc = [_desc(d) for d in spec["inputs"]]
        out_desc = [_desc(d) for d in spec["outputs"]]
        arrays = [load_array(work / f"in_{i}.bin") for i in range(len(in_desc))]
        metas = [(tuple(d.dims), dtypes.numpy_from_trt(d.type)) for d in out_desc]
        run = DeviceRun(arrays, metas, 0)
        if run.call(jit_call(rt, in_desc, out_desc)) != 0:
            return _fail("enqueue failed")
        for j, out in enumerate(run.outputs()):
            save_array(work / f"out_{j}.bin", out)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Child entry point: ``python -m pyplugins.checker.qdp_fresh DIR``."""
    return child_entry(argv, "pyplugins.checker.qdp_fresh", _child, _fail)


if __name__ == "__main__":
    sys.exit(main())
