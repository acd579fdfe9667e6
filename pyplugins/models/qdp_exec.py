"""Run one QDP (``tensorrt.plugin``) node of a model: the model runner's stand-in for
:class:`~pyplugins.runtime.execute.Execution`, which drives V2 and V3 plugins.

The plugin is created once as TensorRT's parser creates it (``create_plugin(op_type, namespace,
fc, BUILD, request)``, the request from the node's ``aot`` attribute or the network flag:
:mod:`pyplugins.models.qdp_nodes`), so a refusal (STRICT_AOT without ``aot_impl``, UNKNOWN with
both implementations) is an :class:`~pyplugins.errors.ExecutionError` before anything runs.

- **On a GPU**, each inference runs the QDP check lifecycle's driver with the node's arrays
  (:func:`pyplugins.checker.lifecycle.run`, one implementation, no CUDA-graph capture): JIT runs
  ``impl`` through ``enqueue``; AOT bakes the artifact and launches its kernel in
  ``python -m pyplugins.checker.aot_launch``, a process that never imports the plugin's module,
  as an engine runs it. This reuses the lifecycle rather than caching a configured plugin, so an
  inference costs a build (tens of milliseconds); a report with violations is an error.
- **Without a GPU**, a ``pp.Plugin`` registered as QDP (``interface="qdp"``) runs its NumPy
  ``reference(*inputs)``, whose output count and types must be those the QDP plugin declares
  (``get_output_data_types``). A plugin written with ``tensorrt.plugin`` itself has no reference:
  its ``impl`` and AOT kernel need a GPU, and the error says so, naming the node.

Example::

    node = QDPExecution(imported, "STRICT_JIT", device="auto")
    (y,) = node(x)          # node.how: "kernel" (GPU) or "reference"
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from pyplugins import dtypes, emulator
from pyplugins.emulator import surface, trampoline
from pyplugins.emulator import trampoline_quick as tq
from pyplugins.emulator import trampoline_v3 as tv3
from pyplugins.emulator.bases_quick import IPluginV3QuickAOTBuild
from pyplugins.emulator.enums import PluginCapabilityType, TensorRTPhase
from pyplugins.emulator.specs import TensorSpec
from pyplugins.emulator.version import emulated_version
from pyplugins.errors import ExecutionError
from pyplugins.runtime import qdp as pp_qdp
from pyplugins.runtime.device import no_device_reason
from pyplugins.runtime.plugin_setup import CallFailures

__all__ = ["QDPExecution"]


class QDPExecution:
    """One QDP plugin node, run on arrays (see the module docstring).

    Args:
        imported: the node as :func:`pyplugins.emulator.onnx_import.import_node` imported it.
        request: the ``QuickPluginCreationRequest`` member name the parser passes (None before
            TensorRT 10.9).
        device: ``"auto"``, ``"cpu"`` or ``"gpu"``, as for ``Execution``.

    Attributes:
        how, why, plugin, warnings: as :class:`~pyplugins.runtime.execute.Execution`'s.
        made: ``"jit"`` or ``"aot"``, the implementation ``create_plugin`` made.

    Raises:
        ExecutionError: ``create_plugin`` refused (its ``[ERROR]`` line), or ``device="gpu"``
            without a GPU.
        ValueError: an unknown ``device``.
    """

    def __init__(self, imported: Any, request: Optional[str], *, device: str = "auto") -> None:
        if device not in ("auto", "cpu", "gpu", "cuda"):
            msg = f"device must be 'auto', 'cpu' or 'gpu' (got {device!r})"
            raise ValueError(msg)
        creator = imported.creator
        self._imported, self._request, self._device = imported, request, device
        self.plugin = f"{creator.name}:{creator.plugin_version}:{creator.plugin_namespace}"
        self.plugin_id = f"{creator.plugin_namespace}::{creator.name}"
        self.label = f"plugin node {imported.name!r} ({creator.name})"
        self.warnings: List[str] = []
        self.why = "device='cpu' was asked for" if device == "cpu" else no_device_reason()
        if self.why is not None and device in ("gpu", "cuda"):
            raise self._error(None, f"device={device!r} was asked for, but there is {self.why}")
        self.how = "reference" if self.why is not None else "kernel"
        enum = surface.resolve("QuickPluginCreationRequest", emulated_version()[0]) \
            if request is not None else None
        asked = getattr(enum, request) if request is not None else None
        with CallFailures() as failures:
            plugin = tq.create_plugin(creator, creator.name, creator.plugin_namespace,
                                      list(imported.fc), TensorRTPhase.BUILD, asked)
        if plugin is None:
            line = failures.lines[0][1] if failures.lines else "(no [ERROR] line)"
            raise self._error("create_plugin", "create_plugin(name, namespace, fc, BUILD"
                              f"{', ' + request if request else ''}) failed as TensorRT's parser "
                              f"calls it, so the network cannot add the node:\n{line}")
        self.made = "aot" if isinstance(plugin, IPluginV3QuickAOTBuild) else "jit"
        self._plugin = plugin

    def _error(self, method: Optional[str], detail: str) -> ExecutionError:
        return ExecutionError(f"{self.label}: {detail}", plugin=self.plugin,
                              node=self._imported.name, method=method)

    def __call__(self, *arrays: Any, shape_inputs: Sequence[Sequence[int]] = ()) -> List[Any]:
        """The outputs for ``arrays`` (NumPy arrays).

        Raises:
            ExecutionError: shape inputs given (QDP takes none), no GPU and no reference, a
                reference that disagrees with the declared outputs, or (GPU) a lifecycle
                violation.
        """
        if shape_inputs:
            raise self._error(None, "tensorrt.plugin (QDP) plugins take no shape inputs "
                              "(TensorRT asserts there); drop the node's "
                              "tensorrt_plugin_shape_input_indices attribute")
        arrays = tuple(np.asarray(a) for a in arrays)
        if self.how == "reference":
            return self._reference(arrays)
        return self._on_gpu(arrays)

    def close(self) -> None:
        """Destroy the plugin ``create_plugin`` made."""
        if self._plugin is not None:
            tv3.destroy(self._plugin)
            self._plugin = None

    def _reference(self, arrays: Sequence[np.ndarray]) -> List[np.ndarray]:
        definition = pp_qdp.definition(self.plugin_id)
        reference = getattr(getattr(definition, "cls", None), "reference", None)
        if definition is None or reference is None:
            kind = "aot_impl kernel" if self.made == "aot" else "impl"
            raise self._error(None, (
                f"no GPU ({self.why}), and QDP plugin '{self.plugin_id}' has no NumPy reference "
                f"to stand in for its {kind}: only pp.Plugin classes registered as QDP "
                "(interface='qdp') define one. Run on a machine with a CUDA GPU visible to "
                "CuPy."))
        attrs = self._plugin.attrs
        instance = definition.plugin([attrs[name] for name, _ in definition.fields])
        try:
            result = instance.reference(*arrays)
        except Exception as err:
            raise self._error("reference", "reference() raised (it stands in for the QDP "
                              f"plugin's kernel here, {self.why}): {trampoline.what(err)}"
                              ) from err
        outs = [np.asarray(o) for o in (result if isinstance(result, (tuple, list))
                                        else [result])]
        build = tq.get_capability_interface(self._plugin, PluginCapabilityType.BUILD)
        try:
            types = [dtypes.trt_from_numpy(a.dtype, emulator) for a in arrays]
        except TypeError as err:
            raise self._error(None, str(err)) from err
        declared = tq.get_output_data_types(build, types, [a.ndim for a in arrays]) \
            if build is not None else None
        want = [np.dtype(dtypes.numpy_from_trt(t)) for t in declared or []]
        if declared is None or [o.dtype for o in outs] != want:
            raise self._error("reference", (
                f"its reference() returned {[str(o.dtype) for o in outs]} (dtype per output) but "
                f"the QDP plugin declares {[str(w) for w in want]} (get_output_data_types); the "
                "two must agree."))
        return outs

    def _on_gpu(self, arrays: Sequence[np.ndarray]) -> List[np.ndarray]:
        from pyplugins.checker import lifecycle  # noqa: PLC0415 - the GPU path only

        options: dict = {}
        if self._request in ("STRICT_AOT", "STRICT_JIT"):
            options["node_aot"] = self._request == "STRICT_AOT"
        elif self._request in ("PREFER_AOT", "PREFER_JIT"):
            options["qdp"] = "aot" if self._request == "PREFER_AOT" else "jit"
        specs = [TensorSpec(a.shape, a.dtype, data=a) for a in arrays]
        report = lifecycle.run(self._imported.creator, specs, self._imported.fc,
                               node_name=self._imported.name, device="gpu",
                               check_capture=False, **options)
        if not report.ok or report.outputs is None:
            raise self._error(None, "the QDP plugin did not run as an engine runs it "
                              f"(emulated):\n{report.format()}")
        return [np.asarray(o) for o in report.outputs]
