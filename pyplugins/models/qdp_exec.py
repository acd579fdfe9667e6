"""Run one QDP (``tensorrt.plugin``) node of a model: the model runner's stand-in for
:class:`~pyplugins.runtime.execute.Execution`, which drives V2 and V3 plugins.

The plugin is created once as TensorRT's parser creates it (``create_plugin(op_type, namespace,
fc, BUILD, request)``, the request from the node's ``aot`` attribute or the network flag:
:mod:`pyplugins.models.qdp_nodes`), so a refusal (STRICT_AOT without ``aot_impl``, UNKNOWN with
both implementations) is an :class:`~pyplugins.errors.ExecutionError` before anything runs.

Like ``Execution``, it then keeps one configured plugin per input signature (shapes and dtypes;
the device is the node's): :class:`~pyplugins.models.qdp_setup.QDPSetup` creates and
configures it once, as TensorRT's builder sets up the candidate it keeps (the first LINEAR
combination with the network's types, the first tactic), so a later inference is a dictionary
lookup plus the run. No check lifecycle, capture, clone or build runs per inference; that is the
check's job (``check="first"``, ``pyplugins check MODEL.onnx``).

- **On a GPU**, a JIT plugin's ``enqueue`` (its ``impl``) runs on a CuPy stream with newly
  allocated outputs; an AOT plugin is baked once per signature as the engine keeps it
  (``aot_impl`` -> :class:`~pyplugins.checker.aot_artifact.AOTArtifact`, its launch plan
  evaluated for the shapes), its kernel loaded once in this process
  (:class:`~pyplugins.checker.aot_launch.LoadedKernel`: ``cuModuleLoadData``; no import of the
  plugin's module is involved), and each inference is one ``cuLaunchKernel`` (the input
  pointers, the extra arguments, the output pointers). A callback that fails raises
  :class:`~pyplugins.errors.ExecutionError` with its ``[ERROR]`` line.
- **Without a GPU**, a ``pp.Plugin`` registered as QDP (``interface="qdp"``) runs its NumPy
  ``reference(*inputs)``, whose outputs must have the shapes and types the configured QDP plugin
  declares (the register function). A plugin written with ``tensorrt.plugin`` itself has no
  reference: its ``impl`` and AOT kernel need a GPU, and the error says so, naming the node.

Example::

    node = QDPExecution(imported, "STRICT_JIT", device="auto")
    (y,) = node(x)          # node.how: "kernel" (GPU) or "reference"; node.configured == 1
    (y,) = node(x)          # the same signature: no set-up again
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from pyplugins.emulator import surface, trampoline
from pyplugins.emulator import trampoline_quick as tq
from pyplugins.emulator import trampoline_v3 as tv3
from pyplugins.emulator.bases_quick import IPluginV3QuickAOTBuild
from pyplugins.emulator.enums import TensorRTPhase
from pyplugins.emulator.version import emulated_version
from pyplugins.errors import AOTArtifactError, ExecutionError
from pyplugins.models.qdp_setup import QDPReady, QDPSetup
from pyplugins.runtime import qdp as pp_qdp
from pyplugins.runtime.device_choice import on_device, pick_device
from pyplugins.runtime.plugin_setup import CallFailures

__all__ = ["QDPExecution"]


class QDPExecution:
    """One QDP plugin node, run on arrays (see the module docstring).

    Args:
        imported: the node as :func:`pyplugins.emulator.onnx_import.import_node` imported it.
        request: the ``QuickPluginCreationRequest`` member name the parser passes (None before
            TensorRT 10.9).
        device: as for ``Execution``: :mod:`pyplugins.runtime.device_choice`'s grammar
            (``"auto"``, ``"cpu"``, ``"gpu"``, ``"gpu:N"``, ``N``).

    Attributes:
        how, why, plugin, warnings: as :class:`~pyplugins.runtime.execute.Execution`'s.
        made: ``"jit"`` or ``"aot"``, the implementation ``create_plugin`` made.
        configured: how many input signatures have a configured plugin cached.

    Raises:
        ExecutionError: ``create_plugin`` refused (its ``[ERROR]`` line), or ``device="gpu"``
            without a GPU.
        DeviceChoiceError (a ValueError): a ``device`` outside the grammar, or an ordinal
            past the last GPU.
    """

    def __init__(self, imported: Any, request: Optional[str], *,
                 device: Union[str, int] = "auto") -> None:
        creator = imported.creator
        enum = surface.resolve("QuickPluginCreationRequest", emulated_version()[0]) \
            if request is not None else None
        asked = getattr(enum, request) if request is not None else None
        self._setup = QDPSetup(creator, imported.name, list(imported.fc), asked)
        self._error = self._setup.error
        self.plugin, self.plugin_id = self._setup.plugin, self._setup.plugin_id
        self.warnings: List[str] = []
        try:
            self._cp, self.device, self.why = pick_device(device)
        except ExecutionError as err:  # a GPU asked for and none usable: name the node
            raise self._error(None, str(err)) from err
        self.how = "reference" if self.why is not None else "kernel"
        with CallFailures() as failures:
            plugin = tq.create_plugin(creator, creator.name, creator.plugin_namespace,
                                      list(imported.fc), TensorRTPhase.BUILD, asked)
        if plugin is None:
            line = failures.lines[0][1] if failures.lines else "(no [ERROR] line)"
            raise self._error("create_plugin", "create_plugin(name, namespace, fc, BUILD"
                              f"{', ' + request if request else ''}) failed as TensorRT's parser "
                              f"calls it, so the network cannot add the node:\n{line}")
        self.made = "aot" if isinstance(plugin, IPluginV3QuickAOTBuild) else "jit"
        self._plugin: Any = plugin
        self._ready: Dict[Tuple[Any, ...], QDPReady] = {}
        self._stream: Any = None
        self._reference_plugin: Any = None

    @property
    def configured(self) -> int:
        """How many input signatures have a configured plugin cached."""
        return len(self._ready)

    def __call__(self, *arrays: Any, shape_inputs: Sequence[Sequence[int]] = ()) -> List[Any]:
        """The outputs for ``arrays`` (NumPy arrays).

        Raises:
            ExecutionError: shape inputs given (QDP takes none), no GPU and no reference, a
                reference that disagrees with the declared outputs, or a callback that failed
                (named with its ``[ERROR]`` line).
        """
        if shape_inputs:
            raise self._error(None, "tensorrt.plugin (QDP) plugins take no shape inputs "
                              "(TensorRT asserts there); drop the node's "
                              "tensorrt_plugin_shape_input_indices attribute")
        arrays = tuple(np.asarray(a) for a in arrays)
        reference = self._reference_of() if self.how == "reference" else None
        signature = tuple((a.shape, a.dtype) for a in arrays)
        with on_device(self._cp, self.device):  # CuPy's current device is per thread
            ready = self._ready.get(signature)
            if ready is None:
                ready = self._ready[signature] = self._configure(arrays)
            if reference is not None:
                return self._run_reference(reference, ready, arrays)
            return self._run_kernel(ready, arrays)

    def close(self) -> None:
        """Destroy every plugin made (after the work launched on the stream has finished)."""
        ready, self._ready = list(self._ready.values()), {}
        if self._stream is not None:
            self._stream.synchronize()
        for entry in ready:
            entry.teardown()
        if self._plugin is not None:
            tv3.destroy(self._plugin)
            self._plugin = None

    def _configure(self, arrays: Sequence[np.ndarray]) -> QDPReady:
        """The plugin for this signature; on a GPU an AOT one baked and its kernel loaded."""
        on_gpu = self._cp is not None
        ready = self._setup.configure([a.shape for a in arrays], [a.dtype for a in arrays],
                                      bake=on_gpu)
        if on_gpu and ready.artifact is not None:
            from pyplugins.checker.aot_launch import LoadedKernel  # noqa: PLC0415 - GPU only

            try:
                ready.kernel = LoadedKernel(ready.artifact)
            except AOTArtifactError as err:
                ready.teardown()
                raise self._error("get_kernel", str(err)) from err
        return ready

    def _reference_of(self) -> Any:
        """The pp.Plugin instance whose ``reference`` stands in for the kernel (made once)."""
        if self._reference_plugin is not None:
            return self._reference_plugin
        definition = pp_qdp.definition(self.plugin_id)
        if definition is None or getattr(definition.cls, "reference", None) is None:
            kind = "aot_impl kernel" if self.made == "aot" else "impl"
            raise self._error(None, (
                f"no GPU ({self.why}), and QDP plugin '{self.plugin_id}' has no NumPy reference "
                f"to stand in for its {kind}: only pp.Plugin classes registered as QDP "
                "(interface='qdp') define one. Run on a machine with a CUDA GPU visible to "
                "CuPy."))
        attrs = self._plugin.attrs
        self._reference_plugin = definition.plugin([attrs[name] for name, _ in definition.fields])
        return self._reference_plugin

    def _run_reference(self, instance: Any, ready: QDPReady,
                       arrays: Sequence[np.ndarray]) -> List[np.ndarray]:
        try:
            result = instance.reference(*arrays)
        except Exception as err:
            raise self._error("reference", "reference() raised (it stands in for the QDP "
                              f"plugin's kernel here, {self.why}): {trampoline.what(err)}"
                              ) from err
        outs = [np.asarray(o) for o in (result if isinstance(result, (tuple, list))
                                        else [result])]
        got = [(o.shape, o.dtype) for o in outs]
        want = list(zip(ready.out_shapes, ready.out_dtypes))
        if got != want:
            raise self._error("reference", (
                f"its reference() returned {[(s, str(d)) for s, d in got]} (shape, dtype per "
                f"output) but the QDP plugin declares {[(s, str(d)) for s, d in want]} (the "
                "register function); the two must agree."))
        return outs

    def _run_kernel(self, ready: QDPReady, arrays: Sequence[np.ndarray]) -> List[np.ndarray]:
        cp = self._cp
        if self._stream is None:  # made once, blocking and non-default (an application's)
            self._stream = cp.cuda.Stream()
        stream = self._stream
        with stream:
            ins = [cp.asarray(np.ascontiguousarray(a)) for a in arrays]
            outs = [cp.empty(s, dtype=d) for s, d in zip(ready.out_shapes, ready.out_dtypes)]
        in_ptrs, out_ptrs = [int(a.data.ptr) for a in ins], [int(o.data.ptr) for o in outs]
        if ready.enqueue is not None:
            with CallFailures() as failures:
                status = ready.enqueue(in_ptrs, out_ptrs, 0, int(stream.ptr))
            if failures.lines or status != 0:
                line = failures.lines[0][1] if failures.lines else "(no [ERROR] line)"
                raise self._error("enqueue", f"enqueue (impl) failed on the execution path:"
                                  f"\n{line}")
        else:
            try:
                ready.kernel.launch(ready.plan, in_ptrs, out_ptrs, int(stream.ptr))
            except Exception as err:  # a CUDA driver error, named with the node
                raise self._error("get_kernel", "launching the AOT kernel "
                                  f"{ready.artifact.kernel_name!r} failed: {err}") from err
        host = [cp.asnumpy(o, stream=stream) for o in outs]
        stream.synchronize()
        return host
