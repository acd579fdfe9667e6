"""A plugin exception is reported once: TensorRT's ``[ERROR]`` line plus pyplugins' one-line
summary (plugin, layer, method, arguments), and ``pyplugins check`` says it once, in its report;
the traceback only at DEBUG."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from pyplugins.runtime.error_reports import report
from pyplugins.errors import FieldError

ROOT = Path(__file__).resolve().parent.parent

BROKEN = textwrap.dedent('''
    import pyplugins as pp

    @pp.register(replace=True)
    class Broken(pp.Plugin):
        name = "BrokenDims"

        def get_output_dimensions(self, output_index, inputs, expr_builder):
            raise ValueError("boom in dims")

        def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
            pass
''')


def test_check_prints_each_plugin_exception_once_without_traceback(tmp_path):
    (tmp_path / "broken_plugin.py").write_text(BROKEN)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    done = subprocess.run([sys.executable, "-m", "pyplugins.cli", "check", "broken_plugin",
                           "--plugin", "BrokenDims", "--input", "2x3:float32", "--device", "cpu"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    both = done.stdout + done.stderr
    assert "Traceback" not in both
    # The command says it once, in the report: TensorRT's [ERROR] line, naming the object. The
    # check's process printed it on fd 2 and logged pyplugins' summary too; the command leaves
    # those out of what it replays (docs/isolation.md).
    assert both.count("boom in dims") == 1
    assert ("P1 Broken (parse): [ERROR] Exception caught in get_output_dimensions(): ValueError: "
            "boom in dims") in done.stdout


class _Op:
    name, version, namespace = "ReportOp", "1", ""


def _raise() -> ValueError:
    try:
        raise ValueError("bad")
    except ValueError as err:
        return err


def test_traceback_only_at_debug(caplog):
    with caplog.at_level(logging.ERROR, logger="pyplugins"):
        report(_Op, "configure_plugin", (1,), _raise(), layer="l0")
    assert [r.getMessage() for r in caplog.records] == [
        "plugin 'ReportOp' (layer 'l0'): configure_plugin(1) raised ValueError: bad"]
    assert all(r.exc_info is None for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="pyplugins"):
        report(_Op, "configure_plugin", (1,), _raise(), layer="l0")
    levels = [(r.levelno, r.exc_info is not None) for r in caplog.records]
    assert levels == [(logging.ERROR, False), (logging.DEBUG, True)]
    assert "ValueError: bad" in caplog.text and "Traceback" in caplog.text


def test_pyplugins_errors_get_no_traceback_even_at_debug(caplog):
    err = FieldError("Field 'k' of plugin 'ReportOp' must be an int (got 'x', a str).")
    with caplog.at_level(logging.DEBUG, logger="pyplugins"):
        report(_Op, "create_plugin", ("n",), err, layer="n")
    assert len(caplog.records) == 1 and caplog.records[0].exc_info is None


def test_an_exception_is_reported_once(caplog):
    err = _raise()
    with caplog.at_level(logging.ERROR, logger="pyplugins"):
        report(_Op, "clone", (), err)
        report(_Op, "clone", (), err)
    assert len(caplog.records) == 1
