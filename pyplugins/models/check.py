"""Check every plugin node of an ONNX model with the shapes the graph gives: ``pyplugins check
MODEL.onnx``.

The model is read and refused where it is malformed or unsupported
(:mod:`pyplugins.models.model_file`, :mod:`pyplugins.models.validate`: a
:class:`~pyplugins.models.model_file.ModelFileError`). The graph's shapes come from its declared
inputs (or ``inputs`` overrides, which may give a dynamic dim a ``min-opt-max`` range) through
ONNX shape inference, one run of ordinary nodes at a time (:mod:`pyplugins.models.type_flow`).
Plugin nodes are visited in topological order: each is imported as TensorRT's parser imports it
(TENSOR attributes' external data read only from the model's folder) and driven through the
emulated lifecycle with its input shapes and types; the output count, shapes and types the
plugin declares are compared with what the graph declares (a mismatch is what makes TensorRT's
build, or the next layer, fail), and recorded so shape inference continues past the node. A node
with the same creator, fields and input specs as an earlier one reuses that node's lifecycle run
(``NodeCheck.same_as``), so a model of repeated layers costs its distinct layers.

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

import contextlib
import dataclasses
import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from pyplugins import dtypes
from pyplugins.checker import lifecycle, verdicts
from pyplugins.checker.parser_notes import missing_attribute_note
from pyplugins.emulator import onnx_import
from pyplugins.emulator.specs import TensorSpec
from pyplugins.models.check_report import ModelCheckReport, NodeCheck
from pyplugins.errors import require
from pyplugins.models.model_file import check_external_data, load_model
from pyplugins.models.partition import Segment, split
from pyplugins.models import qdp_nodes
from pyplugins.models.runner import load_plugin_modules
from pyplugins.models.type_flow import TypeFlow
from pyplugins.models.validate import validate_model

__all__ = ["check_model"]

Range = Tuple[int, int, int]


def _spec(name: str, flow: TypeFlow, ranges: Mapping[str, Range]) -> Any:
    onnx = require("onnx", "pyplugins check MODEL.onnx")

    dims = flow.shape(name)
    if dims is None:
        msg = f"the graph gives tensor {name!r} no shape; give it with --input {name}=SHAPE:DTYPE"
        if name in flow.failures:
            msg += f" ({flow.failures[name]})"
        raise ValueError(msg)
    shape, lo, opt, hi = [], [], [], []
    for dim in dims:
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
    elem = flow.known[name].elem_type
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
        dtypes.trt_name_from_numpy(dtype)
    except (KeyError, TypeError, ValueError) as err:
        name_of = onnx.TensorProto.DataType.Name(elem) if elem in onnx.TensorProto.DataType.values(
            ) else str(elem)
        msg = (f"tensor {name!r} is {name_of}, which TensorRT has no tensor type for; a plugin "
               "cannot take it")
        raise ValueError(msg) from err
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


def _elem_types(report: Any) -> List[int]:
    """The ONNX element type of each output the plugin declared (0 where there is none)."""
    onnx = require("onnx", "pyplugins check MODEL.onnx")

    elems = []
    for datatype in report.output_dtypes:
        try:
            elems.append(onnx.helper.np_dtype_to_tensor_dtype(dtypes.numpy_from_trt(datatype)))
        except (KeyError, TypeError, ValueError):
            elems.append(0)
    return elems


def _compare(node: Any, report: Any, flow: TypeFlow) -> List[str]:
    found = []
    if report.output_shapes and len(node.output) != len(report.output_shapes):
        found.append(f"the node has {len(node.output)} output(s), the plugin gives "
                     f"{len(report.output_shapes)}; TensorRT's parser cannot bind them")
    for i, name in enumerate(node.output):
        if not name or i >= len(report.output_shapes) or name not in flow.declared:
            continue
        got, want = _elem_types(report)[i], flow.declared[name].elem_type
        if got != want:
            found.append(f"output {i} {name!r}: the plugin gives {_dtype_name(got)}, the graph "
                         f"declares {_dtype_name(want)}")
        dims, shape = flow.shape(name), list(report.output_shapes[i])
        if dims is not None and (len(dims) != len(shape) or any(
                isinstance(w, int) and w != g for w, g in zip(dims, shape))):
            found.append(f"output {i} {name!r}: the plugin gives shape {tuple(shape)}, the "
                         f"graph declares {tuple(w if w is not None else '?' for w in dims)}")
    return found


def _dtype_name(elem: int) -> str:
    """NumPy's name for an ONNX element type where it has one (float32), else ONNX's (BFLOAT16)."""
    onnx = require("onnx", "pyplugins check MODEL.onnx")
    try:
        return str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem)))
    except (KeyError, TypeError, ValueError):
        return (onnx.TensorProto.DataType.Name(elem)
                if elem in onnx.TensorProto.DataType.values() else f"type {elem}")


def _signature(imported: Any, specs: Sequence[Any], device: str) -> tuple:
    """What a lifecycle run depends on: the creator, the fields' bytes, the input specs."""
    fields = tuple((f.name, str(f.type), f.size, np.asarray(f.data).tobytes())
                   for f in imported.fc)
    inputs = tuple((s.shape, str(s.datatype), s.min, s.opt, s.max) for s in specs)
    return id(imported.creator), fields, inputs, imported.shape_input_indices, device


