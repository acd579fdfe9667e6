"""demos/model_demo.py runs end to end (build, replace, run both, compare) and checks itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx_graphsurgeon")

ROOT = Path(__file__).resolve().parents[2]


def _demo(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.run([sys.executable, str(ROOT / "demos" / "model_demo.py"), *args],
                          capture_output=True, text=True, env=env, timeout=300)


def test_model_demo_matches_on_the_cpu():
    proc = _demo("--device", "cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "replaced: RMSNorm x2, RoPE x2, CircPad x1, LReLU_TRT x1" in proc.stdout
    assert "replaced model matches the original" in proc.stdout
    assert proc.stdout.count("NumPy reference") == 6


@pytest.mark.gpu
def test_model_demo_matches_with_kernels():
    proc = _demo()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("kernel on the GPU") == 6


def test_model_demo_fails_on_a_mismatch(monkeypatch, capsys):
    sys.path.insert(0, str(ROOT))
    try:
        from demos import model_demo
        from pyplugins.models import runner
    finally:
        sys.path.remove(str(ROOT))
    real = runner.ModelRunner.infer
    monkeypatch.setattr(runner.ModelRunner, "infer",
                        lambda self, feeds: {k: v + 1e-3 for k, v in real(self, feeds).items()})
    assert model_demo.main(["--device", "cpu"]) == 1
    assert "FAILED" in capsys.readouterr().out
