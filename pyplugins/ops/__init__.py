"""The shipped plugins; importing this package registers every one with TensorRT's registry.

| class | TensorRT plugin | module |
|---|---|---|
| :class:`CircPad` | ``CircPad`` | :mod:`pyplugins.ops.circ_pad` |
| :class:`LeakyReLU` | ``LReLU_TRT`` | :mod:`pyplugins.ops.leaky_relu` |
| :class:`BarPlugin` | ``BarPlugin`` | :mod:`pyplugins.ops.bar` |
| :class:`Pool` | ``Pool`` | :mod:`pyplugins.ops.pool` |
| :class:`RoPE` | ``RoPE`` | :mod:`pyplugins.ops.rope` |
| :class:`RMSNorm` | ``RMSNorm`` | :mod:`pyplugins.ops.rmsnorm` |
| :class:`SeqRepeat` | ``SeqRepeat`` | :mod:`pyplugins.ops.seq_repeat` |

All are version ``"1"`` in namespace ``""``.

Example:
    >>> import pyplugins.ops
    >>> from pyplugins import trt
    >>> trt.get_plugin_registry().get_creator("LReLU_TRT", "1", "") is pyplugins.ops.LeakyReLU.creator
    True
"""

from pyplugins.ops.bar import BarPlugin
from pyplugins.ops.circ_pad import CircPad
from pyplugins.ops.leaky_relu import LeakyReLU
from pyplugins.ops.pool import Pool
from pyplugins.ops.rmsnorm import RMSNorm
from pyplugins.ops.rope import RoPE
from pyplugins.ops.seq_repeat import SeqRepeat

__all__ = ["BarPlugin", "CircPad", "LeakyReLU", "Pool", "RMSNorm", "RoPE", "SeqRepeat"]
