"""One QDP lifecycle, JIT or AOT: the calls TensorRT makes into a ``tensorrt.plugin`` plugin for
one network import, one engine build and one run.

:class:`QDPRun` follows the V3 model of protocol §2.5 with the Quick interfaces of §8.4, through
:mod:`pyplugins.emulator.trampoline_quick`: P0 = ``create_plugin(name, namespace, fc, BUILD,
request)`` (the request decides JIT or AOT), P1 = the network's clone, P2 = the builder's
clone. Parse: ``get_num_outputs``, ``get_output_data_types(types, ranks)`` and
``get_output_shapes`` on symbolic shapes (evaluated at min/opt/max; branch checks in
:mod:`~pyplugins.checker.qdp_shapes`). Build: autotune's combinations
(:mod:`~pyplugins.checker.qdp_formats`), per usable combination ``configure_plugin`` and
``get_valid_tactics``, per tactic ``set_tactic`` and for JIT a timed ``enqueue`` on the GPU, for
AOT ``get_launch_params`` (``aot_impl``) and ``get_kernel``, whose artifact
(:class:`~pyplugins.checker.aot_artifact.AOTArtifact`) is checked on the host
(:mod:`~pyplugins.checker.checks.aot`) and timed on the GPU; the fastest candidate is kept. The
engine then holds the JIT plugin's fields (``get_fields_to_serialize``, twice) or the AOT
artifact. Runtime: JIT re-creates the plugin from the fields (``create_plugin(..., RUNTIME,
STRICT_JIT)`` [infer: what TensorRT passes there is not documented]), and each execution context
gets a clone, ``set_tactic`` and ``enqueue`` on guarded, poisoned buffers; AOT runs the artifact
in a process that never imports the plugin (:mod:`~pyplugins.checker.qdp_runtime`).

Example::

    run = QDPRun(ctx, "aot", request)     # ctx: the shared state of one lifecycle.run
    run.parse() and run.build() and run.runtime()
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from pyplugins import dtypes
from pyplugins._config import knobs
from pyplugins.checker import (buffers, qdp_execution, qdp_formats, qdp_runtime, qdp_shapes,
                               runtime_v3, size_tensors)
from pyplugins.checker.aot_artifact import AOTArtifact
from pyplugins.checker.checks import Violation
from pyplugins.checker.checks.aot import artifact_violations, launch_problems
from pyplugins.checker.checks.qdp import autotune_violations, impl_stream_violations, label
from pyplugins.checker.checks.v3 import alias_violations, fields_violations, tactic_violations
from pyplugins.checker.run_setup import oversized_outputs
from pyplugins.emulator import trampoline_quick as tq
from pyplugins.emulator import trampoline_v3 as tv3
from pyplugins.emulator.bases_quick import (IPluginV3QuickAOTBuild, ISymExprs, KernelLaunchParams,
                                            extra_arg_exprs, launch_exprs)
from pyplugins.emulator.dims import expr_tree
from pyplugins.emulator.enums import PluginCapabilityType as Cap
from pyplugins.emulator.enums import TensorRTPhase
from pyplugins.emulator.tensors import Combo, PluginTensors, output_dims
from pyplugins.errors import AOTArtifactError

__all__ = ["QDPRun"]

_MAX_COMBOS = 8


class QDPRun:
    """One lifecycle of a QDP plugin as ``kind`` (``"jit"`` or ``"aot"``, what ``request`` asks).

    Args:
        ctx: the shared state (:class:`pyplugins.checker.lifecycle_qdp.DriverQDP`): creator,
            specs, fields, device, report, recorder, ``step()``, ``plugin_id``, ``definition``.
        kind: the implementation asked for.
        request: the ``QuickPluginCreationRequest`` member, or None (before 10.9).
    """

    def __init__(self, ctx: Any, kind: str, request: Any) -> None:
        self.ctx, self.kind, self.request = ctx, kind, request
        self.violations: List[Violation] = []
        self.outputs: Optional[List[np.ndarray]] = None
        self.info: Dict[str, Any] = {"asked": kind, "request": getattr(request, "name", None)}
        self.n_in = len(ctx.specs)
        self.artifact: Optional[AOTArtifact] = None

    def stop(self, message: str, method: Optional[str] = None, check: str = "lifecycle",
             detail: str = "") -> bool:
        """Record why this lifecycle stops (``detail`` only in the violation); False."""
        self.violations.append(Violation(check, f"{self.kind.upper()}: {message}{detail}",
                                         method))
        self.info["stopped"] = message
        return False

    def add(self, found: List[Violation]) -> None:
        """Keep ``found``, each message once."""
        for v in found:
            if all(v.message != w.message for w in self.violations):
                self.violations.append(v)

    # -- parse ----------------------------------------------------------------------------------
    def parse(self) -> bool:
        ctx = self.ctx
        name, ns = ctx.creator.name, ctx.creator.plugin_namespace
        p0 = tq.create_plugin(ctx.creator, name, ns, list(ctx.fields), TensorRTPhase.BUILD,
                              self.request)
        if p0 is None:
            return self.stop("create_plugin(name, namespace, fc, BUILD"
                             + (f", {self.request.name})" if self.request is not None else ")")
                             + " returned no plugin: the network cannot add it",
                             "create_plugin", detail=ctx.setup_hint())
        self.made = "aot" if isinstance(p0, IPluginV3QuickAOTBuild) else "jit"
        self.info["implementation"] = self.made
        self.p1 = tv3.clone(p0)  # the network's copy [infer, as add_plugin_v3 (§2.4)]
        tv3.destroy(p0)
        if self.p1 is None:
            return self.stop("clone() of P0 returned no plugin", "clone")
        build = self.capability(self.p1, Cap.BUILD)
        if build is None:
            return False
        n_out = tq.get_nb_outputs(build)
        if not 0 <= n_out <= knobs.max_outputs:
            return self.stop(f"get_num_outputs() gave {n_out} (at most {knobs.max_outputs})",
                             "get_num_outputs")
        specs = ctx.specs
        self.in_types = [s.datatype for s in specs]
        self.ranks = [len(s.shape) for s in specs]
        with qdp_shapes.BranchWatch() as watch:
            self.out_types = tq.get_output_data_types(build, self.in_types, self.ranks)
        self.add(qdp_shapes.branch_violations(watch.records, "get_output_data_types"))
        if self.out_types is None:
            return self.stop("get_output_data_types failed, so the network cannot add the "
                             "plugin", "get_output_data_types")
        # The builder stays alive: autotune and aot_impl reuse these expressions (§8.4 [infer]).
        self.builder = size_tensors.SizeTensorBuilder()
        exprs = [self.builder._input(k, s.shape) for k, s in enumerate(specs)]
        with qdp_shapes.BranchWatch() as watch:
            self.out_exprs = tq.get_output_shapes(build, exprs, [], self.builder)
        self.add(qdp_shapes.branch_violations(watch.records, "get_output_shapes"))
        if self.out_exprs is None:
            return self.stop("get_output_shapes failed, so the network cannot add the plugin",
                             "get_output_shapes")
        shape_types = qdp_shapes.output_descs_types(build)
        if shape_types is not None:
            self.add(qdp_shapes.pass_type_violations(self.out_types, shape_types, ctx.plugin_id))
        self.declared = self.builder.declared
        self.add(size_tensors.declaration_violations(self.declared, self.out_exprs,
                                                     self.out_types))
        self.out_dims, bad = output_dims(self.out_exprs, specs)
        self.tensors = PluginTensors(specs, self.out_dims)
        bad += oversized_outputs(self.out_dims["max"], self.out_types)
        self.add([Violation("shape", text, "get_output_shapes") for text in bad])
        if self.made == "jit" and ctx.definition is not None:
            self.add(impl_stream_violations(ctx.definition.impl_func, ctx.plugin_id))
        return not bad or self.stop("get_output_shapes gave invalid shapes: the build fails")

    def capability(self, plugin: Any, kind: Cap) -> Any:
        cap = tq.get_capability_interface(plugin, kind)
        if cap is None:
            self.stop(f"get_capability_interface({kind.name}) gave no Quick capability",
                      "get_capability_interface")
        return cap

    # -- build ----------------------------------------------------------------------------------
    def build(self) -> bool:
        p2 = tv3.clone(self.p1)  # the builder's copy [infer]
        try:
            if p2 is None:
                return self.stop("clone() of P1 returned no plugin: the build fails", "clone")
            return self._build(p2)
        finally:
            if p2 is not None:
                tv3.destroy(p2)
            tv3.destroy(self.p1)

    def _build(self, p2: Any) -> bool:
        ctx = self.ctx
        build = self.capability(p2, Cap.BUILD)
        if build is None:
            return False
        self.rt = build if self.made == "aot" else self.capability(p2, Cap.RUNTIME)
        if self.rt is None:
            return False
        self.aliases: Dict[int, int] = {}
        if ctx.aliased_io:
            asked = {j: tq.get_aliased_input(build, j) for j in range(len(self.out_types))}
            self.aliases, found = alias_violations(
                asked, self.in_types, [s.opt for s in ctx.specs], self.out_types,
                self.out_dims["opt"])
            self.add(found)
        want = self.in_types + self.out_types
        with ctx.step("build: autotune"):
            combos = qdp_formats.query(build, self.tensors, want)
        if combos is None:
            return self.stop("get_supported_format_combinations failed: the build fails",
                             "get_supported_format_combinations")
        self.add(autotune_violations(combos, self.n_in, qdp_formats.registered_types(
            build, self.ranks), ctx.plugin_id))
        usable = qdp_formats.usable(combos, want)
        self.info["combinations"] = [label(c, self.n_in) for c in usable]
        if not usable:
            self.add([qdp_formats.unusable_violation(combos, want, self.n_in, ctx.plugin_id)])
            self.info["stopped"] = "no combination with the network's types"
            return False
        with ctx.step(f"build: {'aot_impl' if self.made == 'aot' else 'tactics'}"):
            chosen = self.choose(build, usable[:_MAX_COMBOS])
        if chosen is None:
            return False
        self.combo, self.tactic = chosen
        self.info["kept"] = {"combination": label(self.combo, self.n_in), "tactic": self.tactic}
        if tq.configure_plugin(build, *self.tensors.dynamic(self.combo, build=True)) != 0 \
                or tq.set_tactic(self.rt, self.tactic) != 0:
            return self.stop("configure_plugin or set_tactic raised on the kept combination")
        if self.made == "aot":
            return self.bake(build)
        self.fields = tq.get_fields_to_serialize(self.rt)
        self.add(fields_violations(self.fields, tq.get_fields_to_serialize(self.rt)))
        self.identity = tq.identity(self.capability(p2, Cap.CORE))
        if self.fields is None:
            return self.stop("get_fields_to_serialize gave nothing: the engine cannot be "
                             "serialized", "get_fields_to_serialize")
        return True

    def choose(self, build: Any, combos: List[Combo]) -> Optional[Tuple[Combo, int]]:
        """Per combination: configure and ask for tactics; per tactic: ``set_tactic``, then the
        AOT kernel (checked) or, on a GPU, a timed JIT ``enqueue``. The fastest is kept."""
        best: Optional[Tuple[Combo, int]] = None
        best_ms = math.inf
        self.tactics_of: List[Tuple[Combo, List[int]]] = []
        self.candidates: Dict[Tuple[int, int], AOTArtifact] = {}
        self.unsound: set = set()
        timings = []
        for c_index, combo in enumerate(combos):
            if tq.configure_plugin(build, *self.tensors.dynamic(combo, build=True)) != 0:
                self.stop("configure_plugin raised: the build fails", "configure_plugin")
                return None
            tactics = tq.get_valid_tactics(build)
            if tactics is None:
                self.stop("get_valid_tactics failed: the build fails", "get_valid_tactics")
                return None
            self.add(tactic_violations(tactics))
            tactics = list(dict.fromkeys(tactics)) or [0]
            self.tactics_of.append((combo, tactics))
            timed = self.ctx.cp is not None and (len(combos) > 1 or len(tactics) > 1)
            for tactic in tactics:
                if tq.set_tactic(self.rt, tactic) != 0:
                    continue
                ms = math.inf
                if self.made == "aot":
                    art, sound = self.kernel(build, combo, tactic)
                    if art is None:
                        continue
                    self.candidates[(c_index, tactic)] = art
                    if not sound:  # never launched in this process: it could fault the context
                        self.unsound.add((c_index, tactic))
                    ms = self.time_aot(art, combo) if timed and sound else ms
                elif timed:
                    ms = self.time_jit(combo)
                best = best or (combo, tactic)
                timings.append((label(combo, self.n_in), tactic, ms))
                if ms < best_ms:
                    best, best_ms = (combo, tactic), ms
        self.info["timings_ms"] = [t for t in timings if math.isfinite(t[2])]
        if best is None:
            self.stop("no (combination, tactic) candidate could be built")
        return best

    def kernel(self, build: Any, combo: Combo, tactic: int
               ) -> Tuple[Optional[AOTArtifact], bool]:
        """``get_launch_params`` then ``get_kernel`` for one candidate: the artifact (None when
        a call failed), and whether its host checks passed."""
        ins, outs = self.tensors.dynamic(combo, build=True)
        eb = size_tensors.SizeTensorBuilder()
        exprs = [eb._input(k, s.shape) for k, s in enumerate(self.ctx.specs)]
        params, extra = KernelLaunchParams._make(), ISymExprs._make()
        if tq.get_launch_params(build, exprs, ins + outs, self.n_in, params, extra, eb) != 0:
            self.stop("get_launch_params (aot_impl) failed: the build fails", "get_launch_params")
            return None, False
        plain_in, plain_out = self.tensors.plain(combo, "opt")
        got = tq.get_kernel(build, plain_in, plain_out)
        if got is None:
            self.stop("get_kernel failed: the build fails", "get_kernel")
            return None, False
        try:
            launch = {f: expr_tree(e) for f, e in launch_exprs(params).items() if e is not None}
            args = [{"dtype": getattr(d, "name", str(d)), "expr": expr_tree(e)}
                    for _, d, e in extra_arg_exprs(extra)]
        except (TypeError, AttributeError) as err:
            self.stop(f"aot_impl's launch parameters or arguments hold no expression ({err})",
                      "get_launch_params", check="aot_artifact")
            return None, False
        name, image = got
        art = AOTArtifact(name, image, "cubin" if image[:4] == b"\x7fELF" else "ptx", launch,
                          args, [[expr_tree(e) for e in dims] for dims in self.out_exprs],
                          [t.name for t in self.in_types], [t.name for t, _ in combo[self.n_in:]],
                          [f.name for _, f in combo], int(tactic), self.ctx.plugin_id)
        where = f"{label(combo, self.n_in)}, tactic {tactic}"
        profiles = {p: {k: getattr(s, p) for k, s in enumerate(self.ctx.specs)}
                    for p in ("min", "opt", "max")}
        found, warnings = artifact_violations(art, profiles, self.ctx.arch, where,
                                              on_device=self.ctx.cp is not None)
        self.add(found)
        self.ctx.warn(warnings)
        return art, not found

    def _bytes(self, combo: Combo) -> Tuple[List[int], List[int]]:
        ins, outs = self.tensors.plain(combo, "opt")
        sizes = [buffers.padded_volume(d.dims, d.format) * max(dtypes.itemsize_from_trt(d.type), 1)
                 for d in ins + outs]
        return sizes[:self.n_in], sizes[self.n_in:]

    def time_jit(self, combo: Combo) -> float:
        ins, outs = self.tensors.plain(combo, "opt")
        in_b, out_b = self._bytes(combo)
        try:
            status, ms = runtime_v3.time_enqueue(in_b, out_b, 0, self.aliases,
                                                 qdp_runtime.jit_call(self.rt, ins, outs))
        except Exception as err:  # noqa: BLE001 - a CUDA error: reported, the build goes on
            self.add([Violation("device_error", "a timing enqueue failed on the device: "
                                f"{buffers.cuda_error_text(err)}", "enqueue")])
            return math.inf
        return ms if status == 0 else math.inf

    def time_aot(self, art: AOTArtifact, combo: Combo) -> float:
        opt = {k: s.opt for k, s in enumerate(self.ctx.specs)}
        try:
            plan = art.launch_plan(opt)
        except AOTArtifactError:
            return math.inf  # reported by the artifact's checks
        if launch_problems(plan):
            return math.inf
        try:
            return qdp_runtime.time_aot(art, plan, *self._bytes(combo))
        except Exception as err:  # noqa: BLE001 - a CUDA error: reported, the build goes on
            self.add([Violation("device_error", "a timing launch of the AOT kernel failed: "
                                f"{buffers.cuda_error_text(err)}", "get_kernel")])
            return math.inf

    def bake(self, build: Any) -> bool:
        """The engine keeps the kept candidate's kernel; its bytes must read back."""
        index = next(i for i, (c, _) in enumerate(self.tactics_of) if c == self.combo)
        art = self.candidates.get((index, self.tactic))
        if art is None:
            return self.stop("the kept candidate has no kernel")
        self.engine = art.to_bytes()
        if AOTArtifact.from_bytes(self.engine) != art:
            return self.stop("the AOT artifact does not read back from its bytes",
                             check="aot_artifact")
        self.artifact = art
        self.sound = (index, self.tactic) not in self.unsound
        self.info["artifact"] = {"kernel": art.kernel_name, "image": art.image_kind,
                                 "image_bytes": len(art.image), "engine_bytes": len(self.engine),
                                 "extra_args": len(art.extra_args)}
        return True

    # -- runtime --------------------------------------------------------------------------------
    def runtime(self) -> None:
        """The engine's run: :func:`pyplugins.checker.qdp_execution.run_aot` or ``run_jit``."""
        if self.made == "aot":
            qdp_execution.run_aot(self)
        else:
            qdp_execution.run_jit(self)
