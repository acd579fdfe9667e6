"""The CUDA device kernels run on: whether there is one, its size, and views of its memory.

Everything here is host-side and imports CuPy lazily; a missing CuPy raises
:class:`~pyplugins.errors.MissingDependencyError` with the install command. Plugins call
:func:`usable_device` and :func:`resident_blocks`/:func:`multiprocessors` in ``configure_plugin``
to size their launches; :func:`device_view` and :func:`external_stream` serve plugins that prefer
CuPy array code in ``enqueue`` (slower than a :class:`pyplugins.runtime.launch.Launch`).

Example:
    >>> from pyplugins._config import override
    >>> from pyplugins.runtime.device import usable_device
    >>> with override(device="cpu"):
    ...     usable_device() is None
    True
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any, Optional, Sequence

import numpy as np

from pyplugins._config import knobs
from pyplugins.errors import LaunchError, install_hint, missing, require

__all__ = ["current_device", "device_view", "external_stream", "function_handle", "import_cupy",
           "import_driver", "multiprocessors", "no_device_reason", "resident_blocks",
           "usable_device"]


def usable_device() -> Optional[int]:
    """The current CUDA device when kernels can run in this process, else None.

    None when ``PYPLUGINS_DEVICE=cpu``, when CuPy is missing, or when it sees no device. On such
    a machine the emulator still calls the execution-phase ``configure_plugin`` (TensorRT always
    does) but never ``enqueue``, so a plugin builds no launch there.

    Example:
        >>> from pyplugins._config import override
        >>> with override(device="cpu"):
        ...     usable_device() is None
        True
    """
    if no_device_reason() is not None:
        return None
    return current_device()


def no_device_reason() -> Optional[str]:
    """Why kernels cannot run in this process, in plain words, or None when a GPU is usable.

    The sentence says there is no usable CUDA GPU first; what CuPy or CUDA reported (a missing
    driver, an old driver, no device) follows in parentheses.

    Example:
        >>> from pyplugins._config import override
        >>> with override(device="cpu"):
        ...     no_device_reason()
        'no usable CUDA GPU (PYPLUGINS_DEVICE=cpu asks for none)'
    """
    if knobs.device == "cpu":
        return "no usable CUDA GPU (PYPLUGINS_DEVICE=cpu asks for none)"
    return _probe()


@functools.lru_cache(maxsize=1)
def _probe() -> Optional[str]:
    """The no-GPU reason of this process (probed once: the answer does not change)."""
    try:
        import cupy  # noqa: PLC0415 - optional, heavy dependency
    except Exception as err:  # noqa: BLE001 - ImportError, or a CUDA library that fails to load
        return (f"no usable CUDA GPU (CuPy is not importable: {err}; install it with "
                f"{install_hint('cupy')})")
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as err:  # noqa: BLE001 - no driver, an old one, no device: "no GPU"
        return f"no usable CUDA GPU (CUDA reports: {err})"
    return None if count > 0 else "no usable CUDA GPU (CUDA reports no device)"


@functools.lru_cache(maxsize=None)
def multiprocessors(device: int) -> int:
    """The number of streaming multiprocessors of ``device`` (to size grid-stride grids)."""
    runtime = import_cupy().cuda.runtime
    return int(runtime.deviceGetAttribute(runtime.cudaDevAttrMultiProcessorCount, int(device)))


def resident_blocks(function: Any, block: int, shared_mem: int = 0, *,
                    device: Optional[int] = None) -> int:
    """How many blocks of ``block`` threads fit on the whole device at once (>= 1).

    Use it to size persistent-style grids (a grid-stride loop over the data) in
    ``configure_plugin``: ``grid = min(blocks_needed, resident_blocks(fn, 256))``.

    Raises:
        MissingDependencyError: CuPy is not installed.
    """
    cupy = import_cupy()
    dev = current_device() if device is None else int(device)
    ptr = function_handle(function, dev, "kernel")
    with cupy.cuda.Device(dev):
        per_sm = import_driver().occupancyMaxActiveBlocksPerMultiprocessor(ptr, int(block),
                                                                    int(shared_mem))
        sms = cupy.cuda.Device(dev).attributes["MultiProcessorCount"]
    return max(1, int(per_sm) * int(sms))


def device_view(ptr: int, shape: Sequence[int], dtype: Any, *, device: int) -> Any:
    """A ``cupy.ndarray`` over ``ptr`` without copying (C-contiguous ``shape`` of ``dtype``).

    For plugins that prefer array code in ``enqueue``. It allocates nothing on the device but
    builds Python objects per call, so it is several times slower than a :class:`Launch`; and
    the view must not outlive the ``enqueue`` call that received ``ptr`` (TensorRT owns the
    memory). Run array code on TensorRT's stream: ``with external_stream(stream, device=d):``.

    Args:
        ptr: the device address (``inputs[i]`` / ``outputs[i]`` in ``enqueue``).
        shape: the tensor's dims (from the tensor descriptor).
        dtype: a NumPy dtype (see :func:`pyplugins.dtypes.numpy_from_trt`).
        device: the device that owns the memory.
    """
    cupy = import_cupy()
    dt = np.dtype(dtype)
    dims = tuple(int(s) for s in shape)
    nbytes = math.prod(dims) * dt.itemsize
    mem = cupy.cuda.UnownedMemory(int(ptr), nbytes, None, int(device))
    return cupy.ndarray(dims, dt, cupy.cuda.MemoryPointer(mem, 0))


@functools.lru_cache(maxsize=64)
def external_stream(stream: int, *, device: int) -> Any:
    """A ``cupy.cuda.ExternalStream`` for TensorRT's stream handle, cached per (stream, device).

    It owns nothing: destroying it leaves the CUDA stream alone. (CuPy 14 deprecates
    ExternalStream in favour of ``Stream.from_external``, which wants an object with
    ``__cuda_stream__`` rather than a bare handle and a device; the warning is silenced here.)
    """
    cupy = import_cupy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cupy.cuda.ExternalStream(int(stream), int(device))


def import_cupy() -> Any:
    """The ``cupy`` module (imported on first use).

    Raises:
        MissingDependencyError: CuPy is not installed; the message gives the install command.
    """
    return require("cupy", "launching kernels")


def import_driver() -> Any:
    """CuPy's Cython binding of the CUDA driver API (``cupy_backends.cuda.api.driver``).

    Raises:
        MissingDependencyError: CuPy is not installed.
    """
    try:
        from cupy_backends.cuda.api import driver  # noqa: PLC0415 - optional dependency
    except ImportError as err:
        raise missing("cupy", "launching kernels") from err
    return driver


def current_device() -> int:
    """The CUDA runtime's current device id (needs CuPy)."""
    return int(import_cupy().cuda.runtime.getDevice())


def function_handle(function: Any, device: int, name: str) -> int:
    """The ``CUfunction`` handle of ``function`` on ``device``, as an int.

    Args:
        function: a ``cupy.RawKernel`` (loaded on ``device`` if needed), a
            ``cupy.cuda.Function``, or a handle int (returned as is).
        device: the CUDA device id.
        name: the kernel's name, for the error message.

    Raises:
        LaunchError: ``function`` is none of those.

    Example:
        >>> function_handle(0x1234, 0, "k")
        4660
    """
    if isinstance(function, (int, np.integer)) and not isinstance(function, bool):
        return int(function)
    if hasattr(function, "kernel"):  # cupy.RawKernel: compiled and loaded per device
        with import_cupy().cuda.Device(device):
            return int(function.kernel.ptr)
    if hasattr(function, "ptr"):  # cupy.cuda.Function
        return int(function.ptr)
    msg = (f"Launch of kernel {name!r} needs a cupy.RawKernel, a cupy.cuda.Function or a "
           f"CUfunction int (got {type(function).__name__}).")
    raise LaunchError(msg)
