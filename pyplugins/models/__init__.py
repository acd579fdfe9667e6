"""Whole ONNX models with plugin nodes: patterns that insert them, a runner, checks and a build.

The modules: :mod:`~pyplugins.models.graph` (reading an onnx-graphsurgeon graph),
:mod:`~pyplugins.models.patterns` and :mod:`~pyplugins.models.rope_pattern` (the subgraphs the
shipped plugins replace, used by the Polygraphy plugin directory
:mod:`pyplugins.polygraphy_plugins`), :mod:`~pyplugins.models.runner` (run a model: onnxruntime
for ordinary ops, the execution path for plugin nodes),
:mod:`~pyplugins.models.check` (``pyplugins check MODEL.onnx``),
:mod:`~pyplugins.models.polygraphy_run` (``polygraphy run --pyplugins``) and
:mod:`~pyplugins.models.trt_build` (a real TensorRT engine through Polygraphy's loaders).
See ``docs/models.md``.
"""
