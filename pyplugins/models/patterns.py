"""The ONNX subgraphs the shipped plugins replace (RMSNorm, LReLU_TRT, CircPad; RoPE lives in
:mod:`~pyplugins.models.rope_pattern`), as Polygraphy's ``plugin match|replace`` expects them.

Each finder walks an onnx-graphsurgeon graph and returns, per candidate, either a :class:`Match`
(the subgraph's input and output tensor names and the plugin node's attributes) or a refusal: a
sentence saying why a subgraph that looks like the op is left alone (another axis, a weight of
the wrong shape, an eps that is not a constant ...). Replacing wrongly is worse than not
replacing, so every doubt refuses.

Example:
    >>> import numpy as np
    >>> from pyplugins.errors import require
    >>> gs = require("onnx_graphsurgeon", "the example")
    >>> x, y = gs.Variable("x", np.float32, (2, 8)), gs.Variable("y", np.float32, (2, 8))
    >>> node = gs.Node("LeakyRelu", attrs={"alpha": 0.2}, inputs=[x], outputs=[y])
    >>> matches, refusals = find("LReLU_TRT", gs.Graph(nodes=[node], inputs=[x], outputs=[y]))
    >>> matches[0].to_polygraphy()
    {'inputs': ['x'], 'outputs': ['y'], 'attributes': {'neg_slope': 0.2...}}
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from pyplugins.models.graph import (Refusal, axis_index, constant, ints, only_consumer,
                                    other_input, producer, rank, scalar)
from pyplugins.models.match import Found, Match, check_float, dtype_of
from pyplugins.models.rope_pattern import find_rope

__all__ = ["FINDERS", "find"]

def _last_dim(x: Any) -> Optional[int]:
    shape = getattr(x, "shape", None)
    if not shape or not isinstance(shape[-1], (int, np.integer)) or shape[-1] < 0:
        return None
    return int(shape[-1])


def _check_weight(x: Any, w: Any) -> None:
    """RMSNorm's weight: shape [D] with D the last dim of x, x's type."""
    w_shape = getattr(w, "shape", None)
    value = constant(w)
    if value is not None:
        w_shape = value.shape
    if w_shape is None:
        msg = f"the weight {w.name!r} has no declared shape; RMSNorm needs it to be [D]"
        raise Refusal(msg)
    d = _last_dim(x)
    if len(w_shape) != 1 or (d is not None and w_shape[0] != d):
        msg = (f"the weight {w.name!r} has shape {tuple(w_shape)}; RMSNorm needs exactly [D] "
               f"with D = the last dim of {x.name!r} ({d if d is not None else 'unknown'})")
        raise Refusal(msg)
    if dtype_of(w) is not None and dtype_of(x) is not None and dtype_of(w) != dtype_of(x):
        msg = f"the weight {w.name!r} is {dtype_of(w)} but {x.name!r} is {dtype_of(x)}"
        raise Refusal(msg)


# -- RMSNorm -----------------------------------------------------------------------------------


def _mean_axes(node: Any) -> List[int]:
    if len(node.inputs) > 1 and node.inputs[1].name:  # opset 18: axes is an input
        return ints(node.inputs[1], "ReduceMean's axes")
    return [int(a) for a in node.attrs.get("axes", [])]


def _square_of(tensor: Any) -> Optional[Any]:
    """x when ``tensor`` is Pow(x, 2) or Mul(x, x)."""
    node = producer(tensor)
    if node is None:
        return None
    if node.op == "Mul" and len(node.inputs) == 2 and node.inputs[0] is node.inputs[1]:
        return node.inputs[0]
    if node.op == "Pow" and len(node.inputs) == 2:
        exponent = constant(node.inputs[1])
        if exponent is not None and exponent.size == 1 and float(exponent.reshape(())) == 2.0:
            return node.inputs[0]
    return None


def _rms_from_core(graph: Any, mean_node: Any) -> Optional[Match]:
    """Walk forward from ReduceMean(x^2): Add(eps), Sqrt, then Div(x, .) or Mul(x, 1/.),
    then Mul by the weight."""
    x = _square_of(mean_node.inputs[0])
    if x is None:
        return None  # a ReduceMean of something else: not an RMSNorm
    check_float(x, "RMSNorm")
    axes = _mean_axes(mean_node)
    last = (rank(x) or 0) - 1
    if not (axes == [-1] or (axes == [last] and last >= 0)):
        msg = f"it reduces over axes {axes}; RMSNorm normalizes over the last axis only"
        raise Refusal(msg)
    if int(mean_node.attrs.get("keepdims", 1)) != 1:
        raise Refusal("its ReduceMean has keepdims=0, so the division does not broadcast per row")
    add = only_consumer(mean_node.outputs[0], graph, "the mean square")
    eps_tensor = other_input(add, mean_node.outputs[0]) if add.op == "Add" else None
    if eps_tensor is None:
        msg = f"the mean square feeds {add.op} {add.name!r}, not Add(mean, eps)"
        raise Refusal(msg)
    eps = scalar(eps_tensor, "eps")
    if not eps > 0:
        msg = f"eps is {eps!r}; RMSNorm's eps must be > 0"
        raise Refusal(msg)
    sqrt = only_consumer(add.outputs[0], graph, "mean square + eps")
    if sqrt.op != "Sqrt":
        msg = f"mean square + eps feeds {sqrt.op} {sqrt.name!r}, not Sqrt"
        raise Refusal(msg)
    scale = only_consumer(sqrt.outputs[0], graph, "the RMS")
    normed = _normalized(graph, scale, sqrt.outputs[0], x)
    mul = only_consumer(normed, graph, "the normalized x")
    w = other_input(mul, normed) if mul.op == "Mul" else None
    if w is None:
        msg = (f"the normalized x feeds {mul.op} {mul.name!r}, not Mul(., weight); RMSNorm "
               "needs the weight multiply in the pattern")
        raise Refusal(msg)
    _check_weight(x, w)
    return Match([x.name, w.name], [mul.outputs[0].name], {"eps": eps}, mean_node.name)


def _normalized(graph: Any, node: Any, rms: Any, x: Any) -> Any:
    """The tensor x / rms, from Div(x, rms), or Mul(x, r) with r = Reciprocal(rms) or 1 / rms."""
    if node.op == "Div" and len(node.inputs) == 2 and node.inputs[1] is rms:
        one = constant(node.inputs[0])
        if one is None or one.size != 1 or float(one.reshape(())) != 1.0:
            if node.inputs[0] is not x:
                msg = (f"it divides {node.inputs[0].name!r}, not the squared input "
                       f"{x.name!r}")
                raise Refusal(msg)
            return node.outputs[0]
    elif node.op != "Reciprocal":
        msg = f"the RMS feeds {node.op} {node.name!r}, not Div(x, rms) nor a reciprocal"
        raise Refusal(msg)
    mul = only_consumer(node.outputs[0], graph, "1 / rms")
    if mul.op != "Mul" or other_input(mul, node.outputs[0]) is not x:
        msg = f"1 / rms feeds {mul.op} {mul.name!r}, not Mul(x, 1 / rms) of {x.name!r}"
        raise Refusal(msg)
    return mul.outputs[0]


def _rmsnorm_op(graph: Any, node: Any) -> Match:
    """Opset 23's RMSNormalization(X, scale, axis, epsilon)."""
    x, w = node.inputs[0], node.inputs[1]
    check_float(x, "RMSNorm")
    axis = int(node.attrs.get("axis", -1))
    if axis_index(axis, rank(x)) != (rank(x) or 0) - 1 and axis != -1:
        msg = f"axis={axis} normalizes over several axes; RMSNorm normalizes over the last only"
        raise Refusal(msg)
    _check_weight(x, w)
    eps = float(node.attrs.get("epsilon", 1e-5))
    return Match([x.name, w.name], [node.outputs[0].name], {"eps": eps}, node.name)


