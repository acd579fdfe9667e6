"""CircPad end to end: an ONNX ``CircPad`` node, imported as TensorRT's parser imports it, built
and run through the emulated plugin lifecycle on a dynamic-shape profile, and checked against
``np.pad(mode="wrap")``.

Run: ``python demos/circ_pad_demo.py`` (``--device cpu`` never touches the GPU, ``--trace``
prints every callback TensorRT makes, ``--dtype float16`` for half precision). Exits non-zero
when the plugin misbehaves or a result is wrong.
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

#: (before, after) of the last dim (W), then of the dim before it (H): the samples' order.
PADS = [1, 2, 3, 0]
#: The network input is [-1, 3, -1, -1]; one optimization profile covers these shapes.
NETWORK_SHAPE = (-1, 3, -1, -1)
PROFILE_MIN, PROFILE_MAX = (1, 3, 1, 1), (4, 3, 16, 40)
RUN_SHAPES = [(2, 3, 8, 10), (1, 3, 1, 1), (4, 3, 16, 37)]


def make_node():
    """The ``CircPad`` node, as an exporter (or onnx-graphsurgeon) writes it."""
    from onnx import helper

    return helper.make_node("CircPad", ["x"], ["y"], name="circ_pad_0", pads=PADS,
                            plugin_version="1", plugin_namespace="")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cpu"), default="auto")
    parser.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    parser.add_argument("--trace", action="store_true", help="print the first run's timeline")
    args = parser.parse_args(argv)

    import pyplugins.ops.circ_pad  # noqa: F401 - registers the CircPad creator
    from pyplugins import reference
    from pyplugins.emulator import lifecycle, onnx_import

    imported = onnx_import.import_node(make_node())
    fields = ", ".join(f"{f.name}: {f.type.name} {f.data.tolist()}" for f in imported.fc)
    print(f"ONNX node {imported.name!r} -> creator {':'.join(imported.key)}; the parser passes "
          f"{fields}")
    for warning in imported.warnings:
        print(f"  parser warning: {warning}")

    rng = np.random.default_rng(0)
    checked = 0
    for i, shape in enumerate(RUN_SHAPES):
        x = rng.standard_normal(shape).astype(args.dtype)
        spec = lifecycle.TensorSpec(NETWORK_SHAPE, x.dtype, min=PROFILE_MIN, max=PROFILE_MAX,
                                    data=x)
        report = lifecycle.run(imported.creator, [spec], imported.fc, node_name=imported.name,
                               device=args.device, trace=args.trace and i == 0)
        if report.trace is not None:
            print(report.trace.format_timeline())
        print(f"input {shape} {x.dtype} -> output {report.output_shapes[0]}")
        if not report.ok:
            print(report.format())
            return 1
        if not report.enqueue_ran:
            print(f"  kernels were not run: {report.skipped}")
            continue
        expected = reference.circ_pad(x, PADS)
        if not np.array_equal(report.outputs[0], expected):
            bad = int(np.count_nonzero(report.outputs[0] != expected))
            print(f"  WRONG: {bad} of {expected.size} elements differ from np.pad(mode='wrap')")
            return 1
        checked += 1
        print("  matches np.pad(mode='wrap') bit for bit")
    if checked < len(RUN_SHAPES):
        print("The kernels were not run here (no GPU, or --device cpu), so no numbers were "
              "checked; everything else ran: parse, shape inference, format search, build- and "
              "execution-phase configure, serialize, deserialize, the context's clone.")
    else:
        print(f"OK: {checked} shapes of one dynamic profile match np.pad(mode='wrap').")
    return 0


if __name__ == "__main__":
    sys.exit(main())
