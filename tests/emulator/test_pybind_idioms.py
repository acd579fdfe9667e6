"""Each plain-Python idiom that pybind11 objects refuse in TensorRT fails ``pyplugins check``
with exit 1 and says what TensorRT does (§12; issue 8's "Why" list)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyplugins import cli

PLUGINS = Path(__file__).resolve().parent / "plugins"


def check(capsys, module, plugin=None, inputs="2x3:float32", *extra):
    args = ["check", str(PLUGINS / module), "--input", inputs, "--device", "cpu", "--json",
            *extra]
    if plugin:
        args += ["--plugin", plugin]
    status = cli.main(args)
    out = capsys.readouterr().out
    return status, json.loads(out)


def pybind_messages(report):
    return [v["message"] for v in report["violations"] if v["check"] == "pybind"]


@pytest.mark.parametrize("plugin, says", [
    ("PPTestEnumIs", "the plugin compares enums with `is`"),
    ("PPTestEnumIsOut", "get_output_datatype(0, ['FLOAT']) gives HALF in TensorRT but FLOAT"),
    ("PPTestDeepcopyClone", "cannot pickle"),
    ("PPTestPickle", "cannot pickle"),
    ("PPTestDimsEq", "`Dims == Dims` (and `!=`, `in`) raises TypeError in TensorRT"),
    ("PPTestDimsKey", "a Dims is unhashable in TensorRT"),
])
def test_idiom_gives_exit_1_and_says_what_tensorrt_does(capsys, plugin, says):
    status, report = check(capsys, "bad_pybind.py", plugin)
    assert status == 1
    messages = pybind_messages(report)
    assert len(messages) == 1 and says in messages[0], messages
    assert "Instead" in messages[0] or "Compare enums with ==" in messages[0]


def test_enum_is_makes_the_build_fail_as_in_tensorrt(capsys):
    status, report = check(capsys, "bad_pybind.py", "PPTestEnumIs")
    assert "format" in {v["check"] for v in report["violations"]}
    assert report["skipped"] == "the build failed: no usable format combination"


def test_deepcopy_clone_returns_nullptr(capsys):
    status, report = check(capsys, "bad_pybind.py", "PPTestDeepcopyClone")
    assert any("clone() of P0 returned no plugin" in v["message"] for v in report["violations"])
    assert any("TypeError: cannot pickle 'DeepcopyClonePlugin' object" in e
               for e in report["errors"])


def test_bool_tensors_on_a_v2_plugin(capsys):
    status, report = check(capsys, "bad_pybind.py", "PPTestBool", "2x3:bool")
    assert status == 1
    (message,) = pybind_messages(report)
    assert "input 0 is BOOL" in message and "cannot have BOOL or UINT8" in message


def test_v2_plugins_are_never_offered_bool_or_uint8(capsys):
    from pyplugins import emulator as trt
    from pyplugins.checker.format_search import search_formats
    from pyplugins.emulator.specs import TensorSpec
    from pyplugins.emulator.tensors import PluginTensors

    seen = []

    class Spy(trt.IPluginV2DynamicExt):
        def supports_format_combination(self, pos, in_out, num_inputs):
            seen.append(in_out[pos].type)
            return True

    tensors = PluginTensors([TensorSpec.parse("4:float32")], {"net": [(4,)]})
    combos, tried, _ = search_formats(Spy(), tensors, [trt.DataType.FLOAT] * 2)
    assert seen and trt.DataType.BOOL not in seen and trt.DataType.UINT8 not in seen
    assert len(combos) == 25 and len(tried) == 30  # 5 types (no BOOL, UINT8) at each position


def test_the_right_way_passes(capsys):
    status, report = check(capsys, "bad_pybind.py", "PPTestGood")
    assert status == 0 and report["ok"] is True
    assert report["warnings"] == []  # the module registers its creators: nothing discovered


def test_main_only_module_is_discovered_and_the_global_bug_reported(capsys):
    status, report = check(capsys, "main_only.py", None, "2x3:float32", "--attr", "pads=1,1",
                           "--fresh-process")
    assert status == 1
    assert any("instantiated and registered MainOnlyPadCreator" in w for w in report["warnings"])
    assert any("NameError: name 'pads' is not defined" in e for e in report["errors"])
    fresh = [v["message"] for v in report["violations"] if v["check"] == "fresh_process"]
    assert any("NameError: name 'pads' is not defined" in m for m in fresh)
    # found without running anything: the method reads a global only __main__ defines
    assert any(m.startswith("MainOnlyPad.configure_plugin reads the module global `pads`")
               for m in fresh)
