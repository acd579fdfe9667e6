"""Drive a ``tensorrt.plugin`` (QDP) plugin through TensorRT's lifecycle: JIT, AOT or both, chosen as TensorRT chooses.

:func:`pyplugins.checker.lifecycle.run` picks :class:`DriverQDP` when the creator is an
``IPluginCreatorV3Quick``. From 10.9 TensorRT hands ``create_plugin`` a
``QuickPluginCreationRequest`` (protocol §8.3): the ONNX node's ``aot`` attribute asks
STRICT_AOT or STRICT_JIT; otherwise the network's flags ``PREFER_AOT_PYTHON_PLUGINS`` /
``PREFER_JIT_PYTHON_PLUGINS`` ask PREFER_AOT/PREFER_JIT, and without a flag UNKNOWN, which a
plugin with both implementations refuses. ``implementation`` says which flag the check's network
has: ``"jit"``, ``"aot"``, ``"both"`` (two lifecycles, one per flag, whose outputs are compared
on a GPU: ``aot_jit_mismatch``) or None (as TensorRT without a flag; a plugin with both is then
checked both ways, with a warning). Before 10.9 there is no request and plugins are JIT.

Each lifecycle is a :class:`~pyplugins.checker.qdp_run.QDPRun`; this driver holds what they
share (the creator, inputs, fields, device, report, recorder) and fills the report's ``qdp``
section: per lifecycle the request, the implementation made, the combinations and tactics, the
kept candidate, the AOT artifact and how it ran.

Example:
    >>> requests_for(has_jit=True, has_aot=True, implementation="both", node_aot=None)
    [('jit', 'PREFER_JIT'), ('aot', 'PREFER_AOT')]
    >>> requests_for(has_jit=False, has_aot=True, implementation=None, node_aot=None)
    [('aot', 'UNKNOWN')]
"""

from __future__ import annotations

import dis
import sys
import types
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from pyplugins.checker.checks import Violation
from pyplugins.checker.qdp_run import QDPRun
from pyplugins.checker.run_setup import labelled_step
from pyplugins.checker.size_tensors import size_outputs_of
from pyplugins.emulator import surface
from pyplugins.runtime import qdp
from pyplugins.emulator.plugin.creator import QDP_REGISTRY
from pyplugins.emulator.version import emulated_version

__all__ = ["IMPLEMENTATIONS", "DriverQDP", "module_creators", "node_options", "requests_for",
           "setup_candidates"]

#: What ``implementation`` may be (None: as TensorRT without a network flag).
IMPLEMENTATIONS = ("jit", "aot", "both")


def requests_for(*, has_jit: bool, has_aot: bool, implementation: Optional[str],
                 node_aot: Optional[bool]) -> List[Tuple[str, Optional[str]]]:
    """``(kind, QuickPluginCreationRequest member name)`` per lifecycle to run (10.9+).

    Raises:
        ValueError: ``implementation`` is not one of :data:`IMPLEMENTATIONS` or None.
    """
    if implementation not in (None, *IMPLEMENTATIONS):
        msg = f"implementation must be one of {IMPLEMENTATIONS} or None (got {implementation!r})"
        raise ValueError(msg)
    if node_aot is not None:  # the ONNX node's `aot` attribute: a strict request
        return [("aot", "STRICT_AOT")] if node_aot else [("jit", "STRICT_JIT")]
    if implementation == "jit":
        return [("jit", "PREFER_JIT")]
    if implementation == "aot":
        return [("aot", "PREFER_AOT")]
    if has_jit and has_aot and implementation in (None, "both"):
        return [("jit", "PREFER_JIT"), ("aot", "PREFER_AOT")]
    if implementation == "both":  # one implementation: both flags give it
        return [("aot", "PREFER_AOT")] if has_aot else [("jit", "PREFER_JIT")]
    return [("aot", "UNKNOWN")] if has_aot and not has_jit else [("jit", "UNKNOWN")]


def node_options(creator: Any, fields: Any) -> Tuple[Optional[bool], Any]:
    """``(aot, fields)``: the ONNX node's ``aot`` attribute (None when absent) and the fields
    without it and without ``plugin_namespace``, which TensorRT's parser reads itself [infer:
    QDP's create_plugin refuses any field its register function does not declare, so the parser
    cannot pass them on] unless the plugin declares attributes of those names.

    Example:
        >>> class C:
        ...     field_names = []
        >>> node_options(C(), {"aot": 1, "plugin_namespace": "ns", "pads": [1, 1]})
        (True, {'pads': [1, 1]})
    """
    if not isinstance(fields, dict):
        return None, fields
    declared = {getattr(f, "name", None) for f in (creator.field_names or [])}
    kept = {k: v for k, v in fields.items()
            if k in declared or k not in ("aot", "plugin_namespace")}
    aot = fields.get("aot") if "aot" not in declared else None
    if aot is not None:
        aot = bool(int(getattr(aot, "i", aot)) if not isinstance(aot, str)
                   else aot.strip().lower() in ("1", "true"))
    return aot, kept


