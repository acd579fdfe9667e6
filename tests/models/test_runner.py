"""The model runner: ordinary ops in onnxruntime, plugin nodes through the execution path, and
the replaced block computing what the original does (references on a CPU, kernels on a GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
gs = pytest.importorskip("onnx_graphsurgeon")

from onnx import TensorProto, helper

from pyplugins.models.runner import ModelRunError, ModelRunner
from pyplugins.models.polygraphy_plugins import apply
from pyplugins.testing import assert_close
from tests.models import builders as b

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


def _bad_eps_block():
    original, replaced = _block_pair()
    norm = next(n for n in replaced.graph.node if n.op_type == "RMSNorm")
    next(a for a in norm.attribute if a.name == "eps").f = -1.0
    return replaced, norm.name


def test_a_failing_callback_names_the_node_the_method_and_the_error():
    replaced, name = _bad_eps_block()
    with pytest.raises(ModelRunError, match=rf"(?s)plugin node '{name}' \(RMSNorm\): create_plugin"
                                            r"\(\) failed.*\[ERROR\].*Field 'eps'") as err:
        ModelRunner(replaced, device="cpu").infer({"hidden_states": _x()})
    assert err.value.report is None  # the execution path has no lifecycle report


def test_check_first_reports_a_lifecycle_failure_with_the_report():
    replaced, _ = _bad_eps_block()
    runner = ModelRunner(replaced, device="cpu", check="first")
    with pytest.raises(ModelRunError, match=r"RMSNorm.*failed TensorRT's plugin lifecycle") as err:
        runner.infer({"hidden_states": _x()})
    assert err.value.report is not None and "eps" in str(err.value)
    assert runner.check_seconds > 0


def test_check_first_checks_each_plugin_node_once_then_only_executes(monkeypatch):
    from pyplugins.checker import lifecycle

    original, replaced = _block_pair()
    real, checked = lifecycle.run, []

    def spy(creator, specs, fields, **kwargs):
        checked.append(kwargs["node_name"])
        return real(creator, specs, fields, **kwargs)

    monkeypatch.setattr(lifecycle, "run", spy)
    runner = ModelRunner(replaced, device="cpu", check="first")
    first = runner.infer({"hidden_states": _x()})["block_out"]
    assert sorted(checked) == sorted(r.node for r in runner.node_runs) and len(checked) == 5
    again = runner.infer({"hidden_states": _x()})["block_out"]
    assert len(checked) == 5  # not again
    np.testing.assert_array_equal(first, again)
    plain = ModelRunner(replaced, device="cpu")
    np.testing.assert_array_equal(plain.infer({"hidden_states": _x()})["block_out"], first)
    assert len(checked) == 5 and plain.check_seconds == 0.0
    with pytest.raises(ValueError, match="check must be None or 'first'"):
        ModelRunner(replaced, check="always")


def test_each_node_is_set_up_once_per_input_signature():
    from pyplugins.emulator import trampoline

    runner = ModelRunner(_axpy_model(), plugins=[AXPY], device="cpu")
    created = []

    def listen(event):
        if event.method == "create_plugin":
            created.append(event.args[0])

    trampoline.listeners.append(listen)
    try:
        for seed in (1, 2):
            runner.infer({"a": _x((3, 4), seed), "b": _x((3, 4))})
        assert created == ["axpy"]
        a, bb = _x((5, 4), 1), _x((5, 4), 2)
        y = runner.infer({"a": a, "b": bb})["y"]
        assert created == ["axpy", "axpy"]  # a new shape: the node is set up for it
    finally:
        trampoline.listeners.remove(listen)
    np.testing.assert_allclose(y, -(2.0 * np.maximum(a, 0) + bb), rtol=1e-6)
    assert runner.node_runs[0].seconds > 0


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
