"""What a newcomer types first: every ``python -m benchmarks`` subcommand answers ``--help``, a
missing file is one line, and ``report`` without matplotlib leaves the tracked READMEs alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # benchmarks/ is a top-level folder, not an installed package
    sys.path.insert(0, str(REPO))

from benchmarks import run


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYPLUGINS_TRT="emulator")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=120)


@pytest.mark.parametrize("command,prog", [
    (["benchmarks", "slowest"], "benchmarks slowest"),
    (["benchmarks", "profile"], "benchmarks profile"),
    (["benchmarks", "digest"], "benchmarks digest"),
    (["benchmarks", "report"], "benchmarks report"),
    (["benchmarks", "run"], "benchmarks"),
    (["benchmarks.profile_case"], "benchmarks.profile_case")])
def test_every_subcommand_answers_help(command, prog):
    done = _run(*command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: python -m {prog} "), done.stdout
    assert done.stderr == ""


@pytest.mark.parametrize("command,what", [("slowest", "RESULT.json"), ("profile", "NCU_TEXT")])
def test_a_missing_file_is_one_line(command, what, capsys):
    assert run.main([command, "no/such/file"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"python -m benchmarks {command}: {what} 'no/such/file': no such file"


def test_report_without_matplotlib_keeps_the_readmes_and_says_why(tmp_path, monkeypatch, capsys):
    """A copy of the checkout's READMEs and results, regenerated where matplotlib cannot be
    imported: both READMEs byte for byte as committed, and stderr says the plots were skipped."""
    bench = tmp_path / "benchmarks"
    shutil.copytree(run.RESULTS, bench / "results")
    shutil.copy(run.README, bench / "README.md")
    shutil.copy(run.TOP_README, tmp_path / "README.md")
    before = {p: p.read_bytes() for p in (bench / "README.md", tmp_path / "README.md")}
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    monkeypatch.setattr(run, "RESULTS", bench / "results")
    argv = ["report", "--readme", str(bench / "README.md"),
            "--top-readme", str(tmp_path / "README.md")]
    assert run.main(argv) == 0
    assert {p: p.read_bytes() for p in before} == before
    err = capsys.readouterr().err
    assert err.count("plots skipped: matplotlib is not installed") == 1
