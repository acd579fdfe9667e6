"""README: "every demo takes ``--interface v3``". Each demo's command line has it, and the two
demos that lacked it (the ONNX model and the whole-model demo) run their plugins as IPluginV3."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: qdp_demo is a tensorrt.plugin (QDP) plugin's demo: QDP is its interface, so it takes --qdp.
DEMOS = sorted(p.stem for p in (ROOT / "demos").glob("*_demo.py") if p.stem != "qdp_demo")


def _demo(script: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.run([sys.executable, str(ROOT / "demos" / script), *args], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=300)


def test_the_readme_says_every_demo_takes_it():
    assert "every\ndemo of a pp.Plugin op takes `--interface v3`" in (ROOT / "README.md").read_text()
    assert {"onnx_demo", "model_demo", "circ_pad_demo"} <= set(DEMOS)


@pytest.mark.parametrize("name", DEMOS)
def test_every_demo_takes_interface(name, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    demo = importlib.import_module(f"demos.{name}")
    with pytest.raises(SystemExit) as stop:
        demo.main(["--interface", "v3", "--help"])
    assert stop.value.code == 0
    assert "--interface {v2,v3}" in capsys.readouterr().out


def test_onnx_demo_runs_its_nodes_as_v3():
    proc = _demo("onnx_demo.py", "--interface", "v3", "--device", "cpu", "--trace")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "--interface v3: the plugins are registered as IPluginV3." in out
    assert "C0 CircPadCreatorV3" in out and "C0 LeakyReLUCreatorV3" in out  # the trace legend
    assert "attach_to_context" in out and "get_fields_to_serialize" in out  # the V3 lifecycle


def test_model_demo_runs_its_plugins_as_v3():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx_graphsurgeon")
    proc = _demo("model_demo.py", "--interface", "v3", "--device", "cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "The plugins are registered as IPluginV3." in proc.stdout
    # without a GPU each V3 node falls back to its NumPy reference (runner._reference)
    assert proc.stdout.count("NumPy reference") == 6
    assert "replaced model matches the original" in proc.stdout
