"""Importing a plugin module with the emulator installed, and the fresh-process check's child.

:func:`import_module` loads a plugin module by name or ``.py`` path (never as ``__main__``).
``python -m pyplugins.checker._fresh DIR`` is the child process of the fresh-process check
(:mod:`pyplugins.checker.checks.fresh_process`): it imports the module, looks up the creator,
``deserialize_plugin`` -> ``initialize`` -> ``clone`` -> ``configure_plugin`` at opt ->
``enqueue`` (GPU) and ``serialize``, and writes outputs and bytes back into DIR. Any ``[ERROR]``
line or exception makes it exit non-zero.

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
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from pyplugins import dtypes, emulator
from pyplugins.checker import discovery
from pyplugins.checker.buffers import DeviceRun
from pyplugins.emulator import (DataType, DynamicPluginTensorDesc, PluginTensorDesc, TensorFormat,
                                get_plugin_registry, trampoline)


__all__ = ["child_entry", "import_module", "main", "module_of"]


def import_module(spec: str) -> ModuleType:
    """Import a plugin module, with ``import tensorrt`` resolving to the emulator (when real
    TensorRT is absent).

    Args:
        spec: an importable module name (``"my_pkg.plugins"``) or a ``.py`` file path. A path is
            imported once per process, under a name derived from the path (never ``__main__``).
    """
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


# -- the child ----------------------------------------------------------------------------------

def _descs(items: Sequence[Dict[str, Any]], dynamic: bool) -> List[Any]:
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


def save_array(path: Path, array: np.ndarray) -> None:
    """Write ``array`` as raw bytes at ``path`` and its dtype and shape beside it (``.json``).

    Not ``np.save``: on the H100 machine (NumPy 2.5, Python 3.12) files it wrote for this child
    were read back with NUL bytes inside the header, under a parallel test run; one plain write
    of the bytes leaves nothing to reassemble.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     save_array(Path(tmp, "a.bin"), np.arange(6, dtype=np.int16).reshape(2, 3))
        ...     load_array(Path(tmp, "a.bin")).tolist()
        [[0, 1, 2], [3, 4, 5]]
    """
    array = np.ascontiguousarray(array)
    path.write_bytes(array.tobytes())
    path.with_suffix(".json").write_text(json.dumps({"dtype": array.dtype.str,
                                                     "shape": list(array.shape)}))


def load_array(path: Path) -> np.ndarray:
    """What :func:`save_array` wrote at ``path``."""
    meta = json.loads(path.with_suffix(".json").read_text())
    data = np.frombuffer(path.read_bytes(), dtype=np.dtype(meta["dtype"]))
    return data.reshape(meta["shape"]).copy()


def _child(work: Path) -> int:
    spec = json.loads((work / "spec.json").read_text())
    import_module(spec["module"])
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
        arrays = [load_array(work / f"in_{i}.bin") for i in range(len(in_descs))]
        metas = [(tuple(d.dims), dtypes.numpy_from_trt(d.type)) for d in out_descs]
        run = DeviceRun(arrays, metas, workspace)
        status = run.call(lambda i, o, w, s: trampoline.enqueue(context, in_descs, out_descs,
                                                               i, o, w, s))
        if status != 0:
            return _fail("enqueue failed")
        for i, out in enumerate(run.outputs()):
            save_array(work / f"out_{i}.bin", out)
    data = trampoline.serialize(context)
    if data is not None:
        (work / "reserialized.bin").write_bytes(data)
    trampoline.destroy(context)
    trampoline.terminate(plugin)
    trampoline.destroy(plugin)
    if errors:
        return _fail(f"{len(errors)} plugin callback(s) failed (see [ERROR] lines above)")
    return 0


def child_entry(argv: Optional[Sequence[str]], module: str, child: Callable[[Path], int],
                fail: Callable[[str], int]) -> int:
    """``python -m module DIR``: ``child(Path(DIR))``'s status; anything it raises (SystemExit
    from plugin code included) printed with its traceback, status 1; a malformed call
    ``fail(usage)``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        return fail(f"usage: python -m {module} DIR")
    try:
        return child(Path(args[0]))
    except BaseException:  # noqa: BLE001 - report anything, including SystemExit from plugin code
        traceback.print_exc()
        return 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Child entry point: ``python -m pyplugins.checker._fresh DIR``."""
    return child_entry(argv, "pyplugins.checker._fresh", _child, _fail)


if __name__ == "__main__":
    sys.exit(main())
