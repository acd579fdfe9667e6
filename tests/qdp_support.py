"""Drive a pp.Plugin registered as tensorrt.plugin (QDP) through the emulator's stand-in, as
TensorRT calls it (docs/trt-protocol.md §8.4)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import pyplugins.trt as trt
from pyplugins.checker.size_tensors import SizeTensorBuilder, evaluate
from pyplugins.emulator.bases_quick import ISymExprs, KernelLaunchParams
from pyplugins.emulator.plugin.attributes import fields_from_attrs
from pyplugins.emulator.plugin_field import PluginFieldCollection_
from pyplugins.runtime import qdp
from pyplugins.runtime.qdp_attrs import attrs_from_values

REQUEST = trt.QuickPluginCreationRequest


def fc(attrs: Dict[str, Any]) -> Any:
    """The fields ``create_plugin`` gets for these QDP attribute values."""
    return PluginFieldCollection_(fields_from_attrs(attrs))


def create(cls: Any, values: Optional[Dict[str, Any]] = None, request: Any = None,
           attrs: Optional[Dict[str, Any]] = None) -> Any:
    """``create_plugin`` (build phase) of the class's QDP creator, from Python field values
    (every field written, as pyplugins' node writer does) or raw QDP ``attrs``."""
    creator = trt.get_plugin_registry().get_creator(cls.name, "1", qdp.namespace_of(cls))
    given = attrs if attrs is not None else attrs_from_values(cls, values or {})
    extra = () if request is None else (request,)
    return creator.create_plugin(cls.name, qdp.namespace_of(cls), fc(given),
                                 trt.TensorRTPhase.BUILD, *extra)


def dyn(shape: Sequence[int], dtype: Any, lo: Optional[Sequence[int]] = None,
        hi: Optional[Sequence[int]] = None) -> Any:
    desc = trt.PluginTensorDesc(list(shape), dtype, trt.TensorFormat.LINEAR, -1.0)
    return trt.DynamicPluginTensorDesc(desc, lo or shape, shape, hi or shape)


def desc(shape: Sequence[int], dtype: Any) -> Any:
    return trt.PluginTensorDesc(list(shape), dtype, trt.TensorFormat.LINEAR, -1.0)


class Built:
    """One QDP plugin taken through the build calls: output types and symbolic shapes, the
    format combinations, the configuration of one of them and (AOT) the launch parameters.

    Args:
        plugin: what ``create_plugin`` returned.
        shapes: the network's input shapes (-1: dynamic).
        types: the input types.
        lo, hi: the profile's min and max input shapes (default: ``shapes``).
    """

    def __init__(self, plugin: Any, shapes: Sequence[Sequence[int]], types: Sequence[Any],
                 lo: Optional[Sequence[Sequence[int]]] = None,
                 hi: Optional[Sequence[Sequence[int]]] = None) -> None:
        self.plugin, self.shapes, self.types = plugin, [tuple(s) for s in shapes], list(types)
        self.lo = [tuple(s) for s in (lo or shapes)]
        self.hi = [tuple(s) for s in (hi or shapes)]
        self.out_types = plugin.get_output_data_types(self.types, [len(s) for s in shapes])
        self.eb = SizeTensorBuilder()  # kept alive: QDP reuses its expressions later
        self.inputs = [self.eb._input(i, s) for i, s in enumerate(self.shapes)]
        self.out_exprs = plugin.get_output_shapes(self.inputs, [], self.eb)

    def out_shapes(self, at: Sequence[Sequence[int]]) -> List[Tuple[int, ...]]:
        """The output shapes for concrete input shapes ``at``."""
        return [evaluate(e, dict(enumerate(tuple(s) for s in at))) for e in self.out_exprs]

    def _net_out(self) -> List[Tuple[int, ...]]:
        consts = [tuple(int(d.get_constant_value()) if d.is_constant() else -1 for d in e)
                  for e in self.out_exprs]
        return consts

    def in_out(self, types: Optional[Sequence[Any]] = None) -> List[Any]:
        """DynamicPluginTensorDescs of every tensor, with ``types`` (default: inputs' and
        registered outputs')."""
        types = list(types or (self.types + list(self.out_types)))
        n_in = len(self.shapes)
        los, his = self.out_shapes(self.lo), self.out_shapes(self.hi)
        ins = [dyn(s, t, lo, hi) for s, t, lo, hi in zip(self.shapes, types, self.lo, self.hi)]
        outs = [dyn(s, t, lo, hi) for s, t, lo, hi in zip(self._net_out(), types[n_in:], los, his)]
        return ins + outs

    def combinations(self) -> List[Tuple[str, ...]]:
        """The type names of each supported combination (TensorRT asks twice; so do we)."""
        in_out = self.in_out()
        n = len(in_out)
        self.plugin.get_supported_format_combinations(in_out, len(self.shapes))
        flat = self.plugin.get_supported_format_combinations(in_out, len(self.shapes))
        return [tuple(d.type.name for d in flat[i:i + n]) for i in range(0, len(flat), n)]

    def configure(self, types: Optional[Sequence[Any]] = None, tactic: int = 0) -> List[Any]:
        """``configure_plugin`` with one combination's types, then ``set_tactic``; returns
        ``in_out``. The tactic must be one ``get_valid_tactics`` offers (or 0 when none)."""
        self.combinations()  # TensorRT's format query comes first
        in_out = self.in_out(types)
        n_in = len(self.shapes)
        self.plugin.configure_plugin(in_out[:n_in], in_out[n_in:])
        valid = self.plugin.get_valid_tactics()
        assert tactic in (valid or [0]), (tactic, valid)
        self.plugin.set_tactic(tactic)
        return in_out

    def launch(self, in_out: List[Any], at: Sequence[Sequence[int]]) -> Dict[str, Any]:
        """AOT: ``get_launch_params`` then ``get_kernel``, evaluated at input shapes ``at``."""
        lp, ea = KernelLaunchParams._make(), ISymExprs._make()
        n_in = len(self.shapes)
        self.plugin.get_launch_params(self.inputs, in_out, n_in, lp, ea, self.eb)
        shapes = dict(enumerate(tuple(s) for s in at))
        params = lp._evaluate(shapes)
        ins = [desc(s, d.desc.type) for s, d in zip(at, in_out[:n_in])]
        outs = [desc(s, d.desc.type) for s, d in zip(self.out_shapes(at), in_out[n_in:])]
        name, ptx = self.plugin.get_kernel(ins, outs)
        return {"grid": (params["grid_x"], params["grid_y"], params["grid_z"]),
                "block": (params["block_x"], params["block_y"], params["block_z"]),
                "shared_mem": params["shared_mem"], "args": ea._evaluate(shapes),
                "arg_types": [ea[i]._parts()[1].name for i in range(len(ea))],
                "name": name, "ptx": ptx}
