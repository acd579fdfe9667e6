"""A plugin's tensors at each profile point, and the descriptors TensorRT builds for them.

TensorRT indexes a plugin's tensors as ``in_out`` does: inputs first, then outputs. The input
shapes come from the network (:class:`~pyplugins.emulator.specs.TensorSpec`); the output shapes
from evaluating ``get_output_dimensions``' expressions, once without input shapes (the network
shape, ``-1`` where dynamic) and once at each of the profile's min, opt and max
(:func:`output_dims`).
:class:`PluginTensors` then builds the ``PluginTensorDesc`` and ``DynamicPluginTensorDesc`` lists
that ``supports_format_combination``, ``configure_plugin``, ``get_workspace_size`` and ``enqueue``
receive, for one choice of (type, format) per tensor (a :data:`Combo`).

Example:
    >>> from pyplugins.emulator.dims import IExprBuilder
    >>> from pyplugins.emulator.specs import TensorSpec
    >>> specs = [TensorSpec.parse("1-2-4x3:float32")]
    >>> builder = IExprBuilder()
    >>> (x,) = [builder._input(k, s.shape) for k, s in enumerate(specs)]
    >>> dims, bad = output_dims([[x[0], x[1]]], specs)
    >>> dims["net"], dims["min"], dims["max"], bad
    ([(-1, 3)], [(1, 3)], [(4, 3)], [])
    >>> tensors = PluginTensors(specs, dims)
    >>> ins, outs = tensors.plain([(DataType.HALF, TensorFormat.LINEAR)] * 2, "opt")
    >>> outs[0].dims, outs[0].type.name
    ((2, 3), 'HALF')
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from pyplugins.emulator.descs import DynamicPluginTensorDesc, PluginTensorDesc
from pyplugins.emulator.enums import DataType, TensorFormat
from pyplugins.emulator.specs import TensorSpec

__all__ = ["Combo", "PluginTensors", "output_dims"]

#: One (type, format) per tensor, inputs then outputs: a format combination.
Combo = List[Tuple[DataType, TensorFormat]]


def output_dims(out_exprs: Sequence[Sequence[Any]], specs: Sequence[TensorSpec]
                ) -> Tuple[Dict[str, List[Tuple[int, ...]]], List[str]]:
    """Evaluate each output's dimension expressions on the network and at min, opt and max.

    Args:
        out_exprs: per output, the ``DimsExprs`` that ``get_output_dimensions`` returned
            (built on the inputs' network shapes).
        specs: the inputs' specs.

    Returns:
        ``{"net": [...], "min": [...], "opt": [...], "max": [...]}``, each a tuple of dims per
        output (``-1`` where a dimension cannot be evaluated), and what is wrong with them: empty
        slots, divisions by zero, negative dimensions, one sentence each.
    """
    profiles = {name: {k: getattr(s, name) for k, s in enumerate(specs)}
                for name in ("min", "opt", "max")}
    result: Dict[str, List[Tuple[int, ...]]] = {"net": [], "min": [], "opt": [], "max": []}
    bad = []
    for i, exprs in enumerate(out_exprs):
        dims: Dict[str, List[int]] = {name: [] for name in result}
        for d, expr in enumerate(exprs):
            if expr is None:
                bad.append(f"output {i} dim {d} is an empty slot (DimsExprs(n) leaves n "
                           f"unset entries; assign every one)")
                continue
            try:
                dims["net"].append(expr._evaluate({}))
            except KeyError:
                dims["net"].append(-1)
            except ZeroDivisionError as err:
                dims["net"].append(-1)
                bad.append(f"output {i} dim {d}: {err}")
                continue
            for name, shapes in profiles.items():
                try:
                    value = expr._evaluate(shapes)
                except ZeroDivisionError as err:
                    bad.append(f"output {i} dim {d} at the {name} input shapes: {err}")
                    value = -1
                else:
                    if value < 0:
                        bad.append(f"output {i} dim {d} is {value} at the {name} input "
                                   f"shapes {list(shapes.values())} ({expr!r})")
                dims[name].append(value)
        for name in result:
            result[name].append(tuple(dims[name]))
    return result, bad


class PluginTensors:
    """The plugin's inputs and outputs, indexed as ``in_out`` is, and their descriptors.

    Args:
        specs: the inputs' specs.
        out_dims: the outputs' shapes, as :func:`output_dims` returns them.
    """

    def __init__(self, specs: Sequence[TensorSpec],
                 out_dims: Dict[str, List[Tuple[int, ...]]]) -> None:
        self.specs, self.out_dims, self.n_in = specs, out_dims, len(specs)

    def net_dims(self, k: int) -> Tuple[int, ...]:
        """Tensor ``k``'s network shape (``-1`` where dynamic)."""
        return self.specs[k].shape if k < self.n_in else self.out_dims["net"][k - self.n_in]

    def profile(self, k: int, name: str) -> Tuple[int, ...]:
        """Tensor ``k``'s shape at the profile's ``name`` (``"min"``, ``"opt"`` or ``"max"``)."""
        if k < self.n_in:
            return getattr(self.specs[k], name)
        return self.out_dims[name][k - self.n_in]

    def desc(self, k: int, cand: Tuple[DataType, TensorFormat], dims: Sequence[int]
             ) -> PluginTensorDesc:
        """Tensor ``k``'s descriptor with the type and format ``cand`` and shape ``dims``."""
        scale = self.specs[k].scale if k < self.n_in and cand[0] == DataType.INT8 else -1.0
        return PluginTensorDesc(dims, cand[0], cand[1], scale)

    def dynamic(self, combo: Combo, build: bool) -> Tuple[list, list]:
        """configure_plugin's lists: build phase with -1 wildcards, execution phase at opt."""
        descs = []
        for k, cand in enumerate(combo):
            dims = self.net_dims(k) if build else self.profile(k, "opt")
            descs.append(DynamicPluginTensorDesc(self.desc(k, cand, dims), self.profile(k, "min"),
                                                 self.profile(k, "opt"), self.profile(k, "max")))
        return descs[:self.n_in], descs[self.n_in:]

    def plain(self, combo: Combo, profile: str) -> Tuple[list, list]:
        """get_workspace_size's and enqueue's lists: every tensor at the profile's ``profile``."""
        descs = [self.desc(k, c, self.profile(k, profile)) for k, c in enumerate(combo)]
        return descs[:self.n_in], descs[self.n_in:]
