"""NumbaKernel / NumbaLaunch: argument checks, the Launch-like call, clones (CPU: numba's CUDA
simulator on host pointers; GPU: device pointers, and the same result as the CUDA C++ Launch)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("numba_cuda", reason="numba kernels need the 'numba' extra")

from pyplugins.errors import LaunchError
from pyplugins.runtime.numba_launch import (ArraySlot, NumbaKernel, NumbaLaunch, numba_cuda,
                                            simulated)


def axpy(x, y, n, a):
    i = cuda.grid(1)  # noqa: F821 - bound by NumbaKernel
    if i < n:
        y[i] = a * x[i] + y[i]


KERNEL = NumbaKernel(axpy)


def build(n=100, grid=1, dtype=np.float32):
    return NumbaLaunch(KERNEL, grid=grid, block=128,
                       args=(ArraySlot((n,), dtype), ArraySlot((n,), dtype), np.int64(n),
                             np.float32(2.0)))


def test_argument_errors_name_the_kernel_and_the_fix():
    with pytest.raises(LaunchError, match=r"argument 3 of numba kernel 'axpy' .*np\.int64"):
        NumbaLaunch(KERNEL, 1, 32, (ArraySlot((4,), np.float32),) * 2 + (np.int64(4), 2.0))
    with pytest.raises(LaunchError, match="pass \\(1,\\) for a scalar tensor"):
        ArraySlot((), np.float32)
    with pytest.raises(LaunchError, match="block of kernel 'axpy'"):
        NumbaLaunch(KERNEL, 1, 2048, ())
    with pytest.raises(TypeError, match="kernel's Python function"):
        NumbaKernel(42)


def test_a_zero_grid_launches_nothing_and_pointer_counts_are_checked():
    numba_cuda()
    launch = build(grid=0)
    assert launch.skips and launch.pointer_count == 2
    launch(0, 0, 0)  # nothing to run, nothing dereferenced
    with pytest.raises(LaunchError, match="takes 2 pointer\\(s\\) after the stream \\(got 1"):
        launch(0, 0x10)


def test_simulator_runs_on_host_pointers_without_copies():
    numba_cuda()
    if not simulated():
        pytest.skip("numba.cuda is the real CUDA target in this process")
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, dtype=np.float32)
    launch = build()
    launch(0, x.ctypes.data, y.ctypes.data)
    np.testing.assert_array_equal(y, 2 * x + 1)  # written in place: the view was no copy
    clone = copy.deepcopy(launch)
    assert clone is not launch and clone._descs[0] is not launch._descs[0]
    clone(0, x.ctypes.data, y.ctypes.data)
    np.testing.assert_array_equal(y, 4 * x + 1)
    assert "simulator" in repr(launch)


@pytest.mark.gpu
def test_gpu_numba_launch_on_device_pointers_matches_the_cuda_cpp_launch():
    import cupy as cp

    from pyplugins.runtime.launch import POINTER, Launch
    from pyplugins.ops.leaky_relu import BLOCK, LeakyReLU, grid_size
    from pyplugins.ops.leaky_relu import LeakyReLUNumba, numba_grid

    n = 10_007
    x = cp.asarray(np.random.default_rng(2).standard_normal(n).astype(np.float32))
    y_numba, y_cpp = cp.full(n, cp.nan, cp.float32), cp.full(n, cp.nan, cp.float32)
    stream = cp.cuda.Stream()
    device = cp.cuda.runtime.getDevice()
    numba_launch = NumbaLaunch(LeakyReLUNumba.numba_kernel, grid=numba_grid(n), block=256,
                               device=device, args=(ArraySlot((n,), np.float32),
                                                    ArraySlot((n,), np.float32), np.int64(n),
                                                    np.float32(0.1)))
    cpp = Launch(LeakyReLU.kernel.function("float", device), grid=grid_size(n, 4), block=BLOCK,
                 device=device, args=(POINTER, POINTER, np.int64(n), np.float32(0.1)))
    numba_launch(stream.ptr, x.data.ptr, y_numba.data.ptr)
    cpp(stream.ptr, x.data.ptr, y_cpp.data.ptr)
    stream.synchronize()
    cp.testing.assert_array_equal(y_numba, y_cpp)
    assert not numba_launch.simulated
    assert numba_launch.path == "driver", numba_launch.fallback_reason  # the prepacked call
    # numba's own launch (the fallback) on the same pointers gives the same bytes
    slow = copy.copy(numba_launch)
    slow.prepacked = None
    y_numba.fill(cp.nan)
    slow(stream.ptr, x.data.ptr, y_numba.data.ptr)
    stream.synchronize()
    cp.testing.assert_array_equal(y_numba, y_cpp)


def test_numpy_without_row_stack_gets_the_alias_numba_cuda_needs(monkeypatch):
    # NumPy 2.5 removed row_stack; numba-cuda 0.30.4 overloads it when numba.cuda is imported.
    import numpy

    from pyplugins.runtime import numba_launch

    monkeypatch.delattr(numpy, "row_stack", raising=False)
    numba_launch._numpy_names_numba_cuda_needs()
    assert numpy.row_stack is numpy.vstack
