"""A correct QDP plugin with both implementations: y = x + 1 over FP32 tensors.

JIT: ``impl`` adds one with CuPy on TensorRT's stream. AOT: ``aot_impl`` hands over the PTX of
``add_one(const float* x, int n, float* y)`` with grid cdiv(n, 256), block 256 and ``n`` as the
one extra argument. Two tactics, the same function. No ``from __future__ import annotations``:
tensorrt.plugin reads annotations as objects. ``impl`` views the tensors through their pointers
(``helpers.view``: why not ``cupy.asarray(tensor)``)."""

import importlib.util
from pathlib import Path
from typing import List, Tuple, Union

import tensorrt.plugin as trtp

_spec = importlib.util.spec_from_file_location("_qdp_helpers", Path(__file__).with_name(
    "helpers.py"))
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)
PTX, view = helpers.PTX, helpers.view


@trtp.register("qdp_check::add_one")
def add_one_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    return inp0.like()


@trtp.autotune("qdp_check::add_one")
def add_one_autotune(inp0: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc]
                     ) -> List[trtp.AutoTuneCombination]:
    return [trtp.AutoTuneCombination("FP32, FP32", "LINEAR", [1, 2])]


@trtp.impl("qdp_check::add_one")
def add_one_impl(inp0: trtp.Tensor, outputs: Tuple[trtp.Tensor], stream: int,
                 tactic: int) -> None:
    import cupy as cp

    with cp.cuda.ExternalStream(stream):
        cp.add(view(inp0), 1, out=view(outputs[0]))


@trtp.aot_impl("qdp_check::add_one")
def add_one_aot(inp0: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc], tactic: int
                ) -> Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams,
                           trtp.SymExprs]:
    n = inp0.shape_expr.numel()
    params = trtp.KernelLaunchParams()
    params.grid_x = trtp.cdiv(n, 256)
    params.block_x = 256
    return "add_one", PTX, params, trtp.SymIntExprs.from_tuple([trtp.SymInt32(n)])
