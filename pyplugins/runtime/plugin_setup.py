"""Set one plugin up for one input signature, as TensorRT's builder sets up the plugin it times.

:class:`PluginSetup` is the set-up half of the execution path
(:class:`pyplugins.runtime.execute.Execution`). Through the emulator's trampolines, so every call
has TensorRT's arguments and error channel, it makes one plugin and gives it the builder's calls
for one candidate (docs/trt-protocol.md §2.3 "Build" for V2, §2.5 step 4 for V3), on concrete
shapes: create the plugin from the fields; its output types, and its output shapes evaluated on
the input shapes (all constants); ``supports_format_combination`` for ONE combination (every
tensor LINEAR in the network's types: execution, not exploration); then V2 ``configure_plugin``,
``initialize``, ``configure_plugin`` at the concrete shapes, ``get_workspace_size``; V3
``configure_plugin``, the first of ``get_valid_tactics``, ``set_tactic``, ``on_shape_change``,
``get_workspace_size``. The result is a :class:`Ready`: what ``enqueue`` and the NumPy reference
need. Every ``[ERROR]`` line and every fallback value TensorRT would go on with raises
:class:`~pyplugins.errors.ExecutionError` naming the plugin, the node and the method.

Example:
    >>> import numpy as np
    >>> from pyplugins.ops.leaky_relu import LeakyReLU
    >>> setup = PluginSetup(LeakyReLU.creator, "lrelu", PluginFieldCollection_([]))
    >>> ready = setup.configure([(2, 3)], [np.dtype(np.float16)], ())
    >>> ready.out_shapes, ready.out_dtypes
    ([(2, 3)], [dtype('float16')])
    >>> ready.teardown()
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins import dtypes
from pyplugins.emulator import trampoline
from pyplugins.emulator import trampoline_v3 as tv3
from pyplugins.emulator.bases_v3 import IPluginCreatorV3One
from pyplugins.emulator.descs import DynamicPluginTensorDesc, PluginTensorDesc
from pyplugins.emulator.dims import DimsExprs, IExprBuilder
from pyplugins.emulator.enums import DataType, PluginCapabilityType, TensorFormat, TensorRTPhase
from pyplugins.emulator.plugin_field import PluginFieldCollection_
from pyplugins.emulator.specs import host_dtype
from pyplugins.errors import ExecutionError

__all__ = ["CallFailures", "ConstantBuilder", "NodeCalls", "PluginSetup", "Ready",
           "output_dtypes"]

_LOG = logging.getLogger("pyplugins")

#: Types TensorRT never gives an IPluginV2DynamicExt (NvInferRuntimePlugin.h, PluginTensorDesc).
_V2_REFUSED = (DataType.BOOL, DataType.UINT8)


def output_dtypes(out_types: Sequence[DataType], error: Callable[[Any, str], Exception]
                  ) -> List[np.dtype]:
    """The NumPy dtype of each output type, or ``error(None, message)`` raised for a type that
    NumPy and CuPy cannot hold (the execution path could not give that output back).

    Example:
        >>> from pyplugins import trt
        >>> output_dtypes([trt.DataType.HALF], lambda method, msg: ValueError(msg))
        [dtype('float16')]
    """
    found = []
    for j, t in enumerate(out_types):
        dt = host_dtype(t)
        if dt is None:
            raise error(None, f"output {j} is {t.name}, which NumPy and CuPy cannot hold, so "
                        "the execution path cannot give it back")
        found.append(dt)
    return found


class CallFailures:
    """A trampoline listener, subscribed inside ``with``: the ``[ERROR]`` lines of those calls.

    Example:
        >>> with CallFailures() as failures:
        ...     pass
        >>> failures.lines
        []
    """

    def __init__(self) -> None:
        self.lines: List[Tuple[str, str]] = []

    def __call__(self, event: Any) -> None:
        if event.error is not None:
            self.lines.append((event.method, event.error))

    def __enter__(self) -> "CallFailures":
        trampoline.listeners.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        trampoline.listeners.remove(self)


class ConstantBuilder(IExprBuilder):
    """The ``IExprBuilder`` of the execution path: inputs are constants (concrete shapes), and
    ``declare_size_tensor`` raises (size tensors are not run there; the check runs them).

    Example:
        >>> eb = ConstantBuilder()
        >>> eb.constant(3).get_constant_value()
        3
    """

    def declare_size_tensor(self, output_index: int, opt: Any, upper: Any) -> Any:
        msg = (f"declare_size_tensor({output_index}, ...): the execution path does not run "
               "plugins with data-dependent output shapes (size tensors); use the check "
               "lifecycle (pyplugins check, or pp.run(..., check=True)) for them")
        raise RuntimeError(msg)


def _reference_of(plugin: Any) -> Optional[Callable[..., Any]]:
    """The plugin's ``reference`` method; pp's V3 adapter holds the user's plugin as ``.plugin``."""
    for candidate in (plugin, getattr(plugin, "plugin", None)):
        ref = getattr(candidate, "reference", None)
        if callable(ref):
            return ref
    return None


