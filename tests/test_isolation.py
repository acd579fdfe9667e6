"""``pyplugins check`` in a supervised child process: whatever the plugin does to its process, the
command ends with a report naming the callback (issue 24).

Each test runs the command's parent in this process (``main(argv, isolated=True)``) and the
check in a child, so a test costs one child process; the Ctrl-C test starts the parent too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyplugins.cli import main
from tests.test_cli import REPO, write_plugin, write_variant

CONFIGURE = "        pass\n\n    def enqueue"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="process groups, /proc and faulthandler dumps: Linux")


@pytest.fixture(autouse=True)
def cpu_only(monkeypatch):
    monkeypatch.setenv("PYPLUGINS_DEVICE", "cpu")  # the child inherits it: no CUDA start-up


def in_configure(tmp_path: Path, stem: str, body: str) -> Path:
    """A copy of the test plugin whose configure_plugin runs ``body`` (4-space indented)."""
    code = "".join(f"        {line}\n" for line in body.splitlines())
    return write_variant(tmp_path, stem, f"PPIso{stem.title()}", CONFIGURE,
                         code + "\n    def enqueue")


def check(capsys, path: Path, *extra: str):
    code = main(["check", str(path), "--input", "2x3:float32", *extra], isolated=True)
    out, err = capsys.readouterr()
    return code, out, err


def check_json(capsys, path: Path, *extra: str):
    code, out, err = check(capsys, path, "--json", *extra)
    data = json.loads(out)  # stdout is one JSON object, whatever the plugin did
    assert data["exit_status"] == code
    return code, data, err


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


# -- a process that dies --------------------------------------------------------------------------

def test_a_segfault_is_a_defect_naming_the_callback_and_the_line(tmp_path, capsys):
    path = in_configure(tmp_path, "segv", "import ctypes\nctypes.string_at(0)")
    code, data, _ = check_json(capsys, path)
    assert code == 1 and data["ok"] is False
    (violation,) = data["violations"]
    assert violation["method"] == "configure_plugin"
    assert "configure_plugin() crashed the process with SIGSEGV" in violation["message"]
    line = line_of(path, "ctypes.string_at(0)")
    assert f'File "{path}", line {line} in configure_plugin' in violation["message"]
    assert data["plugin"] == "PPIsoSegv:1:" and data["interface"] == "IPluginV2DynamicExt"


def test_abort_is_a_defect(tmp_path, capsys):
    code, data, _ = check_json(capsys, in_configure(tmp_path, "aborts", "import os\nos.abort()"))
    assert code == 1 and "with SIGABRT" in data["violations"][0]["message"]


@pytest.mark.parametrize("status", [0, 3])
def test_os_exit_is_a_defect_not_a_clean_exit(tmp_path, capsys, status):
    path = in_configure(tmp_path, f"exits{status}", f"import os\nos._exit({status})")
    code, out, _ = check(capsys, path)
    assert code == 1
    assert f"configure_plugin() ended the process with exit status {status}" in out
    assert out.startswith(f"PPIsoExits{status}:1:: 1 violation(s)")


def test_a_crash_at_import_names_the_import(tmp_path, capsys):
    path = tmp_path / "crash_on_import.py"
    path.write_text("import ctypes\nctypes.string_at(0)\n")
    code, data, _ = check_json(capsys, path)
    assert code == 1
    message = data["violations"][0]["message"]
    assert message.startswith("import of the plugin module crashed the process with SIGSEGV")
    assert data["violations"][0]["method"] is None


# -- a process that hangs or grows -----------------------------------------------------------------

def test_a_callback_holding_the_gil_is_killed_at_the_timeout(tmp_path, capsys):
    # sum() over a range runs in C and never lets another thread of its process run
    path = in_configure(tmp_path, "gil", "sum(range(10**13))")
    start = time.monotonic()
    code, data, _ = check_json(capsys, path, "--timeout", "1")
    assert time.monotonic() - start < 30
    assert code == 1
    (violation,) = data["violations"]
    assert violation["method"] == "configure_plugin"
    assert "did not return within the 1 s limit (--timeout) and was killed" in violation["message"]
    line = line_of(path, "sum(range(")
    assert f'File "{path}", line {line} in configure_plugin' in violation["message"]


def test_memory_past_the_limit_is_a_defect(tmp_path, capsys):
    path = write_variant(tmp_path, "leaks", "PPIsoLeak",
                         "    def supports_format_combination(self, pos, in_out, num_inputs):\n",
                         "    def supports_format_combination(self, pos, in_out, num_inputs):\n"
                         "        LEAK.append(bytearray(40 << 20))\n")
    path.write_text("LEAK = []\n" + path.read_text())
    code, data, _ = check_json(capsys, path, "--memory-limit", "200")
    assert code == 1
    (violation,) = data["violations"]
    assert violation["method"] == "supports_format_combination"
    assert "past the limit of 200 MiB (--memory-limit)" in violation["message"]


# -- a process whose descriptors, children or threads the plugin disturbs ---------------------------

def test_writing_to_fd_1_leaves_the_json_intact(tmp_path, capsys):
    path = in_configure(tmp_path, "writes", "import os\nos.write(1, b'not json')")
    code, data, err = check_json(capsys, path)
    assert code == 0 and data["ok"] is True
    assert "not json" in err


@pytest.mark.parametrize("fd", [1, 2])
def test_a_closed_fd_still_gives_the_report_and_the_error_lines(tmp_path, capsys, fd):
    body = (f"import os\nif not getattr(os, 'pp_closed', False):\n    os.pp_closed = True\n"
            f"    os.close({fd})\nelse:\n    raise ValueError('second configure')")
    code, data, _ = check_json(capsys, in_configure(tmp_path, f"closes{fd}", body))
    assert code == 1
    assert any("ValueError: second configure" in e for e in data["errors"])


def test_forked_children_and_leftover_threads_die_with_the_check(tmp_path, capsys):
    marker = tmp_path / "grandchild.pid"
    body = (f"import os, threading, time\nif os.fork() == 0:\n"
            f"    open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
            f"    time.sleep(600)\n    os._exit(0)\n"
            f"threading.Thread(target=time.sleep, args=(600,)).start()")
    start = time.monotonic()
    code, data, _ = check_json(capsys, in_configure(tmp_path, "forks", body))
    assert time.monotonic() - start < 60 and code == 0 and data["ok"] is True
    for _ in range(100):  # the grandchild writes its pid on its own schedule
        if marker.exists() and marker.read_text():
            break
        time.sleep(0.05)
    pid = int(marker.read_text())
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_ctrl_c_kills_the_check_and_exits_130_with_one_line(tmp_path):
    marker = tmp_path / "child.pid"
    path = in_configure(tmp_path, "spins", f"import os\nopen({str(marker)!r}, 'w').write("
                                           f"str(os.getpid()))\nwhile True:\n    pass")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get(
        "PYTHONPATH", "")]), "PYPLUGINS_DEVICE": "cpu"}
    proc = subprocess.Popen([sys.executable, "-m", "pyplugins", "check", str(path), "--input",
                             "2:float32", "--timeout", "60", "--json"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(marker.read_text())
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert err.splitlines() == ["pyplugins check: error: interrupted (Ctrl-C); the check was "
                                "stopped"]
    assert json.loads(out)["exit_status"] == 130
    assert not alive(child)


# -- usage errors, once ----------------------------------------------------------------------------

def test_a_bad_attr_value_is_a_usage_error_said_once(capsys):
    code = main(["check", str(REPO / "pyplugins" / "ops" / "circ_pad.py"), "--input",
                 "2x3x4x4:float32", "--attr", "pads=1,1,1"], isolated=True)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("needs (before, after) pairs") == 1
    assert err.startswith("pyplugins check: error: --attr: Field 'pads' of plugin 'CircPad'")


@pytest.mark.parametrize("inputs, fragment", [
    (["2x8:float32"], "takes 2 inputs (x, weight: the arrays its reference() takes), got 1"),
    (["2x8:float32", "8:float32", "8:float32"], "takes 2 inputs"),
    (["2x8:float32", "4:float32"], "the weight has 4 elements but the last dim of x is 8"),
])
def test_missing_extra_or_refused_inputs_are_usage_errors(capsys, inputs, fragment):
    argv = ["check", str(REPO / "pyplugins" / "ops" / "rmsnorm.py")]
    for text in inputs:
        argv += ["--input", text]
    code = main(argv + ["--json"], isolated=True)
    out, err = capsys.readouterr()
    assert code == 2 and json.loads(out)["exit_status"] == 2
    assert fragment in json.loads(out)["error"] and err.count(fragment) == 1


def test_a_callback_exception_is_printed_once(tmp_path, capsys):
    code, out, err = check(capsys, write_plugin(tmp_path, broken=True))
    assert code == 1
    assert (out + err).count("configure exploded") == 1
    assert "P2 ScalePlugin (build) x2, P4 ScalePlugin (runtime)" in out


# -- what the report says --------------------------------------------------------------------------

def test_the_report_says_the_interface_and_whether_a_fresh_process_ran(tmp_path, capsys):
    code, out, _ = check(capsys, write_plugin(tmp_path), "--fresh-process")
    assert code == 0
    assert out.splitlines()[1] == "  interface: IPluginV2DynamicExt; fresh process: ran"
    code = main(["check", "tests.v3_plugins", "--plugin", "PPLeakyReLUInPlace", "--input",
                 "2x3:float32", "--json"], isolated=True)
    data = json.loads(capsys.readouterr()[0])
    assert code == 0 and data["interface"] == "IPluginV3"
    assert data["fresh_process"] == "not asked for"


def test_in_process_runs_the_plugin_here_and_isolated_does_not(tmp_path, capsys):
    marker = tmp_path / "pid"
    path = in_configure(tmp_path, "where", f"import os\nopen({str(marker)!r}, 'w').write("
                                          f"str(os.getpid()))")
    assert check(capsys, path)[0] == 0
    assert int(marker.read_text()) != os.getpid()
    assert check(capsys, path, "--in-process")[0] == 0
    assert int(marker.read_text()) == os.getpid()