def module_creators(module: Any) -> List[Any]:
    """The registered creators of the QDP plugins ``module`` registers (``@trtp.register`` in
    it), for a module imported before (whose import registered nothing new)."""
    from pyplugins.emulator.registry import get_plugin_registry  # noqa: PLC0415

    found = []
    for plugin_id, definition in list(QDP_REGISTRY.items()):
        if getattr(definition.register_func, "__module__", None) == module.__name__:
            namespace, name = plugin_id.split("::")
            creator = get_plugin_registry().get_creator(name, "1", namespace)
            if creator is not None:
                found.append(creator)
    return found


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def setup_candidates(module: Any, decorators: Sequence[str] = ("impl", "aot_impl", "autotune")
                     ) -> List[str]:
    """Functions of ``module`` taking no argument that use one of ``decorators`` (``trtp.impl``,
    ...) inside their body (NVIDIA's samples define them in ``enable_*()`` helpers that their
    own script calls).

    Example:
        >>> setup_candidates(types.ModuleType("empty"))
        []
    """
    found = []
    for name, value in sorted(vars(module).items()):
        code = getattr(value, "__code__", None)
        if not isinstance(value, types.FunctionType) or value.__module__ != module.__name__:
            continue
        required = code.co_argcount - len(value.__defaults__ or ())
        if required:
            continue
        names = {str(i.argval) for c in _codes(code) for i in dis.get_instructions(c)
                 if i.opname in ("LOAD_ATTR", "LOAD_METHOD", "LOAD_GLOBAL", "LOAD_NAME")}
        if names & set(decorators):
            found.append(name)
    return found


