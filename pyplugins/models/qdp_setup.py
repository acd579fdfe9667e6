"""Set one QDP (``tensorrt.plugin``) plugin up for one input signature: the set-up half of
:class:`~pyplugins.models.qdp_exec.QDPExecution`, as ``PluginSetup`` is for V2 and V3.

:class:`QDPSetup` mirrors :class:`pyplugins.runtime.plugin_setup.PluginSetup` for the Quick
interfaces (protocol §8.4, every call through :mod:`pyplugins.emulator.trampoline_quick`, so each
has TensorRT's arguments and ``[ERROR]`` channel), on concrete shapes:
``create_plugin(name, namespace, fc, BUILD, request)``; ``get_output_data_types(types, ranks)``;
``get_output_shapes`` on the input shapes as constants; ``get_supported_format_combinations``
(autotune's combinations, asked as the binding asks), of which ONE is kept: the first with the
network's types (the inputs' dtypes, the registered output types) and every tensor LINEAR
(execution, not exploration); ``configure_plugin`` with it; the first of ``get_valid_tactics``
(0 when there are none, as TensorRT) and ``set_tactic``. A JIT plugin is then ready for
``enqueue`` (its ``impl``). An AOT plugin is baked as the engine keeps it: ``get_launch_params``
(``aot_impl``) and ``get_kernel`` give an :class:`~pyplugins.checker.aot_artifact.AOTArtifact`,
whose launch plan (grid, block, shared memory, extra arguments) is evaluated for the signature
(its expressions are constants there). Left out, as the lean path leaves them out for V2 and V3:
clones, the other combinations and tactics, timing, the serialize round trip, aliased outputs
(``PreviewFeature.ALIASED_PLUGIN_IO_10_03`` is off: each output gets its own buffer) and size
tensors (``declare_size_tensor`` raises; the check runs them). Every ``[ERROR]`` line raises
:class:`~pyplugins.errors.ExecutionError` naming the plugin, the node and the method.

Example:
    >>> import numpy as np
    >>> from pyplugins import emulator as trt
    >>> from pyplugins.ops.leaky_relu import LeakyReLU
    >>> from pyplugins.runtime import qdp
    >>> creator = qdp.define(LeakyReLU)
    >>> slope = trt.PluginField("neg_slope", np.float32([0.5]), trt.PluginFieldType.FLOAT32)
    >>> setup = QDPSetup(creator, "lrelu", [slope], trt.QuickPluginCreationRequest.STRICT_JIT)
    >>> ready = setup.configure([(2, 3)], [np.dtype(np.float32)])
    >>> ready.out_shapes, ready.out_dtypes, ready.combination, ready.tactic, ready.made
    ([(2, 3)], [dtype('float32')], 'FLOAT LINEAR -> FLOAT LINEAR', 0, 'jit')
    >>> ready.teardown(); qdp.forget(LeakyReLU)
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins.checker.aot_artifact import AOTArtifact
from pyplugins.checker.checks.aot import launch_problems
from pyplugins.checker.qdp_runtime import jit_call
from pyplugins.emulator import trampoline_quick as tq
from pyplugins.emulator import trampoline_v3 as tv3
from pyplugins.emulator.bases_quick import (IPluginV3QuickAOTBuild, ISymExprs, KernelLaunchParams,
                                            extra_arg_exprs, launch_exprs)
from pyplugins.emulator.descs import DynamicPluginTensorDesc, PluginTensorDesc
from pyplugins.emulator.dims import DimsExprs, expr_tree
from pyplugins.emulator.enums import DataType, PluginCapabilityType, TensorFormat, TensorRTPhase
from pyplugins.errors import AOTArtifactError
from pyplugins.runtime.plugin_setup import (CallFailures, ConstantBuilder, NodeCalls,
                                            output_dtypes)

__all__ = ["QDPReady", "QDPSetup"]


@dataclass
class QDPReady:
    """One configured QDP plugin, for one input signature.

    Attributes:
        plugin: the plugin ``create_plugin`` made (destroyed by ``teardown``).
        made: ``"jit"`` or ``"aot"``.
        out_shapes, out_dtypes: per output, its shape and the NumPy dtype holding it.
        combination: the kept combination, ``"FLOAT LINEAR -> FLOAT LINEAR"``.
        tactic: the tactic ``set_tactic`` got.
        enqueue: JIT: ``(input pointers, output pointers, workspace, stream) -> 0 or -1``
            through the trampoline; AOT: None.
        artifact, plan: AOT (when baked): the engine's artifact and its launch plan for the
            signature (:meth:`AOTArtifact.launch_plan`); else None.
        teardown: ``destroy``, as TensorRT at the end.
        kernel: AOT: the loaded kernel, set by the caller that launches it.
    """

    plugin: Any
    made: str
    out_shapes: List[Tuple[int, ...]]
    out_dtypes: List[np.dtype]
    combination: str
    tactic: int
    enqueue: Optional[Callable[[List[int], List[int], int, int], int]]
    artifact: Optional[AOTArtifact]
    plan: Optional[Dict[str, Any]]
    teardown: Callable[[], None]
    kernel: Any = None


def _label(descs: Sequence[Any], n_in: int) -> str:
    names = [f"{d.type.name} {d.format.name}" for d in descs]
    return f"{', '.join(names[:n_in])} -> {', '.join(names[n_in:])}"


class QDPSetup(NodeCalls):
    """Makes configured plugins of one QDP creator, node and fields (module docstring).

    Args:
        creator: the registered ``IPluginCreatorV3Quick``.
        node_name: the node's name, named in errors.
        fields: the ``PluginField`` list ``create_plugin`` receives (the node's attributes).
        request: the ``QuickPluginCreationRequest`` member (None before TensorRT 10.9).

    Attributes:
        plugin, plugin_id, label: :class:`~pyplugins.runtime.plugin_setup.NodeCalls`'.
    """

    #: A QDP callback's ``[ERROR]`` line stops the build.
    consequence = "TensorRT prints this line and the build fails"

    def __init__(self, creator: Any, node_name: str, fields: Sequence[Any],
                 request: Any) -> None:
        super().__init__(creator, node_name)
        self.fields = list(fields)
        self.request = request

    def configure(self, shapes: Sequence[Tuple[int, ...]], np_dtypes: Sequence[Any], *,
                  bake: bool = False) -> QDPReady:
        """A new plugin, configured for inputs of ``shapes`` and ``np_dtypes``; ``bake``: an AOT
        plugin's kernel and launch plan too (a JIT plugin needs nothing more).

        Raises:
            ExecutionError: a dtype TensorRT has no type for, a callback that failed, no LINEAR
                combination with the network's types, or an AOT launch no GPU accepts.
        """
        in_types = self.input_types(np_dtypes)
        with CallFailures() as failures:
            plugin = tq.create_plugin(self.creator, self.creator.name,
                                      self.creator.plugin_namespace, self.fields,
                                      TensorRTPhase.BUILD, self.request)
            self.check(failures, plugin is None, "create_plugin", "returned no plugin")
            try:
                return self._configure(plugin, [tuple(int(d) for d in s) for s in shapes],
                                       in_types, bake, failures)
            except BaseException:
                tv3.destroy(plugin)
                raise

    def _configure(self, plugin: Any, shapes: List[Tuple[int, ...]], in_types: List[DataType],
                   bake: bool, failures: CallFailures) -> QDPReady:
        made = "aot" if isinstance(plugin, IPluginV3QuickAOTBuild) else "jit"
        build = tq.get_capability_interface(plugin, PluginCapabilityType.BUILD)
        self.check(failures, build is None, "get_capability_interface",
                    "gave no BUILD capability object")
        n_out = tq.get_nb_outputs(build)
        self.check(failures, n_out < 0, "get_num_outputs", "failed")
        out_types = tq.get_output_data_types(build, in_types, [len(s) for s in shapes])
        self.check(failures, out_types is None, "get_output_data_types",
                    f"did not give {n_out} DataType")
        builder = ConstantBuilder()
        exprs = [DimsExprs([builder.constant(d) for d in s]) for s in shapes]
        out_exprs = tq.get_output_shapes(build, exprs, [], builder)
        self.check(failures, out_exprs is None, "get_output_shapes",
                    f"did not give {n_out} DimsExprs")
        out_shapes = self._out_shapes(out_exprs)
        out_dtypes = output_dtypes(out_types, self.error)
        types = list(in_types) + list(out_types)
        plain = [PluginTensorDesc(s, t, TensorFormat.LINEAR, -1.0)
                 for s, t in zip(shapes + out_shapes, types)]
        dyn = [DynamicPluginTensorDesc(d, d.dims, d.dims, d.dims) for d in plain]
        n_in = len(shapes)
        self._combination(build, dyn, n_in, types, failures)
        status = tq.configure_plugin(build, dyn[:n_in], dyn[n_in:])
        self.check(failures, status != 0, "configure_plugin", "failed")
        tactics = tq.get_valid_tactics(build)
        self.check(failures, tactics is None, "get_valid_tactics", "failed")
        tactic = tactics[0] if tactics else 0
        rt = build if made == "aot" else tq.get_capability_interface(
            plugin, PluginCapabilityType.RUNTIME)
        self.check(failures, rt is None, "get_capability_interface",
                    "gave no RUNTIME capability object")
        self.check(failures, tq.set_tactic(rt, tactic) != 0, "set_tactic", "failed")
        in_desc, out_desc = plain[:n_in], plain[n_in:]
        ready = QDPReady(plugin, made, out_shapes, out_dtypes, _label(plain, n_in), tactic,
                         jit_call(rt, in_desc, out_desc) if made == "jit" else None, None, None,
                         lambda: tv3.destroy(plugin))
        if made == "aot" and bake:
            ready.artifact, ready.plan = self._bake(build, shapes, dyn, plain, out_exprs,
                                                    tactic, failures)
        return ready

    def _out_shapes(self, out_exprs: Sequence[Any]) -> List[Tuple[int, ...]]:
        result = []
        for i, exprs in enumerate(out_exprs):
            dims = []
            for d, expr in enumerate(exprs):
                value = expr.get_constant_value() if expr is not None and expr.is_constant() \
                    else None
                if value is None or value < 0:
                    raise self.error("get_output_shapes", f"the register function gave output "
                                     f"{i} an invalid dim {d} ({expr!r}) at these input shapes")
                dims.append(value)
            result.append(tuple(dims))
        return result

    def _combination(self, build: Any, dyn: List[Any], n_in: int, types: List[DataType],
                     failures: CallFailures) -> None:
        """The builder's format query: the network's combination, all LINEAR, must be offered."""
        combos = tq.get_supported_format_combinations(build, dyn, n_in)
        self.check(failures, combos is None, "get_supported_format_combinations", "failed")
        for combo in combos or []:
            if [d.type for d in combo] == types and \
                    all(d.format == TensorFormat.LINEAR for d in combo):
                return
        offered = "; ".join(_label(c, n_in) for c in (combos or [])[:6]) or "none"
        want = ", ".join(t.name for t in types)
        raise self.error("get_supported_format_combinations", (
            f"QDP plugin '{self.plugin_id}' offers no combination with the network's types "
            f"({want}) all LINEAR, which the execution path runs (offered: {offered}). Add "
            "it to autotune's AutoTuneCombination, or cast the inputs; `pyplugins check` "
            "lists what the plugin accepts."))

    def _bake(self, build: Any, shapes: List[Tuple[int, ...]], dyn: List[Any],
              plain: List[Any], out_exprs: Sequence[Any], tactic: int,
              failures: CallFailures) -> Tuple[AOTArtifact, Dict[str, Any]]:
        """``get_launch_params`` then ``get_kernel``: the engine's artifact and its plan."""
        n_in = len(shapes)
        eb = ConstantBuilder()
        exprs = [DimsExprs([eb.constant(d) for d in s]) for s in shapes]
        params, extra = KernelLaunchParams._make(), ISymExprs._make()
        status = tq.get_launch_params(build, exprs, dyn, n_in, params, extra, eb)
        self.check(failures, status != 0, "get_launch_params", "(aot_impl) failed")
        got = tq.get_kernel(build, plain[:n_in], plain[n_in:])
        self.check(failures)
        if got is None:
            raise self.error("get_kernel", "get_kernel failed")
        name, image = got
        try:
            launch = {f: expr_tree(e) for f, e in launch_exprs(params).items() if e is not None}
            args = [{"dtype": getattr(d, "name", str(d)), "expr": expr_tree(e)}
                    for _, d, e in extra_arg_exprs(extra)]
            art = AOTArtifact(name, image, "cubin" if image[:4] == b"\x7fELF" else "ptx",
                              launch, args, [[expr_tree(e) for e in dims] for dims in out_exprs],
                              [d.type.name for d in plain[:n_in]],
                              [d.type.name for d in plain[n_in:]],
                              [d.format.name for d in plain], int(tactic), self.plugin_id)
            plan = art.launch_plan(dict(enumerate(shapes)))
        except (TypeError, AttributeError, AOTArtifactError) as err:
            raise self.error("get_launch_params", f"aot_impl's launch parameters or extra "
                             f"arguments cannot be evaluated at these shapes: {err}") from err
        problems = launch_problems(plan)
        if problems:
            raise self.error("get_launch_params", f"aot_impl's launch for these shapes "
                             f"(grid {plan['grid']}, block {plan['block']}) is one no GPU "
                             f"accepts: {' '.join(problems)}")
        return art, plan
