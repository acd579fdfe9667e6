"""The active TensorRT API: ``import pyplugins.trt as trt`` gives real TensorRT or the emulator.

Importing this module replaces it in ``sys.modules`` with the module :func:`pyplugins._trt.load`
chose, so ``trt.IPluginV2DynamicExt`` is the very class TensorRT (or the emulator) drives.

Example:
    >>> import pyplugins.trt as trt
    >>> trt.DataType.HALF.name
    'HALF'
"""

import sys

from pyplugins import _trt

sys.modules[__name__] = _trt.load()
