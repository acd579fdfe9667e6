"""LReLU_TRT with a numba kernel: enqueue runs in numba's CUDA simulator on a CPU machine (through
``pyplugins check`` and ``pp.run(..., check=True)`` in fresh processes) and on the GPU; wrong numba
kernels and an NVIDIA-style numba plugin are checked on both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba_cuda", reason="numba kernels need the 'numba' extra")

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "tests" / "emulator" / "plugins"
MODULE = "pyplugins.ops.leaky_relu"


def cpu_env() -> dict:
    """A fresh process that never touches a GPU: PYPLUGINS_DEVICE=cpu selects the simulator."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env["PYPLUGINS_DEVICE"] = "cpu"
    env["PYPLUGINS_TRT"] = "emulator"
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    return env


def check_json(target, plugin, *inputs, attrs=()):
    argv = [sys.executable, "-m", "pyplugins.cli", "check", str(target), "--json"]
    if plugin:
        argv += ["--plugin", plugin]
    for spec in inputs:
        argv += ["--input", spec]
    for attr in attrs:
        argv += ["--attr", attr]
    done = subprocess.run(argv, capture_output=True, text=True, env=cpu_env(), cwd=REPO,
                          timeout=300)
    return done.returncode, json.loads(done.stdout), done.stderr


@pytest.mark.parametrize("spec", ["2x3x40:float32", "3x50:float16"])
def test_check_runs_enqueue_in_the_simulator_and_matches_the_reference(spec):
    status, report, err = check_json(MODULE, "LReLU_TRT:1:numba", spec, attrs=["neg_slope=0.2"])
    assert status == 0, err
    assert report["ok"] and report["enqueue_ran"] and report["skipped"] is None
    assert any("numba's CUDA simulator" in n for n in report["notes"])
    assert any("matched the plugin's reference" in n for n in report["notes"])


