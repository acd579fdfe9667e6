"""The authoring runtime: what a plugin class is made of and how its kernel is launched.

``pp.Plugin`` (V2) and its V3 adapter, typed fields and their serialization, shape and format
helpers, ``pp.Kernel`` (NVRTC through CuPy, cached per device), prepacked launches (CuPy and
numba), the creator and registration, and the execution path (``execute``, ``plugin_setup``,
``eager``: run a plugin on arrays). It sits on the ``tensorrt`` stand-in
(:mod:`pyplugins.emulator`) or real TensorRT, and knows nothing of the checker above it.

Example:
    >>> from pyplugins.runtime import shapes
    >>> shapes.cdiv(10, 4)
    3
"""
