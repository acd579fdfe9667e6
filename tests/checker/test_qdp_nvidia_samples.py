"""``pyplugins check`` on NVIDIA's own QDP sample (samples/python/quickly_deployable_plugins/
qdp_defs.py of 11.1), host side: read from a TensorRT mirror at test time (never stored here),
skipped without one. The sample imports torch at the top for its impl bodies: a stub stands in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MIRROR = Path("/work/.mirror/NVIDIA+TensorRT/repo")
SAMPLE = "samples/python/quickly_deployable_plugins/qdp_defs.py"

pytestmark = pytest.mark.skipif(not MIRROR.is_dir(), reason="no TensorRT mirror to read from")


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    work = tmp_path_factory.mktemp("qdp_sample")
    source = subprocess.run(["git", "-C", str(MIRROR), "show", f"release/11.1:{SAMPLE}"],
                            capture_output=True, text=True, check=True).stdout
    (work / "qdp_defs.py").write_text(source)
    (work / "torch.py").write_text('"""Stub: qdp_defs imports torch for impl bodies."""\n')
    return work


def check(sample, *args):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PYPLUGINS_DEVICE": "cpu"}
    run = subprocess.run([sys.executable, "-m", "pyplugins", "check", "qdp_defs.py", *args],
                         check=False, capture_output=True, text=True, env=env, cwd=sample,
                         timeout=120)
    return run.returncode, run.stdout + run.stderr


def test_circ_pad_needs_its_set_up_function_and_passes_with_it(sample):
    args = ["--plugin", "sample::circ_pad_plugin", "--input", "10x3x32x32:float32",
            "--attr", "pads=1,1,1,1"]
    code, out = check(sample, *args)
    assert code == 1 and "--call enable_" in out
    code, out = check(sample, *args, "--call", "enable_multi_tactic_circ_pad")
    assert code == 0, out
    assert "output 0: (10, 3, 34, 34) FLOAT" in out and "tactic 1" in out


def test_non_zero_declares_its_size_tensor(sample):
    code, out = check(sample, "--plugin", "sample::non_zero_plugin", "--input", "128x128:float32")
    assert code == 0, out
    assert "output 0: (16384, 2) INT32" in out and "output 1: () INT64" in out
    assert "depends on size tensor output(s) [1]" in out
