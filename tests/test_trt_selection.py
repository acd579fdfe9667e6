"""pyplugins.trt picks real TensorRT or the emulator as PYPLUGINS_TRT says (fresh processes)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pyplugins._config import knobs, override

CODE = ("import warnings; warnings.simplefilter('always');\n"
        "import pyplugins.trt as trt\n"
        "print(getattr(trt, '__pyplugins_emulator__', False))\n")


def _run(env_value):
    env = dict(os.environ)
    env.pop("PYPLUGINS_TRT", None)
    if env_value is not None:
        env["PYPLUGINS_TRT"] = env_value
    return subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env,
                          timeout=60)


def _real_trt_importable() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import tensorrt; tensorrt.IPluginV2DynamicExt"],
                           capture_output=True, timeout=60)
    return probe.returncode == 0


def test_auto_falls_back_to_emulator_with_one_warning():
    if _real_trt_importable():
        pytest.skip("real TensorRT is installed")
    proc = _run(None)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"
    assert proc.stderr.count("TensorRT is not installed") == 1


def test_emulator_choice_is_silent():
    proc = _run("emulator")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"
    assert "TensorRT is not installed" not in proc.stderr


def test_tensorrt_choice_fails_clearly_without_tensorrt():
    if _real_trt_importable():
        pytest.skip("real TensorRT is installed")
    proc = _run("tensorrt")
    assert proc.returncode != 0
    assert "PYPLUGINS_TRT=tensorrt" in proc.stderr and "pip install 'tensorrt>=10,<12'" in proc.stderr


def test_bad_knob_value_is_named():
    with override(trt="nvidia"):
        with pytest.raises(ValueError, match="PYPLUGINS_TRT='nvidia'"):
            knobs.trt


def test_override_restores_environment():
    before = os.environ.get("PYPLUGINS_TRT_VERSION")
    with override(trt_version="10.16"):
        assert knobs.trt_version == "10.16"
    assert os.environ.get("PYPLUGINS_TRT_VERSION") == before
