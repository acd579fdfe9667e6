"""An NVIDIA-style QDP module (as samples/python/quickly_deployable_plugins/qdp_defs.py writes them):
an element-wise plugin with several attribute kinds, autotune over types and tactics, and an
in-place (aliased) variant. No `from __future__ import annotations`: tensorrt.plugin reads
annotations as objects."""

from typing import Any, List, Tuple

import numpy as np
import tensorrt as trt
import tensorrt.plugin as trtp

CALLS = []


@trtp.register("qdp_tests::scale")
def scale_desc(inp0: trtp.TensorDesc, mode: str, fast: bool, coeffs: np.ndarray[Any, np.dtype[np.float32]],
               blob: bytes) -> trtp.TensorDesc:
    out = inp0.like()
    if mode == "half":
        out.dtype = trt.float16
    return out


@trtp.autotune("qdp_tests::scale")
def scale_autotune(inp0: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc]
                   ) -> List[trtp.AutoTuneCombination]:
    return [trtp.AutoTuneCombination("FP32|FP16, FP32|FP16", "LINEAR", [1, 2]),
            trtp.AutoTuneCombination("FP32, FP32", "LINEAR", [3])]


@trtp.impl("qdp_tests::scale")
def scale_impl(inp0: trtp.Tensor, mode: str, coeffs: np.ndarray[Any, np.dtype[np.float32]],
               outputs: Tuple[trtp.Tensor], stream: int, tactic: int) -> None:
    CALLS.append(dict(inp0=inp0, mode=mode, coeffs=coeffs, outputs=outputs, stream=stream,
                      tactic=tactic))


@trtp.register("qdp_tests::add_in_place")
def add_in_place_desc(inp0: trtp.TensorDesc, delta: np.ndarray[Any, np.dtype[np.int64]]) -> trtp.TensorDesc:
    return inp0.aliased()


@trtp.impl("qdp_tests::add_in_place")
def add_in_place_impl(inp0, delta, outputs, stream) -> None:
    CALLS.append(dict(inp0=inp0, delta=delta, outputs=outputs, stream=stream))
