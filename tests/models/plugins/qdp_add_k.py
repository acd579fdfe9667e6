"""QDP plugins for the model tests: ``y = x + k[0]`` over FP32 tensors, ``k`` an int32 array
attribute (one element; an array, since NumPy 2 refuses TensorRT's ``int(f.data)``).

``qdp_models::add_k`` has both implementations: JIT (``impl``, CuPy on TensorRT's stream) and AOT
(``aot_impl``: the PTX of ``add_k(const float* x, int n, int k, float* y)``, grid cdiv(n, 256),
block 256, extra arguments ``n`` and ``k``). ``qdp_models::add_k_jit`` has only the JIT one. No
``from __future__ import annotations``: tensorrt.plugin reads annotations as objects."""

from pathlib import Path
from typing import Any, Tuple, Union

import numpy as np
import tensorrt.plugin as trtp

PTX = (Path(__file__).parent / "add_k.ptx").read_text()
KArray = np.ndarray[Any, np.dtype[np.int32]]


def _view(tensor):
    """A flat float32 CuPy array on ``tensor``'s buffer (not cupy.asarray: see docs/qdp.md)."""
    import cupy as cp

    memory = cp.cuda.UnownedMemory(tensor.data_ptr, tensor.numel() * 4, tensor,
                                   cp.cuda.runtime.getDevice())
    return cp.ndarray((tensor.numel(),), cp.float32, cp.cuda.MemoryPointer(memory, 0))


def _impl(inp0, k, outputs, stream):
    import cupy as cp

    with cp.cuda.ExternalStream(stream):
        cp.add(_view(inp0), np.float32(k[0]), out=_view(outputs[0]))


@trtp.register("qdp_models::add_k")
def add_k_desc(inp0: trtp.TensorDesc, k: KArray) -> trtp.TensorDesc:
    return inp0.like()


@trtp.impl("qdp_models::add_k")
def add_k_impl(inp0: trtp.Tensor, k: KArray, outputs: Tuple[trtp.Tensor], stream: int) -> None:
    _impl(inp0, k, outputs, stream)


@trtp.aot_impl("qdp_models::add_k")
def add_k_aot(inp0: trtp.TensorDesc, k: KArray, outputs: Tuple[trtp.TensorDesc], tactic: int
              ) -> Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams,
                         trtp.SymExprs]:
    n = inp0.shape_expr.numel()
    params = trtp.KernelLaunchParams()
    params.grid_x = trtp.cdiv(n, 256)
    params.block_x = 256
    extra = trtp.SymIntExprs.from_tuple([trtp.SymInt32(n), trtp.SymInt32(int(k[0]))])
    return "add_k", PTX, params, extra


@trtp.register("qdp_models::add_k_jit")
def add_k_jit_desc(inp0: trtp.TensorDesc, k: KArray) -> trtp.TensorDesc:
    return inp0.like()


@trtp.impl("qdp_models::add_k_jit")
def add_k_jit_impl(inp0: trtp.Tensor, k: KArray, outputs: Tuple[trtp.Tensor],
                   stream: int) -> None:
    _impl(inp0, k, outputs, stream)
