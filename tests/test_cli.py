"""``pyplugins check``: argument parsing, exit codes 0/1/2, JSON, in-process and as a subprocess
(what the child process survives: tests/test_isolation.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import pyplugins.checker
import pyplugins.emulator
from pyplugins.checker import command as check_command
from pyplugins import cli
from pyplugins.checker.command import UsageError, parse_input, parse_plugin
from pyplugins.cli import main

REPO = Path(__file__).resolve().parents[1]

# A small plugin written for real TensorRT (`import tensorrt as trt`), correct by construction.
PLUGIN_SOURCE = '''
import json

import numpy as np
import tensorrt as trt

NAME = {name!r}


class ScalePlugin(trt.IPluginV2DynamicExt):
    def __init__(self, fc=None):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_type = NAME
        self.plugin_version = "1"
        self.plugin_namespace = ""
        self.alpha = 1.0
        for f in fc or []:
            if f.name == "alpha":
                self.alpha = float(f.data[0])

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        return trt.DimsExprs(inputs[0])

    def supports_format_combination(self, pos, in_out, num_inputs):
        desc = in_out[pos]
        if desc.format != trt.TensorFormat.LINEAR:
            return False
        if pos == 0:
            return desc.type in (trt.DataType.FLOAT, trt.DataType.HALF)
        return desc.type == in_out[0].type

    def configure_plugin(self, inp, out):
        {configure}

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        import cupy as cp

        dtype = trt.nptype(input_desc[0].type)
        n = int(np.prod(tuple(input_desc[0].dims)))
        nbytes = n * np.dtype(dtype).itemsize
        with cp.cuda.ExternalStream(stream):
            x = cp.ndarray((n,), dtype, cp.cuda.MemoryPointer(
                cp.cuda.UnownedMemory(inputs[0], nbytes, self), 0))
            y = cp.ndarray((n,), dtype, cp.cuda.MemoryPointer(
                cp.cuda.UnownedMemory(outputs[0], nbytes, self), 0))
            cp.multiply(x, dtype(self.alpha), out=y)

    def serialize(self):
        return json.dumps({{"alpha": self.alpha}}).encode()

    def clone(self):
        other = ScalePlugin()
        other.__dict__.update(self.__dict__)
        return other


class ScaleCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name = NAME
        self.plugin_version = "1"
        self.plugin_namespace = ""
        self.field_names = trt.PluginFieldCollection(
            [trt.PluginField("alpha", np.array([]), trt.PluginFieldType.FLOAT32)])

    def create_plugin(self, name, fc):
        return ScalePlugin(fc)

    def deserialize_plugin(self, name, data):
        plugin = ScalePlugin()
        plugin.alpha = json.loads(data.decode())["alpha"]
        return plugin


print("module-level print from the plugin file")
plg_registry = trt.get_plugin_registry()
my_plugin_creator = ScaleCreator()
plg_registry.register_creator(my_plugin_creator, "")
'''


def write_plugin(directory: Path, stem: str = "scale_plugin", name: str = "PPCliScale",
                 broken: bool = False) -> Path:
    configure = "raise ValueError('configure exploded')" if broken else "pass"
    path = directory / f"{stem}.py"
    path.write_text(PLUGIN_SOURCE.format(name=name, configure=configure))
    return path


@pytest.fixture(autouse=True)
def clean_registry():
    registry = pyplugins.emulator.get_plugin_registry()
    saved = dict(registry._creators)  # creators other test modules registered at import
    registry._clear()
    yield
    registry._clear()
    registry._creators.update(saved)


# -- parsing helpers --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, shape, lo, opt, hi, dtype", [
    ("2x3x8x8:float32", (2, 3, 8, 8), None, None, None, "float32"),
    ("1-2-4x3x8x8:float16", (-1, 3, 8, 8), (1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8), "float16"),
    ("1-2-4x3x2-2-6:int8", (-1, 3, -1), (1, 3, 2), (2, 3, 2), (4, 3, 6), "int8"),
    ("7:int32", (7,), None, None, None, "int32"),
    ("2X3:fp16", (2, 3), None, None, None, "float16"),
    ("4:bool", (4,), None, None, None, "bool"),
])
def test_parse_input(text, shape, lo, opt, hi, dtype):
    spec = parse_input(text)
    assert spec["shape"] == shape and spec["dtype"] == np.dtype(dtype)
    assert (spec["min"], spec["opt"], spec["max"]) == (lo, opt, hi)


@pytest.mark.parametrize("text, fragment", [
    ("2x3x8x8", "expected SHAPE:DTYPE"),
    (":float32", "expected SHAPE:DTYPE"),
    ("2x3:", "expected SHAPE:DTYPE"),
    ("2xAx8:float32", "bad dimension 'a'"),
    ("2x-1x8:float32", "min-opt-max, not -1"),
    ("2-4x3:float32", "bad dimension '2-4'"),
    ("4-2-1x3:float32", "min <= opt <= max"),
    ("2x3:floot", "unknown dtype 'floot'"),
    ("2x3:float64", "has no TensorRT data type"),
    ("x".join(["1"] * 9) + ":float32", "at most 8"),
])
def test_parse_input_errors_name_the_argument(text, fragment):
    with pytest.raises(UsageError) as info:
        parse_input(text)
    assert f"--input {text!r}" in str(info.value) and fragment in str(info.value)


def test_parse_plugin():
    assert parse_plugin("CircPad") == ("CircPad", "1", "")
    assert parse_plugin("CircPad:2") == ("CircPad", "2", "")
    assert parse_plugin("CircPad:2:ns") == ("CircPad", "2", "ns")
    assert parse_plugin("CircPad::ns") == ("CircPad", "1", "ns")
    for bad in ("", ":1", "a:b:c:d"):
        with pytest.raises(UsageError, match="NAME\\[:VERSION\\[:NAMESPACE\\]\\]"):
            parse_plugin(bad)


def test_parse_attrs():
    assert check_command.parse_attrs(["pads=1,1,2,2", "mode=wrap", "alpha=0.5", "k=3", "s='7'", "e="]) == {
        "pads": [1, 1, 2, 2], "mode": "wrap", "alpha": 0.5, "k": 3, "s": "7", "e": ""}
    with pytest.raises(UsageError, match="expected NAME=VALUE"):
        check_command.parse_attrs(["pads"])
    with pytest.raises(UsageError, match="expected NAME=VALUE"):
        check_command.parse_attrs(["=3"])
    with pytest.raises(UsageError, match="given twice"):
        check_command.parse_attrs(["a=1", "a=2"])


# -- help and argparse usage errors -----------------------------------------------------------------

def test_top_level_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: pyplugins" in out and "check" in out


def test_check_help_documents_the_shape_syntax(capsys):
    assert main(["check", "--help"]) == 0
    out = capsys.readouterr().out
    for fragment in ("MODULE_OR_FILE", "--plugin", "--input", "--attr", "--fresh-process",
                     "--trace", "--json", "--device", "min-opt-max", "1-2-4x3x8x8",
                     "exit status"):
        assert fragment in out


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("pyplugins ")


def test_no_command_is_a_usage_error(capsys):
    assert main([]) == 2
    assert "usage: pyplugins" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["nonsense"], ["check"], ["check", "m", "--device", "gpu"],
                                  ["check", "m", "--bogus"], ["check", "m", "--memory-limit", "0"],
                                  ["check", "m", "--memory-limit", "1.5"]])
def test_argparse_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "error:" in capsys.readouterr().err


def test_leaves_room_for_more_commands():
    assert cli._add_check in cli.COMMANDS
    parser = cli.build_parser()
    assert parser.prog == "pyplugins"


# -- usage errors found by the check command (exit 2) -----------------------------------------------

def run_main(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_bad_input_exits_2_naming_it(tmp_path, capsys):
    plugin = write_plugin(tmp_path)
    code, out, err = run_main(["check", plugin, "--input", "2xQ:float32"], capsys)
    assert code == 2 and out == ""
    assert "--input '2xQ:float32'" in err and "e.g. 2x3x8x8:float32" in err


def test_unknown_dtype_exits_2(tmp_path, capsys):
    code, _, err = run_main(["check", write_plugin(tmp_path), "--input", "2:cmplx"], capsys)
    assert code == 2 and "unknown dtype 'cmplx'" in err


def test_missing_file_exits_2(tmp_path, capsys):
    code, _, err = run_main(["check", tmp_path / "nope.py", "--input", "2:float32"], capsys)
    assert code == 2 and "no such file" in err and "nope.py" in err


def test_module_that_fails_to_import_exits_2_with_its_error(tmp_path, capsys):
    bad = tmp_path / "broken_mod.py"
    bad.write_text("import tensorrt as trt\nraise RuntimeError('cannot load this')\n")
    code, _, err = run_main(["check", bad, "--input", "2:float32"], capsys)
    assert code == 2
    assert "MODULE_OR_FILE" in err and "RuntimeError: cannot load this" in err
    assert "broken_mod.py" in err  # the traceback points into the user's file


def test_unknown_dotted_module_exits_2(capsys):
    code, _, err = run_main(["check", "no_such_module_pp_xyz", "--input", "2:float32"], capsys)
    assert code == 2 and "No module named 'no_such_module_pp_xyz'" in err
    code, _, err = run_main(["check", "not a module!", "--input", "2:float32"], capsys)
    assert code == 2 and "dotted module name" in err


def test_unregistered_plugin_exits_2_listing_what_is_registered(tmp_path, capsys):
    code, _, err = run_main(["check", write_plugin(tmp_path), "--plugin", "Nope:2",
                             "--input", "2:float32"], capsys)
    assert code == 2
    assert "--plugin 'Nope:2'" in err and "name='Nope', version='2'" in err
    assert "PPCliScale:1:" in err


def test_several_creators_need_plugin(tmp_path, capsys):
    path = tmp_path / "two.py"
    source = PLUGIN_SOURCE.format(name="PPA", configure="pass")
    path.write_text(source + "\nsecond = ScaleCreator()\nsecond.name = 'PPB'\n"
                    "plg_registry.register_creator(second, '')\n")
    code, _, err = run_main(["check", path, "--input", "2:float32"], capsys)
    assert code == 2 and "several plugin creators" in err and "PPA:1:" in err and "PPB:1:" in err


def test_module_without_creators_exits_2(tmp_path, capsys):
    empty = tmp_path / "empty_mod.py"
    empty.write_text("import tensorrt as trt\n")
    code, _, err = run_main(["check", empty, "--input", "2:float32"], capsys)
    assert code == 2 and "registered no plugin creator" in err


def test_tensorrt_import_is_restored_after_an_in_process_run(tmp_path, capsys, monkeypatch):
    sentinel = types.ModuleType("tensorrt")
    monkeypatch.setitem(sys.modules, "tensorrt", sentinel)
    run_main(["check", tmp_path / "missing.py", "--input", "2:float32"], capsys)
    assert sys.modules["tensorrt"] is sentinel


# -- plumbing, against a stand-in lifecycle ---------------------------------------------------------

class FakeReport:
    def __init__(self, ok, trace=None):
        self.ok = ok
        self.trace = trace

    def to_dict(self):
        return {"plugin": "PPCliScale:1:", "ok": self.ok,
                "violations": [] if self.ok else [{"check": "shape", "message": "bad"}],
                "output_dtypes": [pyplugins.emulator.DataType.HALF], "array": np.arange(2)}

    def format(self):
        return f"FAKE REPORT ok={self.ok}"


@pytest.fixture
def fake_lifecycle(monkeypatch):
    calls = []
    state = {"ok": True, "raise": None}
    fake = types.ModuleType("pyplugins.checker.lifecycle")

    def run(plugin, inputs, fields=None, **kwargs):
        calls.append({"plugin": plugin, "inputs": inputs, "fields": fields, **kwargs})
        if state["raise"] is not None:
            raise state["raise"]
        trace = None
        if kwargs.get("trace"):
            from pyplugins.checker.trace import Trace

            trace = Trace()
        return FakeReport(state["ok"], trace)

    fake.run = run
    monkeypatch.setitem(sys.modules, "pyplugins.checker.lifecycle", fake)
    monkeypatch.setattr(pyplugins.checker, "lifecycle", fake, raising=False)
    return types.SimpleNamespace(calls=calls, state=state)


def test_arguments_reach_lifecycle_run(tmp_path, capsys, fake_lifecycle):
    plugin = write_plugin(tmp_path)
    code, out, err = run_main(["check", plugin, "--plugin", "PPCliScale", "--input",
                               "1-2-4x3:float16", "--input", "5:int32", "--attr", "alpha=0.5",
                               "--device", "cpu", "--fresh-process"], capsys)
    assert code == 0, err
    assert out.endswith("FAKE REPORT ok=True\n")
    (call,) = fake_lifecycle.calls
    assert call["plugin"].name == "PPCliScale"
    assert [(s.shape, s.dtype, s.min, s.opt, s.max) for s in call["inputs"]] == [
        ((-1, 3), np.dtype("float16"), (1, 3), (2, 3), (4, 3)),
        ((5,), np.dtype("int32"), (5,), (5,), (5,))]
    assert call["fields"] == {"alpha": 0.5}
    assert call["device"] == "cpu" and call["fresh_process"] is True and call["trace"] is False
    assert call["plugin_module"] == str(plugin.resolve())
    assert "module-level print from the plugin file" in out  # not --json: prints stay on stdout


def test_plugin_defaults_to_the_only_creator_and_no_attrs_is_none(tmp_path, capsys,
                                                                   fake_lifecycle):
    code, _, _ = run_main(["check", write_plugin(tmp_path), "--input", "2:float32"], capsys)
    assert code == 0
    (call,) = fake_lifecycle.calls
    assert call["plugin"].name == "PPCliScale" and call["fields"] is None
    assert call["device"] == "auto" and call["fresh_process"] is False


def test_violations_exit_1(tmp_path, capsys, fake_lifecycle):
    fake_lifecycle.state["ok"] = False
    code, out, _ = run_main(["check", write_plugin(tmp_path), "--input", "2:float32"], capsys)
    assert code == 1 and "FAKE REPORT ok=False" in out


def test_json_output_is_the_report_dict_and_nothing_else(tmp_path, capsys, fake_lifecycle):
    code, out, err = run_main(["check", write_plugin(tmp_path), "--input", "2:float32",
                               "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["plugin"] == "PPCliScale:1:" and data["ok"] is True
    assert data["output_dtypes"] == ["HALF"] and data["array"] == [0, 1]
    assert "trace" not in data
    assert "module-level print" in err  # moved off stdout so the JSON stays parseable


def test_json_with_trace(tmp_path, capsys, fake_lifecycle):
    fake_lifecycle.state["ok"] = False
    code, out, _ = run_main(["check", write_plugin(tmp_path), "--input", "2:float32", "--json",
                             "--trace"], capsys)
    assert code == 1
    data = json.loads(out)
    assert data["trace"] == [] and data["violations"][0]["check"] == "shape"
    assert fake_lifecycle.calls[0]["trace"] is True


def test_trace_prints_the_timeline(tmp_path, capsys, fake_lifecycle):
    code, out, _ = run_main(["check", write_plugin(tmp_path), "--input", "2:float32", "--trace"],
                            capsys)
    assert code == 0 and "Callback timeline:" in out


def test_unknown_attr_is_warned_about(tmp_path, capsys, fake_lifecycle):
    code, _, err = run_main(["check", write_plugin(tmp_path), "--input", "2:float32",
                             "--attr", "beta=2"], capsys)
    assert code == 0
    assert "--attr beta: not in the creator's field_names (alpha)" in err


def test_attr_the_parser_refuses_exits_2(tmp_path, capsys, fake_lifecycle):
    from pyplugins.errors import FieldError

    fake_lifecycle.state["raise"] = FieldError("Attribute 'alpha': too big")
    code, _, err = run_main(["check", write_plugin(tmp_path), "--input", "2:float32",
                             "--attr", "alpha=1"], capsys)
    assert code == 2 and "--attr: Attribute 'alpha': too big" in err


def test_dotted_module_from_the_current_directory(tmp_path, capsys, fake_lifecycle, monkeypatch):
    write_plugin(tmp_path, stem="pp_cli_dotted_mod")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "pp_cli_dotted_mod", raising=False)
    code, _, err = run_main(["check", "pp_cli_dotted_mod", "--input", "2:float32"], capsys)
    assert code == 0, err
    assert fake_lifecycle.calls[0]["plugin_module"] == "pp_cli_dotted_mod"


# -- against the real lifecycle driver --------------------------------------------------------------

def test_clean_plugin_exits_0(tmp_path, capsys):
    code, out, err = run_main(["check", write_plugin(tmp_path), "--input", "1-2-4x3x8:float32",
                               "--attr", "alpha=2.0", "--device", "cpu"], capsys)
    assert code == 0, out + err
    assert "PPCliScale:1:" in out


def test_broken_plugin_exits_1_and_says_why(tmp_path, capsys):
    code, out, err = run_main(["check", write_plugin(tmp_path, broken=True), "--input",
                               "2x3:float32", "--device", "cpu"], capsys)
    assert code == 1
    assert "configure exploded" in out + err


def test_json_and_trace_from_a_real_run(tmp_path, capsys):
    code, out, _ = run_main(["check", write_plugin(tmp_path), "--input", "2x3:float16",
                             "--device", "cpu", "--json", "--trace"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["ok"] is True and data["plugin"] == "PPCliScale:1:"
    methods = [e["method"] for e in data["trace"]]
    assert methods[0] == "create_plugin" and "configure_plugin" in methods


def test_human_output_with_trace_from_a_real_run(tmp_path, capsys):
    code, out, _ = run_main(["check", write_plugin(tmp_path), "--input", "2x3:float32",
                             "--device", "cpu", "--trace"], capsys)
    assert code == 0
    assert "Callback timeline:" in out and "C0 ScaleCreator" in out
    assert "create_plugin(name='plugin_node', fc={})" in out


# -- as a separate process --------------------------------------------------------------------------

def run_cli(*args, cwd=REPO):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env["PYPLUGINS_DEVICE"] = "cpu"
    return subprocess.run([sys.executable, "-m", "pyplugins.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def test_subprocess_help_and_usage_error(tmp_path):
    proc = run_cli("--help")
    assert proc.returncode == 0 and "check" in proc.stdout
    proc = run_cli("check", write_plugin(tmp_path), "--input", "2x3x:float32")
    assert proc.returncode == 2
    assert "--input '2x3x:float32'" in proc.stderr and proc.stdout == ""


def test_subprocess_json_run(tmp_path):
    proc = run_cli("check", write_plugin(tmp_path), "--input", "1-2-4x3:float32",
                   "--attr", "alpha=3", "--device", "cpu", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is True and data["plugin"] == "PPCliScale:1:"
    assert "module-level print" in proc.stderr


def test_subprocess_violation_exit_1(tmp_path):
    proc = run_cli("check", write_plugin(tmp_path, broken=True), "--input", "2:float32",
                   "--device", "cpu")
    assert proc.returncode == 1
    assert "configure exploded" in proc.stdout + proc.stderr


# -- hostile plugins and arguments (issue 9) ---------------------------------------------------------

def write_variant(directory: Path, stem: str, name: str, old: str, new: str) -> Path:
    path = write_plugin(directory, stem=stem, name=name)
    source = path.read_text()
    assert old in source
    path.write_text(source.replace(old, new))
    return path


@pytest.mark.parametrize("old, new, method", [
    ("return trt.DimsExprs(inputs[0])", "import sys; sys.exit(0)", "get_output_dimensions"),
    ("        pass\n\n    def enqueue", "        import sys; sys.exit(3)\n\n    def enqueue",
     "configure_plugin"),
])
def test_sys_exit_in_a_callback_is_a_defect_with_a_report(tmp_path, capsys, old, new, method):
    path = write_variant(tmp_path, "exiting", "PPCliExit", old, new)
    code, out, err = run_main(["check", path, "--input", "2x3:float32", "--device", "cpu",
                               "--json"], capsys)
    assert code == 1
    data = json.loads(out)
    assert data["ok"] is False and data["exit_status"] == 1
    lines = [e for e in data["errors"] if f"caught in {method}(): SystemExit" in e]
    assert lines and "\n\nAt:\n  " in lines[0] and f"): {method}" in lines[0]


def test_an_exception_whose_str_raises_is_reported(tmp_path, capsys):
    path = write_variant(tmp_path, "nasty", "PPCliNasty", "        pass\n\n    def enqueue",
                         "        class E(Exception):\n            def __str__(self):\n"
                         "                raise ValueError\n        raise E()\n\n    def enqueue")
    code, out, _ = run_main(["check", path, "--input", "2x3:float32", "--device", "cpu"], capsys)
    assert code == 1 and "E: <MESSAGE UNAVAILABLE DUE TO ANOTHER EXCEPTION>" in out


def test_no_input_is_a_usage_error(tmp_path, capsys):
    code, out, err = run_main(["check", write_plugin(tmp_path)], capsys)
    assert code == 2 and out == "" and "--input" in err and "Traceback" not in err


def test_an_oversized_input_is_a_usage_error_naming_the_limit(tmp_path, capsys):
    code, out, err = run_main(["check", write_plugin(tmp_path), "--input",
                               "1000000x1000000:float32", "--json"], capsys)
    assert code == 2
    assert "PYPLUGINS_MAX_TENSOR_BYTES" in json.loads(out)["error"]


def test_a_surrogate_in_attr_is_a_usage_error(tmp_path, capsys):
    code, out, err = run_main(["check", write_plugin(tmp_path), "--input", "2:float32",
                               "--attr", "alpha=\udcff", "--json"], capsys)
    assert code == 2 and "not valid UTF-8" in json.loads(out)["error"]


def test_argparse_errors_still_give_json(capsys):
    code, out, _ = run_main(["check", "x.py", "--bogus", "--json"], capsys)
    assert code == 2 and json.loads(out)["exit_status"] == 2


def test_verdict_says_enqueue_did_not_run_and_require_gpu_fails(tmp_path, capsys):
    code, out, _ = run_main(["check", write_plugin(tmp_path), "--input", "2:float32",
                             "--device", "cpu"], capsys)
    assert code == 0
    (verdict,) = [line for line in out.splitlines() if line.startswith("PPCliScale:1:")]
    assert verdict == "PPCliScale:1:: OK (CPU only: enqueue not run, the CPU was asked for)"
    code, out, _ = run_main(["check", write_plugin(tmp_path, stem="again"), "--input",
                             "2:float32", "--device", "cpu", "--require-gpu"], capsys)
    assert code == 1 and "--require-gpu: enqueue did not run" in out


def test_too_many_outputs_hit_a_named_limit(tmp_path, capsys):
    path = write_variant(tmp_path, "many", "PPCliMany", "self.num_outputs = 1",
                         "self.num_outputs = 10**7")
    code, out, _ = run_main(["check", path, "--input", "2:float32", "--device", "cpu"], capsys)
    assert code == 1 and "PYPLUGINS_MAX_OUTPUTS" in out


@pytest.mark.parametrize("where", ["import", "callback"])
def test_timeout_reports_the_step_and_exits_1(tmp_path, where):
    if where == "import":
        path = tmp_path / "spins.py"
        path.write_text("while True:\n    pass\n")
    else:
        path = write_variant(tmp_path, "spins", "PPCliSpin", "        pass\n\n    def enqueue",
                             "        while True:\n            pass\n\n    def enqueue")
    proc = run_cli("check", path, "--input", "2:float32", "--timeout", "1", "--json")
    assert proc.returncode == 1, proc.stderr
    (violation,) = json.loads(proc.stdout)["violations"]
    assert "did not return within the 1 s limit" in violation["message"]
    if where == "callback":
        assert violation["method"] == "configure_plugin"
    else:
        assert "import of the plugin module" in violation["message"]

# -- newcomer friction (issue 10) -------------------------------------------------------------------

def test_python_dash_m_pyplugins_is_the_cli():
    env = {**os.environ, "PYPLUGINS_DEVICE": "cpu",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "pyplugins", "check", "--help"], cwd=REPO,
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "usage: pyplugins check" in proc.stdout and "--input" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "pyplugins", "check", "--input", "2x3:floot",
                           "x.py"], cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "unknown dtype 'floot'" in proc.stderr


@pytest.mark.parametrize("text, name", [
    ("2x3:bfloat16", "BF16"), ("2x3:bf16", "BF16"), ("2x3:BF16", "BF16"), ("4:fp8", "FP8"),
    ("4:e8m0", "E8M0"), ("4:int4", "INT4"),
])
def test_parse_input_accepts_tensorrt_types_numpy_lacks(text, name):
    dtype = parse_input(text)["dtype"]
    assert dtype.name == name and not isinstance(dtype, np.dtype)
    from pyplugins.emulator.specs import TensorSpec

    spec = TensorSpec(**parse_input(text))
    assert spec.datatype.name == name


def test_check_circpad_with_bfloat16_on_cpu():
    # CircPad offers BF16; `--input ...:bfloat16` used to be refused as an unknown dtype.
    proc = run_cli("check", REPO / "pyplugins" / "ops" / "circ_pad.py", "--plugin", "CircPad",
                   "--input", "2x3x4x4:bfloat16", "--attr", "pads=1,1,1,1", "--device", "cpu",
                   "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True, report
    assert report["output_dtypes"] == ["BF16"] and report["output_shapes"] == [[2, 3, 6, 6]]
    assert not report["violations"] and not report["errors"]


def test_bf16_test_data_has_the_right_bytes():
    from pyplugins.emulator.enums import DataType
    from pyplugins.emulator.specs import TensorSpec, host_dtype, random_data
    from pyplugins.checker import runtime_enqueue

    bits = random_data(DataType.BF16, (4, 5), seed=3)
    assert bits.dtype == np.uint16 and bits.nbytes == 4 * 5 * 2
    # the bit patterns are bfloat16 numbers: widened to float32 they are finite and varied
    floats = (bits.astype(np.uint32) << 16).view(np.float32)
    assert np.isfinite(floats).all() and len(np.unique(floats)) > 10
    assert random_data(DataType.FP8, (7,), seed=0).nbytes == 7
    assert host_dtype(DataType.INT4) is None and random_data(DataType.INT4, (2,), 0) is None
    combo = [(DataType.BF16, pyplugins.emulator.TensorFormat.LINEAR)] * 2
    arrays, why = runtime_enqueue.input_arrays([TensorSpec.parse("2x3:bfloat16")], combo,
                                               [DataType.BF16])
    assert why is None and arrays[0].dtype == np.uint16 and arrays[0].shape == (2, 3)


def test_check_trace_explains_its_object_labels():
    proc = run_cli("check", REPO / "pyplugins" / "ops" / "circ_pad.py", "--plugin", "CircPad",
                   "--input", "1-2-4x3x4x4:float32", "--attr", "pads=1,1,1,1", "--device", "cpu",
                   "--trace")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    top = lines.index(next(line for line in lines if line.startswith("Objects (")))
    legend = {line.split()[0]: line for line in lines[top + 1:top + 7]}
    assert list(legend) == ["C0", "P0", "P1", "P2", "P3", "P4"], lines[top:top + 8]
    assert "create_plugin" in legend["P0"] and "deserialize_plugin" in legend["P3"]
    assert "clone of P3" in legend["P4"] and "enqueue" in legend["P4"]
    assert lines[top + 7].startswith("Calls (")
