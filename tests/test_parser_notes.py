"""TensorRT's "Attribute X not found in plugin node!" warning keeps its words, and pyplugins adds
one line saying why it is harmless where the plugin's field has a default (or another name)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyplugins import cli, emulator
from pyplugins.checker import lifecycle
from pyplugins.checker.parser_notes import missing_attribute_note, missing_attributes
from pyplugins.emulator.onnx_import import fields_from_attributes
from pyplugins.emulator.specs import TensorSpec
from pyplugins.ops.leaky_relu import LeakyReLU
from pyplugins.ops.rmsnorm import RMSNorm
from pyplugins.ops.seq_repeat import SeqRepeat
from pyplugins.runtime.creator import register

ROOT = Path(__file__).resolve().parent.parent
TRT_WARNING = ("Attribute {} not found in plugin node! Ensure that the plugin creator has a "
               "default value defined or the engine may fail to build.")


@pytest.fixture(autouse=True)
def registered():
    """Other test modules empty the registry: the plugins used here are registered."""
    emulator.install()
    for cls in (LeakyReLU, RMSNorm, SeqRepeat):
        register(cls, replace=True, interface="v2")


def test_the_emulated_parser_warning_is_tensorrts_and_is_recognised():
    _, warnings = fields_from_attributes({"x": 1.0}, ["eps", "x", "negSlope"])
    assert warnings == [TRT_WARNING.format("eps"), TRT_WARNING.format("negSlope")]
    assert missing_attributes(warnings + ["something else"]) == ["eps", "negSlope"]


def test_a_default_or_a_second_name_is_explained_in_one_line():
    both = [TRT_WARNING.format("neg_slope"), TRT_WARNING.format("negSlope")]
    note = missing_attribute_note(LeakyReLU.creator, both, [])
    assert note.endswith("harmless here: neg_slope's default 0.01 applies; negSlope is "
                         "TensorRT's name for neg_slope")
    assert "\n" not in note
    assert missing_attribute_note(LeakyReLU.creator, both[1:], ["neg_slope"]).endswith(
        "negSlope is TensorRT's name for neg_slope, which the node gives")
    assert missing_attribute_note(LeakyReLU.creator, both[:1], ["negSlope"]).endswith(
        "the node gives the slope as negSlope")


def test_no_note_where_the_warning_may_matter():
    # a required field (SeqRepeat's factor has no default), another warning, a hand-written creator
    assert missing_attribute_note(SeqRepeat.creator, [TRT_WARNING.format("factor")], []) is None
    assert missing_attribute_note(RMSNorm.creator, ["Attribute eps narrowed"], []) is None

    class Creator:  # not pp.register's: nothing says which fields have defaults
        pass

    assert missing_attribute_note(Creator(), [TRT_WARNING.format("eps")], []) is None


def test_the_check_report_adds_the_line_and_keeps_the_warning(capsys):
    code = cli.main(["check", "pyplugins.ops.rmsnorm", "--plugin", "RMSNorm", "--input",
                     "2x8:float32", "--input", "8:float32", "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"  warning: {TRT_WARNING.format('eps')}\n" in out  # TensorRT's words, untouched
    assert ("  note: TensorRT's ONNX parser warns \"Attribute ... not found in plugin node!\" for "
            "every field a node leaves out; harmless here: eps's default 1e-06 applies\n") in out


def test_lifecycle_report_notes_with_the_node_attributes_given():
    report = lifecycle.run(LeakyReLU.creator, [TensorSpec.parse("4:float32")],
                           {"negSlope": 0.2}, device="cpu")
    assert report.ok and report.warnings == [TRT_WARNING.format("neg_slope")]
    assert report.notes[-1].endswith("the node gives the slope as negSlope")
    clean = lifecycle.run(LeakyReLU.creator, [TensorSpec.parse("4:float32")],
                          {"neg_slope": 0.2, "negSlope": 0.2}, device="cpu")
    assert not any("not found in plugin node" in n for n in clean.notes)


def test_the_model_check_adds_the_line():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from pyplugins.models.check import check_model

    node = helper.make_node("LReLU_TRT", ["x"], ["y"], name="lrelu", neg_slope=0.1)
    model = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]),
        opset_imports=[helper.make_opsetid("", 17)])
    text = check_model(model, device="cpu").format()
    assert TRT_WARNING.format("negSlope") in text
    assert "negSlope is TensorRT's name for neg_slope, which the node gives" in text


def test_the_readmes_first_demo_explains_its_warning():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "demos" / "onnx_demo.py"), "--device",
                           "cpu"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line.strip() for line in proc.stdout.splitlines()]
    warning = lines.index(f"parser warning: {TRT_WARNING.format('negSlope')}")
    assert lines[warning + 1].startswith("pyplugins: TensorRT's ONNX parser warns")
    assert lines[warning + 1].endswith("negSlope is TensorRT's name for neg_slope, which the node "
                                       "gives")
