"""SeqRepeat demo: "output length = input length x factor" as an ONNX plugin node, run as TRT does.

The model is one node, ``SeqRepeat(x, factor=2) -> y`` with ``y = np.repeat(x, 2, axis=1)``, on
``x`` of shape ``[batch, seq, hidden]`` whose sequence length is dynamic. The node is imported the
way TensorRT's ONNX parser imports an unknown op (the INT attribute ``factor`` arrives as an
INT32 field), then driven through a TensorRT build and run by pyplugins' emulator. The output's
sequence length is the symbolic product ``seq * factor``, evaluated at the profile's min, opt and
max. On a GPU the kernel runs and the result is compared with ``np.repeat``; on a machine
without one everything but the kernel runs, and the demo says so.

Run: ``python demos/seq_repeat_demo.py`` (``--device cpu`` to skip the GPU, ``--factor 3``,
``--dtype float16``, ``--trace`` for the callback timeline). Exit status 0 when the result
matches (or no GPU), 1 when it does not or the lifecycle reports a problem.
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

BATCH, HIDDEN = 2, 24
SEQ_PROFILE = (1, 37, 128)      # min, opt, max of the sequence length


def make_model(dtype: Any, factor: int) -> "onnx.ModelProto":
    """The demo's one-node ONNX model, made with ``onnx.helper``."""
    from onnx import helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("SeqRepeat", ["x"], ["y"], name="upsample_seq", factor=factor,
                            plugin_version="1", plugin_namespace="")
    graph = helper.make_graph(
        [node], "seq_repeat_demo",
        [helper.make_tensor_value_info("x", elem, [BATCH, "seq", HIDDEN])],
        [helper.make_tensor_value_info("y", elem, [BATCH, "seq_times_factor", HIDDEN])])
    # No onnx.checker here: it rejects ops outside ONNX's schema, and plugin ops are exactly that.
    return helper.make_model(graph, producer_name="pyplugins-seq-repeat-demo")


def main(argv: Any = None) -> int:
    parser = _common.parser(__doc__, ("float32", "float16", "int8", "int32"))
    parser.add_argument("--factor", type=int, default=2)
    args = parser.parse_args(argv)

    import pyplugins.ops.seq_repeat  # noqa: F401 - registers SeqRepeat's creator
    from pyplugins.ops.seq_repeat import SeqRepeat
    from pyplugins.emulator.specs import TensorSpec

    dtype = np.dtype(args.dtype)
    imported = _common.import_node(make_model(dtype, args.factor).graph.node[0])
    rng = np.random.default_rng(0)
    shape = (BATCH, SEQ_PROFILE[1], HIDDEN)
    # Integer types get [-64, 64): clear of the emulator's output poison (0xA5, -91 as int8).
    x = (rng.standard_normal(shape) * 20 if dtype.kind == "f" else
         rng.integers(-64, 64, shape)).astype(dtype)
    lo, _, hi = SEQ_PROFILE
    spec = TensorSpec((BATCH, -1, HIDDEN), dtype, min=(BATCH, lo, HIDDEN),
                      max=(BATCH, hi, HIDDEN), data=x)
    print(f"input x {x.shape} {dtype}; the sequence profile {lo}..{hi} gives output lengths "
          f"{lo * args.factor}..{hi * args.factor}")
    report = _common.run(imported, [spec], device=args.device, trace=args.trace)
    if not report.ok:
        return 1
    if not report.enqueue_ran:
        return _common.kernels_not_run(report.skipped)
    y = report.outputs[0]
    if not _common.matches("output y", y, SeqRepeat(factor=args.factor).reference(x)[0]):
        return 1
    print(f"OK: y {y.shape} equals np.repeat(x, {args.factor}, axis=1) bit for bit.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
