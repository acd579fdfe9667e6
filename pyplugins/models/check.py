"""Check every plugin node of an ONNX model with the shapes the graph gives: ``pyplugins check
MODEL.onnx``.

The graph's shapes come from its declared inputs (or ``inputs`` overrides, which may give a
dynamic dim a ``min-opt-max`` range) through ONNX shape inference. Plugin nodes are visited in
order: each is imported as TensorRT's parser imports it and driven through the emulated
lifecycle with its input shapes and types; the output shapes and types the plugin declares are
compared with what the graph declares for those tensors (a mismatch is what makes TensorRT's
build, or the next layer, fail), and written back so shape inference continues past the node.

Example:
    >>> from onnx import TensorProto, helper
    >>> node = helper.make_node("LReLU_TRT", ["x"], ["y"], neg_slope=0.1)
    >>> model = helper.make_model(helper.make_graph([node], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 3])]))
    >>> report = check_model(model, device="cpu")
    >>> report.ok, report.nodes[0].mismatches
    (False, ["output 0 'y': the plugin gives float32, the graph declares float16"])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from pyplugins.errors import require
from pyplugins.models.partition import is_plugin_node
from pyplugins.models.runner import load_plugin_modules

__all__ = ["ModelCheckReport", "NodeCheck", "check_model"]

Range = Tuple[int, int, int]


@dataclass
class NodeCheck:
    """One plugin node's result.

    Attributes:
        node: the node's name as the parser names it.
        op: its op type.
        report: the lifecycle's :class:`~pyplugins.checker.lifecycle_report.LifecycleReport` (None when
            the node could not be imported or its input shapes are unknown).
        mismatches: outputs whose shape or type differs from the graph's declaration.
        problem: why the node was not checked, or None.
    """

    node: str
    op: str
    report: Any = None
    mismatches: List[str] = field(default_factory=list)
    problem: Optional[str] = None

    @property
    def ok(self) -> bool:
        """Checked, with no lifecycle violation and no mismatch."""
        return (self.problem is None and not self.mismatches and self.report is not None
                and self.report.ok)

    def format(self) -> str:
        """Human-readable lines."""
        head = f"node {self.node!r} ({self.op}): {'OK' if self.ok else 'FAILED'}"
        lines = [head]
        if self.problem:
            lines.append(f"  not checked: {self.problem}")
        lines += [f"  mismatch: {m}" for m in self.mismatches]
        if self.report is not None:
            lines += ["  " + line for line in self.report.format().splitlines()]
        return "\n".join(lines)


@dataclass
class ModelCheckReport:
    """Every plugin node's :class:`NodeCheck`, in graph order."""

    nodes: List[NodeCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every plugin node checked and fine (a model with no plugin node is not ok)."""
        return bool(self.nodes) and all(n.ok for n in self.nodes)

    def format(self) -> str:
        """Human-readable report."""
        if not self.nodes:
            return "no plugin node in the model (every op is an ONNX op)"
        bad = sum(not n.ok for n in self.nodes)
        lines = [n.format() for n in self.nodes]
        lines.append(f"{len(self.nodes)} plugin node(s), {bad} with problems")
        return "\n".join(lines)


def _types(model: Any) -> Dict[str, Any]:
    onnx = require("onnx", "pyplugins check MODEL.onnx")
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    graph = inferred.graph
    known = {v.name: v.type.tensor_type for v in list(graph.value_info) + list(graph.input)
             + list(graph.output) if v.type.tensor_type.elem_type}
    for init in graph.initializer:
        known[init.name] = onnx.helper.make_tensor_type_proto(init.data_type, list(init.dims)
                                                              ).tensor_type
    return known


def _dims(ttype: Any) -> List[Any]:
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in ttype.shape.dim]


def _spec(name: str, ttype: Any, ranges: Mapping[str, Range]) -> Any:
    from pyplugins.emulator.specs import TensorSpec  # noqa: PLC0415
    onnx = require("onnx", "pyplugins check MODEL.onnx")

    if ttype is None or not ttype.HasField("shape"):
        msg = f"the graph gives tensor {name!r} no shape; give it with --input {name}=SHAPE:DTYPE"
        raise ValueError(msg)
    shape, lo, opt, hi = [], [], [], []
    for dim in _dims(ttype):
        if isinstance(dim, int):
            shape.append(dim)
            lo.append(dim), opt.append(dim), hi.append(dim)
        elif dim in ranges:
            shape.append(-1)
            for into, value in zip((lo, opt, hi), ranges[dim]):
                into.append(value)
        else:
            msg = (f"tensor {name!r} has the dynamic dim {dim!r} and no range for it; give the "
                   f"model input it comes from as --input NAME=SHAPE:DTYPE with min-opt-max dims")
            raise ValueError(msg)
    dtype = onnx.helper.tensor_dtype_to_np_dtype(ttype.elem_type)
    return TensorSpec(tuple(shape), dtype, min=tuple(lo), opt=tuple(opt), max=tuple(hi))


def _override(model: Any, inputs: Mapping[str, Mapping[str, Any]]) -> Dict[str, Range]:
    """Write ``--input`` shapes into the graph; returns the ranges of the dynamic dims."""
    onnx = require("onnx", "pyplugins check MODEL.onnx")
    declared = {v.name: v for v in model.graph.input}
    ranges: Dict[str, Range] = {}
    for name, spec in inputs.items():
        if name not in declared:
            msg = f"--input {name}: the model has no input {name!r}; its inputs: {list(declared)}"
            raise ValueError(msg)
        dims: List[Any] = []
        for i, d in enumerate(spec["shape"]):
            if d >= 0:
                dims.append(int(d))
            else:
                param = f"{name}_dim{i}"
                ranges[param] = (spec["min"][i], spec["opt"][i], spec["max"][i])
                dims.append(param)
        elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(spec["dtype"]))
        declared[name].CopyFrom(onnx.helper.make_tensor_value_info(name, elem, dims))
    return ranges


def _compare(node: Any, report: Any, known: Mapping[str, Any]) -> List[str]:
    from pyplugins import dtypes  # noqa: PLC0415

    found = []
    for i, name in enumerate(o for o in node.output if o):
        if i >= len(report.output_shapes) or name not in known:
            continue
        declared = known[name]
        got_dtype = dtypes.numpy_from_trt(report.output_dtypes[i])
        onnx = require("onnx", "pyplugins check MODEL.onnx")
        want_dtype = onnx.helper.tensor_dtype_to_np_dtype(declared.elem_type)
        if got_dtype != want_dtype:
            found.append(f"output {i} {name!r}: the plugin gives {got_dtype}, the graph declares "
                         f"{want_dtype}")
        if declared.HasField("shape"):
            want, got = _dims(declared), list(report.output_shapes[i])
            if len(want) != len(got) or any(isinstance(w, int) and w != g
                                            for w, g in zip(want, got)):
                found.append(f"output {i} {name!r}: the plugin gives shape {tuple(got)}, the "
                             f"graph declares {tuple(w if w is not None else '?' for w in want)}")
    return found


def _declare(model: Any, node: Any, report: Any) -> None:
    """Write the plugin's output types into value_info where the graph has none."""
    onnx = require("onnx", "pyplugins check MODEL.onnx")
    from pyplugins import dtypes  # noqa: PLC0415

    have = {v.name for v in list(model.graph.value_info) + list(model.graph.output)}
    for i, name in enumerate(o for o in node.output if o):
        if name in have or i >= len(report.output_shapes):
            continue
        elem = onnx.helper.np_dtype_to_tensor_dtype(dtypes.numpy_from_trt(report.output_dtypes[i]))
        model.graph.value_info.append(onnx.helper.make_tensor_value_info(
            name, elem, list(report.output_shapes[i])))


def check_model(model: Any, inputs: Optional[Mapping[str, Mapping[str, Any]]] = None,
                plugins: Sequence[str] = (), device: str = "cpu") -> ModelCheckReport:
    """Check every plugin node of ``model`` (a ModelProto or path).

    Args:
        model: the ONNX model.
        inputs: ``{input name: dict(shape, dtype, min, opt, max)}`` overriding the graph's
            declared inputs (``pyplugins.checker.command.parse_input``'s form; -1 = dynamic).
        plugins: plugin modules to import first.
        device: ``"cpu"`` (no kernel runs; the default) or ``"auto"`` (enqueue on a GPU too).

    Raises:
        ModelRunError: real TensorRT is active or a plugin module fails to import.
        ValueError: an ``inputs`` name the model does not have.
    """
    from pyplugins.checker import lifecycle  # noqa: PLC0415
    from pyplugins.emulator import onnx_import
    onnx = require("onnx", "pyplugins check MODEL.onnx")

    load_plugin_modules(plugins)
    model = onnx.load(model) if not hasattr(model, "graph") else model
    work = onnx.ModelProto()
    work.CopyFrom(model)
    ranges = _override(work, inputs or {})
    result = ModelCheckReport()
    for node in work.graph.node:
        if not is_plugin_node(node):
            continue
        name = node.name or f"node_of_{node.output[0]}"
        entry = NodeCheck(name, node.op_type)
        result.nodes.append(entry)
        known = _types(work)
        try:
            imported = onnx_import.import_node(node)
            specs = [_spec(n, known.get(n), ranges) for n in node.input if n]
        except (LookupError, ValueError) as err:
            entry.problem = str(err)
            continue
        entry.report = lifecycle.run(imported.creator, specs, imported.fc,
                                     node_name=imported.name, device=device)
        entry.report.warnings[:0] = imported.warnings
        entry.mismatches = _compare(node, entry.report, known)
        _declare(work, node, entry.report)
    return result