@dataclass
class Ready:
    """One configured plugin, for one input signature.

    Attributes:
        owner: the plugin object (V3: the plugin, whose RUNTIME capability ``enqueue`` reaches).
        enqueue: ``(input pointers, output pointers, workspace, stream) -> 0 or -1``, through the
            trampoline with the descriptors of the signature.
        out_shapes, out_dtypes: per output, its shape and the NumPy dtype holding it.
        reference: the plugin's NumPy ``reference`` method, or None.
        teardown: ``terminate`` (V2, when initialized) and ``destroy``, as TensorRT at the end.
        workspace: bytes of workspace ``get_workspace_size`` asked for.
        ws_buffer: the device workspace, kept with the plugin (set by the caller).
    """

    owner: Any
    enqueue: Callable[[List[int], List[int], int, int], int]
    out_shapes: List[Tuple[int, ...]]
    out_dtypes: List[np.dtype]
    reference: Optional[Callable[..., Any]]
    teardown: Callable[[], None]
    workspace: int = 0
    ws_buffer: Any = None


class NodeCalls:
    """One plugin node on the execution path: its names, and the errors its callbacks raise
    there (the base of :class:`PluginSetup` and the model runner's QDP set-up).

    Attributes:
        creator, node_name: as given.
        plugin: ``"Name:Version:Namespace"`` of the creator.
        plugin_id: ``"namespace::name"``, as ``tensorrt.plugin`` names a plugin.
        label: ``"plugin node 'name' (Name)"``, the start of every error message.

    Example:
        >>> from pyplugins.ops.leaky_relu import LeakyReLU
        >>> print(NodeCalls(LeakyReLU.creator, "n1").error("enqueue", "failed"))
        plugin node 'n1' (LReLU_TRT): failed
    """

    #: What TensorRT does after a callback's ``[ERROR]`` line on this path, for the message.
    consequence = "TensorRT prints this line and fails, or goes on with a fallback value"

    def __init__(self, creator: Any, node_name: str) -> None:
        self.creator, self.node_name = creator, node_name
        self.plugin = f"{creator.name}:{creator.plugin_version}:{creator.plugin_namespace}"
        self.plugin_id = f"{creator.plugin_namespace}::{creator.name}"
        self.label = f"plugin node {node_name!r} ({creator.name})"

    def error(self, method: Optional[str], detail: str) -> ExecutionError:
        """An :class:`ExecutionError` about this node (``method``: the callback, or None)."""
        return ExecutionError(f"{self.label}: {detail}", plugin=self.plugin, node=self.node_name,
                              method=method)

    def input_types(self, np_dtypes: Sequence[Any]) -> List[DataType]:
        """TensorRT's type of each input dtype.

        Raises:
            ExecutionError: a dtype TensorRT has no type for, naming the input.
        """
        out = []
        for k, dt in enumerate(np_dtypes):
            try:
                out.append(DataType[dtypes.trt_name_from_numpy(dt)])
            except TypeError as err:
                raise self.error(None, f"input {k}: {err}") from None
        return out

    def check(self, failures: CallFailures, failed: bool = False, method: str = "",
              what: str = "") -> None:
        """Raise for the first ``[ERROR]`` line seen, or for ``failed`` (``method`` ``what``)."""
        if failures.lines:
            where, line = failures.lines[0]
            raise self.error(where, f"{where}() failed on the execution path "
                             f"({self.consequence}):\n{line}")
        if failed:
            raise self.error(method or None, f"{method} {what}")


