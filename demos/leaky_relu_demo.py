"""LReLU_TRT end to end: ONNX ``LReLU_TRT`` nodes (TensorRT 11 removed the built-in plugin; this
one is pyplugins'), imported as TensorRT's parser imports them, built and run through the
emulated plugin lifecycle, and checked against the NumPy reference.

Two nodes: one with the ``neg_slope`` attribute, and one as models written for TensorRT's own
plugin carry it, ``negSlope``. Run: ``python demos/leaky_relu_demo.py`` (``--device cpu`` never
touches the GPU, ``--trace`` prints every callback, ``--dtype float16`` for half precision).
Exits non-zero when the plugin misbehaves or a result is wrong.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from demos import _common  # selects the emulator before pyplugins is imported

SHAPE = (2, 3, 17, 19)
NODES = [("lrelu_pyplugins", "neg_slope", 0.1), ("lrelu_from_trt10_model", "negSlope", 0.25)]


def make_node(name: str, attribute: str, slope: float) -> Any:
    """An ``LReLU_TRT`` node carrying the slope under ``attribute``."""
    from onnx import helper

    return helper.make_node("LReLU_TRT", ["x"], [f"{name}_y"], name=name,
                            **{attribute: slope})


def main(argv: Any = None) -> int:
    args = _common.parser(__doc__, trace_help="print the first node's timeline").parse_args(argv)

    import pyplugins.ops.leaky_relu  # noqa: F401 - registers the LReLU_TRT creator
    from pyplugins.ops.leaky_relu import LeakyReLU
    from pyplugins.emulator.specs import TensorSpec

    x = np.random.default_rng(0).standard_normal(SHAPE).astype(args.dtype)
    checked, skipped = 0, ""
    for i, (name, attribute, slope) in enumerate(NODES):
        imported = _common.import_node(make_node(name, attribute, slope))
        report = _common.run(imported, [TensorSpec(SHAPE, x.dtype, data=x)],
                   device=args.device, trace=args.trace and i == 0)
        if not report.ok:
            return 1
        if not report.enqueue_ran:
            skipped = report.skipped
            continue
        if not _common.matches(f"node {name!r}", report.outputs[0],
                               LeakyReLU(neg_slope=slope).reference(x)[0], x.dtype):
            return 1
        checked += 1
        print(f"  output {report.output_shapes[0]} {x.dtype} matches the NumPy reference "
              f"(slope {slope})")
    if checked < len(NODES):
        return _common.kernels_not_run(skipped)
    print(f"OK: both nodes ({', '.join(a for _, a, _ in NODES)}) match the NumPy reference.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
