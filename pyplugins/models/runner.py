"""Run an ONNX model that contains plugin nodes, without TensorRT: ordinary ops in onnxruntime,
each plugin node through the execution path.

The graph is partitioned (:mod:`pyplugins.models.partition`): each run of ordinary nodes is one
onnxruntime session, built on first use for the input types it sees. Each plugin node is imported
as TensorRT's ONNX parser imports it (:func:`pyplugins.emulator.onnx_import.import_node`: the
creator by op type, ``plugin_version``, ``plugin_namespace``; the attributes converted to the
``fc`` the parser builds), then run by :class:`pyplugins.runtime.execute.Execution`: the plugin is
created and configured once per input signature (cached), and each inference is an ``enqueue``
of the plugin's kernel on the GPU or, without a GPU, the plugin's NumPy ``reference(*inputs)``
(``ModelRunner.node_runs`` says, per node, which happened and why; the Polygraphy runner and the
demo print it); a plugin with neither raises :class:`ModelRunError`. A QDP (``tensorrt.plugin``)
node is checked against its registration (:mod:`pyplugins.models.qdp_nodes`) and runs through
:class:`~pyplugins.models.qdp_exec.QDPExecution`, JIT or AOT as the node's ``aot`` attribute or
the ``qdp`` network flag asks. ``check="first"`` also drives
each plugin node through the whole check lifecycle (:func:`pyplugins.checker.lifecycle.run`:
clones, every format combination, capture, the serialize round trip) on its first inference.

Example:
    >>> import numpy as np, onnx
    >>> from onnx import TensorProto, helper
    >>> node = helper.make_node("Relu", ["x"], ["y"])
    >>> model = helper.make_model(helper.make_graph([node], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]),
    ...     opset_imports=[helper.make_opsetid("", 17)])
    >>> ModelRunner(model).infer({"x": np.float32([-1, 2])})["y"]
    array([0., 2.], dtype=float32)
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from pyplugins import _trt
from pyplugins.checker._fresh import import_module
from pyplugins.echo import echo
from pyplugins.emulator import onnx_import
from pyplugins.emulator.real import is_emulator
from pyplugins.emulator.specs import TensorSpec
from pyplugins.errors import ExecutionError, PyPluginsError, require
from pyplugins.models.model_file import ModelFileError, inline_external_data, load_model
from pyplugins.models import qdp_nodes
from pyplugins.models.partition import Segment, split
from pyplugins.models.qdp_exec import QDPExecution
from pyplugins.models.validate import node_label, validate_model
from pyplugins.runtime.execute import Execution

__all__ = ["ModelRunError", "ModelRunner", "NodeRun", "load_plugin_modules", "run_model"]

_LOG = logging.getLogger("pyplugins")


class ModelRunError(PyPluginsError, RuntimeError):
    """A model could not be run: a plugin node has no creator, a callback of it failed, it has no
    way to produce outputs here, or (``check="first"``) it failed the check lifecycle.
    ``report`` holds the lifecycle's report when there is one."""

    def __init__(self, message: str, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


@dataclass
class NodeRun:
    """How one plugin node produced its outputs in the last :meth:`ModelRunner.infer`.

    Attributes:
        node: the node's name (``node_of_<output>`` when it has none, as the parser names it).
        plugin: ``"Name:Version:Namespace"`` of the creator.
        how: ``"kernel"`` (enqueue ran on the GPU) or ``"reference"`` (the NumPy reference).
        why: for ``"reference"``, why enqueue did not run.
        warnings: what TensorRT's ONNX parser would warn about for this node.
        seconds: wall time of the node's execution in that inference (set-up included on the
            first call of an input signature; the check of ``check="first"`` excluded).
    """

    node: str
    plugin: str
    how: str
    why: Optional[str] = None
    warnings: List[str] = field(default_factory=list)
    seconds: float = 0.0


def load_plugin_modules(modules: Sequence[str]) -> None:
    """Import plugin modules (dotted names or ``.py`` paths) with ``import tensorrt`` giving the
    emulator, as ``pyplugins check`` imports them; the shipped ops are always loaded.

    Raises:
        ModelRunError: real TensorRT is the active API in this process (the runner drives
            plugins through the emulator), or a module fails to import.
    """
    if not is_emulator(_trt.load()):
        msg = ("pyplugins' model runner drives plugins through its TensorRT emulator, but this "
               "process already uses the real TensorRT; run with PYPLUGINS_TRT=emulator, or "
               "build an engine with pyplugins.models.trt_build instead.")
        raise ModelRunError(msg)
    import pyplugins.ops  # noqa: F401, PLC0415 - registers the shipped ops, after the API is chosen

    for module in modules:
        try:
            import_module(module)
        except Exception as err:
            msg = f"plugin module {module!r} failed to import: {type(err).__name__}: {err}"
            raise ModelRunError(msg) from err


class ModelRunner:
    """Runs an ONNX model with plugin nodes (see the module docstring).

    Args:
        model: an ``onnx.ModelProto`` (copied) or a path to one. External data is read only
            from regular files in the model's folder (:mod:`pyplugins.emulator.onnx_external`),
            and not at all for a ModelProto, which has no folder.
        plugins: plugin modules to import first (dotted names or ``.py`` paths).
        device: ``"auto"`` (kernels when CuPy sees a GPU, else references), ``"cpu"``
            (references only) or ``"gpu"`` (kernels, or an error).
        providers: onnxruntime execution providers (default: CPU).
        check: None (only run), or ``"first"``: drive each plugin node through the whole check
            lifecycle on its first inference, and raise :class:`ModelRunError` with the report
            when it finds anything.
        qdp: the network flag for QDP (``tensorrt.plugin``) nodes without an ``aot``
            attribute: ``"jit"`` (PREFER_JIT_PYTHON_PLUGINS), ``"aot"``
            (PREFER_AOT_PYTHON_PLUGINS) or None (no flag: a plugin with both implementations
            is refused, as TensorRT's create_plugin refuses it). QDP nodes run through
            :class:`~pyplugins.models.qdp_exec.QDPExecution`.

    Attributes:
        check_seconds: wall time spent in those checks so far (a caller timing inferences, such
            as the Polygraphy runner, subtracts it).

    Raises:
        ModelFileError: the file or graph is malformed or unsupported (a plugin node inside an
            ``If``/``Loop``/``Scan`` body, refused external data, ...; see
            :mod:`pyplugins.models.validate`).
        ModelRunError: see :func:`load_plugin_modules`.
    """

    def __init__(self, model: Any, plugins: Sequence[str] = (), device: str = "auto",
                 providers: Optional[Sequence[str]] = None, check: Optional[str] = None,
                 qdp: Optional[str] = None) -> None:
        if check not in (None, "first"):
            msg = f"check must be None or 'first' (got {check!r})"
            raise ValueError(msg)
        if qdp not in (None, *qdp_nodes.FLAGS):
            msg = f"qdp must be None, 'jit' or 'aot' (got {qdp!r})"
            raise ValueError(msg)
        self.qdp = qdp
        onnx = require("onnx", "pyplugins' model runner")
        require("onnxruntime", "pyplugins' model runner")
        load_plugin_modules(plugins)
        if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
            where = os.fsdecode(model)
            self.model = load_model(model)
            model_dir: Optional[str] = os.path.dirname(os.path.abspath(where))
        else:
            where, model_dir = "the model", None
            self.model = onnx.ModelProto()
            self.model.CopyFrom(model)
        order = validate_model(self.model, where)
        inline_external_data(self.model, model_dir, where)  # onnxruntime must not read any itself
        self.model_dir = model_dir
        self.device = device
        self.providers = list(providers or ["CPUExecutionProvider"])
        self.steps = split(self.model.graph, order)
        self.initializers = {t.name: _initializer(t, where) for t in self.model.graph.initializer}
        self._sessions: Dict[Tuple[int, tuple], Any] = {}
        self.node_runs: List[NodeRun] = []
        self.check, self.check_seconds = check, 0.0
        self._executions: Dict[int, Any] = {}  # id(node) -> [imported, execution, checked, qdp]

    @property
    def input_names(self) -> List[str]:
        """The graph's inputs that are not initializers."""
        return [i.name for i in self.model.graph.input if i.name not in self.initializers]

    def infer(self, feeds: Mapping[str, Any]) -> Dict[str, np.ndarray]:
        """Run the model once; returns ``{output name: array}`` in the graph's output order.

        Raises:
            ModelRunError: a missing input, or a plugin node that cannot run (see the class).
        """
        missing = [n for n in self.input_names if n not in feeds]
        if missing:
            msg = f"missing model input(s) {missing}; the model takes {self.input_names}"
            raise ModelRunError(msg)
        values: Dict[str, Any] = dict(self.initializers)
        values.update({k: np.asarray(v) for k, v in feeds.items()})
        self.node_runs = []
        for index, step in enumerate(self.steps):
            if isinstance(step, Segment):
                if not step.outputs:  # nothing reads what it computes
                    continue
                session = self._session(index, step, values)
                try:
                    outs = session.run(step.outputs, {n: values[n] for n in step.inputs})
                except Exception as err:  # onnxruntime's own exception types
                    raise _refused(step, err, "failed on") from err
                values.update(zip(step.outputs, outs))
            else:
                outs = self._plugin(step, [values[n] for n in step.input if n])
                values.update((o, v) for o, v in zip(step.output, outs) if o)
        return {o.name: values[o.name] for o in self.model.graph.output}

    def _session(self, index: int, step: Segment, values: Mapping[str, Any]) -> Any:
        key = (index, tuple((values[n].dtype.str, values[n].ndim) for n in step.inputs))
        if key not in self._sessions:
            self._sessions[key] = self._build_session(index, step, values)
        return self._sessions[key]

    def _build_session(self, index: int, step: Segment, values: Mapping[str, Any]) -> Any:
        onnx = require("onnx", "pyplugins' model runner")
        ort = require("onnxruntime", "pyplugins' model runner")
        helper = onnx.helper
        inputs = [helper.make_tensor_value_info(
            n, helper.np_dtype_to_tensor_dtype(values[n].dtype),
            [f"{n}_d{i}" for i in range(values[n].ndim)]) for n in step.inputs]
        outputs = [helper.make_empty_tensor_value_info(n) for n in step.outputs]
        wanted = set(step.initializers)
        inits = [t for t in self.model.graph.initializer if t.name in wanted]
        graph = helper.make_graph(step.nodes, f"{self.model.graph.name}_part{index}", inputs,
                                  outputs, inits)
        part = helper.make_model(graph, opset_imports=list(self.model.opset_import),
                                 ir_version=self.model.ir_version)
        part.functions.extend(self.model.functions)
        try:
            return ort.InferenceSession(part.SerializeToString(), providers=self.providers)
        except Exception as err:  # onnxruntime raises its own Fail/InvalidGraph types
            if "Unsupported model IR version" not in str(err):
                raise _refused(step, err) from err
            lowest = helper.find_min_ir_version_for(list(part.opset_import), True)
            if lowest >= part.ir_version:
                msg = (f"onnxruntime {ort.__version__} cannot load IR version {part.ir_version} "
                       f"(the model's) nor any lower one its opsets allow ({err}); upgrade "
                       "onnxruntime or re-export the model with an older onnx.")
                raise ModelRunError(msg) from err
        # The segment is pyplugins' own: the lowest IR version its opsets need is valid for it,
        # and an onnxruntime older than the installed onnx package (seen: onnx 1.23 writes IR 14,
        # onnxruntime 1.30 reads up to 13) can load it.
        _LOG.info("segment %d: onnxruntime %s refused IR version %d; using IR version %d",
                  index, ort.__version__, part.ir_version, lowest)
        part.ir_version = lowest
        try:
            return ort.InferenceSession(part.SerializeToString(), providers=self.providers)
        except Exception as err:  # onnxruntime's own exception types
            raise _refused(step, err) from err

    def _plugin(self, node: Any, arrays: List[np.ndarray]) -> List[np.ndarray]:
        label = f"plugin node {node_label(node)} ({node.op_type[:80]})"
        entry = self._executions.get(id(node))
        if entry is None:
            try:
                imported = onnx_import.import_node(node, model_dir=self.model_dir)
            except LookupError as err:
                msg = (f"{label}: {err} Pass the module that registers it with plugins=[...] "
                       "(--plugins on the command line).")
                raise ModelRunError(msg) from err
            except ValueError as err:  # FieldError: an attribute the parser refuses
                raise ModelRunError(f"{label}: {err}") from err
            found = None
            try:
                if qdp_nodes.is_qdp(imported.creator):
                    found = qdp_nodes.inspect(node, imported.creator, imported.name)
                    imported.warnings += found.warnings
                    execution: Any = QDPExecution(imported, self._request(found, label),
                                                  device=self.device)
                else:
                    execution = Execution(imported.creator, imported.fc, node_name=imported.name,
                                          device=self.device)
            except (ExecutionError, ValueError) as err:  # FieldError: what QDP cannot take
                raise ModelRunError(f"{label}: {err}" if label not in str(err) else str(err)
                                    ) from err
            entry = self._executions[id(node)] = [imported, execution, False, found]
        imported, execution, checked, found = entry
        inputs, shape_arrays = imported.split_inputs(arrays)
        shape_values = [tuple(int(v) for v in np.asarray(s).reshape(-1)) for s in shape_arrays]
        if self.check == "first" and not checked:
            self._check_first(imported, inputs, shape_values, label, found)
            entry[2] = True
        start = time.perf_counter()
        try:
            outs = execution(*inputs, shape_inputs=shape_values)
        except ExecutionError as err:
            raise ModelRunError(str(err)) from err
        except (TypeError, ValueError) as err:  # an input TensorRT has no type for, too large
            raise ModelRunError(f"{label}: {err}") from err
        if len(node.output) != len(outs):
            msg = (f"{label}: the node has {len(node.output)} output(s) but the plugin gives "
                   f"{len(outs)}; TensorRT's parser cannot bind them")
            raise ModelRunError(msg)
        self.node_runs.append(NodeRun(imported.name, execution.plugin, execution.how,
                                      execution.why, imported.warnings,
                                      time.perf_counter() - start))
        if execution.how == "reference":
            _LOG.info("%s: ran its NumPy reference, not its kernel (%s)", label, execution.why)
        return outs

    def _request(self, found: Any, label: str) -> Optional[str]:
        """The QuickPluginCreationRequest TensorRT's parser passes for a QDP node."""
        request = found.request(self.qdp)
        if request == "UNKNOWN" and found.has_jit and found.has_aot:
            msg = (f"{label}: QDP plugin '{found.plugin_id}' has both impl and aot_impl and the "
                   "node has no `aot` attribute, so TensorRT needs a network flag "
                   "(PREFER_JIT_PYTHON_PLUGINS or PREFER_AOT_PYTHON_PLUGINS) and create_plugin "
                   "refuses it without one: pass qdp='jit' or qdp='aot' (--pyplugins-qdp), or "
                   "give the node aot=0 or aot=1.")
            raise ModelRunError(msg)
        return request

    def _check_first(self, imported: Any, inputs: List[np.ndarray], shape_values: List[tuple],
                     label: str, found: Any = None) -> None:
        """The check lifecycle on the node's first inputs; ModelRunError with its report."""
        from pyplugins.checker import lifecycle  # noqa: PLC0415 - only for check='first'

        start = time.perf_counter()
        specs = [TensorSpec(a.shape, a.dtype, data=a) for a in inputs]
        extra: Dict[str, Any] = {"shape_inputs": shape_values} if shape_values else {}
        if found is not None and found.aot is not None:
            extra["node_aot"] = found.aot
        elif found is not None and self.qdp is not None:
            extra["qdp"] = self.qdp
        try:
            report = lifecycle.run(imported.creator, specs, imported.fc, node_name=imported.name,
                                   device=self.device, **extra)
        finally:
            self.check_seconds += time.perf_counter() - start
        if not report.ok:
            msg = f"{label} failed TensorRT's plugin lifecycle (emulated):\n{report.format()}"
            raise ModelRunError(msg, report)


def _initializer(tensor: Any, where: str) -> np.ndarray:
    """An initializer as an array, or a ModelFileError naming it when its data does not match
    its type and dims."""
    onnx = require("onnx", "pyplugins' model runner")
    try:
        return onnx.numpy_helper.to_array(tensor)
    except Exception as err:  # ValueError, TypeError, KeyError from numpy/onnx
        msg = (f"{where}: initializer {echo(tensor.name)} does not hold what its type and dims "
               f"{echo(list(tensor.dims))} say: {type(err).__name__}: {str(err)[:200]}")
        raise ModelFileError(msg) from err


def _refused(step: Segment, err: BaseException, how: str = "refused") -> ModelRunError:
    """onnxruntime refused (or failed on) a segment: which nodes, and why, in one error."""
    first = step.nodes[0]
    msg = (f"onnxruntime {how} the {len(step.nodes)} ONNX node(s) from node {node_label(first)} "
           f"({first.op_type[:80]}): {type(err).__name__}: {str(err).strip()[:500]}")
    return ModelRunError(msg)


def run_model(model: Any, feeds: Mapping[str, Any], plugins: Sequence[str] = (),
              device: str = "auto") -> Dict[str, np.ndarray]:
    """One-shot :class:`ModelRunner` ``(model, plugins, device).infer(feeds)``."""
    return ModelRunner(model, plugins, device).infer(feeds)
