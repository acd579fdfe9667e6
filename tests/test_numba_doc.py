"""docs/numba.md's "Writing one" example, saved to a file, passes the page's own ``pyplugins
check`` command as written, and prints what the page shows (on a machine without a GPU)."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "numba.md").read_text()
SECTION = PAGE.split("## Writing one", 1)[1].split("\n## ", 1)[0]

# Looked up, not imported: numba picks the simulator or the GPU once per process, on first import
# (pyplugins.runtime.numba_launch.prefer_simulator), and the example runs in a child process.
if importlib.util.find_spec("numba") is None or importlib.util.find_spec("numba_cuda") is None:
    pytest.skip("numba kernels need the 'numba' extra", allow_module_level=True)


def _blocks(kind: str) -> list:
    """The section's fenced blocks of language ``kind`` ("" for none), in order."""
    fenced = re.findall(r"^```(\w*)\n(.*?)\n```$", SECTION, flags=re.S | re.M)
    return [body for lang, body in fenced if lang == kind]


def _check(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    (command,) = _blocks("bash")
    argv = shlex.split(command)
    assert argv[:2] == ["pyplugins", "check"], argv
    (tmp_path / argv[2]).write_text(source + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYPLUGINS_TRT": "emulator"}
    env.pop("NUMBA_ENABLE_CUDASIM", None)  # pyplugins check chooses the simulator itself
    return subprocess.run([sys.executable, "-m", "pyplugins.cli", *argv[1:]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)


def test_the_example_passes_the_pages_check_command(tmp_path):
    (example,) = _blocks("python")
    proc = _check(tmp_path, example)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in out
    assert proc.stdout.splitlines()[:4] == [
        "NumbaScale:1:: OK", "  interface: IPluginV2DynamicExt; fresh process: not asked for",
        "  output 0: (2, 3, 8) FLOAT", "  enqueue ran"], out
    if "numba's CUDA simulator" in proc.stdout:  # no GPU: the page's output, line for line
        (shown,) = [b for b in _blocks("") if b.startswith("NumbaScale")]
        assert proc.stdout.rstrip("\n").splitlines() == shown.splitlines(), out


def test_the_example_is_really_checked(tmp_path):
    """A planted defect in the example (a reference that disagrees) fails the same command."""
    (example,) = _blocks("python")
    broken = example.replace("return (x * np.float32(self.factor),)",
                             "return (x * np.float32(self.factor + 1),)")
    assert broken != example
    proc = _check(tmp_path, broken)
    if "numba's CUDA simulator" not in proc.stdout and proc.returncode == 0:
        pytest.skip("a GPU ran the kernel: the page's reference check is the simulator's")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[reference_mismatch]" in proc.stdout
