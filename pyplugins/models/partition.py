"""Split an ONNX graph into runs of ordinary ops (one onnxruntime session each) and plugin nodes.

A node is a plugin node when ONNX does not define its op in its domain: that is when TensorRT's
parser, finding no importer of its own, hands it to the plugin fallback (protocol §4.4). The
graph is walked in its topological order; consecutive ordinary nodes form one :class:`Segment`,
whose inputs are the values it reads that it does not produce, and whose outputs are the values
a later step (or the graph) reads.

Example:
    >>> from onnx import TensorProto, helper
    >>> nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("MyPlug", ["a"], ["b"]),
    ...          helper.make_node("Neg", ["b"], ["y"])]
    >>> graph = helper.make_graph(nodes, "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    >>> [s.outputs if isinstance(s, Segment) else s.op_type for s in split(graph)]
    [['a'], 'MyPlug', ['y']]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, List, Set, Union

from pyplugins.errors import require

__all__ = ["Segment", "is_plugin_node", "split"]


def is_plugin_node(node: Any) -> bool:
    """Whether ONNX leaves ``node``'s op undefined, so TensorRT imports it as a plugin."""
    onnx = require("onnx", "pyplugins' model runner")
    domain = node.domain if node.domain not in ("ai.onnx",) else ""
    return not onnx.defs.has(node.op_type, domain)


@dataclass
class Segment:
    """Consecutive ordinary nodes, run as one onnxruntime session.

    Attributes:
        nodes: the NodeProtos, in order.
        inputs: names read from outside (graph inputs, plugin outputs, earlier segments).
        outputs: names produced here and read later or by the graph.
        initializers: names of the graph's initializers the nodes read.
    """

    nodes: List[Any] = field(default_factory=list)
    inputs: List[str] = field(default_factory=list)
    outputs: List[str] = field(default_factory=list)
    initializers: List[str] = field(default_factory=list)


def _reads(node: Any) -> List[str]:
    """Every name a node reads, including those its subgraphs (If/Loop/Scan bodies) capture."""
    names = [n for n in node.input if n]
    for attr in node.attribute:
        for body in list(attr.g.node if attr.HasField("g") else []) + [
                n for g in attr.graphs for n in g.node]:
            names.extend(_reads(body))
    return names


def split(graph: Any) -> List[Union[Segment, Any]]:
    """The steps of ``graph``: :class:`Segment` s and plugin NodeProtos, in execution order."""
    initializers = {t.name for t in graph.initializer}
    steps: List[Union[Segment, Any]] = []
    for node in graph.node:
        if is_plugin_node(node):
            steps.append(node)
        elif steps and isinstance(steps[-1], Segment):
            steps[-1].nodes.append(node)
        else:
            steps.append(Segment(nodes=[node]))
    needed_later: Set[str] = {o.name for o in graph.output}
    for step in reversed(steps):
        nodes = step.nodes if isinstance(step, Segment) else [step]
        produced = {o for n in nodes for o in n.output if o}
        reads = [r for n in nodes for r in _reads(n)]
        if isinstance(step, Segment):
            step.outputs = [o for n in nodes for o in n.output if o and o in needed_later]
            step.initializers = _unique(r for r in reads if r in initializers
                                        and r not in produced)
            step.inputs = _unique(r for r in reads if r not in produced and r not in initializers)
        needed_later |= {r for r in reads if r not in produced}
    return steps


def _unique(names: Iterable[str]) -> List[str]:
    return list(dict.fromkeys(names))
