"""An NVIDIA-style QDP module with both implementations: circular padding as a JIT impl and as an
AOT kernel (10.9+) whose grid and extra int32 arguments are symbolic in the input shape."""

from typing import Any, List, Tuple, Union

import numpy as np
import tensorrt as trt
import tensorrt.plugin as trtp

PTX = ".version 8.0\n.target sm_80\n.address_size 64\n"


@trtp.register("qdp_tests::circ_pad")
def circ_pad_desc(inp0: trtp.TensorDesc, pads: np.ndarray[Any, np.dtype[np.int32]]) -> trtp.TensorDesc:
    ndim = inp0.ndim
    out = inp0.like()
    for i in range(np.size(pads) // 2):
        out.shape_expr[ndim - i - 1] += int(pads[i * 2] + pads[i * 2 + 1])
    return out


@trtp.autotune("qdp_tests::circ_pad")
def circ_pad_autotune(inp0: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc]
                      ) -> List[trtp.AutoTuneCombination]:
    c = trtp.AutoTuneCombination()
    c.pos([0, 1], "FP32|FP16")
    c.tactics([1, 2])
    return [c]


@trtp.impl("qdp_tests::circ_pad")
def circ_pad_impl(inp0: trtp.Tensor, pads: np.ndarray[Any, np.dtype[np.int32]], outputs: Tuple[trtp.Tensor],
                  stream: int, tactic: int) -> None:
    pass


@trtp.aot_impl("qdp_tests::circ_pad")
def circ_pad_aot(inp0: trtp.TensorDesc, pads: np.ndarray[Any, np.dtype[np.int32]],
                 outputs: Tuple[trtp.TensorDesc], tactic: int
                 ) -> Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams,
                            trtp.SymExprs]:
    block = 256 if tactic == 1 else 1024
    out_dims = outputs[0].shape_expr
    params = trtp.KernelLaunchParams()
    params.grid_x = trtp.cdiv(out_dims.numel(), block)
    params.block_x = block
    params.shared_mem = 0
    extra = trtp.SymIntExprs.from_tuple([trtp.SymInt32(e) for e in (
        int(pads[0]), inp0.shape_expr[0], out_dims[3], out_dims.numel())])
    name = "circ_pad_fp32" if inp0.dtype == trt.float32 else "circ_pad_fp16"
    return name, PTX, params, extra
