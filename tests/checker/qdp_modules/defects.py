"""QDP plugins with one planted defect each, for the checker's QDP checks (host side).

Each plugin id names its defect. Every plugin is otherwise add_one (y = x + 1, FP32). No
``from __future__ import annotations``: tensorrt.plugin reads annotations as objects."""

from pathlib import Path
from typing import List, Tuple, Union

import tensorrt as trt
import tensorrt.plugin as trtp

PTX = (Path(__file__).parent / "add_one.ptx").read_text()
AOT_RETURN = Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymExprs]


def _params(n, block=256):
    params = trtp.KernelLaunchParams()
    params.grid_x = trtp.cdiv(n, 256)
    params.block_x = block
    return params


def _impl(inp0, outputs, stream):
    import cupy as cp

    with cp.cuda.ExternalStream(stream):
        cp.add(cp.asarray(inp0), 1, out=cp.asarray(outputs[0]))


# -- shape_branch: the first dim doubles "when it is 4", a branch Python takes for any value ------
@trtp.register("qdp_check::shape_branch")
def shape_branch_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    out = inp0.like()
    if inp0.shape_expr[0] == 4:
        out.shape_expr[0] = inp0.shape_expr[0] * 2
    return out


@trtp.impl("qdp_check::shape_branch")
def shape_branch_impl(inp0, outputs, stream) -> None:
    _impl(inp0, outputs, stream)


# ...and its correct form: Python decides only on what is known (not fake, constant)
@trtp.register("qdp_check::guarded_branch")
def guarded_branch_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    out = inp0.like()
    first = inp0.shape_expr[0]
    if not first.is_fake and first.is_constant and first.constant_value() == 4:
        out.shape_expr[0] = first * 2
    return out


@trtp.impl("qdp_check::guarded_branch")
def guarded_branch_impl(inp0, outputs, stream) -> None:
    _impl(inp0, outputs, stream)


# -- impl_output_desc: the dtype depends on the pass (fake shapes -> FP16) ----------------------
@trtp.register("qdp_check::pass_dtype")
def pass_dtype_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    out = inp0.like()
    out.dtype = trt.float16 if inp0.shape_expr[0].is_fake else trt.float32
    return out


@trtp.impl("qdp_check::pass_dtype")
def pass_dtype_impl(inp0, outputs, stream) -> None:
    _impl(inp0, outputs, stream)


# -- autotune_types: FP16 in -> FP32 out, though the output is registered like its input --------
@trtp.register("qdp_check::autotune_types")
def autotune_types_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    return inp0.like()


@trtp.autotune("qdp_check::autotune_types")
def autotune_types_autotune(inp0, outputs) -> List[trtp.AutoTuneCombination]:
    return [trtp.AutoTuneCombination("FP32*FP16, FP32")]


@trtp.impl("qdp_check::autotune_types")
def autotune_types_impl(inp0, outputs, stream) -> None:
    _impl(inp0, outputs, stream)


# -- format: autotune offers FP16 only, the network is FP32 -------------------------------------
@trtp.register("qdp_check::fp16_only")
def fp16_only_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    return inp0.like()


@trtp.autotune("qdp_check::fp16_only")
def fp16_only_autotune(inp0, outputs) -> List[trtp.AutoTuneCombination]:
    return [trtp.AutoTuneCombination("FP16, FP16")]


@trtp.impl("qdp_check::fp16_only")
def fp16_only_impl(inp0, outputs, stream) -> None:
    _impl(inp0, outputs, stream)


# -- impl_stream: impl drops TensorRT's stream and launches on CuPy's current one ---------------
@trtp.register("qdp_check::no_stream")
def no_stream_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    return inp0.like()


@trtp.impl("qdp_check::no_stream")
def no_stream_impl(inp0, outputs, stream) -> None:
    import cupy as cp

    del stream
    cp.add(cp.asarray(inp0), 1, out=cp.asarray(outputs[0]))


# -- aot_kernel_name: the name is not in the PTX ------------------------------------------------
@trtp.register("qdp_check::wrong_name")
def wrong_name_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    return inp0.like()


@trtp.aot_impl("qdp_check::wrong_name")
def wrong_name_aot(inp0, outputs, tactic) -> AOT_RETURN:
    n = inp0.shape_expr.numel()
    return "add_two", PTX, _params(n), trtp.SymIntExprs.from_tuple([trtp.SymInt32(n)])


# -- aot_ptx_compile: an instruction ptxas does not know ----------------------------------------
@trtp.register("qdp_check::bad_ptx")
def bad_ptx_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    return inp0.like()


@trtp.aot_impl("qdp_check::bad_ptx")
def bad_ptx_aot(inp0, outputs, tactic) -> AOT_RETURN:
    n = inp0.shape_expr.numel()
    return ("add_one", PTX.replace("add.f32", "add.f33"), _params(n),
            trtp.SymIntExprs.from_tuple([trtp.SymInt32(n)]))


# -- aot_signature: two extra arguments for a kernel that takes one -----------------------------
@trtp.register("qdp_check::extra_arg")
def extra_arg_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    return inp0.like()


@trtp.aot_impl("qdp_check::extra_arg")
def extra_arg_aot(inp0, outputs, tactic) -> AOT_RETURN:
    n = inp0.shape_expr.numel()
    return "add_one", PTX, _params(n), trtp.SymIntExprs.from_tuple(
        [trtp.SymInt32(n), trtp.SymInt32(inp0.shape_expr[0])])


# -- aot_launch_params: a block of 2048 threads -------------------------------------------------
@trtp.register("qdp_check::big_block")
def big_block_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    return inp0.like()


@trtp.aot_impl("qdp_check::big_block")
def big_block_aot(inp0, outputs, tactic) -> AOT_RETURN:
    n = inp0.shape_expr.numel()
    return "add_one", PTX, _params(n, block=2048), trtp.SymIntExprs.from_tuple([trtp.SymInt32(n)])
