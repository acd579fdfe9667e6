"""ruff and mypy, with the committed configuration (pyproject.toml), find nothing in the checkout;
each is held to planted defects, so a configuration it did not read fails."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(module: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGS`` from the checkout's root; skipped where the tool is not
    installed, except in CI (``CI=true``), where a missing one fails: the test extra pins it."""
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{module} is not installed, and CI must run it: pip install -e '.[test]'")
        pytest.skip(f"{module} is not installed (pip install -e '.[test]')")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, input=stdin,
                          capture_output=True, text=True, timeout=300)


def _ruff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return _tool("ruff", *args, stdin=stdin)


def _mypy(*args: str) -> subprocess.CompletedProcess:
    # No cache: a clean run every time (a few seconds), nothing written into the checkout.
    return _tool("mypy", "--cache-dir", os.devnull, *args)


def test_ruff_finds_nothing():
    proc = _ruff("check", "--no-cache", "--output-format", "concise", ".")
    assert proc.returncode == 0, f"ruff check . found:\n{proc.stdout}{proc.stderr}"


#: A module with one planted defect per rule the configuration must enforce.
PLANTED = '''"""Planted defects."""
import os


def lazy():
    import json
    return json


def blind():
    try:
        return 1
    except Exception:
        return 0


def fine():
    return 1  # noqa: E501
'''


def test_the_configuration_catches_planted_defects():
    # The file is read from stdin but judged as a library module, so pyproject.toml's rules and
    # per-file settings for pyplugins/ apply (a config ruff did not find would pass it).
    proc = _ruff("check", "--no-cache", "--output-format", "concise", "--stdin-filename",
                 "pyplugins/_planted.py", "-", stdin=PLANTED)
    codes = {line.split(" ")[1] for line in proc.stdout.splitlines() if ": " in line}
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert {"F401", "PLC0415", "BLE001", "RUF100"} <= codes, proc.stdout


def test_mypy_finds_nothing_in_the_public_api():
    proc = _mypy()  # the files named in [tool.mypy]
    assert proc.returncode == 0, f"mypy found:\n{proc.stdout}{proc.stderr}"


#: Code written against the public API, one planted type error per line.
PLANTED_TYPES = """import pyplugins as pp
import pyplugins.trt as trt


def untyped(x):
    return x


pp.shapes.cdiv("a", 2)
trt.DataType.NO_SUCH_TYPE
"""


def test_mypy_reads_the_configuration_and_the_facade_types(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(PLANTED_TYPES)
    proc = _mypy(str(planted))
    found = {int(line.split(":")[1]): line.split(": error: ", 1)[1]
             for line in proc.stdout.splitlines() if ": error: " in line}
    assert sorted(found) == [5, 9, 10], proc.stdout
    assert "[no-untyped-def]" in found[5]  # the config's strictness was read
    assert 'incompatible type "str"' in found[9]  # the facade's lazy names have their types
    assert '"NO_SUCH_TYPE"' in found[10]  # pyplugins.trt is typed as the emulator


def test_the_facade_declares_a_type_for_every_lazy_name():
    import pyplugins

    tree = ast.parse((ROOT / "pyplugins" / "__init__.py").read_text())
    typed = {alias.asname or alias.name for node in ast.walk(tree)
             if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
             for sub in node.body if isinstance(sub, ast.ImportFrom) for alias in sub.names}
    assert typed == set(pyplugins.__all__) - {"__version__"}