class DriverQDP:
    """The state of one QDP check; :func:`pyplugins.checker.lifecycle.run` calls :meth:`parse`,
    :meth:`build` and :meth:`runtime` inside :meth:`phase` blocks.

    Args beyond V3's driver: ``implementation`` (see the module docstring), ``node_aot``
    (the ONNX node's ``aot`` attribute, or None), ``fresh_process`` and ``plugin_module``
    (:mod:`pyplugins.checker.qdp_fresh`).
    """

    def __init__(self, creator: Any, specs: List[Any], fields: Any, node_name: str, cp: Any,
                 report: Any, recorder: Any, trace: Any, check_capture: bool, *,
                 implementation: Optional[str] = None, node_aot: Optional[bool] = None,
                 aliased_io: bool = False, fresh_process: bool = False,
                 plugin_module: Optional[str] = None) -> None:
        self.creator, self.specs, self.fields, self.node_name = creator, specs, fields, node_name
        self.cp, self.report, self.recorder, self.trace = cp, report, recorder, trace
        self.check_capture, self.aliased_io = check_capture, aliased_io
        self.fresh, self.plugin_module = fresh_process, plugin_module
        self.plugin_id = f"{creator.plugin_namespace}::{creator.name}"
        self.definition = QDP_REGISTRY.get(self.plugin_id)
        register = getattr(self.definition, "register_func", None)
        self.module_name = getattr(register, "__module__", None)
        self.arch = self._arch()
        self._violations: List[Violation] = []
        #: How the AOT kernel's outputs agreed with the JIT impl's, where both ran on a GPU.
        self.agreement: Optional[str] = None
        has_jit = getattr(self.definition, "impl_func", None) is not None
        has_aot = getattr(self.definition, "aot_impl_func", None) is not None
        #: Why the plugin has no aot_impl, where AOT was asked for (``--qdp aot|both``, aot=1).
        self.aot_unsupported = None if has_aot or not (
            implementation in ("aot", "both") or node_aot) else self._no_aot_reason()
        if self.aot_unsupported:
            report.warnings.append(f"no AOT build: {self.aot_unsupported}")
        if emulated_version() < (10, 9):
            if implementation in ("aot", "both") or node_aot:
                msg = ("AOT QDP plugins need TensorRT 10.9 (QuickPluginCreationRequest); the "
                       "emulated version is older (PYPLUGINS_TRT_VERSION)")
                raise ValueError(msg)
            plan: List[Tuple[str, Any]] = [("jit", None)]
        else:
            enum = surface.resolve("QuickPluginCreationRequest", emulated_version()[0])
            plan = [(kind, getattr(enum, name)) for kind, name in requests_for(
                has_jit=has_jit, has_aot=has_aot, implementation=implementation,
                node_aot=node_aot)]
            if implementation is None and node_aot is None and has_jit and has_aot:
                report.warnings.append(
                    f"QDP plugin '{self.plugin_id}' has both impl and aot_impl: TensorRT needs "
                    "the network flag PREFER_JIT_PYTHON_PLUGINS or PREFER_AOT_PYTHON_PLUGINS (or "
                    "the ONNX node's `aot` attribute), else create_plugin refuses it; checked "
                    "both ways (--qdp jit|aot picks one)")
            if implementation == "both" and not (has_jit and has_aot):
                report.warnings.append(f"--qdp both: QDP plugin '{self.plugin_id}' has only "
                                       f"{'aot_impl' if has_aot else 'impl'}; checked that")
        self.runs = [QDPRun(self, kind, request) for kind, request in plan]
        self.going = list(self.runs)

    def _no_aot_reason(self) -> str:
        """Why this plugin cannot be built AOT: a ``pp.Plugin`` class's reason
        (:func:`pyplugins.runtime.qdp.aot_support`), else that no ``aot_impl`` is registered."""
        served = qdp.definition(self.plugin_id)
        reason = qdp.aot_support(served.cls) if served is not None else None
        return reason or (f"QDP plugin '{self.plugin_id}' registers no @trtp.aot_impl, so "
                          "TensorRT can only run its impl (JIT) with Python")

    def _arch(self) -> str:
        from pyplugins.runtime.kernel_ptx import ARCH  # noqa: PLC0415 - the check's default SM

        if self.cp is None:
            return ARCH
        try:
            return str(self.cp.cuda.Device().compute_capability)
        except Exception:  # noqa: BLE001 - no device after all: the default
            return ARCH

    @property
    def violations(self) -> List[Violation]:
        """What the driver and each lifecycle found."""
        return self._violations + [v for r in self.runs for v in r.violations]

    def phase(self, name: str) -> Any:
        """A context in which the calls carry ``name`` (errors, trace)."""
        return labelled_step(self.recorder, self.trace, name)

    def step(self, name: str) -> Any:
        """A sub-step of a phase (the same, for the trace and error reports)."""
        return labelled_step(self.recorder, self.trace, name)

    def warn(self, lines: Sequence[str]) -> None:
        """Add report warnings, each once."""
        for line in lines:
            if line not in self.report.warnings:
                self.report.warnings.append(line)

    def setup_hint(self) -> str:
        """When the plugin has no ``impl`` and no ``aot_impl``: how to run the function of its
        module that defines them (empty otherwise)."""
        definition = self.definition
        if definition is None or definition.impl_func is not None \
                or definition.aot_impl_func is not None:
            return ""
        module = sys.modules.get(self.module_name or "")
        names = setup_candidates(module, ("impl", "aot_impl")) if module is not None else []
        hint = (f"; QDP plugin '{self.plugin_id}' has neither @trtp.impl nor @trtp.aot_impl "
                "registered when its module is imported")
        if names:
            hint += (f": its module defines them inside {', '.join(names)}, which its own script "
                     f"calls; run one first with `pyplugins check ... --call {names[0]}` (or "
                     "call it before lifecycle.run)")
        return hint

    def _each(self, phase: str, method: str) -> bool:
        going = []
        for run in self.going:
            label = f"{phase}: {run.kind}" if len(self.runs) > 1 else phase
            with self.step(label):
                if getattr(run, method)():
                    going.append(run)
        self.going = going
        return bool(going)

    def parse(self) -> bool:
        """Parse each lifecycle; the report shows the first one's outputs."""
        going = self._each("parse", "parse")
        first = next((r for r in self.runs if hasattr(r, "out_dims")), None)
        if first is not None:
            self.report.output_shapes = list(first.out_dims["opt"])
            self.report.output_dtypes = list(first.out_types)
            for j, sizes in size_outputs_of(first.out_exprs).items():
                self.warn([(f"output {j}'s shape depends on size tensor output(s) {sizes}: it "
                            "is allocated and shown at the declared upper bound until enqueue "
                            "writes the real extent")])
        if not going and self.report.skipped is None:
            stopped = [r.info.get("stopped") for r in self.runs if r.info.get("stopped")]
            self.report.skipped = "the lifecycle stopped before enqueue: " + (
                stopped[0] if stopped else "the network could not add the plugin")
        return going

    def build(self) -> bool:
        """Build each lifecycle that parsed."""
        going = self._each("build", "build")
        if not going and self.report.skipped is None:
            stopped = [r.info.get("stopped") for r in self.runs if r.info.get("stopped")]
            self.report.skipped = "the build failed: " + (stopped[0] if stopped else "see above")
        return going

    def runtime(self) -> None:
        """Run each built lifecycle, then compare JIT and AOT outputs when both ran."""
        for run in self.going:
            label = f"runtime: {run.kind}" if len(self.runs) > 1 else "runtime"
            with self.step(label):
                run.runtime()
        ran = [r for r in self.going if r.outputs is not None]
        if ran:
            self.report.enqueue_ran = True
            self.report.outputs = ran[0].outputs
            self.report.output_shapes = [o.shape for o in ran[0].outputs]
        kinds = {r.made: r for r in ran if hasattr(r, "made")}
        if "jit" in kinds and "aot" in kinds:
            found = _compare(kinds["jit"].outputs, kinds["aot"].outputs)
            self._violations += found
            self.agreement = "differ" if found else "bit for bit" if all(
                a.shape == b.shape and a.tobytes() == b.tobytes()
                for a, b in zip(kinds["jit"].outputs, kinds["aot"].outputs)) else \
                "within the dtype's tolerance"
        if self.fresh:
            self.report.fresh_process = self._fresh_process()
        for run in self.runs:
            plan = run.info.get("run", {}).get("plan") if isinstance(run.info.get("run"), dict) \
                else None
            if plan is not None and not run.info["run"]["launched"]:
                why = "the GPU is not used" if self.cp is None else \
                    "its artifact failed the host checks"
                self.report.notes.append(
                    f"AOT kernel {run.artifact.kernel_name!r} not launched ({why}); its "
                    f"artifact ran in a process without the plugin's module: grid "
                    f"{tuple(plan['grid'])}, block {tuple(plan['block'])}, shared memory "
                    f"{plan['shared_mem']} B, extra arguments {plan['extra']}")

    def _fresh_process(self) -> str:
        """The fresh-process check of each built lifecycle (:mod:`pyplugins.checker.qdp_fresh`);
        what the report's ``fresh_process`` says."""
        from pyplugins.checker import qdp_fresh, runtime_enqueue  # noqa: PLC0415 - asked for
        from pyplugins.runtime import qdp as pp_qdp  # noqa: PLC0415 - asked for

        # A pp.Plugin class registered as QDP here: its module registers it as QDP in the child
        # only under PYPLUGINS_INTERFACE=qdp (pp.register's default is V2 or V3 otherwise).
        interface = "qdp" if pp_qdp.definition(self.plugin_id) is not None else None
        code = getattr(getattr(self.definition, "register_func", None), "__code__", None)
        module = qdp_fresh.module_spec(self.module_name, self.plugin_module,
                                       getattr(code, "co_filename", None))
        said = []
        for run in self.going:
            if run.made == "aot":
                said.append("AOT: its artifact ran in a process that never imported the "
                            "plugin's module (aot_launch)")
                continue
            arrays = None
            if run.outputs is not None:
                arrays, _ = runtime_enqueue.input_arrays(self.specs, run.combo, run.out_types)
            in_desc, out_desc = run.tensors.plain(run.combo, "opt")
            with self.step("fresh-process: jit"):
                self._violations += qdp_fresh.jit_fresh_violations(
                    module, run.identity, list(run.fields), in_desc, out_desc, run.tactic,
                    arrays, run.outputs if arrays is not None else None, interface=interface)
            said.append(f"JIT: re-created from the engine's fields in a process that only "
                        f"imports {module!r}"
                        + (" under PYPLUGINS_INTERFACE=qdp" if interface else "")
                        + (", outputs compared" if arrays is not None
                           else ", fields compared (no GPU)"))
        return "ran (" + "; ".join(said) + ")" if said else \
            "not run: the QDP check stopped before its engine was built"

    def summary(self) -> dict:
        """The report's ``qdp`` section."""
        out = {"plugin_id": self.plugin_id, "runs": [dict(r.info) for r in self.runs],
               "compared": sum(r.outputs is not None for r in self.runs) > 1}
        if self.agreement is not None:  # "bit for bit", "within the dtype's tolerance", "differ"
            out["aot_equals_jit"] = self.agreement
        if self.aot_unsupported:
            out["aot_unsupported"] = self.aot_unsupported
        return out


def _compare(jit: Sequence[Any], aot: Sequence[Any]) -> List[Violation]:
    """``aot_jit_mismatch`` when the AOT kernel's outputs differ from the JIT ``impl``'s."""
    from pyplugins.testing import assert_close  # noqa: PLC0415 - the one tolerance table

    for j, (a, b) in enumerate(zip(aot, jit)):
        try:
            if a.shape != b.shape:
                msg = f"shape {a.shape} against the JIT's {b.shape}"
                raise AssertionError(msg)
            assert_close(a, b, a.dtype, what=f"output {j}")
        except (AssertionError, KeyError) as err:
            return [Violation("aot_jit_mismatch", f"the AOT kernel's output {j} differs from "
                              f"the JIT impl's for the same inputs: {err}. TensorRT runs "
                              f"whichever the network flag or the node asks for, so both "
                              f"must compute the same function.", "get_kernel")]
    return []
