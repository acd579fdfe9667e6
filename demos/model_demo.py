"""Whole-model demo: a small transformer block, its subgraphs replaced by pyplugins' plugins, and
proof that the replaced model still computes what the original does.

1. A pre-norm attention + MLP block is built in code with onnx-graphsurgeon (no downloads):
   opset 23 ``RMSNormalization``, rotate-half RoPE on queries and keys (a shared pair of cos/sin
   tables), softmax attention, a decomposed RMSNorm (Pow/ReduceMean/Add/Sqrt, then Mul by a
   Reciprocal), a LeakyRelu MLP and a wrap ``Pad`` of the sequence axis.
2. The shipped Polygraphy patterns (``pyplugins patterns-dir``) replace those subgraphs by
   ``RMSNorm``, ``RoPE``, ``LReLU_TRT`` and ``CircPad`` nodes, in-process; the same as
   ``polygraphy plugin match block.onnx --plugin-dir "$(pyplugins patterns-dir)"`` then
   ``polygraphy plugin replace ...``.
3. The original runs in onnxruntime; the replaced model runs with pyplugins' model runner
   (ordinary ops in onnxruntime, each plugin node through the execution path: its kernel on a
   GPU, its NumPy reference without one, as the output says).
4. The outputs are compared within ``pyplugins.testing.TOLERANCES``.

Run: ``python demos/model_demo.py`` (``--device cpu`` to use the references even on a GPU,
``--save DIR`` to keep both models for ``polygraphy run``, ``--interface v3`` to register the
plugins as ``IPluginV3``). Exit status 0 when the outputs match
and every expected replacement happened, 1 otherwise.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["PYPLUGINS_TRT"] = "emulator"  # the runner drives plugins through the emulator
from demos._interface import InterfaceParser, registered_as

BATCH, SEQ, HEADS, HEAD_DIM = 2, 8, 2, 16
HIDDEN = HEADS * HEAD_DIM
#: What the patterns must find in the block.
EXPECTED = {"RMSNorm": 2, "RoPE": 2, "CircPad": 1, "LReLU_TRT": 1}


def make_block(seed: int = 0) -> Any:
    """The block as a gs.Graph (see the module docstring)."""
    import onnx_graphsurgeon as gs

    from pyplugins.models.rope_pattern import tables

    rng = np.random.default_rng(seed)
    graph = gs.Graph(opset=23, name="demo_block")
    count = iter(range(10**6))

    def const(value: Any) -> Any:
        return gs.Constant(f"c{next(count)}", np.asarray(value))

    def op(kind: str, inputs: Sequence[Any], shape: Optional[tuple] = None, **attrs: Any) -> Any:
        out = gs.Variable(f"t{next(count)}", np.float32, shape)
        graph.nodes.append(gs.Node(kind, name=f"{kind}{next(count)}", attrs=attrs,
                                   inputs=list(inputs), outputs=[out]))
        return out

    def weight(*shape: int, scale: float = 1.0) -> Any:
        return const((scale * rng.standard_normal(shape)).astype(np.float32))

    x = gs.Variable("x", np.float32, (BATCH, SEQ, HIDDEN))
    graph.inputs = [x]
    norm_w = const((1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32))
    h = op("RMSNormalization", [x, norm_w], (BATCH, SEQ, HIDDEN), axis=-1, epsilon=1e-5)
    cos, sin = tables(SEQ, HEAD_DIM, 10000.0, 0)
    cos_t, sin_t = const(cos.reshape(1, SEQ, 1, HEAD_DIM)), const(sin.reshape(1, SEQ, 1, HEAD_DIM))
    split4, merge3 = const(np.int64([BATCH, SEQ, HEADS, HEAD_DIM])), const(np.int64([BATCH, SEQ,
                                                                                      HIDDEN]))
    s4 = (BATCH, SEQ, HEADS, HEAD_DIM)

    def rope(t: Any) -> Any:
        t4 = op("Reshape", [t, split4], s4)
        half = HEAD_DIM // 2
        x1 = op("Slice", [t4, const(np.int64([0])), const(np.int64([half])), const(np.int64([3]))])
        x2 = op("Slice", [t4, const(np.int64([half])), const(np.int64([HEAD_DIM])),
                          const(np.int64([3]))])
        rot = op("Concat", [op("Neg", [x2]), x1], s4, axis=-1)
        return op("Add", [op("Mul", [t4, cos_t], s4), op("Mul", [rot, sin_t], s4)], s4)

    q = rope(op("MatMul", [h, weight(HIDDEN, HIDDEN, scale=HIDDEN ** -0.5)]))
    k = rope(op("MatMul", [h, weight(HIDDEN, HIDDEN, scale=HIDDEN ** -0.5)]))
    v = op("Reshape", [op("MatMul", [h, weight(HIDDEN, HIDDEN, scale=HIDDEN ** -0.5)]), split4])
    qh, kh, vh = (op("Transpose", [t], perm=[0, 2, 1, 3]) for t in (q, k, v))
    scores = op("Mul", [op("MatMul", [qh, op("Transpose", [kh], perm=[0, 1, 3, 2])]),
                        const(np.float32(HEAD_DIM ** -0.5))])
    att = op("MatMul", [op("Softmax", [scores], axis=-1), vh])
    att3 = op("Reshape", [op("Transpose", [att], perm=[0, 2, 1, 3]), merge3])
    r1 = op("Add", [x, op("MatMul", [att3, weight(HIDDEN, HIDDEN, scale=HIDDEN ** -0.5)])],
            (BATCH, SEQ, HIDDEN))
    sq = op("Pow", [r1, const(np.float32(2.0))])
    ms = op("ReduceMean", [sq, const(np.int64([-1]))], keepdims=1)
    inv = op("Reciprocal", [op("Sqrt", [op("Add", [ms, const(np.float32(1e-6))])])])
    n2 = op("Mul", [const((1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)),
                    op("Mul", [r1, inv], (BATCH, SEQ, HIDDEN))], (BATCH, SEQ, HIDDEN))
    up = op("LeakyRelu", [op("MatMul", [n2, weight(HIDDEN, 2 * HIDDEN, scale=HIDDEN ** -0.5)])],
            (BATCH, SEQ, 2 * HIDDEN), alpha=0.05)
    r2 = op("Add", [r1, op("MatMul", [up, weight(2 * HIDDEN, HIDDEN, scale=HIDDEN ** -0.5)])],
            (BATCH, SEQ, HIDDEN))
    out = op("Pad", [r2, const(np.int64([0, 2, 0, 0, 1, 0]))], (BATCH, SEQ + 3, HIDDEN),
             mode="wrap")
    out.name = "y"
    graph.outputs = [out]
    return graph


def export(graph: Any) -> Any:
    """A checked ModelProto of a gs graph."""
    import onnx
    import onnx_graphsurgeon as gs

    model = gs.export_onnx(graph.cleanup().toposort())
    # The lowest IR version the opsets need (an exporter's habit): an onnxruntime older than the
    # onnx package (onnx 1.23 writes IR 14; onnxruntime 1.30 reads up to 13) still loads it.
    model.ir_version = onnx.helper.find_min_ir_version_for(list(model.opset_import), True)
    onnx.checker.check_model(model)
    return model


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Build, replace, run both, compare; 0 when they match."""
    parser = InterfaceParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cpu"), default="auto",
                        help="auto: kernels on a GPU when CuPy sees one; cpu: NumPy references")
    parser.add_argument("--save", metavar="DIR", help="write block.onnx and replaced.onnx here")
    args = parser.parse_args(argv)

    import onnx_graphsurgeon as gs
    import onnxruntime as ort

    from pyplugins.models.runner import ModelRunner
    from pyplugins.models.polygraphy_plugins import apply
    from pyplugins.testing import assert_close

    original = export(make_block())
    graph = gs.import_onnx(original)
    counts = apply(graph)
    replaced = gs.export_onnx(graph)
    print("replaced:", ", ".join(f"{n} x{c}" for n, c in counts.items()))
    import pyplugins.ops  # noqa: F401 - registers the plugins (the runner would, later)

    print(f"The plugins are registered as {registered_as()}.")
    if args.save:
        import onnx

        Path(args.save).mkdir(parents=True, exist_ok=True)
        onnx.save(original, str(Path(args.save) / "block.onnx"))
        onnx.save(replaced, str(Path(args.save) / "replaced.onnx"))
    x = np.random.default_rng(1).standard_normal((BATCH, SEQ, HIDDEN)).astype(np.float32)
    session = ort.InferenceSession(original.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    expected = session.run(["y"], {"x": x})[0]
    runner = ModelRunner(replaced, device=args.device)
    actual = runner.infer({"x": x})["y"]
    for run in runner.node_runs:
        how = "kernel on the GPU" if run.how == "kernel" else f"NumPy reference ({run.why})"
        print(f"  {run.node} ({run.plugin}): {how}")
    ok = counts == EXPECTED
    if not ok:
        print(f"FAILED: expected replacements {EXPECTED}, got {counts}")
    try:
        assert_close(actual, expected, np.float32, what="y (replaced vs original)")
    except AssertionError as err:
        print(f"FAILED: {err}")
        return 1
    err = float(np.max(np.abs(actual.astype(np.float64) - expected)))
    print(f"y {actual.shape}: replaced model matches the original (max abs diff {err:.3g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
