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
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean no GPU
        return False


@functools.lru_cache(maxsize=None)
def gpu_count() -> int:
    """How many CUDA devices CuPy sees (0 without a GPU, or with ``PYPLUGINS_DEVICE=cpu``)."""
    if not gpu_available():
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


@functools.lru_cache(maxsize=None)
def real_trt_available() -> bool:
    """Whether NVIDIA's TensorRT (not the emulator) is the active API."""
    from pyplugins import _trt
    from pyplugins.emulator.real import is_emulator

    return not is_emulator(_trt.load())


def pytest_configure(config):
    """On a GPU machine, import numba's CUDA target first, in every (xdist worker) process.

    numba picks its simulator or the GPU once, process-wide, when it is first imported
    (``pyplugins.runtime.numba_launch.prefer_simulator``). Were the first import made by an in-process
    test that asks for ``device="cpu"``, the process would stay on the simulator, and a later
    GPU test's numba kernel would read device pointers on the host: a segfault that kills the
    worker (seen on an H100 and an H200). Tests of the simulator itself run in fresh processes.
    """
    if gpu_available():
        from pyplugins.runtime.numba_launch import numba_cuda

        try:
            numba_cuda()
        except ImportError:  # numba or numba-cuda not installed: no numba test can run anyway
            pass


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU visible to CuPy")
    skip_trt = pytest.mark.skip(reason="needs the real TensorRT (tests run under the emulator)")
    skip_multi = pytest.mark.skip(reason="needs two or more CUDA GPUs visible to CuPy")
    for item in items:
        if "gpu" in item.keywords and not gpu_available():
            item.add_marker(skip_gpu)
        if "multi_gpu" in item.keywords and gpu_count() < 2:
            item.add_marker(skip_multi)
        if "trt" in item.keywords and not real_trt_available():
            item.add_marker(skip_trt)


@pytest.fixture
def trtp():
    """``tensorrt.plugin`` (the emulator's, installed as ``tensorrt`` for the test); every QDP
    plugin id a test registers is unregistered after it."""
    import sys

    from pyplugins import emulator

    installed_here = sys.modules.get("tensorrt") is not sys.modules["pyplugins.emulator"]
    emulator.install()
    import tensorrt.plugin as module
    from pyplugins.emulator.plugin import creator, definitions

    before = set(creator.QDP_REGISTRY)
    yield module
    for plugin_id in set(creator.QDP_REGISTRY) - before:
        definitions.unregister(plugin_id)
    if installed_here:
        emulator.uninstall()
