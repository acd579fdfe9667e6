"""With real TensorRT: build a model with plugin nodes through Polygraphy's loaders, stamp the
engine so that a mismatched GPU or TensorRT refuses it with a clear message, and run it.

The one real-TensorRT stack of pyplugins (the emulator builds no engines); it is thin, written to
TensorRT's documented Python API (10.x and 11.x, strongly typed networks), and its tests are
marked ``trt``. Plugins must be registered before building and before loading, in every process:
TensorRT finds a Python plugin's creator by name, version and namespace when it deserializes the
engine (docs/trt-protocol.md §2.1).

:func:`build_engine` parses the ONNX file strongly typed (the parser imports each plugin node
through its registered creator, so import the plugin modules first: ``plugins=``), makes one
optimization profile from ``ranges`` (``{input: (min, opt, max)}``; static inputs need none),
shows the builder's progress, and writes ``ENGINE`` plus ``ENGINE.json`` (:func:`stamp`: GPU
name, compute capability, TensorRT and pyplugins versions). ``prefer_aot`` sets the network flag
that settles QDP plugins with both implementations whose nodes carry no ``aot`` attribute
(``PREFER_AOT_PYTHON_PLUGINS`` or ``PREFER_JIT_PYTHON_PLUGINS``, TensorRT 10.9+; docs/aot.md).
:func:`load_engine` reads the stamp
first and refuses an engine built for another GPU or TensorRT: TensorRT's own error for that is
a bare deserialization failure.

Example (needs TensorRT and a GPU)::

    from pyplugins.models.trt_build import build_engine, load_engine
    build_engine("replaced.onnx", "block.engine", ranges={"x": ((1, 8, 64), (4, 8, 64),
                 (8, 8, 64))})
    engine = load_engine("block.engine")
    outputs = run_engine(engine, {"x": cupy_array})
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from pyplugins import __version__, _trt
from pyplugins.checker._fresh import import_module
from pyplugins.emulator.real import is_emulator
from pyplugins.errors import MissingDependencyError, PyPluginsError, install_hint, require

__all__ = ["EngineMismatchError", "build_engine", "load_engine", "network_flags",
           "ranges_from_shapes", "run_engine", "stamp"]

Shape = Tuple[int, ...]


class EngineMismatchError(PyPluginsError, RuntimeError):
    """The engine was built for another GPU or TensorRT version (or has no stamp)."""


def _real_trt() -> Any:
    trt = _trt.load()
    if is_emulator(trt):
        msg = ("building an engine needs NVIDIA's TensorRT, and this process uses pyplugins' "
               f"emulator: {install_hint('tensorrt')} and unset PYPLUGINS_TRT (or set it to "
               "'tensorrt').")
        raise MissingDependencyError(msg)
    return trt


def stamp() -> Dict[str, str]:
    """What an engine is only valid for: this GPU and this TensorRT (plus pyplugins' version)."""
    trt = _real_trt()
    cp = require("cupy", "stamping a TensorRT engine with its GPU")
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return {"gpu": name, "compute_capability": f"{props['major']}.{props['minor']}",
            "tensorrt": trt.__version__, "pyplugins": __version__}


def _progress_monitor(trt: Any) -> Any:
    class Progress(trt.IProgressMonitor):
        """Prints each build phase as it starts (TensorRT's IProgressMonitor)."""

        def __init__(self) -> None:
            trt.IProgressMonitor.__init__(self)

        def phase_start(self, phase_name: str, parent_phase: Optional[str], num_steps: int) -> None:
            indent = "  " if parent_phase else ""
            print(f"[build] {indent}{phase_name} ({num_steps} steps)", file=sys.stderr)

        def step_complete(self, phase_name: str, step: int) -> bool:
            return True  # never cancel

        def phase_finish(self, phase_name: str) -> None:
            pass

    return Progress()


def _register(plugins: Sequence[str]) -> None:
    """Register the shipped creators and the user's plugin modules with TensorRT."""
    import pyplugins.ops  # noqa: F401, PLC0415 - registers the shipped ops with real TensorRT

    for module in plugins:
        import_module(module)


def network_flags(trt: Any, prefer_aot: Optional[bool]) -> list:
    """The ``NetworkDefinitionCreationFlag``s for ``prefer_aot``: none for None, else
    ``PREFER_AOT_PYTHON_PLUGINS`` (True) or ``PREFER_JIT_PYTHON_PLUGINS`` (False).

    Raises:
        MissingDependencyError: the TensorRT given has no such flag (before 10.9).

    Example:
        >>> from pyplugins import emulator
        >>> [f.name for f in network_flags(emulator, True)], network_flags(emulator, None)
        (['PREFER_AOT_PYTHON_PLUGINS'], [])
    """
    if prefer_aot is None:
        return []
    name = "PREFER_AOT_PYTHON_PLUGINS" if prefer_aot else "PREFER_JIT_PYTHON_PLUGINS"
    flag = getattr(trt.NetworkDefinitionCreationFlag, name, None)
    if flag is None:
        msg = (f"NetworkDefinitionCreationFlag.{name} needs TensorRT 10.9 or later (this is "
               f"{getattr(trt, '__version__', '?')}); write aot=1 on the plugin nodes instead.")
        raise MissingDependencyError(msg)
    return [flag]


def build_engine(model: Any, engine_path: str,
                 ranges: Optional[Mapping[str, Tuple[Shape, Shape, Shape]]] = None,
                 plugins: Sequence[str] = (), progress: bool = True,
                 prefer_aot: Optional[bool] = None) -> Path:
    """Build ``model`` (an ONNX path, or a ``ModelProto``) into ``engine_path`` and its stamp;
    returns the path. ``prefer_aot``: see :func:`network_flags`.

    Raises:
        MissingDependencyError: TensorRT is not the active API (or Polygraphy is missing, or
            ``prefer_aot`` needs a newer TensorRT); Polygraphy's errors when parsing or
            building fails (the parser's messages name the node).
    """
    trt = _real_trt()
    flags = network_flags(trt, prefer_aot)
    require("polygraphy", "building a model with TensorRT")
    from polygraphy.backend.trt import (  # noqa: PLC0415 - polygraphy is optional
        CreateConfig, EngineBytesFromNetwork, NetworkFromOnnxBytes, NetworkFromOnnxPath, Profile)
    _register(plugins)
    profile = Profile()
    for name, (lo, opt, hi) in (ranges or {}).items():
        profile.add(name, min=lo, opt=opt, max=hi)
    config = CreateConfig(profiles=[profile] if ranges else None,
                          progress_monitor=_progress_monitor(trt) if progress else None)
    if hasattr(model, "SerializeToString"):
        network = NetworkFromOnnxBytes(model.SerializeToString(), flags=flags or None,
                                       strongly_typed=True)
    else:
        network = NetworkFromOnnxPath(str(model), flags=flags or None, strongly_typed=True)
    data = EngineBytesFromNetwork(network, config=config)()
    path = Path(engine_path)
    path.write_bytes(bytes(data))
    Path(f"{path}.json").write_text(json.dumps(stamp(), indent=2))
    return path


def load_engine(engine_path: str, plugins: Sequence[str] = ()) -> Any:
    """Deserialize a stamped engine, after checking its stamp against this machine.

    Raises:
        EngineMismatchError: no stamp, or one naming another GPU/compute capability/TensorRT.
    """
    trt = _real_trt()
    path = Path(engine_path)
    stamp_path = Path(f"{path}.json")
    if not stamp_path.is_file():
        msg = (f"{path}: no stamp {stamp_path.name} beside it, so nothing says which GPU and "
               "TensorRT it was built for; rebuild it with pyplugins.models.trt_build")
        raise EngineMismatchError(msg)
    built, here = json.loads(stamp_path.read_text()), stamp()
    differ = [f"{k}: built for {built.get(k)!r}, this machine has {here[k]!r}"
              for k in ("gpu", "compute_capability", "tensorrt") if built.get(k) != here[k]]
    if differ:
        msg = (f"{path} cannot run here ({'; '.join(differ)}). TensorRT engines are specific to "
               "the GPU and the TensorRT version: rebuild it on this machine.")
        raise EngineMismatchError(msg)
    _register(plugins)
    return trt.Runtime(trt.Logger(trt.Logger.WARNING)).deserialize_cuda_engine(path.read_bytes())


def run_engine(engine: Any, inputs: Mapping[str, Any], *, stream: Any = None) -> Dict[str, Any]:
    """Run a deserialized engine (:func:`load_engine`) once on CuPy arrays.

    Args:
        engine: a ``trt.ICudaEngine``.
        inputs: input tensor name -> CuPy array of the engine's dtype (made contiguous).
        stream: a ``cupy.cuda.Stream``; a new non-blocking one when None.

    Returns:
        Output tensor name -> CuPy array.

    Raises:
        PyPluginsError: ``execute_async_v3`` failed (a plugin's enqueue error is on stderr).
    """
    trt = _real_trt()
    cp = require("cupy", "running engines")
    context = engine.create_execution_context()
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    is_input = {n: engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT for n in names}
    keep = {}
    for name in names:
        if is_input[name]:
            keep[name] = cp.ascontiguousarray(inputs[name])
            context.set_input_shape(name, tuple(keep[name].shape))
            context.set_tensor_address(name, keep[name].data.ptr)
    outputs = {}
    for name in names:
        if not is_input[name]:
            shape = tuple(context.get_tensor_shape(name))
            outputs[name] = cp.empty(shape, dtype=trt.nptype(engine.get_tensor_dtype(name)))
            context.set_tensor_address(name, outputs[name].data.ptr)
    stream = stream or cp.cuda.Stream(non_blocking=True)
    if not context.execute_async_v3(stream.ptr):
        msg = "execute_async_v3 failed; a plugin's enqueue error is printed above (stderr)"
        raise PyPluginsError(msg)
    stream.synchronize()
    return outputs


def ranges_from_shapes(shapes: Mapping[str, Sequence[Shape]]) -> Dict[str, Tuple[Shape, Shape, Shape]]:
    """Normalise ``{name: shape}`` or ``{name: (min, opt, max)}`` to the (min, opt, max) triples
    :func:`build_engine` takes as ``ranges``.

    Example:
        >>> ranges_from_shapes({"x": (2, 3)})
        {'x': ((2, 3), (2, 3), (2, 3))}
    """
    result = {}
    for name, value in shapes.items():
        if value and isinstance(value[0], (tuple, list)):
            lo, opt, hi = (tuple(v) for v in value)
        else:
            lo = opt = hi = tuple(value)
        result[name] = (lo, opt, hi)
    return result
