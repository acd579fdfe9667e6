"""Refusing ONNX graphs TensorRT's parser could not import, before anything runs them: one line
naming the node or tensor, as a :class:`~pyplugins.models.model_file.ModelFileError`.

:func:`validate_model` checks, in one pass over every graph (linear in its size):

- text: every name and string field is UTF-8 (protobuf hands back bytes where it is not);
- opset imports: each domain once, a version ONNX defines for its own domains (opset 999 is
  refused), and every node's domain imported;
- single assignment: no tensor written by two nodes, twice by one node, or both written and a
  graph input or initializer; no graph input or output listed twice;
- every name a node reads is a graph input, an initializer, a node output, or (in an
  ``If``/``Loop``/``Scan`` body) a name of an enclosing graph; every graph output is produced;
- main-graph inputs and outputs are tensors, inputs of a type TensorRT has (no string or
  complex tensors);
- no ``Loop`` with neither a trip count nor a condition (it would never end);
- no cycle (the parser sorts nodes topologically, so an unsorted graph is sorted, as it does);
- subgraphs nested at most :data:`MAX_DEPTH` deep, and no plugin node inside one (the runner and
  the check drive plugin nodes of the main graph only).

Example:
    >>> from onnx import TensorProto, helper
    >>> info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    >>> nodes = [helper.make_node("Neg", ["a"], ["y"], name="second"),
    ...          helper.make_node("Relu", ["x"], ["a"], name="first")]
    >>> model = helper.make_model(helper.make_graph(nodes, "g", [info], [
    ...     helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]))
    >>> [n.name for n in validate_model(model)]
    ['first', 'second']
    >>> nodes.append(helper.make_node("Abs", ["x"], ["y"], name="third"))
    >>> validate_model(helper.make_model(helper.make_graph(nodes, "g", [info], [])))
    Traceback (most recent call last):
    ...
    pyplugins.models.model_file.ModelFileError: the model: tensor 'y' is written by node 'second' ...
"""

from __future__ import annotations

import functools
from typing import Any, Dict, List, Optional, Set, Tuple

from pyplugins.echo import echo
from pyplugins.errors import require
from pyplugins.models.model_file import ModelFileError
from pyplugins.models.partition import is_plugin_node, outer_reads, subgraphs

__all__ = ["MAX_DEPTH", "node_label", "validate_model"]

#: The deepest nesting of If/Loop/Scan bodies accepted.
MAX_DEPTH = 16

_ONNX_DOMAINS = ("", "ai.onnx.ml", "ai.onnx.training", "ai.onnx.preview.training")
# TensorProto element types TensorRT has no tensor for: STRING, COMPLEX64, COMPLEX128.
_NO_TRT_TYPE = {8: "STRING", 14: "COMPLEX64", 15: "COMPLEX128"}


def node_label(node: Any, index: Optional[int] = None) -> str:
    """The node as messages name it: its name, else ``node_of_<output>`` as TensorRT's parser
    names it, else its position and op.

    Example:
        >>> from onnx import helper
        >>> node_label(helper.make_node("Relu", ["x"], ["y"])), node_label(
        ...     helper.make_node("Relu", ["x"], ["y"], name="act"))
        ("'node_of_y'", "'act'")
    """
    if node.name:
        return echo(node.name)
    for out in node.output:
        if out:
            return echo(f"node_of_{out}")
    return f"#{index} ({node.op_type[:80]})" if index is not None else f"({node.op_type[:80]})"


@functools.lru_cache(maxsize=None)
def _max_opsets() -> Dict[str, int]:
    onnx = require("onnx", "checking an ONNX model")
    top: Dict[str, int] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        top[schema.domain] = max(top.get(schema.domain, 0), schema.since_version)
    top[""] = max(top.get("", 0), onnx.defs.onnx_opset_version())
    return top


def _opsets(model: Any, where: str) -> Dict[str, int]:
    versions: Dict[str, int] = {}
    for entry in model.opset_import:
        domain = "" if entry.domain == "ai.onnx" else entry.domain
        if domain in versions:
            raise ModelFileError(f"{where}: opset_import lists domain {echo(domain)} twice")
        limit = _max_opsets().get(domain) if domain in _ONNX_DOMAINS else None
        if entry.version < 1 or (limit is not None and entry.version > limit):
            known = f" (this onnx knows 1 to {limit})" if limit is not None else ""
            msg = (f"{where}: opset {entry.version} of domain {echo(domain or 'ai.onnx')} is not "
                   f"one ONNX defines{known}; TensorRT's parser refuses such a model")
            raise ModelFileError(msg)
        versions[domain] = entry.version
    return versions


