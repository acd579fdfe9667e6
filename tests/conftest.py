"""Shared pytest setup: markers that skip cleanly, and the emulator as the default TensorRT."""

from __future__ import annotations

import functools
import os

import pytest

# Tests exercise the emulator unless the person running them asked for real TensorRT.
os.environ.setdefault("PYPLUGINS_TRT", "emulator")


@functools.lru_cache(maxsize=None)
def gpu_available() -> bool:
    """Whether CuPy imports and sees at least one CUDA device."""
    if os.environ.get("PYPLUGINS_DEVICE", "auto") == "cpu":
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def real_trt_available() -> bool:
    """Whether NVIDIA's TensorRT (not the emulator) is the active API."""
    from pyplugins import _trt

    return not _trt.is_emulator(_trt.load())


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU visible to CuPy")
    skip_trt = pytest.mark.skip(reason="needs the real TensorRT (tests run under the emulator)")
    for item in items:
        if "gpu" in item.keywords and not gpu_available():
            item.add_marker(skip_gpu)
        if "trt" in item.keywords and not real_trt_available():
            item.add_marker(skip_trt)
