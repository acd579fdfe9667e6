"""The active TensorRT API: ``import pyplugins.trt as trt`` gives real TensorRT or the emulator.

Importing this module replaces it in ``sys.modules`` with the module :func:`pyplugins._trt.load`
chose, so ``trt.IPluginV2DynamicExt`` is the very class TensorRT (or the emulator) drives.

Example:
    >>> import pyplugins.trt as trt
    >>> trt.DataType.HALF.name
    'HALF'
"""

import sys
from typing import TYPE_CHECKING

from pyplugins import _trt

if TYPE_CHECKING:
    # For type checkers this module is the emulator, whose classes mirror tensorrt's plugin API
    # name for name; at run time it is whichever module _trt.load() chose.
    from pyplugins.emulator import *  # noqa: F403 - the whole tensorrt surface, as above

sys.modules[__name__] = _trt.load()
