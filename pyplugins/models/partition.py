"""Split an ONNX graph into runs of ordinary ops (one onnxruntime session each) and plugin nodes.

A node is a plugin node when ONNX does not define its op in its domain: that is when TensorRT's
parser, finding no importer of its own, hands it to the plugin fallback (protocol §4.4). The
graph is walked in its topological order; consecutive ordinary nodes form one :class:`Segment`,
whose inputs are the values it reads that it does not produce (names an ``If``/``Loop``/``Scan``
body captures from the graph count; names the body defines for itself do not), and whose outputs
are the values a later step (or the graph) reads.

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
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union

from pyplugins.errors import require

__all__ = ["Segment", "is_plugin_node", "outer_reads", "split", "subgraphs"]


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


def subgraphs(node: Any) -> Iterator[Tuple[str, Any]]:
    """``(attribute name, GraphProto)`` of each body a node holds (If branches, Loop/Scan body).

    Example:
        >>> from onnx import helper
        >>> body = helper.make_graph([], "b", [], [])
        >>> [name for name, _ in subgraphs(helper.make_node("If", ["c"], ["y"],
        ...                                                 then_branch=body, else_branch=body))]
        ['else_branch', 'then_branch']
    """
    for attr in node.attribute:
        if attr.HasField("g"):
            yield attr.name, attr.g
        for g in attr.graphs:
            yield attr.name, g


def _defines(graph: Any) -> Set[str]:
    names = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    names |= {s.values.name for s in graph.sparse_initializer}
    return names | {o for n in graph.node for o in n.output if o}


def outer_reads(node: Any) -> List[str]:
    """The names ``node`` reads from the graph it is in: its inputs, then what its bodies capture
    (read but not defined inside them), in order and without repeats. Iterative: deep nesting
    cannot exhaust the stack.

    Example:
        >>> from onnx import helper
        >>> body = helper.make_graph([helper.make_node("Neg", ["x"], ["local"]),
        ...                           helper.make_node("Abs", ["local"], ["out"])], "b", [], [])
        >>> outer_reads(helper.make_node("If", ["c"], ["y"], then_branch=body, else_branch=body))
        ['c', 'x']
    """
    names = [n for n in node.input if n]
    stack: List[Tuple[Any, List[Set[str]]]] = [(g, []) for _, g in subgraphs(node)]
    while stack:
        graph, chain = stack.pop()
        chain = chain + [_defines(graph)]
        for inner in graph.node:
            names += [n for n in inner.input if n and not any(n in s for s in chain)]
            stack += [(g, chain) for _, g in subgraphs(inner)]
        names += [o.name for o in graph.output if not any(o.name in s for s in chain)]
    return list(dict.fromkeys(names))


def split(graph: Any, nodes: Optional[Sequence[Any]] = None) -> List[Union[Segment, Any]]:
    """The steps of ``graph``: :class:`Segment` s and plugin NodeProtos, in execution order.

    Args:
        graph: the GraphProto.
        nodes: its nodes in a topological order (default: as stored; see
            :func:`pyplugins.models.validate.validate_model`, which sorts them).
    """
    initializers = {t.name for t in graph.initializer}
    steps: List[Union[Segment, Any]] = []
    for node in graph.node if nodes is None else nodes:
        if is_plugin_node(node):
            steps.append(node)
        elif steps and isinstance(steps[-1], Segment):
            steps[-1].nodes.append(node)
        else:
            steps.append(Segment(nodes=[node]))
    needed_later: Set[str] = {o.name for o in graph.output}
    for step in reversed(steps):
        members = step.nodes if isinstance(step, Segment) else [step]
        produced = {o for n in members for o in n.output if o}
        reads = [r for n in members for r in outer_reads(n)]
        if isinstance(step, Segment):
            step.outputs = [o for n in members for o in n.output if o and o in needed_later]
            step.initializers = _unique(r for r in reads if r in initializers
                                        and r not in produced)
            step.inputs = _unique(r for r in reads if r not in produced and r not in initializers)
        needed_later |= {r for r in reads if r not in produced}
    return steps


def _unique(names: Iterable[str]) -> List[str]:
    return list(dict.fromkeys(names))
