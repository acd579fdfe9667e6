"""RoPE demo: ONNX ``RoPE`` nodes (a TensorRT plugin) with one input (positions from
``position_offset``) and with two (an int32 positions tensor), imported and driven through
TensorRT's plugin lifecycle by pyplugins' emulator on dynamic batch and sequence, then checked
against NumPy.

Each node is made with ``onnx.helper`` as an exporter would write it and imported the way
TensorRT's ONNX parser imports an unknown op (creator found by op type, ``plugin_version`` and
``plugin_namespace``; only the creator's ``field_names`` are passed, INT narrowed to int32, the
STRING ``layout`` NUL-terminated). The plugin learns how many inputs it has only from what
TensorRT passes it (``len(inputs)`` in ``get_output_dimensions``, ``num_inputs`` in
``supports_format_combination``, ``len(inp)`` in ``configure_plugin``). On a GPU the kernel runs
(and is captured into a CUDA graph and replayed); on a CPU-only machine everything else runs.

Run: ``python demos/rope_demo.py`` (``--device cpu`` to skip the GPU, ``--dtype float16``,
``--layout gptj``, ``--trace`` for the callback timeline). Exits 1 when a check fails.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, List, Optional

import numpy as np

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from demos import _common  # selects the emulator before pyplugins is imported

HEADS, HEAD_DIM, ROTARY_DIM = 8, 64, 32
OFFSET = 1000                                  # a decode step after 1000 cached tokens
PROFILE = ((1, 1), (2, 12), (4, 256))          # (batch, seq): min, opt (the run), max


def make_node(layout: str, with_positions: bool) -> Any:
    """The ONNX node: attributes are the plugin's fields."""
    from onnx import helper

    inputs = ["x", "positions"] if with_positions else ["x"]
    offset = {} if with_positions else {"position_offset": OFFSET}
    return helper.make_node("RoPE", inputs, ["y"], name=f"rope_{len(inputs)}in",
                            plugin_version="1", plugin_namespace="", rotary_dim=ROTARY_DIM,
                            theta=10000.0, layout=layout, **offset)


def run_node(node: Any, x: np.ndarray, positions: Optional[np.ndarray], layout: str,
             device: str, trace: bool) -> Optional[bool]:
    """Import and run one node: True when the output matches NumPy, False for a wrong output
    or a lifecycle problem, None when the kernels did not run (nothing numeric to check)."""
    from pyplugins.ops.rope import RoPE
    from pyplugins.emulator.specs import TensorSpec

    print()
    imported = _common.import_node(node)
    (b0, s0), (b2, s2) = PROFILE[0], PROFILE[2]
    specs = [TensorSpec((-1, -1, HEADS, HEAD_DIM), x.dtype,
                        min=(b0, s0, HEADS, HEAD_DIM), opt=x.shape,
                        max=(b2, s2, HEADS, HEAD_DIM), data=x)]
    if positions is not None:
        specs.append(TensorSpec((-1, -1), np.int32, min=PROFILE[0], opt=PROFILE[1],
                                max=PROFILE[2], data=positions))
    report = _common.run(imported, specs, device=device, trace=trace)
    if not report.ok:
        return False
    if tuple(report.output_shapes[0]) != x.shape:
        print(f"WRONG: output shape {report.output_shapes[0]}, expected x's {x.shape}.")
        return False
    if not report.enqueue_ran:
        return None
    plugin = RoPE(rotary_dim=ROTARY_DIM, theta=10000.0, layout=layout,
                  position_offset=0 if positions is not None else OFFSET)
    (expected,) = plugin.reference(x, positions)
    if not _common.matches(imported.name, report.outputs[0], expected, x.dtype):
        return False
    print(f"OK: {imported.name} output {x.shape} {x.dtype} matches NumPy.")
    return True


def main(argv: Any = None) -> int:
    parser = _common.parser(__doc__)
    parser.add_argument("--layout", choices=("neox", "gptj"), default="neox")
    args = parser.parse_args(argv)

    import pyplugins.ops.rope  # noqa: F401 - registers the RoPE creator

    rng = np.random.default_rng(0)
    batch, seq = PROFILE[1]
    x = rng.standard_normal((batch, seq, HEADS, HEAD_DIM)).astype(args.dtype)
    positions = rng.integers(0, 4096, (batch, seq)).astype(np.int32)  # e.g. packed sequences
    results: List[Optional[bool]] = []
    for pos in (None, positions):
        node = make_node(args.layout, pos is not None)
        results.append(run_node(node, x, pos, args.layout, args.device, args.trace))
    if False in results:
        return 1
    if None in results:
        print()
        return _common.kernels_not_run("no GPU visible to CuPy, or --device cpu; both nodes "
                                       "ran and their output shapes were checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
