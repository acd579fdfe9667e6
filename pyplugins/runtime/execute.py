"""The execution path: run one plugin node on arrays as a built engine does, without the checks.

:class:`Execution` is what ``pp.run`` and the model runner use to get outputs. For each new
input signature (shapes, dtypes, shape-input values) it sets one plugin up the way TensorRT's
builder sets up the plugin it times (docs/trt-protocol.md §2.3 for V2, §2.5 for V3), through the
emulator's trampolines so every call has TensorRT's arguments and error channel: create the plugin
from the fields, ask its output types and shapes (evaluated on the concrete input shapes), check
that it accepts ONE format combination (every tensor LINEAR, in the network's types: execution,
not exploration), configure it (V2: ``configure_plugin``, ``initialize``, ``configure_plugin`` at
the concrete shapes; V3: ``configure_plugin``, the first of ``get_valid_tactics``,
``set_tactic``, ``on_shape_change``) and ask its workspace size. The configured plugin is cached
per signature, so a later call is a dictionary lookup plus ``enqueue`` on a CuPy stream with CuPy
device buffers (GPU), or plus the plugin's NumPy ``reference(*inputs)`` (no GPU), checked against
the shapes and types the plugin declared.

What it leaves out is the check lifecycle's work (:mod:`pyplugins.checker.lifecycle`): clones,
every format combination, CUDA-graph capture, the serialize round trip, guarded buffers, a fresh
process. A callback that fails raises :class:`ExecutionError` naming the plugin, the node and the
method, with the ``[ERROR]`` line TensorRT would print, instead of a fallback value that would
give a silently wrong result. Size tensors (V3 data-dependent output shapes) are not run here.

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

import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins import dtypes
from pyplugins.emulator import trampoline
from pyplugins.emulator import trampoline_v3 as tv3
from pyplugins.emulator.bases_v3 import IPluginCreatorV3One
from pyplugins.emulator.descs import DynamicPluginTensorDesc, PluginTensorDesc
from pyplugins.emulator.dims import DimsExprs, IExprBuilder
from pyplugins.emulator.enums import DataType, PluginCapabilityType, TensorFormat, TensorRTPhase
from pyplugins.emulator.onnx_import import fields_from_attributes
from pyplugins.emulator.plugin_field import PluginFieldCollection, PluginFieldCollection_
from pyplugins.emulator.specs import host_dtype
from pyplugins.errors import PyPluginsError
from pyplugins.runtime.device import import_cupy, no_device_reason

__all__ = ["Execution", "ExecutionError"]

_LOG = logging.getLogger("pyplugins")

#: Types TensorRT never gives an IPluginV2DynamicExt (NvInferRuntimePlugin.h, PluginTensorDesc).
_V2_REFUSED = (DataType.BOOL, DataType.UINT8)


class ExecutionError(PyPluginsError, RuntimeError):
    """A plugin node could not run on the execution path.

    A callback raised or returned what TensorRT cannot use (the message carries the ``[ERROR]``
    line TensorRT prints), the plugin refuses the tensors it is given, or there is no way to
    produce outputs here (no GPU and no NumPy reference).

    Attributes:
        plugin: ``"Name:Version:Namespace"`` of the creator.
        node: the node's name (what ``create_plugin`` received).
        method: the callback that failed, or None when none did.

    Example:
        >>> err = ExecutionError("boom", plugin="X:1:", node="n", method="enqueue")
        >>> isinstance(err, RuntimeError), err.method
        (True, 'enqueue')
    """

    def __init__(self, message: str, *, plugin: str = "", node: str = "",
                 method: Optional[str] = None) -> None:
        super().__init__(message)
        self.plugin, self.node, self.method = plugin, node, method


class _Failures:
    """A trampoline listener, subscribed inside ``with``: the ``[ERROR]`` lines of those calls."""

    def __init__(self) -> None:
        self.lines: List[Tuple[str, str]] = []

    def __call__(self, event: Any) -> None:
        if event.error is not None:
            self.lines.append((event.method, event.error))

    def __enter__(self) -> "_Failures":
        trampoline.listeners.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        trampoline.listeners.remove(self)


class _Builder(IExprBuilder):
    """The ``IExprBuilder`` of the execution path: inputs are constants (concrete shapes)."""

    def declare_size_tensor(self, output_index: int, opt: Any, upper: Any) -> Any:
        msg = (f"declare_size_tensor({output_index}, ...): the execution path does not run "
               "plugins with data-dependent output shapes (size tensors); use the check "
               "lifecycle (pyplugins check, or pp.run(..., check=True)) for them")
        raise RuntimeError(msg)


@dataclass
class _Ready:
    """One configured plugin, for one input signature: all ``enqueue`` and the reference need."""

    owner: Any
    enqueue: Callable[[List[int], List[int], int, int], int]
    out_shapes: List[Tuple[int, ...]]
    out_dtypes: List[np.dtype]
    reference: Optional[Callable[..., Any]]
    teardown: Callable[[], None]
    workspace: int = 0
    ws_buffer: Any = None


def _pick_device(device: str) -> Tuple[Any, Optional[str]]:
    """``(cupy or None, why the reference runs instead of enqueue)``."""
    if device not in ("auto", "cpu", "gpu", "cuda"):
        msg = f"device must be 'auto', 'cpu' or 'gpu' (got {device!r})"
        raise ValueError(msg)
    if device == "cpu":
        return None, "device='cpu' was asked for"
    reason = no_device_reason()
    if reason is None:
        return import_cupy(), None
    if device != "auto":
        msg = f"device={device!r} was asked for, but there is {reason}"
        raise ExecutionError(msg)
    return None, reason


def _collection(creator: Any, fields: Any) -> Tuple[PluginFieldCollection_, List[str]]:
    """``create_plugin``'s ``fc``: a ready collection as it is, attributes as the parser builds it."""
    if isinstance(fields, PluginFieldCollection_):
        return fields, []
    if isinstance(fields, PluginFieldCollection):
        return PluginFieldCollection_(fields), []
    return fields_from_attributes(fields or {}, creator.field_names)