@contextlib.contextmanager
def _step(watch: Any, what: str) -> Iterator[None]:
    saved = watch.begin(what) if watch is not None else None
    try:
        yield
    finally:
        if watch is not None:
            watch.end(saved)


class _Checker:
    """The per-model state of :func:`check_model`: types, ranges, reused runs."""

    def __init__(self, flow: TypeFlow, ranges: Mapping[str, Range], model_dir: Optional[str],
                 device: str, qdp: Optional[str] = None) -> None:
        self.flow, self.ranges, self.model_dir, self.device = flow, ranges, model_dir, device
        self.qdp = qdp
        self.runs: Dict[tuple, Tuple[str, Any]] = {}

    def node(self, node: Any, entry: NodeCheck) -> None:
        notes: List[str] = []
        try:
            imported = onnx_import.import_node(node, model_dir=self.model_dir)
            options = self._qdp_options(node, imported, notes)
            specs = [_spec(n, self.flow, self.ranges) for n in node.input if n]
            key = _signature(imported, specs, self.device) + (tuple(sorted(options.items())),)
            if key in self.runs:
                entry.same_as, report = self.runs[key]
            else:
                report = lifecycle.run(imported.creator, specs, imported.fc,
                                       node_name=imported.name, device=self.device, **options)
                self.runs[key] = (entry.node, report)
        except (LookupError, ValueError, TypeError) as err:
            entry.problem = str(err)
        except Exception as err:  # plugin code read outside a callback (a creator property)
            escaped = verdicts.escaped_error_report(entry.op, err)
            if escaped is None:
                raise
            entry.report = escaped
        else:
            note = missing_attribute_note(imported.creator, imported.warnings,
                                          [f.name for f in imported.fc])
            entry.report = dataclasses.replace(report,
                                               warnings=imported.warnings + notes
                                               + report.warnings,
                                               notes=report.notes + ([note] if note else []))
            entry.mismatches = _compare(node, entry.report, self.flow)
            self.flow.set_plugin_outputs(node, report.output_shapes, _elem_types(report))
            if report.ok:
                return
        for out in node.output:  # what later nodes reading its outputs are told
            self.flow.failures.setdefault(out, f"its producer, plugin node {entry.node!r}, "
                                               "failed its check")

    def _qdp_options(self, node: Any, imported: Any, notes: List[str]) -> Dict[str, Any]:
        """``lifecycle.run``'s QDP keywords for a QDP node (empty for other plugins): the
        node's ``aot`` attribute as TensorRT's parser reads it, or the network flag. A node that
        asks for one implementation of a plugin that has both is checked both ways and the
        outputs compared (``--qdp both``): TensorRT builds what the node asks, and the other
        must compute the same function for the node to mean one thing."""
        if not qdp_nodes.is_qdp(imported.creator):
            if self.qdp is not None:
                notes.append(f"--qdp {self.qdp} does not apply: the node's plugin is not a "
                             "tensorrt.plugin (QDP) plugin")
            return {}
        found = qdp_nodes.inspect(node, imported.creator, imported.name)
        notes += found.warnings
        if found.aot is None:
            return {"qdp": self.qdp} if self.qdp is not None else {}
        if found.has_jit and found.has_aot:
            notes.append(f"the node asks for the {'AOT' if found.aot else 'JIT'} implementation "
                         f"(aot={int(found.aot)}); QDP plugin '{found.plugin_id}' has both, so "
                         "both are checked and their outputs compared")
            return {"qdp": "both"}
        return {"node_aot": found.aot}


