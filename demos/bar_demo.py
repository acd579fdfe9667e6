"""BarPlugin demo: a two-input, two-output ONNX plugin node, imported and run as TensorRT would.

The model is one node, ``BarPlugin(a, b) -> (cat, b_copy)`` with ``cat = concat([a, b], axis=0)``
and ``b_copy = b``, and a dynamic dim 0 on both inputs. The node is imported the way TensorRT's
ONNX parser imports an unknown op (creator looked up by op type, version and namespace; BarPlugin
has no attributes), then driven through a TensorRT build and run by pyplugins' emulator with a
profile per input. On a GPU the kernel runs and both outputs are compared with NumPy; on a
machine without one everything but the kernel runs, and the demo says so.

Run: ``python demos/bar_demo.py`` (``--device cpu`` to skip the GPU, ``--dtype int8``,
``--trace`` for the callback timeline). Exit status 0 when the outputs match (or no GPU), 1 when
they do not or the lifecycle reports a problem.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TYPE_CHECKING, Tuple

import numpy as np

if TYPE_CHECKING:  # the annotations name onnx; the demo imports it where it builds the model
    import onnx

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from demos import _common  # selects the emulator before pyplugins is imported

TRAILING = (3, 5)               # the dims after dim 0, shared by a and b
A_PROFILE = (1, 4, 8)           # min, opt, max of a's dim 0
B_PROFILE = (0, 7, 16)          # min, opt, max of b's dim 0 (b may be empty)


def make_model(dtype: Any) -> "onnx.ModelProto":
    """The demo's one-node ONNX model, made with ``onnx.helper``."""
    from onnx import helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("BarPlugin", ["a", "b"], ["cat", "b_copy"], name="bar_0",
                            plugin_version="1", plugin_namespace="")
    graph = helper.make_graph(
        [node], "bar_demo",
        [helper.make_tensor_value_info("a", elem, ["a0", *TRAILING]),
         helper.make_tensor_value_info("b", elem, ["b0", *TRAILING])],
        [helper.make_tensor_value_info("cat", elem, ["a0_plus_b0", *TRAILING]),
         helper.make_tensor_value_info("b_copy", elem, ["b0", *TRAILING])])
    # No onnx.checker here: it rejects ops outside ONNX's schema, and plugin ops are exactly that.
    return helper.make_model(graph, producer_name="pyplugins-bar-demo")


def make_inputs(dtype: Any, seed: int = 0) -> Tuple[np.ndarray, np.ndarray]:
    """Random ``a`` and ``b`` at the profiles' opt shapes."""
    rng = np.random.default_rng(seed)
    shapes = [(A_PROFILE[1], *TRAILING), (B_PROFILE[1], *TRAILING)]
    if np.dtype(dtype).kind == "f":
        return tuple(rng.standard_normal(s).astype(dtype) for s in shapes)  # type: ignore
    # Integers in [-64, 64): clear of the emulator's output poison (0xA5 bytes, -91 as int8).
    return tuple(rng.integers(-64, 64, s).astype(dtype) for s in shapes)  # type: ignore


def main(argv: Any = None) -> int:
    args = _common.parser(__doc__, ("float32", "float16", "int8", "int32")).parse_args(argv)

    import pyplugins.ops.bar  # noqa: F401 - registers BarPlugin's creator
    from pyplugins.ops.bar import BarPlugin
    from pyplugins.emulator.specs import TensorSpec

    dtype = np.dtype(args.dtype)
    imported = _common.import_node(make_model(dtype).graph.node[0])
    a, b = make_inputs(dtype)
    specs = [TensorSpec((-1, *TRAILING), dtype, min=(lo, *TRAILING),
                        max=(hi, *TRAILING), data=x)
             for (lo, _, hi), x in ((A_PROFILE, a), (B_PROFILE, b))]
    print(f"inputs a {a.shape}, b {b.shape} {dtype}")
    report = _common.run(imported, specs, device=args.device, trace=args.trace)
    if not report.ok:
        return 1
    if not report.enqueue_ran:
        return _common.kernels_not_run(report.skipped)
    cat, copy = BarPlugin().reference(a, b)
    if not (_common.matches("output 'cat'", report.outputs[0], cat)
            and _common.matches("output 'b_copy'", report.outputs[1], copy)):
        return 1
    print(f"OK: cat {cat.shape} = concat([a, b], axis=0) and b_copy {copy.shape} = b, "
          "bit for bit.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