def validate_model(model: Any, where: str = "the model") -> List[Any]:
    """Refuse what the module docstring lists; returns the main graph's nodes in a topological
    order (their own order when it already is one).

    Args:
        model: an ``onnx.ModelProto``.
        where: the model as messages name it (its path).

    Raises:
        ModelFileError: the first problem found, naming the node or tensor.
    """
    if not model.HasField("graph"):
        raise ModelFileError(f"{where}: holds no graph; not an ONNX model")
    bad = _undecodable(model)
    if bad is not None:
        msg = (f"{where}: not an ONNX model: its {bad} is not valid UTF-8 (ONNX names and "
               "strings are UTF-8 text)")
        raise ModelFileError(msg)
    if model.ir_version < 1:
        raise ModelFileError(f"{where}: has no ir_version; not an ONNX model")
    imports = _opsets(model, where)
    graph = model.graph
    _check_io(graph, where)
    _check_graph(graph, [], imports, where, 0)
    return _sorted(graph, where)


def _undecodable(message: Any) -> Optional[str]:
    """The first string field (``NodeProto.op_type``) that protobuf handed back as bytes because
    it is not UTF-8, or None. Only string and message fields are read, never tensor data."""
    pending = [message]
    while pending:
        current = pending.pop()
        texts, singles, repeats = _plan(current.DESCRIPTOR)
        for name in texts:
            value = getattr(current, name)
            if isinstance(value, bytes) or (not isinstance(value, str) and any(
                    isinstance(v, bytes) for v in value)):
                return f"{current.DESCRIPTOR.name}.{name}"
        pending.extend(getattr(current, name) for name in singles if current.HasField(name))
        for name in repeats:
            pending.extend(getattr(current, name))
    return None


@functools.lru_cache(maxsize=None)
def _plan(descriptor: Any) -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
    """(string fields, singular message fields, repeated message fields) of a message type."""
    from google.protobuf.descriptor import FieldDescriptor  # noqa: PLC0415 - onnx needs protobuf

    def repeated(fd: Any) -> bool:
        flag = getattr(fd, "is_repeated", None)  # protobuf 5+; `label` is deprecated there
        return bool(flag) if flag is not None else fd.label == fd.LABEL_REPEATED

    fields = descriptor.fields
    messages = [fd for fd in fields if fd.type == FieldDescriptor.TYPE_MESSAGE]
    return (tuple(fd.name for fd in fields if fd.type == FieldDescriptor.TYPE_STRING),
            tuple(fd.name for fd in messages if not repeated(fd)),
            tuple(fd.name for fd in messages if repeated(fd)))


def _check_io(graph: Any, where: str) -> None:
    onnx = require("onnx", "checking an ONNX model")
    known = set(onnx.TensorProto.DataType.values())
    initializers = {t.name for t in graph.initializer}
    for kind, values in (("input", graph.input), ("output", graph.output)):
        for value in values:
            what = f"{where}: model {kind} {echo(value.name)}"
            which = value.type.WhichOneof("value")
            if which not in (None, "tensor_type"):
                raise ModelFileError(f"{what} is a {which.replace('_type', '')}, not a tensor; "
                                     "TensorRT networks take and give tensors only")
            elem = value.type.tensor_type.elem_type
            if kind == "input" and not elem and value.name not in initializers:
                raise ModelFileError(f"{what} has no element type; TensorRT's parser needs one "
                                     "for every network input")
            if elem and elem not in known:
                raise ModelFileError(f"{what} has element type {elem}, which ONNX does not "
                                     "define")
            if kind == "input" and elem in _NO_TRT_TYPE and value.name not in initializers:
                raise ModelFileError(f"{what} is a {_NO_TRT_TYPE[elem]} tensor; TensorRT has no "
                                     f"{_NO_TRT_TYPE[elem].lower()} tensors, so its parser "
                                     "refuses the model")


