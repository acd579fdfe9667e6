"""Real-TensorRT helpers: build an engine from an ONNX model that uses plugins, load it, run it.

This module needs NVIDIA's TensorRT (``pip install 'tensorrt>=10,<12'``); the emulator builds no
engines. It is deliberately thin and written to TensorRT's documented Python API (10.x and 11.x,
strongly typed networks). Plugins must be registered (import their modules) before building and
before loading, in every process: TensorRT finds a Python plugin's creator by name, version and
namespace when it deserializes the engine (docs/trt-protocol.md §2.1).

Example (needs TensorRT and a GPU)::

    import pyplugins.ops  # registers CircPad, LReLU_TRT
    from pyplugins.models import engine
    plan = engine.build_from_onnx("model.onnx", profiles={"x": ((1, 3, 8, 8),) * 3})
    outputs = engine.run_plan(plan, {"x": cupy_array})
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from pyplugins import _trt
from pyplugins.emulator.real import is_emulator
from pyplugins.errors import PyPluginsError, missing, require

Shape = Tuple[int, ...]


def _real_trt() -> Any:
    trt = _trt.load()
    if is_emulator(trt):
        raise missing("tensorrt", "building and running engines (the emulator builds none)")
    return trt


def _logger(trt: Any) -> Any:
    return trt.Logger(trt.Logger.WARNING)


def build_from_onnx(model: Union[str, Path, bytes], *,
                    profiles: Optional[Mapping[str, Tuple[Shape, Shape, Shape]]] = None,
                    workspace_bytes: Optional[int] = None) -> bytes:
    """Parse an ONNX model (plugin nodes included) and build a serialized engine.

    Args:
        model: path to an ``.onnx`` file, or its bytes.
        profiles: for each dynamic input, its (min, opt, max) shapes; one optimization profile.
        workspace_bytes: memory pool limit for the builder's workspace; None keeps TensorRT's.

    Returns:
        The serialized engine (plan) bytes.

    Raises:
        PyPluginsError: when parsing or building fails, with the parser's errors.
    """
    trt = _real_trt()
    logger = _logger(trt)
    builder = trt.Builder(logger)
    flags = 0
    strongly_typed = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
    if strongly_typed is not None:  # 10.x: opt in; 11.x networks are always strongly typed
        flags |= 1 << int(strongly_typed)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    data = model if isinstance(model, bytes) else Path(model).read_bytes()
    if not parser.parse(data):
        errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        msg = f"TensorRT's ONNX parser rejected the model: {errors}"
        raise PyPluginsError(msg)
    config = builder.create_builder_config()
    if workspace_bytes is not None:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace_bytes))
    if profiles:
        profile = builder.create_optimization_profile()
        for name, (lo, opt, hi) in profiles.items():
            profile.set_shape(name, tuple(lo), tuple(opt), tuple(hi))
        config.add_optimization_profile(profile)
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        msg = ("TensorRT failed to build the engine; the plugin errors printed above (stderr) "
               "name the cause")
        raise PyPluginsError(msg)
    return bytes(plan)


def run_plan(plan: bytes, inputs: Mapping[str, Any], *,
             stream: Optional[Any] = None) -> Dict[str, Any]:
    """Load a serialized engine and run it once on CuPy arrays.

    Args:
        plan: serialized engine bytes from :func:`build_from_onnx` (or a file's bytes).
        inputs: input tensor name -> contiguous CuPy array of the engine's dtype.
        stream: a ``cupy.cuda.Stream``; a new non-blocking one when None.

    Returns:
        Output tensor name -> CuPy array.
    """
    trt = _real_trt()
    cp = require("cupy", "running engines")
    runtime = trt.Runtime(_logger(trt))
    engine = runtime.deserialize_cuda_engine(plan)
    if engine is None:
        msg = ("TensorRT could not deserialize the engine: are the plugin modules imported (their "
               "creators registered) in this process?")
        raise PyPluginsError(msg)
    context = engine.create_execution_context()
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    is_input = {n: engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT for n in names}
    for name in names:
        if is_input[name]:
            array = cp.ascontiguousarray(inputs[name])
            context.set_input_shape(name, tuple(array.shape))
            context.set_tensor_address(name, array.data.ptr)
    outputs = {}
    for name in names:
        if not is_input[name]:
            shape = tuple(context.get_tensor_shape(name))
            dtype = trt.nptype(engine.get_tensor_dtype(name))
            outputs[name] = cp.empty(shape, dtype=dtype)
            context.set_tensor_address(name, outputs[name].data.ptr)
    stream = stream or cp.cuda.Stream(non_blocking=True)
    if not context.execute_async_v3(stream.ptr):
        msg = "execute_async_v3 failed; a plugin's enqueue error is printed above (stderr)"
        raise PyPluginsError(msg)
    stream.synchronize()
    return outputs


def profiles_from_shapes(shapes: Mapping[str, Sequence[Shape]]) -> Dict[str, Tuple[Shape, Shape, Shape]]:
    """Normalise ``{name: shape}`` or ``{name: (min, opt, max)}`` to (min, opt, max) triples.

    Example:
        >>> profiles_from_shapes({"x": (2, 3)})
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