def check_model(model: Any, inputs: Optional[Mapping[str, Mapping[str, Any]]] = None,
                plugins: Sequence[str] = (), device: str = "cpu", *,
                report: Optional[ModelCheckReport] = None, watch: Any = None,
                qdp: Optional[str] = None,
                on_node: Optional[Callable[[NodeCheck, bool], None]] = None) -> ModelCheckReport:
    """Check every plugin node of ``model`` (a ModelProto or path).

    Args:
        model: the ONNX model.
        inputs: ``{input name: dict(shape, dtype, min, opt, max)}`` overriding the graph's
            declared inputs (``pyplugins.checker.command.parse_input``'s form; -1 = dynamic).
        plugins: plugin modules to import first.
        device: ``"cpu"`` (no kernel runs; the default) or ``"auto"`` (enqueue on a GPU too).
        report: the report to fill (node by node, so a caller that stops waiting sees how far
            the check got); a new one by default.
        watch: a :class:`~pyplugins.emulator.trampoline.Watch` on which the model's own slow
            steps (loading, validation, shape inference) are marked, as plugin callbacks are.
        qdp: the network flag for QDP nodes without an ``aot`` attribute: ``"jit"``
            (PREFER_JIT_PYTHON_PLUGINS), ``"aot"`` (PREFER_AOT_PYTHON_PLUGINS), ``"both"``
            (each, outputs compared) or None (no flag; a plugin with both is checked both ways).
        on_node: called with ``(node's NodeCheck, False)`` before a plugin node's check and
            ``(the same, True)`` after it (the supervised child tells its parent so).

    Raises:
        ModelFileError: the file or graph is malformed or unsupported (the message names the
            file, node or tensor).
        ModelRunError: real TensorRT is active or a plugin module fails to import.
        ValueError: an ``inputs`` name the model does not have.
    """
    result = report if report is not None else ModelCheckReport()
    with _step(watch, "import of the plugin module(s)"):  # the shipped ops', and ``plugins``
        load_plugin_modules(plugins)
    if hasattr(model, "graph"):
        work, model_dir, where = require("onnx", "pyplugins check MODEL.onnx").ModelProto(), \
            None, "the model"
        work.CopyFrom(model)
    else:
        where = os.fsdecode(model)
        model_dir = os.path.dirname(os.path.abspath(where))
        with _step(watch, f"loading {where}"):
            work = load_model(model)
    with _step(watch, "validating the graph"):
        order = validate_model(work, str(where))
        if model_dir is not None:
            check_external_data(work, model_dir, where)
        ranges = _override(work, inputs or {})
        steps = split(work.graph, order)
    if qdp not in (None, "jit", "aot", "both"):
        msg = f"qdp must be None, 'jit', 'aot' or 'both' (got {qdp!r})"
        raise ValueError(msg)
    checker = _Checker(TypeFlow(work), ranges, model_dir, device, qdp)
    last = max((i for i, s in enumerate(steps) if not isinstance(s, Segment)), default=-1)
    for index, step in enumerate(steps[:last + 1]):
        if isinstance(step, Segment):
            with _step(watch, f"shape inference of {len(step.nodes)} ONNX node(s)"):
                checker.flow.infer(step)
            continue
        name = step.name or (f"node_of_{step.output[0]}" if len(step.output) else f"#{index}")
        entry = NodeCheck(name, step.op_type)
        result.nodes.append(entry)
        if on_node is not None:
            on_node(entry, False)
        checker.node(step, entry)
        if on_node is not None:
            on_node(entry, True)
    return result
