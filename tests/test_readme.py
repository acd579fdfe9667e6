"""The README's commands and example are real: CI runs the same test command, the demo and the
example plugin run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _setup_commands():
    section = README.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)


def test_readme_has_exactly_two_setup_commands():
    commands = _setup_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in c for c in commands)


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    match = re.search(r"^TEST_COMMAND='(.*)'$", ci, flags=re.M)
    assert match, "TEST_COMMAND not found in .ci/run"
    assert match.group(1) == _setup_commands()[1]


def test_main_command_runs_the_demo_that_exists():
    main = _setup_commands()[0]
    script = main.split("&&")[-1].split()[-1]
    assert (ROOT / script).is_file(), script


@pytest.mark.slow
def test_main_demo_runs_without_a_gpu():
    script = _setup_commands()[0].split("&&")[-1].split()[-1]
    proc = subprocess.run([sys.executable, str(ROOT / script), "--device", "cpu"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYPLUGINS_TRT": "emulator"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "kernels" in proc.stdout and "not" in proc.stdout


def test_readme_example_plugin_defines_and_registers(monkeypatch):
    example = README.split("## A plugin in 25 lines", 1)[1]
    code = re.search(r"```python\n(.*?)\n```", example, flags=re.S).group(1)
    body, last = code.split('\nif __name__ == "__main__":', 1)
    assert "\n    y = pp.run(" in last
    namespace: dict = {}
    from pyplugins.creator import unregister

    exec(compile(body, "README.md", "exec"), namespace)
    cls = namespace["LeakyReLU"]
    try:
        assert cls.creator is not None and cls.creator.name == "LeakyReLU"
        plugin = cls(negative_slope=0.25)
        assert plugin.negative_slope == pytest.approx(0.25)
        from conftest import gpu_available

        if gpu_available():
            import numpy as np

            x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
            y = namespace["pp"].run(cls, x, negative_slope=0.1)
            np.testing.assert_allclose(np.asarray(y), np.where(x >= 0, x, 0.1 * x), rtol=1e-6)
    finally:
        unregister(cls)
