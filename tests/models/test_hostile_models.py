"""``pyplugins check MODEL.onnx`` and the model runner on hostile models: files that are not
models, external data leading out of the folder, malformed graphs, subgraphs, scale and
``--timeout``. Each ends in exit 2 (bad file, unsupported construct) or 1 (a plugin node's
problem) with one line naming the file, node or tensor, never a traceback, a hang or a read
outside the model's folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper

from pyplugins.models.model_file import ModelFileError
from pyplugins.models.runner import ModelRunError, ModelRunner
from tests.fuzz import model_cases as mc

REPO = Path(__file__).resolve().parents[2]
AXPY = Path(__file__).resolve().parent / "plugins" / "axpy_ref.py"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    return root, mc.hostile_cases(root)


NAMES = [
    "not_onnx", "truncated", "empty", "directory", "fifo_model", "missing", "no_graph",
    "external_ok", "external_dotdot", "external_absolute", "external_symlink_file",
    "external_symlink_dir", "external_symlink_inside", "external_dev_zero", "external_fifo",
    "external_missing", "external_past_end", "external_huge", "cycle", "opset_999",
    "duplicate_outputs", "two_writers", "undefined_input", "many_outputs", "huge_floats",
    "huge_string", "string_input", "complex_input", "unknown_domain", "plugin_in_if",
    "plugin_in_loop", "deep_nesting", "sequence_input"]


@pytest.mark.parametrize("name", NAMES)
def test_each_hostile_model_gets_its_exit_status_and_one_clear_line(hostile, name, capfd):
    root, cases = hostile
    case = cases[name]
    verdict, detail = mc.judge_check(case.path, root / "outside")
    assert verdict == "clean", detail
    code, out, _ = mc.run_check(case.path)
    data = json.loads(out)
    assert (code, data["exit_status"]) == (case.code, case.code), out[:2000]
    text = data.get("error") or json.dumps(data["nodes"])
    assert case.needle in text, text[:2000]
    if code == 2:  # the file, node or tensor is named
        assert case.path.name in data["error"] or "missing" in name, data["error"]


def test_every_named_case_is_tested(hostile):
    assert sorted(NAMES) == sorted(hostile[1])


def test_huge_attributes_convert_fast(hostile, capfd):
    start = time.monotonic()
    code, _, _ = mc.run_check(hostile[1]["huge_floats"].path)
    assert code == 1 and time.monotonic() - start < 5


def test_a_plugin_node_after_an_if_is_checked_and_the_if_needs_no_plugin(tmp_path, capfd):
    then = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [], [mc.vi("t")])
    other = helper.make_graph([helper.make_node("Relu", ["x"], ["e"])], "else", [], [mc.vi("e")])
    model = mc.model([helper.make_node("If", ["c"], ["i"], then_branch=then, else_branch=other),
                      mc.lrelu("i", "y", "act")], [mc.vi("x"), mc.vi("c", TensorProto.BOOL, ())],
                     [mc.vi("y")])
    path = tmp_path / "if.onnx"
    path.write_bytes(model.SerializeToString())
    code, out, _ = mc.run_check(path)
    assert code == 0 and [n["node"] for n in json.loads(out)["nodes"]] == ["act"]


# -- the runner ------------------------------------------------------------------------------------

def test_the_runner_runs_models_with_if_and_loop_bodies(tmp_path):
    """Names that exist only inside a body (t_in, v_in, ...) are not taken as outside inputs."""
    model = mc.good_model()
    x = np.random.default_rng(1).standard_normal((2, 3, 8)).astype(np.float32)
    for c in (True, False):
        feeds = {"x": x, "c": np.array(c)}
        got = ModelRunner(model, device="cpu").infer(feeds)["y"]
        r = np.maximum(x, 0)
        a = np.pad(r, [(0, 0), (0, 0), (1, 2)], mode="wrap")
        a = np.where(a >= 0, a, np.float32(0.1) * a)  # LReLU_TRT
        b = np.abs(a) if c else np.maximum(a, 0)
        np.testing.assert_allclose(got, b + 2 * a, rtol=1e-6)


def test_the_runner_refuses_what_the_check_refuses(hostile):
    _, cases = hostile
    for name in ("plugin_in_if", "cycle", "two_writers", "string_input", "truncated"):
        with pytest.raises(ModelFileError) as info:
            ModelRunner(cases[name].path, device="cpu")
        assert cases[name].needle in str(info.value) and "\n" not in str(info.value)


def test_the_runner_reads_external_initializers_only_inside_the_folder(hostile):
    root, _ = hostile
    inside = root / "model"

    def runner_model(location):
        t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4],
                        data_location=TensorProto.EXTERNAL)
        entry = t.external_data.add()
        entry.key, entry.value = "location", location
        return mc.model([helper.make_node("Add", ["x", "w"], ["y"])], [mc.vi("x", shape=[4])],
                        [mc.vi("y", shape=[4])], initializer=[t])

    for location, needle in [("dirlink/secret.bin", "leads out of the model's directory"),
                             ("fifo.bin", "not a regular file"), ("zero.bin", "symlink"),
                             ("../outside/secret.bin", "not a relative path")]:
        path = inside / f"runner_{location.replace('/', '_')}.onnx"
        path.write_bytes(runner_model(location).SerializeToString())
        with mc.OutsideReads.get().armed(root / "outside") as reads:
            how, err = mc.in_thread(lambda path=path: ModelRunner(path, device="cpu"), 10)
        assert how == "raised" and isinstance(err, ModelFileError), (location, how, err)
        assert needle in str(err) and "'w'" in str(err) and not reads.seen
    path = inside / "runner_ok.onnx"
    path.write_bytes(runner_model("w.bin").SerializeToString())
    got = ModelRunner(path, device="cpu").infer({"x": np.ones(4, np.float32)})["y"]
    np.testing.assert_array_equal(got, [1.5, 1.25, 3.0, 5.0])


def test_the_runner_names_a_node_whose_output_count_differs(hostile):
    with pytest.raises(ModelRunError, match="the node has 2000 output"):
        ModelRunner(hostile[1]["many_outputs"].path, device="cpu").infer(
            {"x": np.ones((2, 3, 8), np.float32)})


def test_onnxruntime_failures_name_the_segment():
    model = mc.model([helper.make_node("Reshape", ["x", "s"], ["y"], name="bad_reshape")],
                     [mc.vi("x"), mc.vi("s", TensorProto.INT64, [1])], [mc.vi("y", shape=None)])
    with pytest.raises(ModelRunError, match="failed on the 1 ONNX node.*'bad_reshape'"):
        ModelRunner(model, device="cpu").infer({"x": np.ones((2, 3, 8), np.float32),
                                                "s": np.array([5], np.int64)})


def test_the_polygraphy_runner_says_why_in_one_line(hostile):
    pytest.importorskip("polygraphy")
    from polygraphy.exception import PolygraphyException

    from pyplugins.models.polygraphy_run import PyPluginsRunner

    runner = PyPluginsRunner(str(hostile[1]["empty"].path), device="cpu")
    with pytest.raises(PolygraphyException, match="is empty"):
        runner.activate()


# -- scale -----------------------------------------------------------------------------------------

def _chain(count, distinct=False):
    nodes, prev = [], "x"
    for i in range(count):
        slope = 0.1 + (i * 1e-4 if distinct else 0)
        nodes += [mc.lrelu(prev, f"t{i}", f"p{i}", negSlope=slope),
                  helper.make_node("Relu", [f"t{i}"], [f"r{i}"], name=f"relu{i}")]
        prev = f"r{i}"
    return mc.model(nodes, [mc.vi("x")], [mc.vi(prev)])


def test_three_thousand_plugin_nodes_check_in_seconds(tmp_path, capfd):
    path = tmp_path / "chain.onnx"
    path.write_bytes(_chain(3000).SerializeToString())
    start = time.monotonic()
    code, out, _ = mc.run_check(path)
    assert code == 0 and len(json.loads(out)["nodes"]) == 3000
    assert time.monotonic() - start < 20  # 2,000 nodes took 12.8 s before


def test_shape_inference_sees_each_node_once(monkeypatch):
    """The quadratic part was inferring the whole model again after every plugin node."""
    from pyplugins.models.check import check_model

    seen = []
    real = onnx.shape_inference.infer_shapes

    def counting(model, *args, **kwargs):
        seen.append(len(model.graph.node))
        return real(model, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", counting)
    report = check_model(_chain(60, distinct=True), device="cpu")
    assert report.ok and len(report.nodes) == 60
    assert sum(seen) <= 60 + 1  # the Relus once each; nothing after the last plugin node
    assert [n.same_as for n in report.nodes] == [None] * 60


def test_identical_nodes_reuse_one_lifecycle_run_and_say_so():
    from pyplugins.models.check import check_model

    report = check_model(_chain(3), device="cpu")
    assert [n.same_as for n in report.nodes] == [None, "p0", "p0"]
    assert report.nodes[1].report is not report.nodes[0].report
    assert "lifecycle run is not repeated" in report.nodes[2].format()


# -- --timeout -------------------------------------------------------------------------------------

def test_check_model_honours_timeout(tmp_path):
    plugin = tmp_path / "spin.py"
    plugin.write_text(AXPY.read_text().replace("PPModel", "PPSpin").replace(
        "    def configure_plugin(self, inp, out):\n",
        "    def configure_plugin(self, inp, out):\n        while True:\n            pass\n"))
    model = mc.model([helper.make_node("PPSpinAxpy", ["a", "b"], ["y"], name="spinner")],
                     [mc.vi("a"), mc.vi("b")], [mc.vi("y")])
    path = tmp_path / "spin.onnx"
    path.write_bytes(model.SerializeToString())
    env = {**os.environ, "PYPLUGINS_DEVICE": "cpu", "PYPLUGINS_TRT": "emulator",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pyplugins", "check", str(path), "--plugins",
                           str(plugin), "--timeout", "1", "--json", "--device", "cpu"],
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert time.monotonic() - start < 60
    data = json.loads(proc.stdout)
    assert data["exit_status"] == 1 and not data["ok"]
    assert "node 'spinner': configure_plugin() did not return within the 1 s limit" in (
        data["timed_out"])
    assert data["nodes"][0]["node"] == "spinner" and "stopped" in data["nodes"][0]["problem"]
