"""CircPad end to end: an ONNX ``CircPad`` node, imported as TensorRT's parser imports it, built
and run through the emulated plugin lifecycle on a dynamic-shape profile, and checked against
``np.pad(mode="wrap")``.

Run: ``python demos/circ_pad_demo.py`` (``--device cpu`` never touches the GPU, ``--trace``
prints every callback TensorRT makes, ``--dtype float16`` for half precision). Exits non-zero
when the plugin misbehaves or a result is wrong.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from demos import _common  # selects the emulator before pyplugins is imported

#: (before, after) of the last dim (W), then of the dim before it (H): the samples' order.
PADS = [1, 2, 3, 0]
#: The network input is [-1, 3, -1, -1]; one optimization profile covers these shapes.
NETWORK_SHAPE = (-1, 3, -1, -1)
PROFILE_MIN, PROFILE_MAX = (1, 3, 1, 1), (4, 3, 16, 40)
RUN_SHAPES = [(2, 3, 8, 10), (1, 3, 1, 1), (4, 3, 16, 37)]


def make_node() -> Any:
    """The ``CircPad`` node, as an exporter (or onnx-graphsurgeon) writes it."""
    from onnx import helper

    return helper.make_node("CircPad", ["x"], ["y"], name="circ_pad_0", pads=PADS,
                            plugin_version="1", plugin_namespace="")


def main(argv: Any = None) -> int:
    args = _common.parser(__doc__, trace_help="print the first run's timeline").parse_args(argv)

    import pyplugins.ops.circ_pad  # noqa: F401 - registers the CircPad creator
    from pyplugins.ops.circ_pad import CircPad
    from pyplugins.emulator.specs import TensorSpec

    imported = _common.import_node(make_node())
    rng = np.random.default_rng(0)
    checked, skipped = 0, ""
    for i, shape in enumerate(RUN_SHAPES):
        x = rng.standard_normal(shape).astype(args.dtype)
        spec = TensorSpec(NETWORK_SHAPE, x.dtype, min=PROFILE_MIN, max=PROFILE_MAX,
                          data=x)
        print(f"\ninput {shape} {x.dtype}")
        report = _common.run(imported, [spec], device=args.device, trace=args.trace and i == 0)
        if not report.ok:
            return 1
        if not report.enqueue_ran:
            skipped = report.skipped
            continue
        if not _common.matches(f"output for input {shape}", report.outputs[0],
                               CircPad(pads=PADS).reference(x)[0]):
            return 1
        checked += 1
        print("  matches np.pad(mode='wrap') bit for bit")
    if checked < len(RUN_SHAPES):
        return _common.kernels_not_run(skipped)
    print(f"OK: {checked} shapes of one dynamic profile match np.pad(mode='wrap').")
    return 0


if __name__ == "__main__":
    sys.exit(main())
