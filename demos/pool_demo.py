"""Pool demo: an ONNX ``Pool`` node (a TensorRT plugin) imported and driven through TensorRT's
plugin lifecycle by pyplugins' emulator, on a dynamic-shape profile, then checked against NumPy.

The node is made with ``onnx.helper`` exactly as an exporter would write it; it is imported the
way TensorRT's ONNX parser imports an unknown op (creator found by op type, ``plugin_version``
and ``plugin_namespace``; only the creator's ``field_names`` are passed, INTS narrowed to int32,
the STRING ``mode`` NUL-terminated). The lifecycle then runs ``create_plugin``, the shape and
format queries, build- and execution-phase ``configure_plugin``, serialize / deserialize, the
execution context's clone and, on a GPU, ``enqueue`` (plus a CUDA-graph capture and replay).
INT8 shows where the quantization scales come from: the input's from its tensor descriptor,
the output's from the ``out_scale`` attribute.

Run: ``python demos/pool_demo.py`` (``--device cpu`` to skip the GPU, ``--dtype int8``,
``--mode max``, ``--trace`` for the callback timeline). Exits 1 when a check fails.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict

import numpy as np

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from demos import _common  # selects the emulator before pyplugins is imported

KERNEL, STRIDE, PADDING = [3, 3], [2, 2], [1, 1]
IN_SCALE, OUT_SCALE = 0.05, 0.04           # INT8: real value = q * scale
PROFILE = ((1, 3, 8, 8), (2, 3, 15, 20), (4, 3, 32, 32))   # min, opt (the run), max


def make_node(mode: str, dtype: np.dtype) -> Any:
    """The ONNX node, as an exporter writes a plugin op (attributes = the plugin's fields)."""
    from onnx import helper

    attrs: Dict[str, Any] = dict(mode=mode, kernel=KERNEL, stride=STRIDE, padding=PADDING)
    if dtype == np.int8:
        attrs["out_scale"] = OUT_SCALE  # the input's scale comes from its tensor descriptor
    return helper.make_node("Pool", ["x"], ["y"], name="pool_0", plugin_version="1",
                            plugin_namespace="", **attrs)


def make_input(dtype: np.dtype, seed: int = 0) -> np.ndarray:
    """A random input of the profile's opt shape."""
    rng = np.random.default_rng(seed)
    if dtype == np.int8:  # quantized post-ReLU activations: 0 ... 5.0 at scale 0.05
        return rng.integers(0, 101, PROFILE[1]).astype(np.int8)
    return rng.standard_normal(PROFILE[1]).astype(dtype)


def main(argv: Any = None) -> int:
    parser = _common.parser(__doc__, ("float32", "float16", "int8"))
    parser.add_argument("--mode", choices=("max", "avg"), default="avg")
    args = parser.parse_args(argv)

    import pyplugins.ops.pool  # noqa: F401 - registers the Pool creator
    from pyplugins.ops.pool import Pool
    from pyplugins.testing import TOLERANCES
    from pyplugins.emulator.specs import TensorSpec

    dtype = np.dtype(args.dtype)
    imported = _common.import_node(make_node(args.mode, dtype))
    x = make_input(dtype)
    spec = TensorSpec((-1, 3, -1, -1), dtype, min=PROFILE[0], opt=PROFILE[1],
                      max=PROFILE[2], data=x,
                      scale=IN_SCALE if dtype == np.int8 else -1.0)
    report = _common.run(imported, [spec], device=args.device, trace=args.trace)
    if not report.ok:
        return 1
    scales = dict(in_scale=IN_SCALE, out_scale=OUT_SCALE) if dtype == np.int8 else {}
    (expected,) = Pool(mode=args.mode, kernel=KERNEL, stride=STRIDE, padding=PADDING,
                       **scales).reference(x)
    if tuple(report.output_shapes[0]) != expected.shape:
        print(f"WRONG: output shape {report.output_shapes[0]}, NumPy gives {expected.shape}.")
        return 1
    print(f"The output shape {expected.shape} is NumPy's.")
    if not report.enqueue_ran:
        return _common.kernels_not_run(report.skipped)
    if not _common.matches(f"Pool {args.mode}", report.outputs[0], expected, dtype):
        return 1
    print(f"OK: {args.mode} pooling of {x.shape} {dtype} -> {expected.shape} matches NumPy "
          f"(tolerance {TOLERANCES[dtype].rtol:g} rel + "
          f"{TOLERANCES[dtype].atol:g} abs).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
