"""QDP (tensorrt.plugin) nodes in ONNX models: imported as TensorRT's parser imports them (op type =
name, ``plugin_namespace``, the ``aot`` attribute, network flags), checked with the QDP lifecycle
(``check MODEL.onnx``) and run (``ModelRunner``). Plugins: ``tests/models/plugins/qdp_add_k.py``
(written with tensorrt.plugin: JIT + AOT, and JIT only) and LeakyReLU registered as QDP."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pyplugins.models.check import check_model
from pyplugins.models.qdp_node import qdp_node
from pyplugins.models.runner import ModelRunError, ModelRunner
from pyplugins.ops.leaky_relu import LeakyReLU
from pyplugins.runtime import qdp

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
helper, TensorProto = onnx.helper, onnx.TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODULE = os.path.join(HERE, "plugins", "qdp_add_k.py")
X = np.linspace(-2, 2, 16, dtype=np.float32).reshape(2, 8)


def _model(node):
    return helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])]))


def _add_k(op="add_k", **attrs):
    return _model(helper.make_node(op, ["x"], ["y"], name="addk", plugin_namespace="qdp_models",
                                   **attrs))


def _check(model, **kw):
    (node,) = check_model(model, plugins=[MODULE], device="cpu", **kw).nodes
    return node


def _requests(node):
    return [(run["asked"], run["request"]) for run in node.report.qdp["runs"]]


@pytest.fixture
def lrelu_qdp():
    qdp.define(LeakyReLU)
    yield LeakyReLU
    qdp.forget(LeakyReLU)


# -- check MODEL.onnx ------------------------------------------------------------------------------

def test_check_takes_the_request_from_the_node_or_the_network_flag():
    strict = _check(_add_k("add_k_jit", k=[2], aot=0))
    assert strict.problem is None and strict.report.ok, strict.report.format()
    assert _requests(strict) == [("jit", "STRICT_JIT")]
    assert strict.report.interface == "tensorrt.plugin (QDP)"
    flagged = _check(_add_k(k=3), qdp="aot")
    assert _requests(flagged) == [("aot", "PREFER_AOT")] and flagged.report.ok
    both = _check(_add_k(k=3, aot=1))  # the node asks AOT of a plugin with both: compared
    assert _requests(both) == [("jit", "PREFER_JIT"), ("aot", "PREFER_AOT")]
    assert any("aot=1" in w and "compared" in w for w in both.report.warnings)
    no_flag = _check(_add_k(k=3))
    assert any("PREFER_JIT_PYTHON_PLUGINS" in w for w in no_flag.report.warnings)


@pytest.mark.parametrize(("attrs", "op", "words"), [
    ({"k": 3, "kk": 1}, "add_k", ["'addk'", "'kk' is not an attribute", "its attributes: k"]),
    ({}, "add_k", ["'addk'", "no attribute 'k'", "no defaults"]),
    ({"k": 2.5}, "add_k", ["'addk'", "'k' is FLOAT", "array of int32", "write it as INT"]),
    ({"k": 3, "aot": 1}, "add_k_jit", ["'addk'", "aot=1", "no @tensorrt.plugin.aot_impl"]),
    ({"k": 3, "aot": "1"}, "add_k", ["'addk'", "'aot' is STRING"]),
])
def test_check_refuses_what_the_qdp_plugin_cannot_take(attrs, op, words):
    node = _check(_add_k(op, **attrs))
    assert node.problem is not None and node.report is None
    for word in words:
        assert word in node.problem


def test_check_of_a_pp_plugin_registered_as_qdp_runs_both_for_an_aot_node(lrelu_qdp):
    node = _check(_model(qdp_node(LeakyReLU, ["x"], ["y"], name="lrelu", neg_slope=0.2)))
    assert node.report.ok, node.report.format()
    assert node.report.plugin == "LReLU_TRT:1:pyplugins"
    assert [r["implementation"] for r in node.report.qdp["runs"]] == ["jit", "aot"]


def test_the_command_line_checks_a_qdp_node_with_the_flag(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_add_k(k=3), str(path))
    env = {**os.environ, "PYPLUGINS_TRT": "emulator", "PYPLUGINS_DEVICE": "cpu"}
    done = subprocess.run([sys.executable, "-m", "pyplugins", "check", str(path), "--plugins",
                           MODULE, "--qdp", "jit", "--json"], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (node,) = json.loads(done.stdout)["nodes"]
    assert [r["request"] for r in node["report"]["qdp"]["runs"]] == ["PREFER_JIT"]


# -- ModelRunner -----------------------------------------------------------------------------------

@pytest.mark.parametrize("aot", [True, False])
def test_the_runner_runs_a_pp_plugins_qdp_node_by_its_reference_without_a_gpu(lrelu_qdp, aot):
    node = qdp_node(LeakyReLU, ["x"], ["y"], name="lrelu", aot=aot, neg_slope=0.25)
    runner = ModelRunner(_model(node), device="cpu")
    y = runner.infer({"x": X})["y"]
    np.testing.assert_array_equal(y, np.where(X > 0, X, np.float32(0.25) * X))
    (run,) = runner.node_runs
    assert (run.node, run.plugin, run.how) == ("lrelu", "LReLU_TRT:1:pyplugins", "reference")
    checked = ModelRunner(_model(node), device="cpu", check="first")
    np.testing.assert_array_equal(checked.infer({"x": X})["y"], y)


def test_the_runner_says_a_foreign_qdp_plugin_needs_a_gpu():
    with pytest.raises(ModelRunError, match=r"'addk'.*no NumPy reference.*aot_impl kernel"):
        ModelRunner(_add_k(k=3, aot=1), plugins=[MODULE], device="cpu").infer({"x": X})


def test_the_runner_refuses_as_tensorrt_does():
    with pytest.raises(ModelRunError, match=r"'addk'.*both impl and aot_impl.*qdp='jit'"):
        ModelRunner(_add_k(k=3), plugins=[MODULE], device="cpu").infer({"x": X})
    with pytest.raises(ModelRunError, match=r"'addk'.*no attribute 'k'"):
        ModelRunner(_add_k(), plugins=[MODULE], device="cpu").infer({"x": X})
    with pytest.raises(ModelRunError, match=r"'addk'.*aot=1.*no @tensorrt.plugin.aot_impl"):
        ModelRunner(_add_k("add_k_jit", k=3, aot=1), plugins=[MODULE], device="cpu").infer(
            {"x": X})
    with pytest.raises(ValueError, match="qdp must be"):
        ModelRunner(_add_k(k=3), plugins=[MODULE], qdp="both")


# -- on a GPU --------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize(("attrs", "flag"), [({"aot": 1}, None), ({"aot": 0}, None),
                                             ({}, "aot"), ({}, "jit")])
def test_the_runner_runs_jit_and_aot_qdp_nodes_on_the_gpu(attrs, flag):
    runner = ModelRunner(_add_k(k=3, **attrs), plugins=[MODULE], device="gpu", qdp=flag)
    np.testing.assert_array_equal(runner.infer({"x": X})["y"], X + 3)
    assert runner.node_runs[0].how == "kernel"


@pytest.mark.gpu
def test_a_pp_plugins_aot_node_runs_its_kernel_on_the_gpu(lrelu_qdp):
    node = qdp_node(LeakyReLU, ["x"], ["y"], name="lrelu", aot=True, neg_slope=0.25)
    runner = ModelRunner(_model(node), device="gpu")
    np.testing.assert_allclose(runner.infer({"x": X})["y"], np.where(X > 0, X, 0.25 * X))


def test_the_worked_example_of_models_md_runs_and_prints_what_it_says(capsys):
    text = open(os.path.join(REPO, "docs", "models.md")).read()
    section = text[text.index("## QDP nodes in models"):]
    start = section.index("```python\n") + 10
    block = section[start:section.index("\n```", start)]
    exec(compile(block, "docs/models.md", "exec"), {})  # the page's own example
    printed = capsys.readouterr().out.splitlines()
    expected = [line[2:] for line in block.splitlines() if line.startswith("# ")]
    assert printed[0] == expected[0]
    assert printed[1].split() == "[-1. -0.25 0. 2. ] reference".split()
    assert printed[2] == expected[-1].split("  (")[0]
    assert qdp.definition("pyplugins::LReLU_TRT") is None  # the example forgets its class