def _reference_of(plugin: Any) -> Optional[Callable[..., Any]]:
    """The plugin's ``reference`` method; pp's V3 adapter holds the user's plugin as ``.plugin``."""
    for candidate in (plugin, getattr(plugin, "plugin", None)):
        ref = getattr(candidate, "reference", None)
        if callable(ref):
            return ref
    return None


class Execution:
    """One plugin node, run on arrays (see the module docstring).

    Args:
        creator: the registered creator (``IPluginCreator`` or ``IPluginCreatorV3One``).
        fields: node attributes (Python values or ``onnx.AttributeProto``, converted as TensorRT's
            ONNX parser converts them) or a ready ``PluginFieldCollection_``.
        node_name: the node's name, passed to ``create_plugin`` and named in errors.
        device: ``"auto"`` (``enqueue`` when CuPy sees a GPU, else the reference), ``"cpu"``
            (the reference) or ``"gpu"`` (``enqueue``, or :class:`ExecutionError` now).

    Attributes:
        how: ``"kernel"`` (``enqueue`` on the GPU) or ``"reference"`` (the NumPy reference).
        why: for ``"reference"``, why ``enqueue`` does not run; else None.
        warnings: what TensorRT's ONNX parser would warn about the fields.

    Raises:
        ValueError: an unknown ``device``; FieldError: an attribute the parser refuses.
    """

    def __init__(self, creator: Any, fields: Any = None, *, node_name: str = "plugin_node",
                 device: str = "auto") -> None:
        self.creator, self.node_name = creator, node_name
        self.plugin = f"{creator.name}:{creator.plugin_version}:{creator.plugin_namespace}"
        self.label = f"plugin node {node_name!r} ({creator.name})"
        self.fc, self.warnings = _collection(creator, fields)
        self.v3 = isinstance(creator, IPluginCreatorV3One)
        self._cp, self.why = _pick_device(device)
        self.how = "reference" if self._cp is None else "kernel"
        self._ready: Dict[Any, _Ready] = {}
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
            msg = (f"{self.label}: input {bad} must be a NumPy or CuPy array (got a "
                   f"{type(arrays[bad]).__name__}); wrap it with np.asarray(...)")
            raise TypeError(msg) from None
        values = tuple(tuple(int(v) for v in s) for s in shape_inputs)
        ready = self._ready.get((signature, values))
        if ready is None:
            ready = self._ready[(signature, values)] = self._configure(arrays, values)
        if self._cp is None:
            return self._run_reference(ready, arrays)
        return self._run_kernel(ready, arrays)

    def close(self) -> None:
        """Destroy every configured plugin (``terminate``/``destroy``, as TensorRT at the end)."""
        ready, self._ready = list(self._ready.values()), {}
        for entry in ready:
            entry.teardown()

    # -- errors ---------------------------------------------------------------------------------
    def _error(self, method: Optional[str], detail: str) -> ExecutionError:
        return ExecutionError(f"{self.label}: {detail}", plugin=self.plugin, node=self.node_name,
                              method=method)

    def _check(self, failures: _Failures, failed: bool = False, method: str = "",
               what: str = "") -> None:
        """Raise for the first ``[ERROR]`` line seen, or for ``failed`` (``method``, ``what``)."""
        if failures.lines:
            where, line = failures.lines[0]
            raise self._error(where, f"{where}() failed on the execution path (TensorRT prints "
                              f"this line and fails, or goes on with a fallback value):\n{line}")
        if failed:
            raise self._error(method or None, f"{method} {what}")

    # -- set-up, once per input signature ------------------------------------------------------
    def _configure(self, arrays: Sequence[Any], shape_values: Tuple[Tuple[int, ...], ...]
                   ) -> _Ready:
        shapes = [tuple(int(d) for d in a.shape) for a in arrays]
        in_types = []
        for k, a in enumerate(arrays):
            try:
                in_types.append(DataType[dtypes.trt_name_from_numpy(a.dtype)])
            except TypeError as err:
                raise self._error(None, f"input {k}: {err}") from None
        if _LOG.isEnabledFor(logging.DEBUG):
            _LOG.debug("%s: configuring for inputs %s", self.label,
                       [(s, t.name) for s, t in zip(shapes, in_types)])
        if shape_values and not self.v3:
            raise self._error(None, "shape inputs are an IPluginV3 feature; this creator makes "
                              "IPluginV2DynamicExt plugins")
        setup = self._setup_v3 if self.v3 else self._setup_v2
        with _Failures() as failures:
            ready = setup(shapes, in_types, shape_values, failures)
        if self._cp is not None and ready.workspace > 0:
            ready.ws_buffer = self._cp.empty(ready.workspace, dtype=np.uint8)
        return ready

    def _out_shapes(self, out_exprs: Sequence[Any], method: str) -> List[Tuple[int, ...]]:
        """Each output's dims: constants, since every input dim is (static shapes)."""
        result = []
        for i, exprs in enumerate(out_exprs):
            dims = []
            for d, expr in enumerate(exprs):
                value = None if expr is None or not expr.is_constant() else expr.get_constant_value()
                if value is None or value < 0:
                    what = ("left it empty (DimsExprs(n) has n empty slots to fill)" if expr is None
                            else f"gave {expr!r}, not a dimension >= 0 at these input shapes")
                    raise self._error(method, f"{method} gave output {i} an invalid dim {d}: it "
                                      f"{what}")
                dims.append(value)
            result.append(tuple(dims))
        return result

    def _out_dtypes(self, out_types: Sequence[DataType]) -> List[np.dtype]:
        found = []
        for j, t in enumerate(out_types):
            dt = host_dtype(t)
            if dt is None:
                raise self._error(None, f"output {j} is {t.name}, which NumPy and CuPy cannot "
                                  "hold, so the execution path cannot give it back")
            found.append(dt)
        return found

    def _formats(self, ask: Callable[..., bool], obj: Any, in_out: List[Any], n_in: int,
                 types: Sequence[DataType], failures: _Failures) -> None:
        """Offer the one combination, position by position, as the builder's search does (§2.1)."""
        for pos in range(len(in_out)):
            ok = ask(obj, pos, list(in_out), n_in)
            self._check(failures)
            if not ok:
                kind, k = ("input", pos) if pos < n_in else ("output", pos - n_in)
                got = ", ".join(t.name for t in types)
                raise self._error("supports_format_combination", (
                    f"supports_format_combination refused {kind} {k} as {types[pos].name} LINEAR "
                    f"(pos {pos}; the combination is {got}, all LINEAR). The execution path "
                    "runs every tensor LINEAR in the network's types (the inputs' dtypes, "
                    "get_output_datatype's for the outputs): accept that combination, or cast "
                    "the inputs; `pyplugins check` lists the combinations the plugin accepts."))

    def _setup_v2(self, shapes: List[Tuple[int, ...]], in_types: List[DataType],
                  shape_values: Any, failures: _Failures) -> _Ready:
        plugin = trampoline.create_plugin(self.creator, self.node_name, self.fc)
        self._check(failures, plugin is None, "create_plugin", "returned no plugin")
        initialized = False

        def teardown() -> None:
            if initialized:
                trampoline.terminate(plugin)
            trampoline.destroy(plugin)

        try:
            n_out = trampoline.get_nb_outputs(plugin)
            self._check(failures, n_out < 0, "num_outputs", "is not set on the plugin (set it "
                        "in __init__)")
            out_types = [trampoline.get_output_data_type(plugin, i, in_types)
                         for i in range(n_out)]
            self._check(failures)
            bad = [(k, t.name) for k, t in enumerate(in_types + out_types) if t in _V2_REFUSED]
            if bad:
                raise self._error(None, f"tensors (in_out index, type) {bad}: TensorRT gives no "
                                  "IPluginV2DynamicExt BOOL or UINT8 tensors; cast around the "
                                  "plugin, or write an IPluginV3 plugin")
            builder = _Builder()
            exprs = [DimsExprs([builder.constant(d) for d in s]) for s in shapes]
            out_exprs = [trampoline.get_output_dimensions(plugin, i, exprs, builder)
                         for i in range(n_out)]
            self._check(failures)
            out_shapes = self._out_shapes(out_exprs, "get_output_dimensions")
            types = in_types + out_types
            plain = [PluginTensorDesc(s, t, TensorFormat.LINEAR, -1.0)
                     for s, t in zip(shapes + out_shapes, types)]
            self._formats(trampoline.supports_format_combination, plugin, plain, len(shapes),
                          types, failures)
            dyn = [DynamicPluginTensorDesc(d, d.dims, d.dims, d.dims) for d in plain]
            n_in = len(shapes)
            # The builder's object: build-phase configure, initialize, execution-phase configure
            # (static shapes: the same descriptors), then the workspace size (§2.3, "Build").
            trampoline.configure_plugin(plugin, dyn[:n_in], dyn[n_in:])
            self._check(failures)
            initialized = trampoline.initialize(plugin) == 0
            self._check(failures, not initialized, "initialize", "failed")
            trampoline.configure_plugin(plugin, dyn[:n_in], dyn[n_in:])
            in_desc, out_desc = plain[:n_in], plain[n_in:]
            workspace = trampoline.get_workspace_size(plugin, in_desc, out_desc)
            self._check(failures)
        except BaseException:
            teardown()
            raise

        def enqueue(i: List[int], o: List[int], w: int, s: int) -> int:
            return trampoline.enqueue(plugin, in_desc, out_desc, i, o, w, s)

        return _Ready(plugin, enqueue, out_shapes, self._out_dtypes(out_types),
                      _reference_of(plugin), teardown, workspace)

    def _setup_v3(self, shapes: List[Tuple[int, ...]], in_types: List[DataType],
                  shape_values: Tuple[Tuple[int, ...], ...], failures: _Failures) -> _Ready:
        plugin = tv3.create_plugin(self.creator, self.node_name, list(self.fc),
                                   TensorRTPhase.BUILD)
        self._check(failures, plugin is None, "create_plugin", "returned no plugin")
        try:
            caps = {}
            for kind in (PluginCapabilityType.CORE, PluginCapabilityType.BUILD,
                         PluginCapabilityType.RUNTIME):
                caps[kind] = tv3.get_capability_interface(plugin, kind)
                self._check(failures, caps[kind] is None, "get_capability_interface",
                            f"gave no {kind.name} capability object")
            build, runtime = caps[PluginCapabilityType.BUILD], caps[PluginCapabilityType.RUNTIME]
            n_out = tv3.get_nb_outputs(build)
            self._check(failures, n_out < 0, "num_outputs", "is not set on the plugin (set it "
                        "in __init__)")
            out_types = tv3.get_output_data_types(build, in_types)
            self._check(failures, out_types is None, "get_output_data_types",
                        f"did not give a list of {n_out} DataType (see the [ERROR] line above)")
            builder = _Builder()
            exprs = [DimsExprs([builder.constant(d) for d in s]) for s in shapes]
            shape_exprs = [DimsExprs([builder.constant(v) for v in values])
                           for values in shape_values]
            out_exprs = tv3.get_output_shapes(build, exprs, shape_exprs, builder)
            self._check(failures, out_exprs is None, "get_output_shapes",
                        f"did not give a list of {n_out} DimsExprs (see the [ERROR] line above)")
            out_shapes = self._out_shapes(out_exprs, "get_output_shapes")
            types = list(in_types) + list(out_types)
            plain = [PluginTensorDesc(s, t, TensorFormat.LINEAR, -1.0)
                     for s, t in zip(shapes + out_shapes, types)]
            dyn = [DynamicPluginTensorDesc(d, d.dims, d.dims, d.dims) for d in plain]
            n_in = len(shapes)
            self._formats(tv3.supports_format_combination, build, dyn, n_in, types, failures)
            # The builder's steps for one candidate (§2.5, step 4), with the first tactic offered.
            status = tv3.configure_plugin(build, dyn[:n_in], dyn[n_in:])
            self._check(failures, status != 0, "configure_plugin", "failed")
            tactics = tv3.get_valid_tactics(build)
            self._check(failures, tactics is None, "get_valid_tactics", "failed")
            status = tv3.set_tactic(runtime, tactics[0] if tactics else 0)
            self._check(failures, status != 0, "set_tactic", "failed")
            in_desc, out_desc = plain[:n_in], plain[n_in:]
            status = tv3.on_shape_change(runtime, in_desc, out_desc)
            self._check(failures, status != 0, "on_shape_change", "failed")
            workspace = tv3.get_workspace_size(build, dyn[:n_in], dyn[n_in:])
            self._check(failures)
        except BaseException:
            tv3.destroy(plugin)
            raise

        def enqueue(i: List[int], o: List[int], w: int, s: int) -> int:
            return tv3.enqueue(runtime, in_desc, out_desc, i, o, w, s)

        return _Ready(plugin, enqueue, out_shapes, self._out_dtypes(out_types),
                      _reference_of(plugin), lambda: tv3.destroy(plugin), workspace)

    # -- each call ------------------------------------------------------------------------------
    def _run_reference(self, ready: _Ready, arrays: Sequence[Any]) -> List[np.ndarray]:
        if ready.reference is None:
            raise self._error(None, (
                f"enqueue did not run ({self.why}) and the plugin defines no NumPy "
                "reference(self, *inputs) to stand in for it; run on a machine with a CUDA GPU "
                "visible to CuPy, or give the plugin class a reference method."))
        try:
            result = ready.reference(*arrays)
        except Exception as err:
            raise self._error("reference", "reference() raised (it stands in for enqueue here, "
                              f"{self.why}): {trampoline.what(err)}") from err
        outs = list(result) if isinstance(result, (tuple, list)) else [result]
        got = [(tuple(np.shape(o)), np.asarray(o).dtype) for o in outs]
        want = list(zip(ready.out_shapes, ready.out_dtypes))
        if got != want:
            raise self._error("reference", (
                f"its reference() returned {got} (shape, dtype per output) but the plugin "
                f"declared {want} to the builder; the two must agree."))
        return [np.asarray(o) for o in outs]

    def _run_kernel(self, ready: _Ready, arrays: Sequence[Any]) -> List[Any]:
        cp = self._cp
        if self._stream is None:
            self._stream = cp.cuda.Stream()  # blocking, non-default: an application's stream
        stream = self._stream
        on_device = not all(isinstance(a, np.ndarray) for a in arrays)
        if on_device:  # inputs made on the caller's stream come first
            stream.wait_event(cp.cuda.get_current_stream().record())
        with stream:
            ins = [cp.ascontiguousarray(cp.asarray(a)) for a in arrays]
            outs = [cp.empty(s, dtype=d) for s, d in zip(ready.out_shapes, ready.out_dtypes)]
        ws = 0 if ready.ws_buffer is None else int(ready.ws_buffer.data.ptr)
        with _Failures() as failures:
            status = ready.enqueue([int(a.data.ptr) for a in ins], [int(o.data.ptr) for o in outs],
                                   ws, int(stream.ptr))
        self._check(failures, status != 0, "enqueue", "failed")
        if on_device:  # the caller's stream reads the outputs after this one wrote them
            cp.cuda.get_current_stream().wait_event(stream.record())
            return outs
        host = [cp.asnumpy(o, stream=stream) for o in outs]
        stream.synchronize()
        return host
