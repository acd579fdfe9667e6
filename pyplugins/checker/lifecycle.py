"""Drive a V2 plugin through one ONNX import, one engine build and one run, as TensorRT does.

:func:`run` follows docs/trt-protocol.md §2.3, object by object (P0 = creator output,
P1 = ``add_plugin_v2``'s clone, P2 = the builder's clone, Pd = deserialized, Pc = the execution
context's clone), through the trampoline (:mod:`pyplugins.emulator.trampoline`), so every call
has TensorRT's arguments, error channel and fallbacks. The network is strongly typed (always so in
11.x; pyplugins builds strongly typed networks on 10.x too): inputs keep their declared types and
outputs the types ``get_output_datatype`` returned. Along the way it calls the checks of
:mod:`pyplugins.checker.checks` and reports what it found in a :class:`LifecycleReport`; a
misbehaving plugin never makes :func:`run` raise. Without a GPU everything up to ``enqueue`` runs,
and no input data is made (it would never be read). Each run is isolated: the trampoline's
listeners are per thread, so runs in many threads at once report what sequential runs do. Sizes
are bounded (``knobs.max_tensor_bytes``, ``knobs.max_outputs``) and a limit hit says which.

This module is the order of TensorRT's calls; the pieces live beside it: the inputs
(:mod:`~pyplugins.emulator.specs`), the run's creator, fields, device and size limits
(:mod:`~pyplugins.checker.run_setup`), the tensors' shapes and descriptors
(:mod:`~pyplugins.emulator.tensors`), the builder's format search
(:mod:`~pyplugins.checker.format_search`), the runtime ``enqueue``
(:mod:`~pyplugins.checker.runtime_enqueue`), the checks (:mod:`~pyplugins.checker.checks`, one
module per concern) and the report
(:mod:`~pyplugins.checker.lifecycle_report`).

Example:
    >>> spec = TensorSpec.parse("1-2-4x3x8x8:float16")
    >>> spec.shape, spec.min, spec.opt, spec.max, spec.datatype.name
    ((-1, 3, 8, 8), (1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8), 'HALF')
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from pyplugins import dtypes
from pyplugins._config import knobs
from pyplugins.checker import _fresh, buffers, discovery, host_buffers, runtime_enqueue
from pyplugins.emulator import trampoline
from pyplugins.emulator.bases_quick import IPluginCreatorV3Quick
from pyplugins.emulator.bases_v3 import IPluginCreatorV3One
from pyplugins.checker.checks import Violation, pybind
from pyplugins.checker.checks.fresh_process import fresh_violations
from pyplugins.checker.checks.kernels import kernel_violations
from pyplugins.checker.checks.recorder import Recorder
from pyplugins.checker.checks.serialization import serialization_violations
from pyplugins.emulator.dims import IExprBuilder
from pyplugins.checker.format_search import choose_formats, search_formats
from pyplugins.checker.lifecycle_report import LifecycleReport
from pyplugins.checker.lifecycle_v3 import DriverV3
from pyplugins.checker.parser_notes import missing_attribute_note
from pyplugins.emulator.registry import get_plugin_registry
from pyplugins.checker.run_setup import (check_input_sizes, device_scope, field_collection,
                                         labelled_step, oversized_outputs, pick_device,
                                         resolve_creator, stop_before_enqueue)
from pyplugins.emulator.specs import TensorSpec, spec_from_input
from pyplugins.emulator.tensors import Combo, PluginTensors, output_dims
from pyplugins.checker.trace import Trace

__all__ = ["run"]

_MAX_TIMED = 8


class _Driver:
    """The state of one :func:`run`: the objects, shapes and the chosen format combination."""

    def __init__(self, creator: Any, specs: List[TensorSpec], fc: Any, node_name: str,
                 cp: Any, report: LifecycleReport, recorder: Recorder, trace: Any,
                 check_capture: bool, fresh: bool, plugin_module: Optional[str],
                 keep_on_device: bool) -> None:
        self.creator, self.specs, self.fc, self.node_name = creator, specs, fc, node_name
        self.cp, self.report, self.recorder, self.trace = cp, report, recorder, trace
        self.check_capture, self.fresh, self.plugin_module = check_capture, fresh, plugin_module
        self.keep_on_device = keep_on_device
        self.n_in = len(specs)
        self.violations: List[Violation] = []
        self.host_outputs: Optional[List[np.ndarray]] = None

    def phase(self, name: str) -> Any:
        """A context in which the calls carry ``name`` (errors, trace)."""
        return labelled_step(self.recorder, self.trace, name)

    def stop(self, check: str, message: str, method: Optional[str] = None) -> bool:
        return stop_before_enqueue(self.violations, self.report, check, message, method)

    # -- 1. parse: create_plugin, add_plugin_v2 ------------------------------------------------
    def parse(self) -> bool:
        p0 = trampoline.create_plugin(self.creator, self.node_name, self.fc)
        if p0 is None:
            return self.stop("lifecycle", "create_plugin returned no plugin (the ONNX parser "
                             "reports 'Could not create the plugin.')", "create_plugin")
        p1 = trampoline.clone(p0)  # add_plugin_v2 keeps its own copy (§2.2)
        if p1 is None:
            trampoline.destroy(p0)
            return self.stop("lifecycle", "clone() of P0 returned no plugin, so add_plugin_v2 "
                             "fails", "clone")
        self.p1 = p1
        n_out = trampoline.get_nb_outputs(p1)
        if n_out < 0:
            trampoline.destroy(p0)
            return self.stop("lifecycle", "num_outputs is not set on the plugin add_plugin_v2 "
                             "holds (getNbOutputs gives -1): set it in __init__")
        if n_out > knobs.max_outputs:
            trampoline.destroy(p0)
            return self.stop("lifecycle", f"num_outputs is {n_out}, over the limit of "
                             f"{knobs.max_outputs} outputs a check drives (PYPLUGINS_MAX_OUTPUTS)")
        self.in_types = [s.datatype for s in self.specs]
        self.out_types = [trampoline.get_output_data_type(p1, i, self.in_types)
                          for i in range(n_out)]
        self.violations += pybind.output_type_identity_violations(p1, self.in_types,
                                                                         self.out_types)
        self.out_exprs = []
        for i in range(n_out):
            builder = IExprBuilder()
            exprs = [builder._input(k, s.shape) for k, s in enumerate(self.specs)]
            self.out_exprs.append(trampoline.get_output_dimensions(p1, i, exprs, builder))
            builder._expire()
        trampoline.destroy(p0)  # the parser's unique_ptr dies after the node import
        return self.shapes()

    def shapes(self) -> bool:
        self.out_dims, bad = output_dims(self.out_exprs, self.specs)
        self.tensors = PluginTensors(self.specs, self.out_dims)
        self.report.output_shapes = list(self.out_dims["opt"])
        self.report.output_dtypes = list(self.out_types)
        over = oversized_outputs(self.out_dims["max"], self.out_types)
        for text in bad + over:
            self.violations.append(Violation("shape", text, "get_output_dimensions"))
        if bad or over:
            trampoline.destroy(self.p1)
            self.report.skipped = ("the build failed: get_output_dimensions gave invalid shapes"
                                   if bad else "an output is over the size limit of a check")
            return False
        return True

    # -- 2. build: format search, configure, initialize, timing, serialize ----------------------
    def build(self) -> bool:
        p2 = trampoline.clone(self.p1)  # the builder's own copy for its graph [infer]
        if p2 is None:
            trampoline.destroy(self.p1)
            return self.stop("lifecycle", "clone() of P1 returned no plugin: the build fails",
                             "clone")
        initialized = False
        try:
            want = self.in_types + self.out_types
            combos, tried, found = search_formats(p2, self.tensors, want)
            found += pybind.enum_identity_violations(p2, self.tensors, tried, self.n_in)
            found += pybind.v2_type_violations(want, self.n_in)
            timed, refused = choose_formats(combos, tried, want, self.n_in)
            self.violations += found + refused
            if timed is None:
                self.report.skipped = "the build failed: no usable format combination"
                return False
            self.combo, self.accepted = timed[0], timed
            trampoline.configure_plugin(p2, *self.tensors.dynamic(self.combo, build=True))
            trampoline.get_workspace_size(p2, *self.tensors.plain(self.combo, "max"))
            if trampoline.initialize(p2) != 0:
                return self.stop("lifecycle", "initialize() raised, so the build fails",
                                 "initialize")
            initialized = True
            trampoline.configure_plugin(p2, *self.tensors.dynamic(self.combo, build=False))
            if len(timed) > 1 and self.cp is not None:
                self.time(p2, timed[:_MAX_TIMED])
            self.engine = self.serialize(p2)
            self.identity = trampoline.identity(p2)
            return self.engine is not None
        finally:
            if initialized:
                trampoline.terminate(p2)
            trampoline.destroy(p2)
            trampoline.destroy(self.p1)

    def time(self, plugin: Any, combos: List[Combo]) -> None:
        """Timing: enqueue once per accepted combination on scratch buffers (§2.3)."""
        for combo in combos:
            trampoline.configure_plugin(plugin, *self.tensors.dynamic(combo, build=False))
            ins, outs = self.tensors.plain(combo, "opt")
            workspace = trampoline.get_workspace_size(plugin, ins, outs)
            found = self.recorder.unconfigured_violation(plugin, "a timing enqueue of the build")
            if found is not None:
                self.violations.append(found)
            sizes = [buffers.padded_volume(d.dims, d.format) * max(dtypes.itemsize_from_trt(
                d.type), 1) for d in ins + outs]
            try:
                buffers.scratch_enqueue(
                    sizes[:self.n_in], sizes[self.n_in:], max(workspace, 0),
                    lambda i, o, w, s, ins=ins, outs=outs: trampoline.enqueue(
                        plugin, ins, outs, i, o, w, s))
            except Exception as err:  # noqa: BLE001 - CUDA fails in CuPy's many types
                self.violations.append(Violation("device_error", "a timing enqueue failed on "
                                                 f"the device: {buffers.cuda_error_text(err)}",
                                                 "enqueue"))
                return
        trampoline.configure_plugin(plugin, *self.tensors.dynamic(self.combo, build=False))

    def serialize(self, plugin: Any) -> Optional[bytes]:
        """TensorRT's serialization of one plugin: the size, then serialize() and the copy."""
        self.recorder.take_serialized(plugin)
        size = trampoline.get_serialization_size(plugin)  # to size the engine's buffer
        data = trampoline.serialize(plugin)
        copied = trampoline.get_serialization_size(plugin)  # the binding copies this many bytes
        results = self.recorder.take_serialized(plugin)
        self.violations.extend(serialization_violations(results, copied, data))
        if data is None:
            self.report.skipped = "the build failed: serialize() produced no bytes"
            return None
        buffer = bytearray(max(size, 0))
        n = min(copied, size)
        buffer[:n] = data[:n].ljust(n, b"\0")  # past the end of the string: junk (here zeros)
        return bytes(buffer)

    # -- 3. runtime: deserialize, initialize, clone, configure, enqueue -------------------------
    def runtime(self) -> None:
        key = self.identity
        creator = get_plugin_registry().get_creator(*key) if None not in key else None
        if creator is None:
            self.stop("lifecycle", f"the engine records the plugin as {key!r} (plugin_type, "
                      f"plugin_version, plugin_namespace of the built plugin) but no creator is "
                      f"registered under that key, so deserialization fails: they must equal the "
                      f"creator's name, plugin_version and plugin_namespace")
            return
        pd = trampoline.deserialize_plugin(creator, self.node_name, self.engine)
        if pd is None:
            self.stop("lifecycle", "deserialize_plugin returned no plugin: "
                      "deserialize_cuda_engine fails", "deserialize_plugin")
            return
        initialized = trampoline.initialize(pd) == 0
        pc = trampoline.clone(pd) if initialized else None  # create_execution_context
        try:
            if not initialized:
                self.stop("lifecycle", "initialize() of the deserialized plugin raised: "
                          "deserialize_cuda_engine fails", "initialize")
                return
            if pc is None:
                self.stop("lifecycle", "clone() of the deserialized plugin returned no plugin: "
                          "create_execution_context fails", "clone")
                return
            ins, outs = self.tensors.dynamic(self.combo, build=False)
            trampoline.configure_plugin(pc, ins, outs)
            in_desc, out_desc = self.tensors.plain(self.combo, "opt")
            workspace = max(trampoline.get_workspace_size(pc, in_desc, out_desc), 0)
            found = self.recorder.unconfigured_violation(pc, "enqueue (execute_async_v3)")
            if found is not None:
                self.violations.append(found)
            arrays, why = None, None
            simulated = self.cp is None and host_buffers.simulator_applies(pc)
            if self.cp is not None or simulated:  # made only where an enqueue will read them
                arrays, why = runtime_enqueue.input_arrays(self.specs, self.combo, self.out_types)
            if why is not None:
                self.report.skipped = why
            if self.cp is not None and arrays is not None:
                self.enqueue(pc, in_desc, out_desc, arrays, workspace)
            elif simulated and arrays is not None:  # no GPU: numba's CUDA simulator
                outcome, self.report.notes = host_buffers.simulated_enqueue_and_check(
                    pc, in_desc, out_desc, arrays, self.out_dims["opt"], self.out_types,
                    workspace, self.recorder)
                self.violations += outcome.violations
                self.report.enqueue_ran, self.report.outputs = outcome.ran, outcome.outputs
            if self.host_outputs is not None or self.cp is None:  # every accepted combination
                found, notes = runtime_enqueue.format_runs(
                    pc, self.tensors, self.accepted, arrays or [], self.host_outputs or [],
                    self.combo, self.recorder, gpu=self.host_outputs is not None)
                self.violations += found
                self.report.notes += notes
            if self.fresh:
                with self.phase("fresh-process"):
                    module = self.plugin_module or _fresh.module_of(self.creator)
                    self.violations += fresh_violations(
                        module, self.identity, self.node_name, self.engine, ins, outs, arrays,
                        self.host_outputs)
                self.report.fresh_process = "ran"
        finally:
            if pc is not None:
                trampoline.destroy(pc)
            if initialized:
                trampoline.terminate(pd)
            trampoline.destroy(pd)

    def enqueue(self, plugin: Any, in_desc: list, out_desc: list, arrays: List[Any],
                workspace: int) -> None:
        outcome = runtime_enqueue.enqueue_and_check(
            plugin, in_desc, out_desc, arrays, self.out_dims["opt"], self.out_types, workspace,
            self.recorder, check_capture=self.check_capture, keep_on_device=self.keep_on_device)
        self.violations += outcome.violations
        self.report.enqueue_ran = outcome.ran
        self.report.outputs = outcome.outputs
        self.host_outputs = outcome.host_outputs


