"""``polygraphy run MODEL.onnx --pyplugins``: pyplugins' model runner as a Polygraphy run extension.

Polygraphy's ``run`` loads every entry point of the group ``polygraphy.run.plugins``; pyplugins
registers :func:`export_argument_groups` there (``setup.cfg``). It adds one runner option and
three of its own (prefixed so they cannot collide with Polygraphy's):

- ``--pyplugins``: run the model with :class:`pyplugins.models.runner.ModelRunner` (ordinary ops
  in onnxruntime, plugin nodes through the execution path: created and configured once per input
  signature, then ``enqueue`` or the NumPy reference);
- ``--pyplugins-plugins MODULE ...``: plugin modules to import first (names or ``.py`` paths);
- ``--pyplugins-device {auto,cpu,gpu}``: kernels on the GPU, or NumPy references;
- ``--pyplugins-check-first``: drive each plugin node through the whole check lifecycle on its
  first inference (``ModelRunner(check="first")``).

``inference_time`` covers ``ModelRunner.infer`` only, without the time of those checks. The first
inference of an input signature still includes what the runner builds lazily for it: the
onnxruntime sessions of the ordinary segments and each plugin's set-up (create, configure).

Then ``polygraphy run orig.onnx --onnxrt --save-outputs ref.json`` and ``polygraphy run
replaced.onnx --pyplugins --load-outputs ref.json`` compare the replaced model with the original.

The classes subclass Polygraphy's, so they are made on first use (:pep:`562` module
``__getattr__``): importing this module needs no Polygraphy.

Example:
    >>> import pyplugins.models.polygraphy_run as ext
    >>> sorted(name for name in ext.__all__)
    ['PyPluginsRunner', 'PyPluginsRunnerArgs', 'export_argument_groups']
"""

from __future__ import annotations

import functools
import time
from typing import Any, List

from pyplugins.errors import require

# The two classes are made on first use (__getattr__ below), since they subclass polygraphy's.
__all__ = ["PyPluginsRunner", "PyPluginsRunnerArgs", "export_argument_groups"]  # noqa: F822


def export_argument_groups() -> List[Any]:
    """The entry point of ``polygraphy.run.plugins``: the argument groups to add to ``run``."""
    return [_classes()["PyPluginsRunnerArgs"]()]


def __getattr__(name: str) -> Any:
    if name in ("PyPluginsRunner", "PyPluginsRunnerArgs"):
        return _classes()[name]
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