def find_rmsnorm(graph: Any) -> Found:
    """RMSNorm: Pow/ReduceMean/Add/Sqrt/Div/Mul (or Mul by Reciprocal) and RMSNormalization."""
    matches, refusals = [], []
    for node in list(graph.nodes):
        try:
            if node.op == "ReduceMean":
                found = _rms_from_core(graph, node)
            elif node.op == "RMSNormalization":
                found = _rmsnorm_op(graph, node)
            else:
                continue
        except Refusal as why:
            refusals.append(f"RMSNorm: not replacing at {node.op} {node.name!r}: {why}")
            continue
        if found is not None:
            matches.append(found)
    return matches, refusals


# -- LeakyRelu -> LReLU_TRT ----------------------------------------------------------------------


def find_leaky_relu(graph: Any) -> Found:
    """Every LeakyRelu of float32/float16 data; ``alpha`` (default 0.01) becomes neg_slope."""
    matches, refusals = [], []
    for node in graph.nodes:
        if node.op != "LeakyRelu":
            continue
        try:
            check_float(node.inputs[0], "LReLU_TRT")
        except Refusal as why:
            refusals.append(f"LReLU_TRT: not replacing {node.name!r}: {why}")
            continue
        alpha = float(node.attrs.get("alpha", 0.01))
        matches.append(Match([node.inputs[0].name], [node.outputs[0].name],
                             {"neg_slope": alpha}, node.name))
    return matches, refusals


