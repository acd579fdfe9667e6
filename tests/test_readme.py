"""The README's commands and example are real: CI runs the same test command, the demo and the
example plugin run."""

from __future__ import annotations

import importlib.machinery
import os
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


def _ci_environment() -> dict:
    """The environment CI gives the README's commands: this checkout importable, no GPU visible,
    no pyplugins settings, and ``python3`` the interpreter running the tests."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYPLUGINS_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["CUDA_VISIBLE_DEVICES"] = ""  # CI has no GPU; hide one where the suite runs on a GPU
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def test_main_demo_prints_the_lifecycle_and_says_kernels_did_not_run():
    # on sys.path, not sys.modules (other tests install the emulator as `tensorrt` there)
    if importlib.machinery.PathFinder.find_spec("tensorrt") is not None:
        pytest.skip("TensorRT is installed: the README's demo builds an engine there (needs a GPU)")
    command = _setup_commands()[0].split("&&")[-1].strip()
    assert command == "python3 demos/onnx_demo.py", command
    proc = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=_ci_environment())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == ("TensorRT is not installed: running the plugin lifecycle in pyplugins' "
                        "emulator."), proc.stdout
    # one report line per plugin node: creator, the fields the parser passed, the output shapes
    assert any(re.fullmatch(r"\[CircPad\] node 'circ_pad_0': creator CircPad:1:, fields "
                            r"\['pads'\] -> outputs \[\(2, 3, \d+, \d+\)\]", line)
               for line in lines), proc.stdout
    assert any(re.fullmatch(r"\[LReLU_TRT\] node 'lrelu_0': creator LReLU_TRT:1:, fields "
                            r"\['neg_slope'\] -> outputs \[\(2, 3, \d+, \d+\)\]", line)
               for line in lines), proc.stdout
    not_run = [line.strip() for line in lines if "kernels not run" in line]
    assert len(not_run) == 2 and all(line.startswith("kernels not run: no GPU")
                                     for line in not_run), proc.stdout
    assert lines[-1] == ("No GPU here: the whole plugin lifecycle ran (parse, format search, "
                         "build- and execution-phase configure, serialize, deserialize, context "
                         "clone) but not the kernels, so there is no numeric result to check."), (
        proc.stdout)
    assert "Traceback" not in proc.stderr and "[ERROR]" not in proc.stdout + proc.stderr


def test_readme_example_plugin_defines_and_registers(monkeypatch):
    example = README.split("## A plugin in 25 lines", 1)[1]
    code = re.search(r"```python\n(.*?)\n```", example, flags=re.S).group(1)
    body, last = code.split('\nif __name__ == "__main__":', 1)
    assert "\n    y = pp.run(" in last
    namespace: dict = {}
    from pyplugins.runtime.creator import unregister

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


def test_readme_names_the_import_that_registers_lrelu_trt():
    # The README says which import brings TensorRT 11's removed LReLU_TRT back; it must be the
    # one that does (`import pyplugins` alone registers no plugin).
    row = next(line for line in README.splitlines() if line.startswith("| `LeakyReLU` |"))
    assert "`import pyplugins.ops`" in row, row
    code = ("import pyplugins\n"
            "from pyplugins.emulator.registry import get_plugin_registry\n"
            "before = get_plugin_registry().get_creator('LReLU_TRT', '1', '')\n"
            "import pyplugins.ops\n"
            "after = get_plugin_registry().get_creator('LReLU_TRT', '1', '')\n"
            "print(before is None, type(after).__name__)\n")
    env = {**_ci_environment(), "PYPLUGINS_TRT": "emulator"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "LeakyReLUCreator"], proc.stdout


def test_layout_names_only_what_exists():
    block = README.split("## Layout", 1)[1].split("```", 2)[1]
    entries = re.split(r"^(?=[\w]+(?:/[\w]+)*/\s)", block, flags=re.M)
    found = {}
    for entry in filter(str.strip, entries):
        folder = entry.split()[0]
        found[folder] = re.findall(r"\b(\w+\.(?:py|cuh))\b", entry.split("checks/:")[0])
    assert {"pyplugins/", "pyplugins/emulator/", "pyplugins/runtime/", "pyplugins/checker/",
            "docs/", "demos/"} <= set(found), sorted(found)
    missing = [f for f in found if not (ROOT / f).is_dir()]
    missing += [f for f in re.findall(r"\s(\w+/)\s", block) if not (ROOT / f).is_dir()]
    missing += [f + m for f, names in found.items() if f.startswith(("pyplugins", "kernels_cu"))
                for m in names if not (ROOT / f / m).is_file()]
    assert "plugin.py" in found["pyplugins/runtime/"], found
    assert not missing, f"README's Layout names what does not exist: {missing}"
