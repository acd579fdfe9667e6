"""ruff, with the committed configuration (pyproject.toml), finds nothing in the checkout."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``python -m ruff ARGS`` from the checkout's root; skipped where ruff is not installed,
    except in CI (``CI=true``), where a missing ruff fails: the test extra pins it."""
    if importlib.util.find_spec("ruff") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("ruff is not installed, and CI must lint: pip install -e '.[test]'")
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, input=stdin,
                          capture_output=True, text=True, timeout=120)


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
