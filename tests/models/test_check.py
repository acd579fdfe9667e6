"""``pyplugins check MODEL.onnx``: every plugin node checked with the graph's shapes, declared
shapes and types compared, ``--input NAME=SHAPE:DTYPE`` ranges, clear usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper

from pyplugins.cli import main
from pyplugins.models.check import check_model

AXPY = str(Path(__file__).resolve().parent / "plugins" / "axpy_ref.py")


def _pad_model(x_dims=("batch", 3, 8), out_dims=None, out_type=TensorProto.FLOAT):
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("CircPad", ["r"], ["p"], name="pad", pads=[1, 2]),
             helper.make_node("LReLU_TRT", ["p"], ["y"], name="act", neg_slope=0.1)]
    outputs = [helper.make_tensor_value_info("y", out_type, out_dims)]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims)],
                              outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_dynamic_input_gets_its_range_and_shapes_flow_past_plugin_nodes():
    report = check_model(_pad_model(), {"x": {"shape": (-1, 3, 8), "dtype": "float32",
                                              "min": (1, 3, 8), "opt": (2, 3, 8),
                                              "max": (4, 3, 8)}}, device="cpu")
    assert report.ok, report.format()
    assert [n.report.output_shapes for n in report.nodes] == [[(2, 3, 11)], [(2, 3, 11)]]


def test_a_dynamic_dim_without_a_range_says_how_to_give_one():
    report = check_model(_pad_model(), device="cpu")
    assert not report.ok
    assert "dynamic dim 'batch'" in report.nodes[0].problem
    assert "--input NAME=SHAPE:DTYPE" in report.nodes[0].problem


def test_declared_output_type_and_shape_are_compared():
    report = check_model(_pad_model((2, 3, 8), [2, 3, 12], TensorProto.FLOAT16), device="cpu")
    assert report.nodes[0].ok
    assert report.nodes[1].mismatches == [
        "output 0 'y': the plugin gives float32, the graph declares float16",
        "output 0 'y': the plugin gives shape (2, 3, 11), the graph declares (2, 3, 12)"]


def test_user_plugin_modules_are_loaded(tmp_path):
    node = helper.make_node("PPModelAxpy", ["a", "b"], ["y"], alpha=0.5)
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3, 4]) for n in "ab"]
    graph = helper.make_graph([node], "g", info, [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, [3, 4])])
    path = tmp_path / "axpy.onnx"
    onnx.save(helper.make_model(graph), str(path))
    assert check_model(str(path), plugins=[AXPY], device="cpu").ok


def test_cli_exit_statuses_and_json(tmp_path, capsys):
    good, bad = tmp_path / "good.onnx", tmp_path / "bad.onnx"
    onnx.save(_pad_model((2, 3, 8), [2, 3, 11]), str(good))
    onnx.save(_pad_model((2, 3, 8), [2, 3, 12]), str(bad))
    assert main(["check", str(good), "--device", "cpu"]) == 0
    capsys.readouterr()
    assert main(["check", str(bad), "--device", "cpu", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["nodes"][1]["mismatches"]
    assert main(["check", str(good), "--input", "2x3x8:float32"]) == 2
    assert "each input is NAME=SHAPE:DTYPE" in capsys.readouterr().err
    assert main(["check", str(good), "--input", "z=2x3x8:float32"]) == 2
    assert "the model has no input 'z'" in capsys.readouterr().err

