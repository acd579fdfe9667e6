"""What one :func:`pyplugins.checker.lifecycle.run` starts from: its creator, its fields, its
device, and the bound on tensor sizes (``knobs.max_tensor_bytes``); and the two things both
drivers (V2 and V3) do while it runs: label a step's calls, and stop before ``enqueue``.

Example:
    >>> pick_device("cpu")
    (None, "device='cpu' was asked for, so the run stopped before enqueue")
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

from pyplugins import dtypes
from pyplugins._config import knobs
from pyplugins.checker import buffers
from pyplugins.runtime.device_choice import gpu_ordinal, on_device, parse_device
from pyplugins.emulator.bases import IPluginCreatorInterface
from pyplugins.checker.checks import Violation
from pyplugins.emulator.plugin_field import PluginFieldCollection, PluginFieldCollection_
from pyplugins.emulator.registry import get_plugin_registry
from pyplugins.emulator.specs import TensorSpec
from pyplugins.emulator import onnx_import

__all__ = ["check_input_sizes", "device_scope", "field_collection", "labelled_step", "oversized_outputs",
           "pick_device", "resolve_creator", "stop_before_enqueue"]


def resolve_creator(plugin: Any) -> Any:
    """The registered creator ``plugin`` names: a creator (or a plugin class holding one), a
    ``(name, version, namespace)`` tuple or ``"Name[:Version[:Namespace]]"`` (version "1" and
    namespace "" by default).

    Raises:
        TypeError: ``plugin`` is none of those; LookupError: nothing is registered under it.
    """
    if isinstance(plugin, IPluginCreatorInterface):
        return plugin
    if isinstance(getattr(plugin, "creator", None), IPluginCreatorInterface):
        return plugin.creator
    if isinstance(plugin, str):
        parts = plugin.split(":")
    elif isinstance(plugin, (tuple, list)):
        parts = [str(p) for p in plugin]
    else:
        msg = (f"plugin must be a creator, a (name, version, namespace) tuple or "
               f"'Name[:Version[:Namespace]]' (got {plugin!r})")
        raise TypeError(msg)
    key = (parts[0], parts[1] if len(parts) > 1 and parts[1] else "1",
           parts[2] if len(parts) > 2 else "")
    creator = get_plugin_registry().get_creator(*key)
    if creator is None:
        known = sorted(":".join(map(str, (c.name, c.plugin_version, c.plugin_namespace)))
                       for c in get_plugin_registry().all_creators)
        msg = (f"no plugin creator is registered for {key!r} (registered: {known or 'none'}); "
               f"import the module that registers it, or pass plugin_module=...")
        raise LookupError(msg)
    return creator


def field_collection(creator: Any, fields: Any) -> Tuple[PluginFieldCollection_, List[str]]:
    """``(fc, warnings)`` for ``create_plugin``: a ready collection as it is, node attributes as
    TensorRT's ONNX parser converts them
    (:func:`~pyplugins.emulator.onnx_import.fields_from_attributes`).

    Example:
        >>> fc, warnings = field_collection(None, PluginFieldCollection_([]))
        >>> len(fc), warnings
        (0, [])
    """
    if isinstance(fields, PluginFieldCollection_):
        return fields, []
    if isinstance(fields, PluginFieldCollection):
        return PluginFieldCollection_(fields), []
    return onnx_import.fields_from_attributes(fields or {}, creator.field_names)


def pick_device(device: Union[str, int]) -> Tuple[Any, Optional[str]]:
    """``(cupy or None, why not)`` for ``run``'s ``device``, in
    :mod:`pyplugins.runtime.device_choice`'s grammar (``auto``, ``cpu``, ``gpu``, ``gpu:N``, ``N``).

    Raises:
        DeviceChoiceError (a ValueError): another ``device``, or an ordinal past the last GPU;
        RuntimeError: a GPU asked for and CuPy sees none.
    """
    choice = parse_device(device)
    if choice.kind == "cpu":
        return None, "device='cpu' was asked for, so the run stopped before enqueue"
    if choice.kind == "auto" and knobs.device == "cpu":
        return None, "PYPLUGINS_DEVICE=cpu is set, so the run stopped before enqueue"
    cp, reason = buffers.cupy_or_reason()
    if cp is None and choice.kind != "auto":
        raise RuntimeError(reason)
    if cp is not None and choice.index is not None:
        gpu_ordinal(cp, choice)  # an ordinal past the last GPU fails here, before any callback
    return cp, reason


@contextlib.contextmanager
def device_scope(cp: Any, device: Union[str, int]) -> Iterator[None]:
    """The block runs with ``device``'s GPU current in this thread (CuPy's current device is per
    thread, and every stream, buffer and kernel of the run is made on the current one); nothing
    without a GPU (``cp`` None) or without an ordinal (``auto``, ``gpu``: the thread's current
    device already is the run's)."""
    choice = parse_device(device)
    if cp is None or choice.index is None:
        yield
        return
    with on_device(cp, gpu_ordinal(cp, choice)):
        yield


def _bytes(dims: Sequence[int], itemsize: int) -> int:
    total = max(itemsize, 1)
    for d in dims:
        total *= max(int(d), 0)
    return total


def oversized_outputs(shapes: Sequence[Sequence[int]], types: Sequence[Any]) -> List[str]:
    """A sentence per output larger than ``knobs.max_tensor_bytes`` at the profile's max.

    Example:
        >>> from pyplugins.emulator.enums import DataType
        >>> oversized_outputs([(2, 3), (-1, 3)], [DataType.FLOAT, DataType.HALF])
        []
    """
    limit, found = knobs.max_tensor_bytes, []
    for i, (dims, t) in enumerate(zip(shapes, types)):
        if any(int(d) < 0 for d in dims):
            continue  # unevaluable: reported as a bad shape already
        size = _bytes(dims, dtypes.itemsize_from_trt(t))
        if size > limit:
            found.append(f"output {i} is {tuple(dims)} {t.name} at the profile's max: {size} "
                         f"bytes, over the limit of {limit} bytes on one tensor "
                         "(PYPLUGINS_MAX_TENSOR_BYTES)")
    return found


def check_input_sizes(specs: Sequence[TensorSpec]) -> None:
    """Refuse an input larger than ``knobs.max_tensor_bytes`` at its profile's max.

    Raises:
        ValueError: naming the input, its size and the limit (PYPLUGINS_MAX_TENSOR_BYTES).
    """
    limit = knobs.max_tensor_bytes
    for k, spec in enumerate(specs):
        size = _bytes(spec.max, dtypes.itemsize_from_trt(spec.datatype))
        if size > limit:
            msg = (f"input {k} is {spec.max} {spec.datatype.name} at the profile's max: {size} "
                   f"bytes, over the limit of {limit} bytes on one tensor "
                   "(PYPLUGINS_MAX_TENSOR_BYTES); give a smaller shape or raise the limit")
            raise ValueError(msg)


@contextlib.contextmanager
def labelled_step(recorder: Any, trace: Any, name: str) -> Iterator[None]:
    """Within the block, the calls into plugin code carry ``name``: in the recorder's error
    reports and, when there is one, as a phase of the trace."""
    saved, recorder.step = recorder.step, name
    try:
        with trace.phase(name) if trace is not None else contextlib.nullcontext():
            yield
    finally:
        recorder.step = saved


def stop_before_enqueue(found: List[Violation], report: Any, check: str, message: str,
                        method: Optional[str] = None) -> bool:
    """Record why the run stops (a ``check`` violation in ``found``; the report's ``skipped``
    reason unless one is set already); False, for ``return driver.stop(...)``."""
    found.append(Violation(check, message, method))
    if report.skipped is None:
        report.skipped = f"the lifecycle stopped before enqueue: {message}"
    return False
