"""The checker: drives any TensorRT Python plugin through TensorRT's lifecycle and reports.

Lifecycle drivers (V2, V3, and ``tensorrt.plugin`` QDP with its AOT artifact run in a child
process), run set-up, guarded device and host buffers, the builder's format
search, the checks (:mod:`pyplugins.checker.checks`), the trace, the reports and the
``pyplugins check`` command with its supervision. It uses the ``tensorrt`` stand-in
(:mod:`pyplugins.emulator`) below it and the authoring runtime (:mod:`pyplugins.runtime`) for
kernel launches; nothing below imports it.

Example:
    >>> from pyplugins.checker import lifecycle
    >>> callable(lifecycle.run)
    True
"""
