"""``demos/qdp_demo.py`` runs as a script: without a GPU it stops before the launches and says
so; with one, JIT and AOT run, agree and match NumPy. It compiles its AOT kernel with NVRTC
(cuda.bindings) or nvcc: skipped where neither is here."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _ptx_compiler() -> bool:
    try:
        from cuda.bindings import nvrtc

        return nvrtc.nvrtcVersion()[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS
    except Exception:  # noqa: BLE001 - no NVRTC library: nvcc then
        return shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").is_file()


pytestmark = pytest.mark.skipif(not _ptx_compiler(), reason="needs NVRTC or nvcc for the PTX")


def run_demo(*args: str) -> str:
    """Run ``demos/qdp_demo.py`` in a fresh interpreter; it must exit 0. Returns its stdout."""
    result = subprocess.run([sys.executable, str(REPO / "demos" / "qdp_demo.py"), *args],
                            cwd=REPO, check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_demo_without_the_gpu_says_what_ran_and_what_did_not():
    out = run_demo("--device", "cpu")
    assert "qdp JIT (request PREFER_JIT)" in out and "qdp AOT (request PREFER_AOT)" in out
    assert "AOT kernel 'scale_f32' not launched" in out and "extra arguments [4000]" in out
    assert "The kernels were not run" in out


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_demo_on_a_gpu_runs_both_and_matches_numpy(dtype):
    out = run_demo("--dtype", dtype)
    assert "OK: JIT and AOT ran and agree; y matches NumPy." in out
