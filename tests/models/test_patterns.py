"""The shipped patterns replace the ONNX forms of RMSNorm, RoPE, wrap Pad and LeakyRelu with the
right attributes, and refuse near-misses with a reason instead of replacing them wrongly."""

from __future__ import annotations

import numpy as np
import pytest

gs = pytest.importorskip("onnx_graphsurgeon")
ort = pytest.importorskip("onnxruntime")

from pyplugins.models.patterns import find
from pyplugins.models.rope_pattern import solve, tables
from pyplugins.models.polygraphy_plugins import apply
from tests.models import builders as b


def _graph(x_shape=(2, 5, 16)):
    graph = gs.Graph(opset=b.OPSET)
    x = gs.Variable("x", np.float32, x_shape)
    graph.inputs = [x]
    return graph, x


def _weight(n=16, shape=None):
    return gs.Constant(f"w{n}_{shape}", np.ones(shape or (n,), np.float32))


def _finish(graph, out):
    graph.outputs = [out]
    return graph


# -- RMSNorm -------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["div", "reciprocal"])
def test_decomposed_rmsnorm_matches_with_its_eps(variant):
    graph, x = _graph()
    out = b.rmsnorm(graph, x, _weight(), 3e-5, variant=variant)
    matches, refusals = find("RMSNorm", _finish(graph, out))
    assert refusals == [] and len(matches) == 1
    assert matches[0].inputs == ["x", "w16_None"] and matches[0].outputs == [out.name]
    assert matches[0].attributes["eps"] == pytest.approx(3e-5, rel=1e-6)


def test_rmsnormalization_op_matches_with_its_epsilon():
    graph, x = _graph()
    y = gs.Variable("y", np.float32, x.shape)
    graph.nodes.append(gs.Node("RMSNormalization", attrs={"axis": -1, "epsilon": 2e-6},
                               inputs=[x, _weight()], outputs=[y]))
    matches, refusals = find("RMSNorm", _finish(graph, y))
    assert refusals == [] and matches[0].attributes == {"eps": pytest.approx(2e-6)}


@pytest.mark.parametrize("kwargs, reason", [
    ({"axes": (1,)}, "reduces over axes [1]"),
    ({"axes": (-2, -1)}, "reduces over axes [-2, -1]"),
    ({"keepdims": 0}, "keepdims=0"),
])
def test_rmsnorm_near_misses_of_the_reduction_refuse(kwargs, reason):
    graph, x = _graph()
    out = b.rmsnorm(graph, x, _weight(), **kwargs)
    matches, refusals = find("RMSNorm", _finish(graph, out))
    assert matches == [] and len(refusals) == 1 and reason in refusals[0]


@pytest.mark.parametrize("weight, reason", [
    (_weight(shape=(1, 16)), "shape (1, 16)"),
    (_weight(8), "shape (8,)"),
    (gs.Constant("w_scalar", np.array(1.0, np.float32)), "shape ()"),
])
def test_rmsnorm_weight_of_the_wrong_shape_refuses(weight, reason):
    graph, x = _graph()
    out = b.rmsnorm(graph, x, weight)
    matches, refusals = find("RMSNorm", _finish(graph, out))
    assert matches == [] and reason in refusals[0] and "needs exactly [D]" in refusals[0]


def test_rmsnorm_with_eps_from_a_graph_input_refuses():
    graph, x = _graph()
    eps = gs.Variable("eps_in", np.float32, ())
    graph.inputs.append(eps)
    out = b.rmsnorm(graph, x, _weight(), eps_tensor=eps)
    matches, refusals = find("RMSNorm", _finish(graph, out))
    assert matches == [] and "eps ('eps_in') is not a constant" in refusals[0]


def test_rmsnormalization_over_several_axes_refuses():
    graph, x = _graph()
    y = gs.Variable("y", np.float32, x.shape)
    graph.nodes.append(gs.Node("RMSNormalization", attrs={"axis": 1}, inputs=[x, _weight()],
                               outputs=[y]))
    matches, refusals = find("RMSNorm", _finish(graph, y))
    assert matches == [] and "axis=1" in refusals[0]


def test_rmsnorm_whose_intermediate_is_used_elsewhere_refuses():
    graph, x = _graph()
    out = b.rmsnorm(graph, x, _weight())
    mean = next(n for n in graph.nodes if n.op == "ReduceMean").outputs[0]
    graph.outputs = [out, mean]
    matches, refusals = find("RMSNorm", graph)
    assert matches == [] and "also used outside the pattern" in refusals[0]


# -- RoPE ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("theta, offset", [(10000.0, 0), (500000.0, 0), (10000.0, 37)])
def test_rope_tables_give_back_theta_and_offset(theta, offset):
    assert solve(*tables(6, 32, theta, offset)) == (theta, offset)


