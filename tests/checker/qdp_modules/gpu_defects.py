"""QDP plugins with one planted defect each that only a GPU run shows (y = x + 1, FP32, else).

The tensors are viewed through their pointers (``helpers.view``), not the CUDA Array Interface,
whose consumer rule would make CuPy synchronize TensorRT's stream in every impl. No ``from
__future__ import annotations``: tensorrt.plugin reads annotations as objects."""

import importlib.util
from pathlib import Path
from typing import Tuple, Union

import tensorrt.plugin as trtp

_spec = importlib.util.spec_from_file_location("_qdp_helpers", Path(__file__).with_name(
    "helpers.py"))
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)
view, PTX = helpers.view, helpers.PTX
AOT_RETURN = Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymExprs]


def _register(name):
    @trtp.register(f"qdp_check::{name}")
    def desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
        return inp0.like()
    return desc


# -- output_mismatch: impl writes 64 elements past its output -----------------------------------
_register("write_past")


@trtp.impl("qdp_check::write_past")
def write_past_impl(inp0, outputs, stream) -> None:
    import cupy as cp

    with cp.cuda.ExternalStream(stream):
        x, y = view(inp0), view(outputs[0], extra=64)
        cp.add(x, 1, out=y[:x.size])
        y[x.size:] = 0


# -- output_mismatch: impl writes half of its output --------------------------------------------
_register("write_short")


@trtp.impl("qdp_check::write_short")
def write_short_impl(inp0, outputs, stream) -> None:
    import cupy as cp

    with cp.cuda.ExternalStream(stream):
        x, y = view(inp0), view(outputs[0])
        half = x.size // 2
        cp.add(x[:half], 1, out=y[:half])


# -- capture_unsafe (and impl_stream): `del stream`, then the default stream ---------------------
_register("del_stream")


@trtp.impl("qdp_check::del_stream")
def del_stream_impl(inp0, outputs, stream) -> None:
    import cupy as cp

    del stream
    cp.add(view(inp0), 1, out=view(outputs[0]))


# -- capture_unsafe: the stream is read, but the work goes to the default stream ----------------
_register("default_stream")


@trtp.impl("qdp_check::default_stream")
def default_stream_impl(inp0, outputs, stream) -> None:
    import cupy as cp

    unused = cp.cuda.ExternalStream(stream)  # made, never entered
    del unused
    cp.add(view(inp0), 1, out=view(outputs[0]))


# -- capture_unsafe: a device allocation inside impl ---------------------------------------------
_register("allocates")


@trtp.impl("qdp_check::allocates")
def allocates_impl(inp0, outputs, stream) -> None:
    import cupy as cp

    with cp.cuda.ExternalStream(stream):
        tmp = view(inp0) + 1  # a new array
        view(outputs[0])[...] = tmp


# -- capture_unsafe: impl synchronizes TensorRT's stream ----------------------------------------
_register("syncs")


@trtp.impl("qdp_check::syncs")
def syncs_impl(inp0, outputs, stream) -> None:
    import cupy as cp

    with cp.cuda.ExternalStream(stream) as s:
        cp.add(view(inp0), 1, out=view(outputs[0]))
        s.synchronize()


# -- output_mismatch of an AOT kernel: it is told n - 1 elements ---------------------------------
_register("aot_short")


@trtp.aot_impl("qdp_check::aot_short")
def aot_short_aot(inp0, outputs, tactic) -> AOT_RETURN:
    n = inp0.shape_expr.numel()
    params = trtp.KernelLaunchParams()
    params.grid_x = trtp.cdiv(n, 256)
    params.block_x = 256
    return "add_one", PTX, params, trtp.SymIntExprs.from_tuple([trtp.SymInt32(n - 1)])


# -- aot_jit_mismatch: the JIT impl adds 2, the AOT kernel 1 ------------------------------------
_register("aot_differs")


@trtp.impl("qdp_check::aot_differs")
def aot_differs_impl(inp0, outputs, stream) -> None:
    import cupy as cp

    with cp.cuda.ExternalStream(stream):
        cp.add(view(inp0), 2, out=view(outputs[0]))


@trtp.aot_impl("qdp_check::aot_differs")
def aot_differs_aot(inp0, outputs, tactic) -> AOT_RETURN:
    n = inp0.shape_expr.numel()
    params = trtp.KernelLaunchParams()
    params.grid_x = trtp.cdiv(n, 256)
    params.block_x = 256
    return "add_one", PTX, params, trtp.SymIntExprs.from_tuple([trtp.SymInt32(n)])
