"""RMSNorm demo: an RMS-normalization plugin node in ONNX, imported and run as TensorRT would.

The model is one node, ``RMSNorm(x, weight, eps=1e-5) -> y`` with ``y = x / sqrt(mean(x^2 over
the last dim) + eps) * weight``, on hidden states ``x`` of shape ``[batch, seq, hidden]`` whose
batch and sequence length are dynamic, and a ``weight`` of shape ``[hidden]``. The node is
imported the way TensorRT's ONNX parser imports an unknown op (the FLOAT attribute ``eps``
arrives as a FLOAT32 field), then driven through a TensorRT build and run by pyplugins'
emulator. On a GPU the kernel runs and the result is compared with NumPy (float64) within the
per-dtype tolerance of ``pyplugins.testing.TOLERANCES``; on a machine without one everything
but the kernel runs, and the demo says so.

Run: ``python demos/rmsnorm_demo.py`` (``--device cpu`` to skip the GPU, ``--dtype float16``,
``--trace`` for the callback timeline). Exit status 0 when the result matches (or no GPU), 1
when it does not or the lifecycle reports a problem.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the annotations name onnx; the demo imports it where it builds the model
    import onnx

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from demos import _common  # selects the emulator before pyplugins is imported

HIDDEN = 768
EPS = 1e-5
PROFILE = ((1, 1), (2, 50), (8, 512))   # min, opt, max of (batch, seq)


def make_model(dtype: Any) -> "onnx.ModelProto":
    """The demo's one-node ONNX model, made with ``onnx.helper``."""
    from onnx import helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("RMSNorm", ["x", "weight"], ["y"], name="final_norm", eps=EPS,
                            plugin_version="1", plugin_namespace="")
    graph = helper.make_graph(
        [node], "rmsnorm_demo",
        [helper.make_tensor_value_info("x", elem, ["batch", "seq", HIDDEN]),
         helper.make_tensor_value_info("weight", elem, [HIDDEN])],
        [helper.make_tensor_value_info("y", elem, ["batch", "seq", HIDDEN])])
    # No onnx.checker here: it rejects ops outside ONNX's schema, and plugin ops are exactly that.
    return helper.make_model(graph, producer_name="pyplugins-rmsnorm-demo")


def main(argv: Any = None) -> int:
    args = _common.parser(__doc__).parse_args(argv)

    import pyplugins.ops.rmsnorm  # noqa: F401 - registers RMSNorm's creator
    from pyplugins.ops.rmsnorm import RMSNorm
    from pyplugins.testing import TOLERANCES
    from pyplugins.emulator.specs import TensorSpec

    dtype = np.dtype(args.dtype)
    imported = _common.import_node(make_model(dtype).graph.node[0])
    rng = np.random.default_rng(0)
    (lo_b, lo_s), (batch, seq), (hi_b, hi_s) = PROFILE
    x = (rng.standard_normal((batch, seq, HIDDEN)) * 4).astype(dtype)
    weight = (1.0 + 0.1 * rng.standard_normal(HIDDEN)).astype(dtype)
    specs = [TensorSpec((-1, -1, HIDDEN), dtype, min=(lo_b, lo_s, HIDDEN),
                        max=(hi_b, hi_s, HIDDEN), data=x),
             TensorSpec((HIDDEN,), dtype, data=weight)]
    print(f"x {x.shape} and weight {weight.shape} {dtype}")
    report = _common.run(imported, specs, device=args.device, trace=args.trace)
    if not report.ok:
        return 1
    if not report.enqueue_ran:
        return _common.kernels_not_run(report.skipped)
    y = report.outputs[0]
    # The reference takes eps as the float32 the kernel gets, as the parser's field is.
    (expected,) = RMSNorm(eps=EPS).reference(x, weight)
    if not _common.matches("RMSNorm", y, expected, dtype):
        return 1
    tol = TOLERANCES[dtype]
    print(f"OK: y {y.shape} {y.dtype} matches NumPy within rtol={tol.rtol:g}, atol={tol.atol:g}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
