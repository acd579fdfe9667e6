"""The model runner: ordinary ops in onnxruntime, plugin nodes through the emulated lifecycle, and
the replaced block computing what the original does (references on a CPU, kernels on a GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
gs = pytest.importorskip("onnx_graphsurgeon")

from onnx import TensorProto, helper  # noqa: E402

from pyplugins.models.runner import ModelRunError, ModelRunner  # noqa: E402
from pyplugins.models.polygraphy_plugins import apply  # noqa: E402
from pyplugins.testing import assert_close  # noqa: E402
from tests.models import builders as b  # noqa: E402

AXPY = str(Path(__file__).resolve().parent / "plugins" / "axpy_ref.py")


def _block_pair(**kwargs):
    original = b.export(b.block(**kwargs))
    graph = gs.import_onnx(original)
    apply(graph)
    return original, gs.export_onnx(graph)


def _x(shape=(2, 6, 32), seed=3):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _compare(replaced, original, device):
    x = _x()
    want = ort.InferenceSession(original.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"hidden_states": x})
    runner = ModelRunner(replaced, device=device)
    got = runner.infer({"hidden_states": x})
    assert list(got) == ["block_out"]
    assert_close(got["block_out"], want[0], np.float32, what="block_out")
    return runner


def test_replaced_block_matches_the_original_with_references():
    original, replaced = _block_pair()
    runner = _compare(replaced, original, "cpu")
    assert [(r.plugin, r.how) for r in runner.node_runs] == [
        ("RMSNorm:1:", "reference"), ("RoPE:1:", "reference"), ("LReLU_TRT:1:", "reference"),
        ("RMSNorm:1:", "reference"), ("CircPad:1:", "reference")]
    assert all("device='cpu'" in r.why for r in runner.node_runs)


@pytest.mark.gpu
def test_replaced_block_matches_the_original_with_kernels_on_the_gpu():
    original, replaced = _block_pair()
    runner = _compare(replaced, original, "gpu")
    assert {r.how for r in runner.node_runs} == {"kernel"} and len(runner.node_runs) == 5


def test_a_wrong_attribute_changes_the_result():
    original, replaced = _block_pair()
    rope = next(n for n in replaced.graph.node if n.op_type == "RoPE")
    next(a for a in rope.attribute if a.name == "position_offset").i = 4  # was 3
    with pytest.raises(AssertionError):
        _compare(replaced, original, "cpu")


def _axpy_model(op="PPModelAxpy", alpha=2.0):
    nodes = [helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node(op, ["r", "b"], ["s"], name="axpy", alpha=alpha),
             helper.make_node("Neg", ["s"], ["y"])]
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3, 4]) for n in ("a", "b")]
    graph = helper.make_graph(nodes, "axpy", info,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_user_plugin_module_runs_between_onnxruntime_segments():
    a, bb = _x((3, 4), 1), _x((3, 4), 2)
    runner = ModelRunner(_axpy_model(), plugins=[AXPY], device="cpu")
    y = runner.infer({"a": a, "b": bb})["y"]
    np.testing.assert_allclose(y, -(2.0 * np.maximum(a, 0) + bb), rtol=1e-6)
    assert runner.node_runs[0].node == "axpy" and runner.node_runs[0].how == "reference"


def test_a_plugin_without_reference_and_no_gpu_is_a_clear_error():
    runner = ModelRunner(_axpy_model("PPModelNoRef"), plugins=[AXPY], device="cpu")
    with pytest.raises(ModelRunError, match=r"plugin node 'axpy' \(PPModelNoRef\): enqueue did "
                                            r"not run .* defines no NumPy reference"):
        runner.infer({"a": _x((3, 4)), "b": _x((3, 4))})


def test_a_reference_disagreeing_with_the_declared_outputs_is_an_error():
    runner = ModelRunner(_axpy_model("PPModelBadRef"), plugins=[AXPY], device="cpu")
    with pytest.raises(ModelRunError, match=r"returned \[\(\(3, 4\), dtype\('float64'\)\)\].*"
                                            r"declared \[\(\(3, 4\), dtype\('float32'\)\)\]"):
        runner.infer({"a": _x((3, 4)), "b": _x((3, 4))})


def test_an_unregistered_plugin_op_names_the_node_and_the_fix():
    runner = ModelRunner(_axpy_model("NoSuchPlugin"), device="cpu")
    with pytest.raises(ModelRunError, match=r"'axpy' \(NoSuchPlugin\): Plugin not found.*"
                                            r"--plugins"):
        runner.infer({"a": _x((3, 4)), "b": _x((3, 4))})


def test_a_lifecycle_failure_of_a_plugin_node_is_reported_with_the_report():
    original, replaced = _block_pair()
    norm = next(n for n in replaced.graph.node if n.op_type == "RMSNorm")
    next(a for a in norm.attribute if a.name == "eps").f = -1.0
    with pytest.raises(ModelRunError, match=r"RMSNorm.*failed TensorRT's plugin lifecycle") as err:
        ModelRunner(replaced, device="cpu").infer({"hidden_states": _x()})
    assert err.value.report is not None and "eps" in str(err.value)


def test_missing_inputs_are_named():
    with pytest.raises(ModelRunError, match=r"missing model input\(s\) \['b'\]"):
        ModelRunner(_axpy_model(), plugins=[AXPY], device="cpu").infer({"a": _x((3, 4))})


def test_an_onnxruntime_older_than_onnx_gets_segments_at_the_lowest_ir_version(monkeypatch):
    # onnx 1.23 writes IR version 14; onnxruntime 1.30 (the GPU machine's) reads up to 13.
    real = ort.InferenceSession
    seen = []

    def picky(model_bytes, *args, **kwargs):
        model = onnx.load_from_string(model_bytes)
        seen.append(model.ir_version)
        if model.ir_version > 13:
            raise RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Unsupported model IR version: "
                               f"{model.ir_version}, max supported IR version: 13")
        return real(model_bytes, *args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", picky)
    model = _axpy_model()
    model.ir_version = 14
    a, bb = _x((3, 4), 1), _x((3, 4), 2)
    y = ModelRunner(model, plugins=[AXPY], device="cpu").infer({"a": a, "b": bb})["y"]
    np.testing.assert_allclose(y, -(2.0 * np.maximum(a, 0) + bb), rtol=1e-6)
    lowest = helper.find_min_ir_version_for(list(model.opset_import), True)
    assert seen == [14, lowest] * 2  # each segment: refused at 14, loaded at the lowest
