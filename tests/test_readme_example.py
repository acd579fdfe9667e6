"""The README's "A plugin in 25 lines", saved to a file, passes the README's own
``pyplugins check`` command on this machine (GPU or not), exactly as written."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTION = (ROOT / "README.md").read_text().split("## A plugin in 25 lines", 1)[1].split("\n## ", 1)[0]


def _example() -> str:
    return re.search(r"```python\n(.*?)\n```", SECTION, flags=re.S).group(1)


def _check_command() -> list:
    commands = re.findall(r"```bash\n(.*?)\n```", SECTION, flags=re.S)
    assert len(commands) == 1, commands
    argv = shlex.split(commands[0])
    assert argv[:2] == ["pyplugins", "check"], argv
    return argv


def test_the_example_does_not_shadow_the_dtypes_module():
    assert "from pyplugins import dtypes" not in _example()
    assert "dtypes.ctype_from_trt" not in _example()


def test_the_example_passes_the_readmes_check_command(tmp_path):
    argv = _check_command()
    script = argv[2]
    (tmp_path / script).write_text(_example() + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYPLUGINS_TRT": "emulator"}
    # ``pyplugins`` is the console script of pyplugins.cli; run this checkout's copy.
    proc = subprocess.run([sys.executable, "-m", "pyplugins.cli", *argv[1:]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in out and "CUDARuntimeError" not in out.split("enqueue did not")[0]
    # OK, and honest about what a machine without a GPU could not check
    assert re.search(r"^LeakyReLU:1:: OK( \(CPU only: enqueue not run, no GPU\))?$", proc.stdout,
                     flags=re.M), out
    assert "(2, 3) FLOAT" in proc.stdout, out


def test_the_plugin_docstring_example_is_the_readmes():
    from pyplugins.runtime import plugin

    doc = plugin.__doc__
    for line in ("    def plan(self, inputs, outputs, device):",
                 "from pyplugins.dtypes import ctype_from_trt",
                 "        fn = self.kernel.function(ctype_from_trt(inputs[0].type), device)"):
        assert line in _example(), line
        assert line.strip() in doc, line