# -- Pad(mode="wrap") -> CircPad -----------------------------------------------------------------


def _circ_pads(node: Any) -> List[int]:
    x = node.inputs[0]
    pads = ints(node.inputs[1], "the pads input")
    if any(p < 0 for p in pads):
        msg = f"pads {pads} has negative entries (a crop); CircPad only pads"
        raise Refusal(msg)
    if len(node.inputs) > 2 and node.inputs[2].name:
        value = constant(node.inputs[2])
        if value is None or np.any(value != 0):
            raise Refusal("it has a constant_value input, which a wrap pad must not need")
    n = len(pads) // 2
    axes = list(range(n))
    if len(node.inputs) > 3 and node.inputs[3].name:
        r = rank(x)
        axes = [axis_index(a, r) for a in ints(node.inputs[3], "the axes input")]
        if None in axes:
            msg = f"its axes are negative and the rank of {x.name!r} is not declared"
            raise Refusal(msg)
    r = rank(x) if rank(x) is not None else (n if len(axes) == n and axes == list(range(n))
                                              else None)
    if r is None or len(pads) != 2 * len(axes):
        raise Refusal(f"pads {pads} do not fit the axes {axes} (rank {r})")
    before, after = [0] * r, [0] * r
    for i, a in enumerate(axes):
        before[a], after[a] = pads[i], pads[i + len(axes)]
    padded = [a for a in range(r) if before[a] or after[a]]
    if not padded:
        raise Refusal("every pad is 0, so there is nothing to replace")
    k = r - min(padded)
    if k > 8:
        raise Refusal(f"it pads {k} dims; CircPad pads at most 8")
    out: List[int] = []
    for i in range(k):  # CircPad's order: the last dim first, (before, after) per dim
        out += [before[r - 1 - i], after[r - 1 - i]]
    return out


def find_circ_pad(graph: Any) -> Found:
    """Pad(mode="wrap") with constant, non-negative pads."""
    matches, refusals = [], []
    for node in graph.nodes:
        if node.op != "Pad" or node.attrs.get("mode", "constant") != "wrap":
            continue
        try:
            pads = _circ_pads(node)
        except Refusal as why:
            refusals.append(f"CircPad: not replacing {node.name!r}: {why}")
            continue
        matches.append(Match([node.inputs[0].name], [node.outputs[0].name], {"pads": pads},
                             node.name))
    return matches, refusals


#: Plugin name (the Polygraphy plugin directory's name) -> (ONNX op type, finder).
FINDERS: Dict[str, Tuple[str, Callable[[Any], Found]]] = {
    "RMSNorm": ("RMSNorm", find_rmsnorm),
    "RoPE": ("RoPE", find_rope),
    "CircPad": ("CircPad", find_circ_pad),
    "LReLU_TRT": ("LReLU_TRT", find_leaky_relu),
}


def find(plugin: str, graph: Any) -> Found:
    """The matches and refusals of one plugin's pattern in ``graph``.

    Raises:
        KeyError: ``plugin`` is not one of :data:`FINDERS`.
    """
    if plugin not in FINDERS:
        msg = f"no pattern for plugin {plugin!r}; known: {sorted(FINDERS)}"
        raise KeyError(msg)
    return FINDERS[plugin][1](graph)
