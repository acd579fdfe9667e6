"""An NVIDIA-style QDP module with a data-dependent output: the indices of non-zero elements,
sized by a size tensor (the second output)."""

from typing import List, Tuple

import tensorrt as trt
import tensorrt.plugin as trtp


@trtp.register("qdp_tests::non_zero")
def non_zero_desc(inp0: trtp.TensorDesc) -> Tuple[trtp.TensorDesc, trtp.TensorDesc]:
    upper_bound = inp0.shape_expr[0] * inp0.shape_expr[1]
    st = trtp.size_tensor(upper_bound // 2, upper_bound)
    st.dtype = trt.int64
    return trtp.from_shape_expr((st.expr(), 2), dtype=trt.int32), st


@trtp.autotune("qdp_tests::non_zero")
def non_zero_autotune(inp0, outputs) -> List[trtp.AutoTuneCombination]:
    return [trtp.AutoTuneCombination("FP32|FP16, INT32, INT64")]


@trtp.impl("qdp_tests::non_zero")
def non_zero_impl(inp0, outputs, stream) -> None:
    pass
