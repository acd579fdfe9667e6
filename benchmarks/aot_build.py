"""An op's AOT artifact, made as a TensorRT build makes it through the emulator's QDP path.

The class is registered as a QDP plugin under the emulator's ``tensorrt.plugin`` and driven
through ``create_plugin`` (STRICT_AOT), ``get_output_data_types``, ``get_output_shapes``, the
format query, ``configure_plugin``, ``set_tactic``, ``get_launch_params`` (its ``aot_impl``) and
``get_kernel``, through the emulator's Quick trampoline, exactly the calls the QDP checker's
build makes (:mod:`pyplugins.checker.qdp_run`), then stored as
:class:`~pyplugins.checker.aot_artifact.AOTArtifact`.

:func:`build` also returns the :class:`~pyplugins.runtime.aot.AotLaunch` the class's
``aot_launch`` returned (kernel source, expression and element type), which the C++ launcher's
``<<<>>>`` floor compiles with nvcc. Dimensions that differ between the profile's bounds are
dynamic (-1) in the network, so every launch parameter that depends on them is an expression
the launcher evaluates.

Example::

    built = build(LeakyReLU, {"neg_slope": 0.01}, lo=[(1, 1024)], hi=[(4096, 1024)],
                  dtypes=["float32"])
    built.artifact.launch_plan({0: (1, 1024)})["grid"]
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Sequence, Tuple

__all__ = ["AotBuildError", "Built", "build", "has_aot"]


class AotBuildError(RuntimeError):
    """A build call failed; the message names the op and the call."""


@dataclass
class Built:
    """What :func:`build` made: the artifact, the recorded ``AotLaunch`` and the network's
    input shapes (-1: dynamic)."""

    artifact: Any
    launch: Any
    net_shapes: List[Tuple[int, ...]]


def has_aot(cls: Any) -> bool:
    """Whether ``cls`` gets an ``aot_impl`` when registered as QDP (it has ``aot_launch`` and
    QDP can serve it)."""
    from pyplugins.runtime import qdp

    return qdp.aot_support(cls) is None


@contextlib.contextmanager
def _recording(cls: Any) -> Iterator[List[Any]]:
    """``cls.aot_launch`` wrapped so that each ``AotLaunch`` it returns is kept."""
    seen: List[Any] = []
    own = "aot_launch" in cls.__dict__
    original = cls.__dict__.get("aot_launch")
    inherited = cls.aot_launch

    def aot_launch(self: Any, inputs: Any, outputs: Any) -> Any:
        got = inherited(self, inputs, outputs)
        seen.append(got)
        return got

    cls.aot_launch = aot_launch
    try:
        yield seen
    finally:
        if own:
            cls.aot_launch = original
        else:
            del cls.aot_launch


def _bounds(lo: Sequence[Sequence[int]], hi: Sequence[Sequence[int]]) -> List[Tuple[int, ...]]:
    return [tuple(a if a == b else -1 for a, b in zip(x, y)) for x, y in zip(lo, hi)]


def build(cls: Any, fields: Dict[str, Any], *, lo: Sequence[Sequence[int]],
          hi: Sequence[Sequence[int]], dtypes: Sequence[str], tactic: int = 0) -> Built:
    """Build ``cls``'s AOT kernel for inputs of numpy dtypes ``dtypes`` and a profile from
    ``lo`` to ``hi`` (opt = ``hi``), with every output of the registered types and LINEAR.

    Raises:
        AotBuildError: a build call failed, or the class has no AOT implementation.
    """
    import pyplugins.trt as trt
    from pyplugins import dtypes as dt
    from pyplugins.checker.aot_artifact import AOTArtifact
    from pyplugins.checker.size_tensors import SizeTensorBuilder
    from pyplugins.emulator import trampoline_quick as tq
    from pyplugins.emulator.bases_quick import (ISymExprs, KernelLaunchParams,
                                                extra_arg_exprs, launch_exprs)
    from pyplugins.emulator.dims import expr_tree
    from pyplugins.emulator.enums import PluginCapabilityType as Cap
    from pyplugins.emulator.plugin.attributes import fields_from_attrs
    from pyplugins.runtime import qdp
    from pyplugins.runtime.qdp_attrs import attrs_from_values

    def need(value: Any, call: str) -> Any:
        if value is None or (isinstance(value, int) and value != 0):
            msg = f"{cls.name}: {call} failed while building the AOT kernel"
            raise AotBuildError(msg)
        return value

    if not has_aot(cls):
        raise AotBuildError(f"{cls.name}: {qdp.aot_support(cls)}")
    creator = qdp.define(cls, replace=True)
    try:
        with _recording(cls) as seen:
            net = _bounds(lo, hi)
            plugin = need(tq.create_plugin(
                creator, cls.name, qdp.namespace_of(cls),
                list(fields_from_attrs(attrs_from_values(cls, fields))),
                trt.TensorRTPhase.BUILD, trt.QuickPluginCreationRequest.STRICT_AOT),
                "create_plugin")
            b = need(tq.get_capability_interface(plugin, Cap.BUILD), "get_capability_interface")
            in_types = [getattr(trt.DataType, dt.trt_name_from_numpy(d)) for d in dtypes]
            out_types = need(tq.get_output_data_types(b, in_types, [len(s) for s in net]),
                             "get_output_data_types")
            eb = SizeTensorBuilder()  # kept alive: aot_impl reuses its expressions
            exprs = [eb._input(k, s) for k, s in enumerate(net)]
            out_exprs = need(tq.get_output_shapes(b, exprs, [], eb), "get_output_shapes")

            def at(shapes: Sequence[Sequence[int]]) -> List[Tuple[int, ...]]:
                known = {k: tuple(s) for k, s in enumerate(shapes)}
                return [tuple(e._evaluate(known) for e in o) for o in out_exprs]

            def dyn(shape: Sequence[int], t: Any, a: Sequence[int], z: Sequence[int]) -> Any:
                d = trt.PluginTensorDesc(list(shape), t, trt.TensorFormat.LINEAR, -1.0)
                return trt.DynamicPluginTensorDesc(d, list(a), list(z), list(z))

            out_net = [tuple(int(e.get_constant_value()) if e.is_constant() else -1 for e in o)
                       for o in out_exprs]
            in_out = ([dyn(s, t, a, z) for s, t, a, z in zip(net, in_types, lo, hi)]
                      + [dyn(s, t, a, z) for s, t, a, z in zip(out_net, out_types, at(lo), at(hi))])
            n_in = len(net)
            need(tq.get_supported_format_combinations(b, in_out, n_in),
                 "get_supported_format_combinations")
            need(tq.configure_plugin(b, in_out[:n_in], in_out[n_in:]), "configure_plugin")
            tactics = tq.get_valid_tactics(b) or [0]
            need(tq.set_tactic(b, tactic if tactic in tactics else tactics[0]), "set_tactic")
            params, extra = KernelLaunchParams._make(), ISymExprs._make()
            need(tq.get_launch_params(b, exprs, in_out, n_in, params, extra, eb),
                 "get_launch_params (aot_impl)")
            plain = [trt.PluginTensorDesc(list(s), t, trt.TensorFormat.LINEAR, -1.0)
                     for s, t in zip(list(hi) + at(hi), in_types + list(out_types))]
            name, image = need(tq.get_kernel(b, plain[:n_in], plain[n_in:]), "get_kernel")
            art = AOTArtifact(
                name, image, "cubin" if image[:4] == b"\x7fELF" else "ptx",
                {f: expr_tree(e) for f, e in launch_exprs(params).items() if e is not None},
                [{"dtype": getattr(d, "name", str(d)), "expr": expr_tree(e)}
                 for _, d, e in extra_arg_exprs(extra)],
                [[expr_tree(e) for e in o] for o in out_exprs], [t.name for t in in_types],
                [t.name for t in out_types], ["LINEAR"] * (n_in + len(out_types)), int(tactic),
                qdp.plugin_id(cls))
        if not seen:
            raise AotBuildError(f"{cls.name}: aot_launch was never called")
        return Built(art, seen[-1], net)
    finally:
        qdp.forget(cls)
