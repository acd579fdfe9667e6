"""The execution path: run one plugin node on arrays as a built engine does, without the checks.

:class:`Execution` is what ``pp.run`` and the model runner use to get outputs. For each new
input signature (shapes, dtypes, shape-input values) it sets one plugin up the way TensorRT's
builder sets up the plugin it times (:class:`pyplugins.runtime.plugin_setup.PluginSetup`: create
it from the fields, output types and shapes on the concrete input shapes, ONE format combination
with every tensor LINEAR in the network's types, configure, workspace), through the emulator's
trampolines so every call has TensorRT's arguments and error channel. The configured plugin is
cached per signature, so a later call is a dictionary lookup plus ``enqueue`` on a CuPy stream
with CuPy device buffers (GPU), or plus the plugin's NumPy ``reference(*inputs)`` (no GPU),
checked against the shapes and types the plugin declared.

What it leaves out is the check lifecycle's work (:mod:`pyplugins.checker.lifecycle`): clones,
every format combination, CUDA-graph capture, the serialize round trip, guarded buffers, a fresh
process. A callback that fails raises :class:`~pyplugins.errors.ExecutionError` naming the
plugin, the node and the method, with the ``[ERROR]`` line TensorRT would print, instead of a
fallback value that would give a silently wrong result. Size tensors (V3 data-dependent output
shapes) are not run here.

Example:
    >>> import numpy as np
    >>> from pyplugins._config import override
    >>> from pyplugins.ops.leaky_relu import LeakyReLU
    >>> with override(device="cpu"), Execution(LeakyReLU.creator, {"neg_slope": 0.5}) as node:
    ...     (y,) = node(np.float32([[-2.0, 3.0]]))
    ...     node.how, y
    ('reference', array([[-1.,  3.]], dtype=float32))
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple, Union

import numpy as np

from pyplugins.emulator import trampoline
from pyplugins.emulator.onnx_import import fields_from_attributes
from pyplugins.emulator.plugin_field import PluginFieldCollection, PluginFieldCollection_
from pyplugins.errors import ExecutionError
from pyplugins.runtime.device_choice import on_device, pick_device
from pyplugins.runtime.plugin_setup import CallFailures, PluginSetup, Ready

__all__ = ["Execution"]


def _collection(creator: Any, fields: Any) -> Tuple[PluginFieldCollection_, List[str]]:
    """``create_plugin``'s ``fc``: a ready collection as is, attributes as the parser builds it."""
    if isinstance(fields, PluginFieldCollection_):
        return fields, []
    if isinstance(fields, PluginFieldCollection):
        return PluginFieldCollection_(fields), []
    return fields_from_attributes(fields or {}, creator.field_names)


