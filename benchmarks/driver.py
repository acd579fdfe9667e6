"""Configure a plugin the way TensorRT does, through the emulator's trampoline, for timing.

``configure`` runs ``create_plugin`` -> ``get_nb_outputs`` -> ``get_output_datatype`` ->
``get_output_dimensions`` -> ``supports_format_combination`` -> ``configure_plugin`` ->
``get_workspace_size`` -> ``initialize`` with concrete (static) dims, turning every error the
trampoline swallows into an exception. The caller then calls ``plugin.enqueue`` directly with
prebuilt descriptor lists, int pointers, an int workspace and an int stream, as TensorRT's C++
side does (the emulator's own ``trampoline.enqueue`` copies descriptors on every call, a cost
real TensorRT does not have).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

os.environ.setdefault("PYPLUGINS_TRT", "emulator")


class SetupError(RuntimeError):
    """The plugin could not be configured for a problem; the message says which callback."""


def field_collection(fields: Dict[str, Any], field_names: Any) -> Any:
    """The ``PluginFieldCollection_`` the ONNX parser would pass for these attribute values."""
    from pyplugins.emulator import onnx_import

    names = [f.name for f in field_names] if field_names is not None else list(fields)
    unknown = sorted(set(fields) - set(names))
    if unknown:  # the parser would drop them silently and the plugin would run on defaults
        msg = f"the case's field(s) {unknown} are not among the plugin's fields {names}"
        raise SetupError(msg)
    fc, _warnings = onnx_import.fields_from_attributes(fields, names)
    return fc


@dataclass
class Configured:
    """A configured plugin and the prebuilt arguments of its ``enqueue``."""

    plugin: Any
    in_desc: List[Any]
    out_desc: List[Any]
    out_shapes: List[Tuple[int, ...]]
    out_dtypes: List[str]
    workspace_bytes: int


def _errors_during(fn: Any) -> Tuple[Any, List[str]]:
    from pyplugins.emulator import trampoline

    errors: List[str] = []

    def listen(event: Any) -> None:
        if event.error:
            errors.append(f"{event.method}: {event.error}")

    trampoline.listeners.append(listen)
    try:
        return fn(), errors
    finally:
        trampoline.listeners.remove(listen)


def configure(plugin_cls: Any, fields: Dict[str, Any], in_shapes: Sequence[Sequence[int]],
              in_dtypes: Sequence[str], *, name: str = "bench") -> Configured:
    """Create and configure ``plugin_cls`` for static input shapes; raises SetupError."""
    from pyplugins import dtypes
    from pyplugins.emulator import (DataType, DynamicPluginTensorDesc, IExprBuilder,
                                    PluginTensorDesc, TensorFormat, trampoline)

    def run() -> Configured:
        creator = plugin_cls.creator
        plugin = trampoline.create_plugin(creator, name, field_collection(fields,
                                                                         creator.field_names))
        if plugin is None:
            raise SetupError("create_plugin returned no plugin")
        n_out = trampoline.get_nb_outputs(plugin)
        in_types = [getattr(DataType, dtypes.trt_name_from_numpy(d)) for d in in_dtypes]
        out_types = [trampoline.get_output_data_type(plugin, i, in_types) for i in range(n_out)]
        builder = IExprBuilder()
        exprs = [builder._input(i, s) for i, s in enumerate(in_shapes)]
        out_exprs = [trampoline.get_output_dimensions(plugin, i, exprs, builder)
                     for i in range(n_out)]
        concrete = {i: tuple(s) for i, s in enumerate(in_shapes)}
        out_shapes = [tuple(e._evaluate(concrete) for e in dims) for dims in out_exprs]
        builder._expire()
        in_desc = [PluginTensorDesc(list(s), t, TensorFormat.LINEAR)
                   for s, t in zip(in_shapes, in_types)]
        out_desc = [PluginTensorDesc(list(s), t, TensorFormat.LINEAR)
                    for s, t in zip(out_shapes, out_types)]
        every = in_desc + out_desc
        for pos in range(len(every)):
            if not trampoline.supports_format_combination(plugin, pos, every, len(in_desc)):
                msg = (f"supports_format_combination refuses position {pos} "
                       f"({every[pos].type.name}, LINEAR)")
                raise SetupError(msg)

        def dyn(d: Any) -> Any:
            return DynamicPluginTensorDesc(d, min=d.dims, opt=d.dims, max=d.dims)

        trampoline.configure_plugin(plugin, [dyn(d) for d in in_desc], [dyn(d) for d in out_desc])
        ws = trampoline.get_workspace_size(plugin, in_desc, out_desc)
        if trampoline.initialize(plugin) != 0:
            raise SetupError("initialize failed")
        return Configured(plugin, in_desc, out_desc, out_shapes,
                          [dtypes.numpy_from_trt(t).name for t in out_types], int(ws))

    result, errors = _errors_during(run)
    if errors:
        raise SetupError("; ".join(errors))
    return result


def output_shapes_only(plugin_cls: Any, fields: Dict[str, Any],
                       in_shapes: Sequence[Sequence[int]], in_dtypes: Sequence[str]
                       ) -> List[Tuple[int, ...]]:
    """The plugin's output shapes for static inputs, without configuring it (touches no GPU)."""
    from pyplugins import dtypes
    from pyplugins.emulator import DataType, IExprBuilder, trampoline

    def run() -> List[Tuple[int, ...]]:
        creator = plugin_cls.creator
        plugin = trampoline.create_plugin(creator, "bench", field_collection(
            fields, creator.field_names))
        if plugin is None:
            raise SetupError("create_plugin returned no plugin")
        n_out = trampoline.get_nb_outputs(plugin)
        in_types = [getattr(DataType, dtypes.trt_name_from_numpy(d)) for d in in_dtypes]
        for i in range(n_out):
            trampoline.get_output_data_type(plugin, i, in_types)
        builder = IExprBuilder()
        exprs = [builder._input(i, s) for i, s in enumerate(in_shapes)]
        concrete = {i: tuple(s) for i, s in enumerate(in_shapes)}
        shapes = [tuple(e._evaluate(concrete) for e in trampoline.get_output_dimensions(
            plugin, i, exprs, builder)) for i in range(n_out)]
        builder._expire()
        trampoline.destroy(plugin)
        return shapes

    result, errors = _errors_during(run)
    if errors:
        raise SetupError("; ".join(errors))
    return result


def random_array(shape: Sequence[int], dtype: str, rng: Any = None) -> Any:
    """A CuPy array of random values (never zeros: they hide unwritten outputs).

    Floats are standard normal; integers random bytes (near uniform over the type's range). ``rng`` is a
    ``cupy.random.Generator`` (a new default one when None).
    """
    import cupy as cp

    rng = cp.random.default_rng() if rng is None else rng
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(tuple(shape), dtype=cp.float32).astype(dt, copy=False)
    count = int(np.prod(shape))
    words = rng.integers(0, 2**31 - 1, size=-(-count * dt.itemsize // 4), dtype=cp.int32)
    return words.view(cp.uint8)[:count * dt.itemsize].view(dt).reshape(tuple(shape))


def positive_array(shape: Sequence[int], dtype: str, rng: Any = None) -> Any:
    """Random values near 1 (weights of a normalisation)."""
    import cupy as cp

    rng = cp.random.default_rng() if rng is None else rng
    return (1.0 + 0.1 * rng.standard_normal(tuple(shape), dtype=cp.float32)).astype(dtype)