@functools.lru_cache(maxsize=None)
def _classes() -> dict:
    require("polygraphy", "polygraphy run --pyplugins")
    from polygraphy import util  # noqa: PLC0415 - polygraphy is optional
    from polygraphy.backend.base import BaseRunner  # noqa: PLC0415 - polygraphy is optional
    from polygraphy.common import TensorMetadata  # noqa: PLC0415 - polygraphy is optional
    from polygraphy.logger import G_LOGGER  # noqa: PLC0415 - polygraphy is optional
    from polygraphy.tools.args import ModelArgs  # noqa: PLC0415 - polygraphy is optional
    from polygraphy.tools.args import util as args_util  # noqa: PLC0415 - polygraphy is optional
    from polygraphy.tools.args.base import BaseRunnerArgs  # noqa: PLC0415 - polygraphy is optional
    from polygraphy.tools.script import make_invocable  # noqa: PLC0415 - polygraphy is optional

    class PyPluginsRunner(BaseRunner):
        """Runs an ONNX model with plugin nodes through :class:`ModelRunner`.

        Args:
            model: path to the ONNX model (or a ModelProto).
            plugins: plugin modules to import first.
            device: ``"auto"``, ``"cpu"`` or ``"gpu"`` (see ModelRunner).
            name: Polygraphy's runner name prefix.
            check_first: run the check lifecycle on each plugin node's first inference.
            qdp: the network flag for QDP nodes without an ``aot`` attribute (``"jit"``,
                ``"aot"`` or None; see ModelRunner).
        """

        def __init__(self, model: Any, plugins: Any = None, device: Any = None,
                     name: Any = None, check_first: Any = None, qdp: Any = None) -> None:
            super().__init__(name=name, prefix="pyplugins-runner")
            self._model = model
            self.plugins = list(util.default(plugins, []))
            self.device = util.default(device, "auto")
            self.check_first = bool(check_first)
            self.qdp = qdp

        @util.check_called_by("activate")
        def activate_impl(self) -> None:
            # polygraphy imports this module in every `polygraphy run`; the runner loads here.
            from pyplugins.models.model_file import ModelFileError  # noqa: PLC0415 - see above
            from pyplugins.models.runner import ModelRunError, ModelRunner  # noqa: PLC0415 - ditto

            try:
                self.runner = ModelRunner(self._model, self.plugins, self.device,
                                          check="first" if self.check_first else None,
                                          qdp=self.qdp)
            except (ModelFileError, ModelRunError) as err:  # one line, not a traceback
                G_LOGGER.critical(f"{self.name}: {err}")
            self._told = False

        @util.check_called_by("get_input_metadata")
        def get_input_metadata_impl(self) -> Any:
            from onnx import helper  # noqa: PLC0415 - onnx is optional

            meta = TensorMetadata()
            graph = self.runner.model.graph
            for tensor in graph.input:
                if tensor.name not in self.runner.initializers:
                    ttype = tensor.type.tensor_type
                    shape = [d.dim_param or (d.dim_value if d.HasField("dim_value") else None)
                             for d in ttype.shape.dim]
                    meta.add(tensor.name, helper.tensor_dtype_to_np_dtype(ttype.elem_type),
                             shape)
            return meta

        @util.check_called_by("infer")
        def infer_impl(self, feed_dict: Any) -> Any:
            from pyplugins.models.runner import ModelRunError  # noqa: PLC0415 - as in activate

            checked = self.runner.check_seconds
            start = time.perf_counter()
            try:
                outputs = self.runner.infer(feed_dict)
            except ModelRunError as err:
                G_LOGGER.critical(f"{self.name}: {err}")
            self.inference_time = (time.perf_counter() - start
                                   - (self.runner.check_seconds - checked))
            if not self._told:
                self._told = True
                for run in self.runner.node_runs:
                    for line in run.warnings:
                        G_LOGGER.warning(f"{self.name}: plugin node {run.node!r}: TensorRT's "
                                         f"ONNX parser would warn: {line}")
                    if run.how == "reference":
                        G_LOGGER.warning(f"{self.name}: plugin node {run.node!r} ({run.plugin}) "
                                         f"ran its NumPy reference, not its kernel: {run.why}")
                    else:
                        G_LOGGER.info(f"{self.name}: plugin node {run.node!r} ({run.plugin}) "
                                      "ran its kernel on the GPU")
            return outputs

        @util.check_called_by("deactivate")
        def deactivate_impl(self) -> None:
            del self.runner

    class PyPluginsRunnerArgs(BaseRunnerArgs):
        """pyplugins: ordinary ops in onnxruntime, plugin nodes through pyplugins' execution
        path (kernels on the GPU, NumPy references without one)."""

        def get_name_opt_impl(self) -> Any:
            return "pyplugins", "pyplugins"

        def add_parser_args_impl(self) -> None:
            self.group.add_argument(
                "--pyplugins-plugins", nargs="+", default=None, metavar="MODULE",
                help="plugin modules to import before running (dotted names or .py paths); "
                     "the shipped ops are always available")
            self.group.add_argument(
                "--pyplugins-device", choices=("auto", "cpu", "gpu"), default=None,
                help="auto: kernels when CuPy sees a GPU, else NumPy references; cpu: "
                     "references only; gpu: kernels or fail")
            self.group.add_argument(
                "--pyplugins-check-first", action="store_true", default=None,
                help="drive each plugin node through pyplugins' whole check lifecycle (clones, "
                     "every format combination, capture, serialize round trip) on its first "
                     "inference, and fail with the report if it finds anything")
            self.group.add_argument(
                "--pyplugins-qdp", choices=("jit", "aot"), default=None,
                help="tensorrt.plugin (QDP) nodes without an `aot` attribute: the network flag "
                     "PREFER_JIT_PYTHON_PLUGINS (jit) or PREFER_AOT_PYTHON_PLUGINS (aot); "
                     "default none, which a plugin with both implementations refuses")

        def parse_impl(self, args: Any) -> None:
            self.plugins = args_util.get(args, "pyplugins_plugins")
            self.device = args_util.get(args, "pyplugins_device")
            self.check_first = args_util.get(args, "pyplugins_check_first")
            self.qdp = args_util.get(args, "pyplugins_qdp")

        def add_to_script_impl(self, script: Any) -> None:
            script.add_import(imports=["PyPluginsRunner"], frm="pyplugins.models.polygraphy_run")
            script.add_runner(make_invocable("PyPluginsRunner", self.arg_groups[ModelArgs].path,
                                             plugins=self.plugins, device=self.device,
                                             check_first=self.check_first, qdp=self.qdp))

    return {"PyPluginsRunner": PyPluginsRunner, "PyPluginsRunnerArgs": PyPluginsRunnerArgs}
