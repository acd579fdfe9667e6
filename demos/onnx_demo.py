"""The main demo: an ONNX model whose nodes are TensorRT plugins, run with or without TensorRT.

The model is ``x -> CircPad(pads) -> LReLU_TRT(neg_slope) -> y``. Each node is imported the way
TensorRT's ONNX parser imports an unknown op (creator looked up by op type, ``plugin_version`` and
``plugin_namespace``; only the creator's ``field_names`` are passed, INTS narrowed to int32,
strings NUL-terminated), then driven through the plugin lifecycle of a TensorRT build and run by
pyplugins' emulator. On a GPU the kernels run and the result is checked against NumPy; on a
machine without one, everything but the kernels runs and the demo says so. With real TensorRT
installed it builds and runs an engine instead.

Run: ``python demos/onnx_demo.py`` (``--device cpu`` to skip the GPU, ``--trace`` for the timeline,
``--interface v3`` to register the plugins as ``IPluginV3``, in the emulator and in TensorRT alike).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Tuple

import numpy as np

if TYPE_CHECKING:  # the annotations name onnx; the demo imports it where it builds the model
    import onnx

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from demos._interface import InterfaceParser, registered_as  # no side effect

PADS = (1, 2, 2, 1)          # (before, after) of the last dim, then of the one before it
NEG_SLOPE = 0.1
SHAPE = (2, 3, 16, 20)


def make_model(dtype=np.float32, seed: int = 0) -> Tuple["onnx.ModelProto", np.ndarray]:
    """The demo's ONNX model (plugin nodes made with ``onnx.helper``) and a random input."""
    from onnx import TensorProto, helper

    elem = TensorProto.FLOAT if np.dtype(dtype) == np.float32 else TensorProto.FLOAT16
    out_shape = list(SHAPE)
    out_shape[-1] += PADS[0] + PADS[1]
    out_shape[-2] += PADS[2] + PADS[3]
    pad = helper.make_node("CircPad", ["x"], ["padded"], name="circ_pad_0", pads=list(PADS),
                           plugin_version="1", plugin_namespace="")
    relu = helper.make_node("LReLU_TRT", ["padded"], ["y"], name="lrelu_0", neg_slope=NEG_SLOPE,
                            plugin_version="1", plugin_namespace="")
    graph = helper.make_graph(
        [pad, relu], "pyplugins_demo",
        [helper.make_tensor_value_info("x", elem, list(SHAPE))],
        [helper.make_tensor_value_info("y", elem, out_shape)])
    model = helper.make_model(graph, producer_name="pyplugins-demo")
    x = np.random.default_rng(seed).standard_normal(SHAPE).astype(dtype)
    return model, x


def reference(x: np.ndarray) -> np.ndarray:
    """NumPy result of the model."""
    from pyplugins.ops import CircPad, LeakyReLU

    (padded,) = CircPad(pads=list(PADS)).reference(x)
    return LeakyReLU(neg_slope=NEG_SLOPE).reference(padded)[0]


def run_emulated(model, x: np.ndarray, *, device: str, trace: bool) -> int:
    """Import each node as the ONNX parser would and drive it through the emulated lifecycle."""
    from pyplugins.checker import lifecycle
    from pyplugins.checker.parser_notes import missing_attribute_note
    from pyplugins.emulator import onnx_import
    from pyplugins.emulator.specs import TensorSpec
    from pyplugins.testing import assert_close

    value = x
    ran_kernels = True
    for node in model.graph.node:
        imported = onnx_import.import_node(node)
        spec = TensorSpec(shape=value.shape, dtype=value.dtype, data=value)
        report = lifecycle.run(imported.creator, [spec], imported.fc, node_name=imported.name,
                               device=device, trace=trace)
        print(f"[{node.op_type}] node {imported.name!r}: creator {':'.join(imported.key)}, "
              f"fields {[f.name for f in imported.fc]} -> outputs {report.output_shapes}")
        for warning in imported.warnings:
            print(f"    parser warning: {warning}")
        note = missing_attribute_note(imported.creator, imported.warnings,
                                      [f.name for f in imported.fc])
        if note:
            print(f"    pyplugins: {note}")
        if trace and report.trace is not None:
            print(report.trace.format_timeline())
        if not report.ok:
            print(report.format())
            return 1
        if not report.enqueue_ran:
            ran_kernels = False
            print(f"    kernels not run: {report.skipped}")
            value = np.zeros(report.output_shapes[0], dtype=value.dtype)
        else:
            value = report.outputs[0]
    if not ran_kernels:
        print("No GPU here: the whole plugin lifecycle ran (parse, format search, build- and "
              "execution-phase configure, serialize, deserialize, context clone) but not the "
              "kernels, so there is no numeric result to check.")
        return 0
    assert_close(value, reference(x), x.dtype, what="CircPad -> LReLU_TRT")
    print(f"OK: output {value.shape} {value.dtype} matches NumPy (np.pad wrap + leaky relu).")
    return 0


def run_tensorrt(model, x: np.ndarray) -> int:
    """Build and run a real TensorRT engine from the model."""
    import cupy as cp

    from pyplugins.models import trt_build
    from pyplugins.testing import assert_close

    path = trt_build.build_engine(model, "onnx_demo.engine", progress=False)
    (y,) = trt_build.run_engine(trt_build.load_engine(str(path)), {"x": cp.asarray(x)}).values()
    assert_close(cp.asnumpy(y), reference(x), x.dtype, what="TensorRT engine")
    print(f"OK: TensorRT engine output {tuple(y.shape)} matches NumPy.")
    return 0


def main(argv=None) -> int:
    parser = InterfaceParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cpu"), default="auto")
    parser.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    parser.add_argument("--trace", action="store_true", help="print each node's callback timeline")
    args = parser.parse_args(argv)

    import pyplugins.ops  # noqa: F401 - registers CircPad and LReLU_TRT
    from pyplugins import _trt
    from pyplugins.emulator.real import is_emulator

    model, x = make_model(np.dtype(args.dtype))
    trt = _trt.load()
    if args.interface is not None:
        print(f"--interface {args.interface}: the plugins are registered as {registered_as()}.")
    if not is_emulator(trt) and args.device == "auto":
        print(f"TensorRT {trt.__version__}: building an engine.")
        return run_tensorrt(model, x)
    print("TensorRT is not installed: running the plugin lifecycle in pyplugins' emulator.")
    return run_emulated(model, x, device=args.device, trace=args.trace)


if __name__ == "__main__":
    sys.exit(main())
