"""A check's report says each fact once and says what it checked: the interface, whether a fresh
process ran, why enqueue did not run (once), each ``[ERROR]`` line once; and TensorRT's stderr
writer survives a closed fd 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pyplugins._config import override
from pyplugins.checker import _fresh, lifecycle
from pyplugins.checker.checks import Violation
from pyplugins.checker.lifecycle_report import LifecycleReport

REPO = Path(__file__).resolve().parents[1]
CIRC_PAD = str(REPO / "tests" / "emulator" / "plugins" / "circ_pad.py")


def test_the_no_gpu_reason_is_said_once():
    report = LifecycleReport("Op:1:", skipped="no GPU (CUDA reports: no device)",
                             notes=["not run on the other accepted format combination(s) "
                                    "either: [FLOAT/CHW4]"])
    text = report.format()
    assert text.count("no GPU") == 1 and "\n  CUDA reports: no device\n" in text
    cpu = LifecycleReport("Op:1:", skipped="device='cpu' was asked for, so the run stopped "
                                            "before enqueue").format()
    assert cpu == "Op:1:: OK (CPU only: enqueue not run, the CPU was asked for)"
    other = LifecycleReport("Op:1:", skipped="the build failed").format()
    assert other.splitlines()[1] == "  enqueue did not run: the build failed"


def test_an_error_line_is_one_entry_naming_every_object_that_printed_it():
    line = "[ERROR] Exception caught in configure_plugin(): ValueError: x\n\nAt:\n  p.py(3): f\n"
    found = [Violation("callback_error", f"{who}: {line}", "configure_plugin")
             for who in ("P2 Op (build)", "P2 Op (build)", "P4 Op (runtime)")]
    found.append(Violation("shape", "dim 0 is -1"))
    found.append(Violation("shape", "dim 0 is -1"))
    report = LifecycleReport("Op:1:", violations=found, errors=[line] * 3)
    text = report.format()
    assert text.count("ValueError: x") == 1
    assert "in configure_plugin() P2 Op (build) x2, P4 Op (runtime): [ERROR]" in text
    assert "[shape] dim 0 is -1 (2 times)" in text
    assert len(report.to_dict()["errors"]) == 3  # the JSON keeps every line, as printed


def test_the_report_names_the_interface_and_the_fresh_process():
    _fresh.import_module(CIRC_PAD)

    def run(**kwargs):
        return lifecycle.run("PPTestCircPad", ["1x2x3x3:float32"], {"pads": (1, 1, 1, 1)},
                             device="cpu", **kwargs)

    plain = run()
    assert (plain.interface, plain.fresh_process) == ("IPluginV2DynamicExt", "not asked for")
    assert plain.format().splitlines()[1] == ("  interface: IPluginV2DynamicExt; fresh process: "
                                              "not asked for")
    fresh = run(fresh_process=True, plugin_module=CIRC_PAD)
    assert fresh.fresh_process == "ran" and fresh.to_dict()["fresh_process"] == "ran"
    with override(max_tensor_bytes="100"):  # the input fits, the output does not: no engine
        stopped = run(fresh_process=True, plugin_module=CIRC_PAD)
    assert not stopped.ok
    assert stopped.fresh_process == "not run: the check stopped before deserialization"


def test_the_stderr_writer_survives_a_closed_fd_2():
    code = ("import os\nfrom pyplugins.emulator.bases import cpp_stderr\nos.close(2)\n"
            "cpp_stderr('[ERROR] lost')\nprint('survived')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert done.returncode == 0 and done.stdout == "survived\n"
