"""The run time of a QDP engine: the JIT plugin re-created from the engine's fields and enqueued in
execution contexts, and the AOT artifact run without the plugin's Python.

The functions take a :class:`~pyplugins.checker.qdp_run.QDPRun` after its build and fill its
``outputs`` and ``violations``. JIT (protocol §8.3-§8.4): ``create_plugin(name, namespace,
fields, RUNTIME, STRICT_JIT)`` [infer: the request TensorRT passes when it deserializes is not
documented; a JIT engine needs the JIT implementation], then per execution context a clone
[infer: the Quick runtime has no ``attach_to_context``], ``set_tactic`` and ``enqueue`` on
guarded, poisoned buffers at opt (:func:`pyplugins.checker.runtime_v3.runtime_enqueue`: aliased
outputs, size tensors, capture). AOT: :func:`pyplugins.checker.qdp_runtime.run_artifact`.

Example::

    run.parse() and run.build() and qdp_execution.run_jit(run)
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from pyplugins import dtypes
from pyplugins.checker import qdp_runtime, runtime_enqueue, runtime_v3, size_tensors
from pyplugins.checker.aot_artifact import evaluate
from pyplugins.checker.checks.v3 import rebuild_violations, tactic_output_violations
from pyplugins.emulator import surface
from pyplugins.emulator import trampoline_quick as tq
from pyplugins.emulator import trampoline_v3 as tv3
from pyplugins.emulator.enums import PluginCapabilityType as Cap
from pyplugins.emulator.enums import TensorRTPhase
from pyplugins.emulator.registry import get_plugin_registry
from pyplugins.emulator.version import emulated_version

__all__ = ["context", "real_shapes", "run_aot", "run_jit"]


def run_jit(run: Any) -> None:
    """JIT: create_plugin(RUNTIME) from the engine's fields, then an execution context (a
    clone, ``set_tactic``, ``enqueue``) for the kept tactic and one per other tactic of the kept
    combination, whose outputs must agree."""
    ctx = run.ctx
    key = run.identity
    creator = get_plugin_registry().get_creator(*key) if None not in key else None
    if creator is None:
        run.stop(f"the engine records the plugin as {key!r} but no creator is registered "
                 "under that key, so deserialization fails")
        return
    request = None
    if emulated_version() >= (10, 9):
        request = surface.resolve("QuickPluginCreationRequest",
                                  emulated_version()[0]).STRICT_JIT
    pr = tq.create_plugin(creator, key[0], key[2], list(run.fields), TensorRTPhase.RUNTIME,
                          request)
    if pr is None:
        run.stop("create_plugin(name, namespace, fields, RUNTIME) returned no plugin: "
                 "deserialize_cuda_engine fails", "create_plugin")
        return
    try:
        rt = run.capability(pr, Cap.RUNTIME)
        if rt is None:
            return
        run.add(rebuild_violations(run.fields, tq.get_fields_to_serialize(rt)))
        with ctx.step(f"runtime: {run.kind} context 0"):
            run.outputs = context(run, pr, run.tactic)
        if run.outputs is not None:
            for combo, tactics in run.tactics_of:
                for tactic in (t for t in tactics if combo == run.combo and t != run.tactic):
                    with ctx.step(f"runtime: {run.kind} tactic {tactic}"):
                        got = context(run, pr, tactic)
                    if got is not None:
                        run.add(tactic_output_violations(run.outputs, got, run.tactic,
                                                         tactic))
    finally:
        tv3.destroy(pr)


def context(run: Any, pr: Any, tactic: int) -> Optional[List[np.ndarray]]:
    """One execution context: a clone [infer], ``set_tactic`` and ``enqueue`` at opt."""
    pc = tv3.clone(pr)
    if pc is None:
        run.stop("clone() of the runtime plugin returned no plugin", "clone")
        return None
    try:
        rt = run.capability(pc, Cap.RUNTIME)
        if rt is None or tq.set_tactic(rt, tactic) != 0:
            return None
        if run.ctx.cp is None:
            return None
        arrays, why = runtime_enqueue.input_arrays(run.ctx.specs, run.combo, run.out_types)
        if arrays is None:
            run.ctx.report.skipped = why
            return None
        in_desc, out_desc = run.tensors.plain(run.combo, "opt")
        opt = {k: s.opt for k, s in enumerate(run.ctx.specs)}
        uppers = {k: e._b._evaluate(opt) for k, e in run.declared.items()}

        def real_shape(j: int, sizes: Dict[int, int]) -> Tuple[int, ...]:
            known = {**opt, **{("size", k): v for k, v in sizes.items()}}
            return size_tensors.evaluate(run.out_exprs[j], known)

        outcome = runtime_v3.runtime_enqueue(
            qdp_runtime.jit_call(rt, in_desc, out_desc), arrays, run.out_dims["opt"],
            [dtypes.numpy_from_trt(t) for t in run.out_types], 0, run.ctx.recorder,
            aliases=run.aliases, size_outputs=uppers, real_shape=real_shape,
            check_capture=run.ctx.check_capture)
        for v in outcome.violations:  # QDP's outputs are described by the register function
            if v.check == "output_mismatch":
                v.message = "impl: " + v.message.replace(
                    "get_output_dimensions/get_output_datatype", "the register function's "
                    "description (the Tensor's shape and dtype impl received)")
        run.add(outcome.violations)
        return outcome.host_outputs if outcome.ran else None
    finally:
        tv3.destroy(pc)


def run_aot(run: Any) -> None:
    """AOT: the engine's artifact run in a process that never imports the plugin (launched on a
    GPU), its outputs checked."""
    ctx = run.ctx
    opt = [s.opt for s in ctx.specs]
    out_np = [dtypes.numpy_from_trt(t) for t in run.out_types]
    arrays: List[Any] = []
    launch = ctx.cp is not None and run.sound
    if ctx.cp is not None and not run.sound:
        ctx.report.skipped = ("the AOT kernel was not launched: its artifact failed the "
                              "host checks (see the aot_* violations)")
    if launch:
        got, why = runtime_enqueue.input_arrays(ctx.specs, run.combo, run.out_types)
        if got is None:
            ctx.report.skipped, launch = why, False
        arrays = got or []
    with ctx.step(f"runtime: {run.kind} kernel, in a process without the plugin"):
        result, raw = qdp_runtime.run_artifact(run.engine, arrays, opt, out_np,
                                               launch=launch, plugin_module=ctx.module_name)
    run.add(qdp_runtime.artifact_run_violations(result, ctx.plugin_id))
    plan = result.get("plan")
    run.info["run"] = {"launched": bool(result.get("ran")), "plan": plan,
                       "modules": result.get("modules")}
    if raw is None:
        return
    if run.aliases:
        ctx.warn(["the AOT kernel ran with its own buffers for aliased outputs (the emulator "
                  "does not pass the input's pointer there): in-place writes are not checked"])
    uppers = [tuple(s) for s in plan["outputs"]]  # data-dependent outputs at their upper bound
    shapes = real_shapes(run, raw, uppers, out_np)
    raw_alt = None
    if qdp_runtime.any_poisoned(raw, shapes, out_np):
        _, raw_alt = qdp_runtime.run_artifact(run.engine, arrays, opt, out_np, launch=True,
                                              plugin_module=ctx.module_name, alt=True)
    cut = [_extent(b, s, u, d) for b, s, u, d in zip(raw, shapes, uppers, out_np)]
    cut_alt = None if raw_alt is None else [
        _extent(b, s, u, d) for b, s, u, d in zip(raw_alt, shapes, uppers, out_np)]
    run.add(qdp_runtime.aot_output_violations(cut, shapes, out_np, cut_alt))
    run.outputs = [qdp_runtime.body(b, s, d) for b, s, d in zip(raw, shapes, out_np)]


def real_shapes(run: Any, raw: List[np.ndarray], uppers: List[Tuple[int, ...]],
                dtypes_: List[np.dtype]) -> List[Tuple[int, ...]]:
    """The outputs' shapes once the kernel wrote its size tensors (their upper bounds when it
    wrote none, or a value outside [0, upper], which is reported)."""
    if not run.declared:
        return uppers
    opt = {k: tuple(s.opt) for k, s in enumerate(run.ctx.specs)}
    sizes = {k: int(qdp_runtime.body(raw[k], (), dtypes_[k])) for k in run.declared}
    bounds = {k: e._b._evaluate(opt) for k, e in run.declared.items()}
    found = size_tensors.value_violations(sizes, bounds)
    run.add(found)
    if found:
        return uppers
    known = {**opt, **{("size", k): v for k, v in sizes.items()}}
    return [tuple(evaluate(d, known) for d in dims) for dims in run.artifact.output_shapes]


def _extent(raw: np.ndarray, shape: Tuple[int, ...], upper: Tuple[int, ...],
            dt: np.dtype) -> np.ndarray:
    """``[the real extent | the guard]`` of an output allocated at ``upper``."""
    flat = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
    real, full = math.prod(shape) * dt.itemsize, math.prod(upper) * dt.itemsize
    return np.concatenate([flat[:real], flat[full:]])