class PluginSetup(NodeCalls):
    """Makes configured plugins of one creator, node and field collection (module docstring).

    Args:
        creator: the registered creator (``IPluginCreator`` or ``IPluginCreatorV3One``).
        node_name: the node's name, passed to ``create_plugin`` and named in errors.
        fc: the field collection ``create_plugin`` receives.

    Attributes:
        plugin: ``"Name:Version:Namespace"`` of the creator.
        label: ``"plugin node 'name' (Name)"``, the start of every error message.
    """

    def __init__(self, creator: Any, node_name: str, fc: PluginFieldCollection_) -> None:
        super().__init__(creator, node_name)
        self.fc = fc
        self.v3 = isinstance(creator, IPluginCreatorV3One)

    def configure(self, shapes: Sequence[Tuple[int, ...]], np_dtypes: Sequence[Any],
                  shape_values: Tuple[Tuple[int, ...], ...]) -> Ready:
        """A new plugin, configured for inputs of ``shapes`` and ``np_dtypes`` (and V3 shape
        inputs of ``shape_values``).

        Raises:
            ExecutionError: a dtype TensorRT has no type for, shape inputs for a V2 plugin, or
                a callback that failed or gave what TensorRT cannot use.
        """
        in_types = self.input_types(np_dtypes)
        if shape_values and not self.v3:
            raise self.error(None, "shape inputs are an IPluginV3 feature; this creator makes "
                             "IPluginV2DynamicExt plugins")
        if _LOG.isEnabledFor(logging.DEBUG):
            _LOG.debug("%s: configuring for inputs %s", self.label,
                       [(s, t.name) for s, t in zip(shapes, in_types)])
        setup = self._v3 if self.v3 else self._v2
        with CallFailures() as failures:
            return setup(list(shapes), in_types, shape_values, failures)

    def _out_shapes(self, out_exprs: Sequence[Any], method: str) -> List[Tuple[int, ...]]:
        """Each output's dims: constants, since every input dim is (static shapes)."""
        result = []
        for i, exprs in enumerate(out_exprs):
            dims = []
            for d, expr in enumerate(exprs):
                constant = expr is not None and expr.is_constant()
                value = expr.get_constant_value() if constant else None
                if value is None or value < 0:
                    what = ("left it empty (DimsExprs(n) has n empty slots to fill)" if expr is None
                            else f"gave {expr!r}, not a dimension >= 0 at these input shapes")
                    raise self.error(method, f"{method} gave output {i} an invalid dim {d}: it "
                                     f"{what}")
                dims.append(value)
            result.append(tuple(dims))
        return result

    def _formats(self, ask: Callable[..., bool], obj: Any, in_out: List[Any], n_in: int,
                 types: Sequence[DataType], failures: CallFailures) -> None:
        """Offer the one combination, position by position, as the builder's search does (§2.1)."""
        for pos in range(len(in_out)):
            ok = ask(obj, pos, list(in_out), n_in)
            self.check(failures)
            if not ok:
                kind, k = ("input", pos) if pos < n_in else ("output", pos - n_in)
                got = ", ".join(t.name for t in types)
                raise self.error("supports_format_combination", (
                    f"supports_format_combination refused {kind} {k} as {types[pos].name} LINEAR "
                    f"(pos {pos}; the combination is {got}, all LINEAR). The execution path "
                    "runs every tensor LINEAR in the network's types (the inputs' dtypes, "
                    "get_output_datatype's for the outputs): accept that combination, or cast "
                    "the inputs; `pyplugins check` lists the combinations the plugin accepts."))

    def _v2(self, shapes: List[Tuple[int, ...]], in_types: List[DataType], shape_values: Any,
            failures: CallFailures) -> Ready:
        plugin = trampoline.create_plugin(self.creator, self.node_name, self.fc)
        self.check(failures, plugin is None, "create_plugin", "returned no plugin")
        initialized = False

        def teardown() -> None:
            if initialized:
                trampoline.terminate(plugin)
            trampoline.destroy(plugin)

        try:
            n_out = trampoline.get_nb_outputs(plugin)
            self.check(failures, n_out < 0, "num_outputs", "is not set on the plugin (set it "
                       "in __init__)")
            out_types = [trampoline.get_output_data_type(plugin, i, in_types)
                         for i in range(n_out)]
            self.check(failures)
            bad = [(k, t.name) for k, t in enumerate(in_types + out_types) if t in _V2_REFUSED]
            if bad:
                raise self.error(None, f"tensors (in_out index, type) {bad}: TensorRT gives no "
                                 "IPluginV2DynamicExt BOOL or UINT8 tensors; cast around the "
                                 "plugin, or write an IPluginV3 plugin")
            builder = ConstantBuilder()
            exprs = [DimsExprs([builder.constant(d) for d in s]) for s in shapes]
            out_exprs = [trampoline.get_output_dimensions(plugin, i, exprs, builder)
                         for i in range(n_out)]
            self.check(failures)
            out_shapes = self._out_shapes(out_exprs, "get_output_dimensions")
            types = in_types + out_types
            plain = [PluginTensorDesc(s, t, TensorFormat.LINEAR, -1.0)
                     for s, t in zip(shapes + out_shapes, types)]
            n_in = len(shapes)
            self._formats(trampoline.supports_format_combination, plugin, plain, n_in, types,
                          failures)
            dyn = [DynamicPluginTensorDesc(d, d.dims, d.dims, d.dims) for d in plain]
            # The builder's object: build-phase configure, initialize, execution-phase configure
            # (static shapes: the same descriptors), then the workspace size (§2.3, "Build").
            trampoline.configure_plugin(plugin, dyn[:n_in], dyn[n_in:])
            self.check(failures)
            initialized = trampoline.initialize(plugin) == 0
            self.check(failures, not initialized, "initialize", "failed")
            trampoline.configure_plugin(plugin, dyn[:n_in], dyn[n_in:])
            in_desc, out_desc = plain[:n_in], plain[n_in:]
            workspace = trampoline.get_workspace_size(plugin, in_desc, out_desc)
            self.check(failures)
            out_dtypes = output_dtypes(out_types, self.error)
        except BaseException:
            teardown()
            raise

        def enqueue(i: List[int], o: List[int], w: int, s: int) -> int:
            return trampoline.enqueue(plugin, in_desc, out_desc, i, o, w, s)

        return Ready(plugin, enqueue, out_shapes, out_dtypes, _reference_of(plugin), teardown,
                     workspace)

    def _v3(self, shapes: List[Tuple[int, ...]], in_types: List[DataType],
            shape_values: Tuple[Tuple[int, ...], ...], failures: CallFailures) -> Ready:
        plugin = tv3.create_plugin(self.creator, self.node_name, list(self.fc),
                                   TensorRTPhase.BUILD)
        self.check(failures, plugin is None, "create_plugin", "returned no plugin")
        try:
            caps = {}
            for kind in (PluginCapabilityType.CORE, PluginCapabilityType.BUILD,
                         PluginCapabilityType.RUNTIME):
                caps[kind] = tv3.get_capability_interface(plugin, kind)
                self.check(failures, caps[kind] is None, "get_capability_interface",
                           f"gave no {kind.name} capability object")
            build, runtime = caps[PluginCapabilityType.BUILD], caps[PluginCapabilityType.RUNTIME]
            n_out = tv3.get_nb_outputs(build)
            self.check(failures, n_out < 0, "num_outputs", "is not set on the plugin (set it "
                       "in __init__)")
            out_types = tv3.get_output_data_types(build, in_types)
            self.check(failures, out_types is None, "get_output_data_types",
                       f"did not give a list of {n_out} DataType (see the [ERROR] line above)")
            builder = ConstantBuilder()
            exprs = [DimsExprs([builder.constant(d) for d in s]) for s in shapes]
            shape_exprs = [DimsExprs([builder.constant(v) for v in values])
                           for values in shape_values]
            out_exprs = tv3.get_output_shapes(build, exprs, shape_exprs, builder)
            self.check(failures, out_exprs is None, "get_output_shapes",
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
            self.check(failures, status != 0, "configure_plugin", "failed")
            tactics = tv3.get_valid_tactics(build)
            self.check(failures, tactics is None, "get_valid_tactics", "failed")
            status = tv3.set_tactic(runtime, tactics[0] if tactics else 0)
            self.check(failures, status != 0, "set_tactic", "failed")
            in_desc, out_desc = plain[:n_in], plain[n_in:]
            status = tv3.on_shape_change(runtime, in_desc, out_desc)
            self.check(failures, status != 0, "on_shape_change", "failed")
            workspace = tv3.get_workspace_size(build, dyn[:n_in], dyn[n_in:])
            self.check(failures)
            out_dtypes = output_dtypes(out_types, self.error)
        except BaseException:
            tv3.destroy(plugin)
            raise

        def enqueue(i: List[int], o: List[int], w: int, s: int) -> int:
            return tv3.enqueue(runtime, in_desc, out_desc, i, o, w, s)

        return Ready(plugin, enqueue, out_shapes, out_dtypes, _reference_of(plugin),
                     lambda: tv3.destroy(plugin), workspace)