class Execution:
    """One plugin node, run on arrays (see the module docstring).

    Args:
        creator: the registered creator (``IPluginCreator`` or ``IPluginCreatorV3One``).
        fields: node attributes (Python values or ``onnx.AttributeProto``, converted as TensorRT's
            ONNX parser converts them) or a ready ``PluginFieldCollection_``.
        node_name: the node's name, passed to ``create_plugin`` and named in errors.
        device: ``"auto"`` (``enqueue`` when CuPy sees a GPU, else the reference), ``"cpu"``
            (the reference), ``"gpu"`` (``enqueue`` on the calling thread's current GPU, or
            :class:`ExecutionError` now) or ``"gpu:N"`` / ``N`` (on GPU ordinal N, whatever
            thread calls later): :mod:`pyplugins.runtime.device_choice`'s grammar.

    Attributes:
        how: ``"kernel"`` (``enqueue`` on the GPU) or ``"reference"`` (the NumPy reference).
        why: for ``"reference"``, why ``enqueue`` does not run; else None.
        plugin: ``"Name:Version:Namespace"`` of the creator.
        device: the GPU ordinal every set-up and ``enqueue`` runs on (None: no GPU). The
            configured plugins are cached per signature in this object, so per device.
        warnings: what TensorRT's ONNX parser would warn about the fields.

    Raises:
        DeviceChoiceError (a ValueError): a ``device`` outside the grammar, or an ordinal
            past the last GPU; FieldError: an attribute the parser refuses.
    """

    def __init__(self, creator: Any, fields: Any = None, *, node_name: str = "plugin_node",
                 device: Union[str, int] = "auto") -> None:
        fc, self.warnings = _collection(creator, fields)
        self._cp, self.device, self.why = pick_device(device)
        with on_device(self._cp, self.device):
            self._setup = PluginSetup(creator, node_name, fc)
        self.plugin = self._setup.plugin
        self.how = "reference" if self._cp is None else "kernel"
        self._ready: Dict[Any, Ready] = {}
        self._stream: Any = None

    def __enter__(self) -> "Execution":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def configured(self) -> int:
        """How many input signatures have a configured plugin cached."""
        return len(self._ready)

    def __call__(self, *arrays: Any, shape_inputs: Sequence[Sequence[int]] = ()) -> List[Any]:
        """The outputs for ``arrays``: NumPy arrays, or CuPy arrays when an input is one.

        Args:
            *arrays: the plugin's inputs (NumPy or CuPy arrays).
            shape_inputs: IPluginV3 only: the values of each shape input (§6).

        Raises:
            ExecutionError: a callback failed (named with its ``[ERROR]`` line), the plugin
                refuses LINEAR tensors of these types, or no GPU and no reference.
            TypeError: an input that is not an array.
        """
        try:
            signature = tuple((a.shape, a.dtype) for a in arrays)
        except AttributeError:
            bad = next(k for k, a in enumerate(arrays) if not hasattr(a, "dtype"))
            msg = (f"{self._setup.label}: input {bad} must be a NumPy or CuPy array (got a "
                   f"{type(arrays[bad]).__name__}); wrap it with np.asarray(...)")
            raise TypeError(msg) from None
        values = tuple(tuple(int(v) for v in s) for s in shape_inputs)
        ready = self._ready.get((signature, values))
        if self._cp is None:
            if ready is None:
                ready = self._ready[(signature, values)] = self._configure(signature, values)
            return self._run_reference(ready, arrays)
        with self._cp.cuda.Device(self.device):  # CuPy's current device is per thread
            if ready is None:
                ready = self._ready[(signature, values)] = self._configure(signature, values)
            return self._run_kernel(ready, arrays)

    def close(self) -> None:
        """Destroy every configured plugin (``terminate``/``destroy``, as TensorRT at the end),
        after the work launched on its stream has finished."""
        ready, self._ready = list(self._ready.values()), {}
        with on_device(self._cp, self.device):
            if self._stream is not None:
                self._stream.synchronize()
            for entry in ready:
                entry.teardown()

    def _configure(self, signature: Tuple[Tuple[Any, Any], ...],
                   values: Tuple[Tuple[int, ...], ...]) -> Ready:
        shapes = [tuple(int(d) for d in shape) for shape, _ in signature]
        ready = self._setup.configure(shapes, [dt for _, dt in signature], values)
        if self._cp is not None and ready.workspace > 0:
            with self._stream_of():  # the pool then hands it out in this stream's order
                ready.ws_buffer = self._cp.empty(ready.workspace, dtype=np.uint8)
        return ready

    def _stream_of(self) -> Any:
        """The stream ``enqueue`` gets: made once, blocking and non-default (an application's)."""
        if self._stream is None:
            self._stream = self._cp.cuda.Stream()
        return self._stream

    def _run_reference(self, ready: Ready, arrays: Sequence[Any]) -> List[np.ndarray]:
        if ready.reference is None:
            raise self._setup.error(None, (
                f"enqueue did not run ({self.why}) and the plugin defines no NumPy "
                "reference(self, *inputs) to stand in for it; run on a machine with a CUDA GPU "
                "visible to CuPy, or give the plugin class a reference method."))
        try:
            result = ready.reference(*arrays)
        except Exception as err:
            raise self._setup.error("reference", "reference() raised (it stands in for enqueue "
                                    f"here, {self.why}): {trampoline.what(err)}") from err
        outs = list(result) if isinstance(result, (tuple, list)) else [result]
        got = [(tuple(np.shape(o)), np.asarray(o).dtype) for o in outs]
        want = list(zip(ready.out_shapes, ready.out_dtypes))
        if got != want:
            raise self._setup.error("reference", (
                f"its reference() returned {got} (shape, dtype per output) but the plugin "
                f"declared {want} to the builder; the two must agree."))
        return [np.asarray(o) for o in outs]

    def _run_kernel(self, ready: Ready, arrays: Sequence[Any]) -> List[Any]:
        cp = self._cp
        stream = self._stream_of()
        device_inputs = not all(isinstance(a, np.ndarray) for a in arrays)
        if device_inputs:  # inputs made on the caller's stream come first
            self._same_device(arrays)
            stream.wait_event(cp.cuda.get_current_stream().record())
        with stream:
            ins = [cp.ascontiguousarray(cp.asarray(a)) for a in arrays]
            outs = [cp.empty(s, dtype=d) for s, d in zip(ready.out_shapes, ready.out_dtypes)]
        ws = 0 if ready.ws_buffer is None else int(ready.ws_buffer.data.ptr)
        with CallFailures() as failures:
            status = ready.enqueue([int(a.data.ptr) for a in ins], [int(o.data.ptr) for o in outs],
                                   ws, int(stream.ptr))
        self._setup.check(failures, status != 0, "enqueue", "failed")
        if device_inputs:  # the caller's stream reads the outputs after this one wrote them
            cp.cuda.get_current_stream().wait_event(stream.record())
            return outs
        host = [cp.asnumpy(o, stream=stream) for o in outs]
        stream.synchronize()
        return host

    def _same_device(self, arrays: Sequence[Any]) -> None:
        """Refuse a CuPy input that lives on another GPU than this node's (its stream order
        would not be this device's)."""
        for index, array in enumerate(arrays):
            where = getattr(getattr(array, "device", None), "id", self.device)
            if where != self.device:
                msg = (f"{self._setup.label}: input {index} is a CuPy array on GPU {where}, but "
                       f"this node runs on GPU {self.device} (device='gpu:{self.device}'); make "
                       f"it there (with cupy.cuda.Device({self.device}): ...) or pass "
                       f"device='gpu:{where}'")
                raise ExecutionError(msg)
