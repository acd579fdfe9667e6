"""LReLU_TRT end to end: ONNX ``LReLU_TRT`` nodes (TensorRT 11 removed the built-in plugin; this
one is pyplugins'), imported as TensorRT's parser imports them, built and run through the
emulated plugin lifecycle, and checked against the NumPy reference.

Two nodes: one with the ``neg_slope`` attribute, and one as models written for TensorRT's own
plugin carry it, ``negSlope``. Run: ``python demos/leaky_relu_demo.py`` (``--device cpu`` never
touches the GPU, ``--trace`` prints every callback, ``--dtype float16`` for half precision).
Exits non-zero when the plugin misbehaves or a result is wrong.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

# This demo shows the lifecycle in pyplugins' emulator, also where TensorRT is installed
# (demos/onnx_demo.py builds a real engine there).
os.environ["PYPLUGINS_TRT"] = "emulator"
if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHAPE = (2, 3, 17, 19)
NODES = [("lrelu_pyplugins", "neg_slope", 0.1), ("lrelu_from_trt10_model", "negSlope", 0.25)]


def make_node(name: str, attribute: str, slope: float):
    """An ``LReLU_TRT`` node carrying the slope under ``attribute``."""
    from onnx import helper

    return helper.make_node("LReLU_TRT", ["x"], [f"{name}_y"], name=name,
                            **{attribute: slope})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cpu"), default="auto")
    parser.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    parser.add_argument("--trace", action="store_true", help="print the first node's timeline")
    args = parser.parse_args(argv)

    import pyplugins.ops.leaky_relu  # noqa: F401 - registers the LReLU_TRT creator
    from pyplugins import reference
    from pyplugins.emulator import lifecycle, onnx_import

    x = np.random.default_rng(0).standard_normal(SHAPE).astype(args.dtype)
    checked = 0
    for i, (name, attribute, slope) in enumerate(NODES):
        imported = onnx_import.import_node(make_node(name, attribute, slope))
        fields = ", ".join(f"{f.name}: {f.type.name} {f.data.tolist()}" for f in imported.fc)
        print(f"ONNX node {imported.name!r} -> creator {':'.join(imported.key)}; the parser "
              f"passes {fields}")
        for warning in imported.warnings:
            print(f"  parser warning (harmless: the slope has two accepted names): {warning}")
        spec = lifecycle.TensorSpec(SHAPE, x.dtype, data=x)
        report = lifecycle.run(imported.creator, [spec], imported.fc, node_name=imported.name,
                               device=args.device, trace=args.trace and i == 0)
        if report.trace is not None:
            print(report.trace.format_timeline())
        if not report.ok:
            print(report.format())
            return 1
        if not report.enqueue_ran:
            print(f"  kernels were not run: {report.skipped}")
            continue
        try:
            reference.assert_close(report.outputs[0], reference.leaky_relu(x, np.float32(slope)),
                                   x.dtype, what=f"node {name!r}")
        except AssertionError as err:
            print(f"  WRONG: {err}")
            return 1
        checked += 1
        print(f"  output {report.output_shapes[0]} {x.dtype} matches the NumPy reference "
              f"(slope {slope})")
    if checked < len(NODES):
        print("The kernels were not run here (no GPU, or --device cpu), so no numbers were "
              "checked; everything else ran: parse, shape inference, format search, build- and "
              "execution-phase configure, serialize, deserialize, the context's clone.")
    else:
        print(f"OK: both nodes ({', '.join(a for _, a, _ in NODES)}) match the NumPy reference.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