def run(plugin: Any, inputs: Sequence[Any], fields: Any = None, *,
        node_name: str = "plugin_node", device: str = "auto", check_capture: bool = True,
        fresh_process: bool = False, plugin_module: Optional[str] = None, trace: bool = False,
        keep_on_device: bool = False, shape_inputs: Sequence[Sequence[int]] = (),
        aliased_io: bool = False, qdp: Optional[str] = None,
        node_aot: Optional[bool] = None) -> LifecycleReport:
    """Drive one plugin through import, build and run as TensorRT does, checking it on the way.

    Args:
        plugin: a creator, a ``(name, version, namespace)`` tuple or ``"Name[:Version[:Ns]]"``.
        inputs: one :class:`TensorSpec` (or spec string, or array) per plugin input.
        fields: node attributes (Python values or ``onnx.AttributeProto``), converted as the ONNX
            parser does, or a ready ``PluginFieldCollection_``.
        node_name: the ONNX node's name, passed to ``create_plugin``/``deserialize_plugin``.
        device: ``"auto"`` (GPU when CuPy sees one), ``"cpu"`` (never touch the GPU),
            ``"gpu"`` (require one: the calling thread's current GPU) or ``"gpu:N"`` / ``N``
            (require GPU ordinal N; the whole run happens with it current, so threads may each
            check on their own GPU): :mod:`pyplugins.runtime.device_choice`'s grammar.
        check_capture: also capture ``enqueue`` into a CUDA graph and replay it (GPU).
        fresh_process: also deserialize and run the engine bytes in a new Python process.
        plugin_module: module name or ``.py`` path registering the creator; imported here first
            (with the emulator installed) and in the fresh process.
        trace: record a :class:`~pyplugins.checker.trace.Trace` of every callback.
        keep_on_device: return outputs as CuPy arrays.
        shape_inputs: IPluginV3 only: the values of each shape input (``get_output_shapes``'
            ``shape_inputs``, §6).
        aliased_io: IPluginV3 and QDP: ``PreviewFeature.ALIASED_PLUGIN_IO_10_03`` is on, so
            ``get_aliased_input`` is honoured.
        qdp: QDP only: the network flag that picks JIT or AOT, ``"jit"``
            (PREFER_JIT_PYTHON_PLUGINS), ``"aot"`` (PREFER_AOT_PYTHON_PLUGINS), ``"both"`` (one
            lifecycle each, outputs compared), or None (no flag; a plugin with both is checked
            both ways). An ``aot`` node attribute in ``fields`` asks STRICT_AOT/STRICT_JIT.
        node_aot: QDP only: the ONNX node's ``aot`` attribute when ``fields`` is a ready
            collection (the parser reads it beside the fields): True/False asks
            STRICT_AOT/STRICT_JIT; None (the default) defers to ``fields`` or ``qdp``.

    An ``IPluginCreatorV3One`` is driven by :class:`~pyplugins.checker.lifecycle_v3.DriverV3`
    (protocol §2.5; no fresh-process or on-device outputs yet), an ``IPluginCreatorV3Quick``
    (``tensorrt.plugin``) by :class:`~pyplugins.checker.lifecycle_qdp.DriverQDP` (§8), any other
    creator as V2.

    Returns:
        A :class:`LifecycleReport`.

    Raises:
        LookupError: no creator is registered for ``plugin``.
        ValueError, TypeError: malformed ``inputs``/``device``, or an input over
            ``knobs.max_tensor_bytes``; FieldError: an attribute the ONNX parser refuses.
    """
    if plugin_module is not None:
        _fresh.import_module(plugin_module)
    creator = resolve_creator(plugin)
    specs = [spec_from_input(s) for s in inputs]
    check_input_sizes(specs)
    key = (creator.name, creator.plugin_version, creator.plugin_namespace)
    report = LifecycleReport(plugin=":".join("" if k is None else str(k) for k in key))
    quick = isinstance(creator, IPluginCreatorV3Quick)
    v3 = isinstance(creator, IPluginCreatorV3One)
    report.interface = ("tensorrt.plugin (QDP)" if quick else "IPluginV3" if v3 else
                        "IPluginV2DynamicExt")
    if quick:  # loaded only for QDP plugins: it imports tensorrt.plugin, whose import logs
        from pyplugins.checker.lifecycle_qdp import DriverQDP, node_options  # noqa: PLC0415

        from_fields, fields = node_options(creator, fields)
        node_aot = from_fields if node_aot is None else node_aot
    elif node_aot is not None:
        msg = f"node_aot is for tensorrt.plugin (QDP) plugins; {type(creator).__name__} is not one"
        raise ValueError(msg)
    if qdp is not None and not quick:
        msg = f"qdp= is for tensorrt.plugin (QDP) plugins; {type(creator).__name__} is not one"
        raise ValueError(msg)
    fc, report.warnings = field_collection(creator, fields)
    report.warnings += discovery.notes_for(creator)
    cp, reason = pick_device(device)
    recorder = Recorder(check_clones=not quick)
    tracer = None
    if trace:
        tracer = report.trace = Trace()
    pybind.idiom_violations()  # forget idioms noted outside this run
    if (shape_inputs or aliased_io) and not (v3 or quick):
        msg = (f"shape_inputs and aliased_io are IPluginV3 features; {type(creator).__name__} "
               f"makes V2 plugins")
        raise ValueError(msg)
    if shape_inputs and quick:
        msg = "tensorrt.plugin (QDP) plugins take no shape inputs (TensorRT asserts there)"
        raise ValueError(msg)
    with device_scope(cp, device):  # CuPy's current device is per thread: the run on it
        if quick:
            driver: Any = DriverQDP(creator, specs, fc, node_name, cp, report, recorder, tracer,
                                    check_capture, implementation=qdp, node_aot=node_aot,
                                    aliased_io=aliased_io, fresh_process=fresh_process,
                                    plugin_module=plugin_module)
            if keep_on_device:  # fresh_process says so in report.fresh_process
                report.warnings.append("keep_on_device is not implemented for QDP plugins: "
                                       "outputs are NumPy arrays")
        elif v3:
            driver = DriverV3(creator, specs, fc, node_name, cp, report, recorder, tracer,
                              check_capture, shape_inputs=shape_inputs, aliased_io=aliased_io)
            if keep_on_device:  # fresh_process says so in report.fresh_process
                report.warnings.append("keep_on_device is not implemented for IPluginV3 plugins "
                                       "yet: outputs are NumPy arrays")
        else:
            driver = _Driver(creator, specs, fc, node_name, cp, report, recorder, tracer,
                             check_capture, fresh_process, plugin_module, keep_on_device)
        trampoline.listeners.append(recorder)
        if tracer is not None:
            tracer.start()
        try:
            with driver.phase("parse"):
                going = driver.parse()
            if going:
                with driver.phase("build"):
                    going = driver.build()
            if going:
                with driver.phase("runtime"):
                    driver.runtime()
        finally:
            if tracer is not None:
                tracer.stop()
            trampoline.listeners.remove(recorder)
    if not report.enqueue_ran and report.skipped is None and cp is None:
        report.skipped = reason
    if report.fresh_process is None:
        report.fresh_process = ("not asked for" if not fresh_process else
                                "not run: the QDP check stopped before its engine was built"
                                if quick else
                                "not run: not implemented for IPluginV3 yet" if v3 else
                                "not run: the check stopped before deserialization")
    report.violations = driver.violations + recorder.violations
    if quick:
        report.qdp = driver.summary()
    if cp is None:  # enqueue never launched a kernel: compile them all without a GPU
        found, warnings = kernel_violations(creator)
        report.violations += found
        report.warnings += warnings
    report.violations += pybind.idiom_violations()
    report.violations += discovery.unbound_global_violations(creator)
    report.errors = [line for _, line, _, _ in recorder.errors]
    report.violations += recorder.error_violations()
    note = missing_attribute_note(creator, report.warnings, [f.name for f in fc])
    report.notes += [note] if note else []
    return report