def test_rope_matches_with_recovered_fields():
    graph, x = _graph((2, 6, 3, 16))
    out = b.rope(graph, x, theta=500000.0, offset=5)
    matches, refusals = find("RoPE", _finish(graph, out))
    assert refusals == []
    assert matches[0].attributes == {"rotary_dim": 16, "theta": 500000.0, "layout": "neox",
                                     "position_offset": 5}


def test_rope_tables_laid_out_for_batch_heads_seq_dim_refuse():
    graph, x = _graph((2, 6, 3, 16))
    out = b.rope(graph, x, table_shape=(6, 16))
    matches, refusals = find("RoPE", _finish(graph, out))
    assert matches == [] and "[1, seq, 1, 16]" in refusals[0]


def test_rope_tables_other_than_rope_frequencies_refuse():
    graph, x = _graph((2, 6, 3, 16))
    out = b.rope(graph, x)
    cos = next(n for n in graph.nodes if n.op == "Mul" and n.inputs[1].name.startswith("cos"))
    cos.inputs[1].values = cos.inputs[1].values.copy()
    cos.inputs[1].values[0, 4, 0, 3] += 0.01
    cos.inputs[1].values[0, 4, 0, 11] += 0.01
    matches, refusals = find("RoPE", _finish(graph, out))
    assert matches == [] and "differ from theta=10000" in refusals[0]


def test_rope_with_tables_from_a_graph_input_refuses():
    graph, x = _graph((2, 6, 3, 16))
    out = b.rope(graph, x)
    mul = next(n for n in graph.nodes if n.op == "Mul" and n.inputs[1].name.startswith("sin"))
    sin_in = gs.Variable("sin_in", np.float32, (1, 6, 1, 16))
    graph.inputs.append(sin_in)
    mul.inputs[1] = sin_in
    matches, refusals = find("RoPE", _finish(graph, out))
    assert matches == [] and "'sin_in' is not a constant" in refusals[0]


# -- CircPad and LReLU_TRT -------------------------------------------------------------------------

def _pad(pads, mode="wrap", x_shape=(2, 3, 4, 5), pads_tensor=None):
    graph, x = _graph(x_shape)
    pads_in = pads_tensor if pads_tensor is not None else gs.Constant(
        "pads", np.int64(pads))
    y = gs.Variable("y", np.float32, None)
    graph.nodes.append(gs.Node("Pad", attrs={"mode": mode}, inputs=[x, pads_in], outputs=[y]))
    return find("CircPad", _finish(graph, y))


def test_wrap_pad_becomes_circ_pad_in_its_order():
    # ONNX: begins of dims 0..3 then ends; CircPad: (before, after) of the last dim first.
    matches, refusals = _pad([0, 0, 1, 2, 0, 0, 3, 4])
    assert refusals == [] and matches[0].attributes == {"pads": [2, 4, 1, 3]}


@pytest.mark.parametrize("pads, reason", [([0, 0, -1, 0, 0, 0, 0, 0], "negative"),
                                         ([0] * 8, "every pad is 0")])
def test_wrap_pad_near_misses_refuse(pads, reason):
    matches, refusals = _pad(pads)
    assert matches == [] and reason in refusals[0]


def test_wrap_pad_with_computed_pads_refuses():
    matches, refusals = _pad(None, pads_tensor=gs.Variable("pads_in", np.int64, (8,)))
    assert matches == [] and "'pads_in'" in refusals[0] and "not a constant" in refusals[0]


def test_other_pad_modes_are_not_candidates():
    assert _pad([0, 0, 1, 1, 0, 0, 1, 1], mode="reflect") == ([], [])


@pytest.mark.parametrize("dtype, ok", [(np.float32, True), (np.float16, True),
                                       (np.float64, False)])
def test_leaky_relu_becomes_lrelu_trt_for_its_types(dtype, ok):
    graph = gs.Graph(opset=b.OPSET)
    x, y = gs.Variable("x", dtype, (4,)), gs.Variable("y", dtype, (4,))
    graph.nodes.append(gs.Node("LeakyRelu", inputs=[x], outputs=[y]))
    matches, refusals = find("LReLU_TRT", gs.Graph(nodes=graph.nodes, inputs=[x], outputs=[y]))
    if ok:
        assert matches[0].attributes == {"neg_slope": 0.01} and refusals == []
    else:
        assert matches == [] and "float64" in refusals[0]


def test_apply_replaces_every_pattern_of_the_block_and_leaves_no_old_op():
    graph = gs.import_onnx(b.export(b.block()))
    counts = apply(graph)
    assert counts == {"RMSNorm": 2, "RoPE": 1, "CircPad": 1, "LReLU_TRT": 1}
    ops = [n.op for n in graph.nodes]
    for gone in ("Pow", "ReduceMean", "Sqrt", "Reciprocal", "Concat", "Neg", "Slice",
                 "LeakyRelu", "Pad"):
        assert gone not in ops
    assert sorted(ops) == sorted(["RMSNorm", "MatMul", "Reshape", "RoPE", "Reshape",
                                  "LReLU_TRT", "Add", "RMSNorm", "CircPad"])
