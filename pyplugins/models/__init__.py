"""Whole ONNX models with plugin nodes: patterns that insert them, a runner, checks and a build.

The modules: :mod:`~pyplugins.models.graph` (reading an onnx-graphsurgeon graph),
:mod:`~pyplugins.models.patterns` and :mod:`~pyplugins.models.rope_pattern` (the subgraphs the
shipped plugins replace, used by the Polygraphy plugin directory
:mod:`pyplugins.models.polygraphy_plugins`), :mod:`~pyplugins.models.runner` (run a model: onnxruntime
for ordinary ops, the execution path for plugin nodes),
:mod:`~pyplugins.models.check` (``pyplugins check MODEL.onnx``, with
:mod:`~pyplugins.models.check_report` and :mod:`~pyplugins.models.type_flow`),
:mod:`~pyplugins.models.model_file` and :mod:`~pyplugins.models.validate` (reading untrusted
model files and refusing what TensorRT's parser could not import),
:mod:`~pyplugins.models.polygraphy_run` (``polygraphy run --pyplugins``),
:mod:`~pyplugins.models.trt_build` (a real TensorRT engine through Polygraphy's loaders) and
:mod:`~pyplugins.models.qdp_node` (nodes of ``tensorrt.plugin`` plugins, ``aot=1``).
See ``docs/models.md``.
"""
