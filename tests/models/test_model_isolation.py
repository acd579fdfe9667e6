"""``pyplugins check MODEL.onnx`` in a supervised child process: a plugin node whose plugin
crashes, ends or hangs the check's process gives exit 1, a report naming the node, the callback
and the signal or status, the nodes checked before it, and valid ``--json`` (issue 24).

Each test runs the command's parent here (``main(argv, isolated=True)``) and the check in one
child, as tests/test_isolation.py does for plugin modules.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("onnx")
from onnx import helper

from pyplugins.cli import main
from tests.fuzz import model_cases as mc

AXPY = Path(__file__).resolve().parent / "plugins" / "axpy_ref.py"
CONFIGURE = "    def configure_plugin(self, inp, out):\n"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="process groups, /proc and faulthandler dumps: Linux")


@pytest.fixture(autouse=True)
def cpu_only(monkeypatch):
    monkeypatch.setenv("PYPLUGINS_DEVICE", "cpu")  # the child inherits it: no CUDA start-up


def broken_model(tmp_path: Path, stem: str, body: str):
    """A model of a good LReLU_TRT node ``first``, then node ``bad`` whose plugin (a copy of
    the axpy test plugin, op ``PP<Stem>Axpy``) runs ``body`` in configure_plugin."""
    code = "".join(f"        {line}\n" for line in body.splitlines())
    plugin = tmp_path / f"{stem}.py"
    plugin.write_text(AXPY.read_text().replace("PPModel", f"PP{stem.title()}").replace(
        CONFIGURE, CONFIGURE + code))
    nodes = [mc.lrelu("a", "t", "first"),
             helper.make_node(f"PP{stem.title()}Axpy", ["t", "b"], ["y"], name="bad")]
    path = tmp_path / f"{stem}.onnx"
    path.write_bytes(mc.model(nodes, [mc.vi("a"), mc.vi("b")], [mc.vi("y")]).SerializeToString())
    return path, plugin


def check(capsys, path: Path, plugin: Path, *extra: str):
    code = main(["check", str(path), "--plugins", str(plugin), "--device", "cpu", *extra],
                isolated=True)
    out, err = capsys.readouterr()
    return code, out, err


def check_json(capsys, path: Path, plugin: Path, *extra: str):
    code, out, err = check(capsys, path, plugin, "--json", *extra)
    data = json.loads(out)  # stdout is one JSON object, whatever the plugin did
    assert data["exit_status"] == code and data["ok"] is False
    return code, data, err


def bad_node(data):
    first, bad = data["nodes"]
    assert (first["node"], first["ok"]) == ("first", True), first  # checked before the crash
    assert bad["node"] == "bad" and bad["ok"] is False
    (violation,) = bad["report"]["violations"]
    assert violation["method"] == "configure_plugin"
    return violation["message"]


def test_a_segfault_names_the_node_the_callback_the_signal_and_the_line(tmp_path, capsys):
    path, plugin = broken_model(tmp_path, "segv", "import ctypes\nctypes.string_at(0)")
    code, data, _ = check_json(capsys, path, plugin)
    assert code == 1
    message = bad_node(data)
    assert "configure_plugin() crashed the process with SIGSEGV" in message, message
    assert f'File "{plugin}"' in message and "in configure_plugin" in message, message


def test_os_exit_0_is_a_defect_not_a_clean_exit(tmp_path, capsys):
    path, plugin = broken_model(tmp_path, "exits", "import os\nos._exit(0)")
    code, out, _ = check(capsys, path, plugin)
    assert code == 1
    assert "node 'first' (LReLU_TRT): OK" in out
    assert "node 'bad' (PPExitsAxpy): FAILED" in out
    assert "configure_plugin() ended the process with exit status 0" in out
    assert out.rstrip().endswith("2 plugin node(s), 1 with problems")
    _, data, _ = check_json(capsys, path, plugin)
    assert "exit status 0, which looks like success" in bad_node(data)


def test_a_callback_holding_the_gil_is_killed_at_the_timeout(tmp_path, capsys):
    path, plugin = broken_model(tmp_path, "gil", "sum(range(10**13))")  # C: never lets go
    start = time.monotonic()
    code, data, _ = check_json(capsys, path, plugin, "--timeout", "1")
    assert time.monotonic() - start < 30
    assert code == 1
    message = bad_node(data)
    assert "did not return within the 1 s limit (--timeout) and was killed" in message
    assert data["timed_out"].startswith("node 'bad': configure_plugin() did not return")
    assert "stopped" in data["nodes"][1]["problem"]


def test_a_plugin_module_crashing_at_import_is_a_defect_naming_the_import(tmp_path, capsys):
    path, _ = broken_model(tmp_path, "imported", "pass")
    crash = tmp_path / "crash_on_import.py"
    crash.write_text("import ctypes\nctypes.string_at(0)\n")
    code, data, _ = check_json(capsys, path, crash)
    assert code == 1 and data["nodes"] == []
    assert data["died"].startswith("import of the plugin module(s) crashed the process with "
                                   "SIGSEGV"), data


def test_a_healthy_model_answers_as_in_process(tmp_path, capsys):
    path, plugin = broken_model(tmp_path, "fine", "pass")
    isolated = check_json_ok(capsys, path, plugin, isolated=True)
    here = check_json_ok(capsys, path, plugin, isolated=False)
    assert isolated == here


def check_json_ok(capsys, path, plugin, *, isolated):
    code = main(["check", str(path), "--plugins", str(plugin), "--device", "cpu", "--json"],
                isolated=isolated)
    out, _ = capsys.readouterr()
    data = json.loads(out)
    assert code == 0 and data["ok"], out[:3000]
    return data


def test_a_bad_input_name_is_a_usage_error_from_the_child(tmp_path, capsys):
    path, plugin = broken_model(tmp_path, "named", "pass")
    code, out, err = check(capsys, path, plugin, "--input", "nope=2x3x8:float32", "--json")
    assert code == 2 and json.loads(out)["exit_status"] == 2
    assert "nope" in err


def test_the_shipped_ops_are_registered_in_the_child_without_plugins(tmp_path, capsys):
    path = tmp_path / "shipped.onnx"
    path.write_bytes(mc.model([mc.lrelu("a", "y", "only")], [mc.vi("a")],
                              [mc.vi("y")]).SerializeToString())
    code = main(["check", str(path), "--device", "cpu"], isolated=True)
    out, _ = capsys.readouterr()
    assert code == 0 and "node 'only' (LReLU_TRT): OK" in out, out