def _check_graph(graph: Any, outer: List[Dict[str, str]], imports: Dict[str, int], where: str,
                 depth: int) -> None:
    """Single assignment, defined reads, domains and nested plugin nodes of one graph; then its
    bodies, with this graph's names visible to them (``outer`` holds the enclosing scopes)."""
    if depth > MAX_DEPTH:
        raise ModelFileError(f"{where}: subgraphs are nested more than {MAX_DEPTH} deep; refused")
    local: Dict[str, str] = {}
    for value in graph.input:
        if value.name in local:
            raise ModelFileError(f"{where}: graph input {echo(value.name)} is listed twice")
        local[value.name] = "a graph input"
    for tensor in list(graph.initializer) + [s.values for s in graph.sparse_initializer]:
        if local.get(tensor.name, "a graph input") != "a graph input":
            raise ModelFileError(f"{where}: initializer {echo(tensor.name)} is listed twice")
        local[tensor.name] = local.get(tensor.name, "an initializer")
    for index, node in enumerate(graph.node):
        label = f"node {node_label(node, index)}"
        domain = "" if node.domain == "ai.onnx" else node.domain
        if domain not in imports:
            msg = (f"{where}: {label} ({node.op_type[:80]}) is in domain "
                   f"{echo(domain or 'ai.onnx')}, which the model's opset_import does not list; "
                   "add an opset import for it (onnx.helper.make_opsetid)")
            raise ModelFileError(msg)
        if node.op_type == "Loop" and domain == "" and not any(node.input[:2]):
            msg = (f"{where}: {label} (Loop) has neither a trip count nor a condition, so it "
                   "never ends; refused")
            raise ModelFileError(msg)
        if depth and is_plugin_node(node):
            msg = (f"{where}: plugin {label} ({node.op_type[:80]}) is inside an If/Loop/Scan "
                   "body; pyplugins runs and checks the plugin nodes of the main graph only, so "
                   "it is refused rather than skipped")
            raise ModelFileError(msg)
        mine: Set[str] = set()
        for out in node.output:
            if not out:
                continue
            if out in mine:
                raise ModelFileError(f"{where}: {label} lists output {echo(out)} twice")
            mine.add(out)
            before = local.get(out) or next((s[out] for s in outer if out in s), None)
            if before is not None:
                what = (f"by {before} and by {label}" if before.startswith("node")
                        else f"by {label} and is also {before}")
                raise ModelFileError(f"{where}: tensor {echo(out)} is written {what}; ONNX "
                                     "graphs assign each tensor once")
            local[out] = label
    scopes = outer + [local]
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name and not any(name in s for s in scopes):
                msg = (f"{where}: node {node_label(node, index)} reads tensor {echo(name)}, which "
                       "no node, graph input or initializer provides")
                raise ModelFileError(msg)
        for _, body in subgraphs(node):
            _check_graph(body, scopes, imports, where, depth + 1)
    if depth:
        _sorted(graph, where)  # a cycle inside a body
    seen: Set[str] = set()
    for value in graph.output:
        if value.name in seen:
            raise ModelFileError(f"{where}: graph output {echo(value.name)} is listed twice")
        seen.add(value.name)
        if not any(value.name in s for s in scopes):
            raise ModelFileError(f"{where}: graph output {echo(value.name)} is produced by no "
                                 "node and is no graph input or initializer")


def _sorted(graph: Any, where: str) -> List[Any]:
    """The nodes in a topological order (stable: a sorted graph keeps its order), or a
    ModelFileError naming the nodes of a cycle. Iterative depth-first search, linear."""
    nodes = list(graph.node)
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    deps = [[producer[r] for r in outer_reads(n) if r in producer] for n in nodes]
    state = [0] * len(nodes)  # 0 new, 1 on the path, 2 done
    order: List[int] = []
    for start in range(len(nodes)):
        if state[start]:
            continue
        state[start] = 1
        path = [(start, iter(deps[start]))]
        while path:
            index, pending = path[-1]
            for dep in pending:
                if state[dep] == 1:
                    cycle = [i for i, _ in path][[i for i, _ in path].index(dep):] + [dep]
                    names = " -> ".join(node_label(nodes[i], i) for i in cycle)
                    msg = (f"{where}: the graph has a cycle (each node reads the next one's "
                           f"output): {names}; TensorRT's parser cannot sort it topologically")
                    raise ModelFileError(msg)
                if state[dep] == 0:
                    state[dep] = 1
                    path.append((dep, iter(deps[dep])))
                    break
            else:
                state[index] = 2
                order.append(index)
                path.pop()
    return [nodes[i] for i in order]