def run_on_cpu(code: str) -> str:
    """``code``'s stdout, run by a fresh CPU-only Python (:func:`cpu_env`); fails on an error."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=cpu_env(), cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_pp_run_in_the_simulator_returns_the_reference():
    code = ("import numpy as np, pyplugins as pp\n"
            "from pyplugins.testing import assert_close\n"
            "from pyplugins.ops.leaky_relu import LeakyReLUNumba\n"
            "x = np.random.default_rng(0).standard_normal((4, 33)).astype(np.float32)\n"
            "y = pp.run(LeakyReLUNumba, x, neg_slope=0.3, check=True)\n"
            "(want,) = LeakyReLUNumba(neg_slope=0.3).reference(x)\n"
            "assert_close(y, want, np.float32)\n"
            "print('ok', y.shape)\n")
    assert "ok (4, 33)" in run_on_cpu(code)


def test_every_element_is_written_once_in_full_blocks_and_the_tail():
    # 4 * 256 elements a block: one full block, a full block and a tail, the tail alone.
    code = ("import numpy as np, pyplugins as pp\n"
            "from pyplugins.ops.leaky_relu import LeakyReLUNumba, numba_grid\n"
            "for n in (1024, 1324, 5):\n"
            "    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)\n"
            "    y = pp.run(LeakyReLUNumba, x, neg_slope=0.25, check=True)\n"
            "    np.testing.assert_array_equal(y, np.where(x >= 0, x, x * np.float32(0.25)))\n"
            "    print(n, numba_grid(n))\n")
    assert run_on_cpu(code).split() == ["1024", "1", "1324", "2", "5", "1"]


def test_a_tensor_past_cudas_grid_limit_is_refused_by_name():
    from pyplugins.ops.leaky_relu import NUMBA_BLOCK, NUMBA_PER_THREAD, numba_grid
    from pyplugins.runtime.launch import MAX_GRID

    assert numba_grid(MAX_GRID[0] * NUMBA_BLOCK * NUMBA_PER_THREAD) == MAX_GRID[0]
    with pytest.raises(ValueError, match="LReLU_TRT.*split the tensor"):
        numba_grid(MAX_GRID[0] * NUMBA_BLOCK * NUMBA_PER_THREAD + 1)


def test_off_by_one_that_skips_an_element_is_caught_in_the_simulator():
    status, report, _ = check_json(PLUGINS / "bad_numba_index.py", "LReLU_TRT:1:numba_skip",
                                   "2x3x8:float32")
    assert status == 1 and report["enqueue_ran"]
    messages = [v["message"] for v in report["violations"] if v["check"] == "output_mismatch"]
    assert any("left 1 of 48 elements of output 0" in m for m in messages), report
    assert any(v["check"] == "reference_mismatch" for v in report["violations"])


def test_off_by_one_past_the_end_is_caught_in_the_simulator():
    status, report, _ = check_json(PLUGINS / "bad_numba_index.py", "LReLU_TRT:1:numba_past",
                                   "2x3x8:float32")
    assert status == 1 and not report["enqueue_ran"]
    errors = [v["message"] for v in report["violations"] if v["check"] == "callback_error"]
    assert any("IndexError" in m and "index 48 is out of bounds" in m for m in errors), report


def test_nvidia_style_numba_plugin_cannot_enqueue_in_the_simulator():
    """The simulator lacks from_cuda_array_interface and external_stream: the check says so."""
    status, report, _ = check_json(PLUGINS / "circ_pad_numba.py", None, "2x3x4x5:float32",
                                   attrs=["pads=1,1,2,0"])
    assert status == 1 and not report["enqueue_ran"]
    assert report["output_shapes"] == [[2, 3, 6, 7]]
    errors = " ".join(v["message"] for v in report["violations"])
    assert "from_cuda_array_interface" in errors


# -- GPU -----------------------------------------------------------------------------------------

def gpu_report(creator, spec, fields=None):
    from pyplugins.checker import lifecycle

    return lifecycle.run(creator, [spec], fields, device="gpu")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_numba_kernel_matches_the_reference_and_is_capture_safe(dtype):
    from pyplugins.ops.leaky_relu import LeakyReLUNumba
    from pyplugins.testing import assert_close

    x = np.random.default_rng(1).standard_normal((3, 1000)).astype(dtype)
    report = gpu_report(LeakyReLUNumba.creator, x, {"neg_slope": 0.1})
    assert report.ok, report.format()
    # ran on the GPU, capture checked: no note but the parser's negSlope one (harmless here)
    assert report.enqueue_ran and not [n for n in report.notes if "negSlope" not in n]
    assert_close(report.outputs[0], LeakyReLUNumba(neg_slope=0.1).reference(x)[0], dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("namespace, found", [("numba_skip", "left 1 of 48 elements"),
                                              ("numba_past", "wrote past the end of output 0")])
def test_gpu_off_by_one_numba_kernels_are_caught(namespace, found):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bad_numba_index_gpu",
                                                  PLUGINS / "bad_numba_index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cls = module.SkipsFirst if namespace == "numba_skip" else module.OnePast
    report = gpu_report(cls.creator, "2x3x8:float32")
    messages = [v.message for v in report.violations if v.check == "output_mismatch"]
    assert any(found in m for m in messages), report.format()


@pytest.mark.gpu
def test_gpu_nvidia_style_numba_plugin_pads_circularly():
    from pyplugins import cli

    status = cli.main(["check", str(PLUGINS / "circ_pad_numba.py"), "--input",
                       "2x3x4x5:float32", "--attr", "pads=1,1,2,0"])
    assert status == 0
    from pyplugins.emulator.registry import get_plugin_registry

    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    creator = get_plugin_registry().get_creator("CircPadNumba", "1", "")
    report = gpu_report(creator, x, {"pads": [1, 1, 2, 0]})
    assert report.ok, report.format()
    expected = np.pad(x, [(0, 0), (0, 0), (2, 0), (1, 1)], mode="wrap")
    np.testing.assert_array_equal(report.outputs[0], expected)
