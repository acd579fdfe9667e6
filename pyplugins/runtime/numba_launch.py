"""Numba CUDA kernels as a plugin's launch: compiled at configure time, one launch in ``enqueue``.

A :class:`NumbaKernel` wraps a plain Python kernel function (not yet ``@cuda.jit``-decorated, so
importing a plugin module imports no numba); :class:`NumbaLaunch` is built from it in
``configure_plugin`` and is called in ``enqueue`` exactly like a :class:`pyplugins.runtime.launch.Launch`:
``launch(stream, *pointers)``. Each :class:`ArraySlot` argument becomes, per call, a device array
over the pointer TensorRT passed (no copy, no allocation, no synchronization); scalars are fixed
at build time.

Two backends, chosen once per process when numba is first imported:

- a GPU: the kernel is compiled for the launch's argument types and bound to the device at build
  time, and its ``CUfunction`` is packed into a :class:`pyplugins.runtime.launch.Launch` with
  numba's flattened arguments (:mod:`pyplugins.runtime.numba_driver`): a call is then the same
  prepacked ``cuLaunchKernel`` as a CUDA C++ kernel's (``path == "driver"``). Where numba-cuda
  gives no usable handle, or launches the kernel its own way (debug, cooperative), a warning on
  the ``pyplugins`` logger says why and each call wraps each pointer with
  ``cuda.from_cuda_array_interface(..., owner=None, sync=False)`` and launches through the
  compiled kernel's ``launch`` on ``cuda.external_stream(stream)`` (cached per stream handle;
  ``path == "numba"``), still skipping the dispatcher's per-call type inference.
- numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``): the kernel runs on the CPU, and pointers
  are host addresses (the emulator's host buffers, :mod:`pyplugins.checker.host_buffers`),
  wrapped as NumPy views without copies. The simulator checks every index: a kernel reading or
  writing past a tensor raises ``IndexError`` instead of corrupting memory.

numba reads ``NUMBA_ENABLE_CUDASIM`` when ``numba`` itself is first imported. :func:`numba_cuda`
sets it to ``1`` before that import when no GPU is usable here (:func:`pyplugins.runtime.device.
usable_device` is None, which includes ``PYPLUGINS_DEVICE=cpu``), unless the variable is already
set. ``pyplugins check`` calls :func:`prefer_simulator` before it imports the plugin module, so
modules that import numba at the top (NVIDIA's style) get the simulator too. A process that
imported numba earlier keeps the mode it got; set ``NUMBA_ENABLE_CUDASIM=1`` yourself then.

Example:
    >>> import numpy as np
    >>> slot = ArraySlot((2, 3), np.float32)
    >>> slot.shape, slot.dtype, slot.nbytes
    ((2, 3), dtype('float32'), 24)
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import types
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from pyplugins.errors import LaunchError, require
from pyplugins.runtime.launch import check_launch_limits, launch_dims
from pyplugins.runtime.numba_driver import driver_launch
from pyplugins.runtime.device import usable_device

__all__ = ["ArraySlot", "NumbaKernel", "NumbaLaunch", "numba_cuda", "prefer_simulator",
           "simulated"]

_SIM_ENV = "NUMBA_ENABLE_CUDASIM"
_lock = threading.Lock()
logger = logging.getLogger("pyplugins")


def prefer_simulator() -> bool:
    """Before numba is imported: ask for its CUDA simulator when no GPU is usable here.

    Sets ``NUMBA_ENABLE_CUDASIM=1`` when ``numba`` is not imported yet, the variable is unset and
    :func:`pyplugins.runtime.device.usable_device` is None. Returns whether the simulator is (or will be)
    the backend.

    Example:
        >>> isinstance(prefer_simulator(), bool)
        True
    """
    if "numba" not in sys.modules and _SIM_ENV not in os.environ and usable_device() is None:
        os.environ[_SIM_ENV] = "1"
    if "numba.cuda" in sys.modules:
        return simulated()
    return os.environ.get(_SIM_ENV, "0").strip() not in ("", "0")


def numba_cuda() -> Any:
    """``numba.cuda``, imported after :func:`prefer_simulator`.

    Raises:
        MissingDependencyError: numba or numba-cuda is not installed.
    """
    module = sys.modules.get("numba.cuda")
    if module is not None:
        return module
    prefer_simulator()
    _numpy_names_numba_cuda_needs()
    return require("numba.cuda", "numba kernels")


def _numpy_names_numba_cuda_needs() -> None:
    """Give NumPy back ``row_stack`` (removed in NumPy 2.5) before numba-cuda is imported.

    numba-cuda 0.30.4 (the newest release on 2026-11-23) registers an overload for
    ``np.row_stack`` when ``numba.cuda`` is first imported; under NumPy 2.5 that import fails
    with ``AttributeError: module 'numpy' has no attribute 'row_stack'`` (seen on the GPU
    machine). ``row_stack`` was an exact alias of ``vstack`` in every NumPy that had it, so the
    alias restores what numba-cuda expects and changes nothing else. Remove once numba-cuda
    stops naming it.
    """
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def simulated() -> bool:
    """Whether ``numba.cuda`` is imported and is numba's CUDA simulator (False if not imported)."""
    cuda = sys.modules.get("numba.cuda")
    return cuda is not None and cuda.jit.__module__.startswith("numba.cuda.simulator")


@dataclass(frozen=True)
class ArraySlot:
    """A kernel argument that is a C-contiguous array over the pointer given at each call.

    Args:
        shape: the tensor's concrete dims (the kernel sees an array of this shape).
        dtype: its NumPy element type.
    """

    shape: Tuple[int, ...]
    dtype: Any

    def __post_init__(self) -> None:
        shape = tuple(self.shape) if isinstance(self.shape, (tuple, list)) else (self.shape,)
        if not shape or not all(isinstance(s, (int, np.integer)) and s >= 0 for s in shape):
            msg = (f"ArraySlot shape must be one or more non-negative ints (got "
                   f"{self.shape!r}); pass (1,) for a scalar tensor.")
            raise LaunchError(msg)
        object.__setattr__(self, "shape", tuple(int(s) for s in shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @property
    def nbytes(self) -> int:
        """Bytes of the array."""
        return math.prod(self.shape) * self.dtype.itemsize


class NumbaKernel:
    """A numba CUDA kernel written as a plain Python function, compiled per device and types.

    Use it as a plugin class attribute (it holds no device state, so clones share it). The
    function is decorated with ``numba.cuda.jit`` on first use, never at import.

    Args:
        function: the kernel's Python function. It may use the global name ``cuda`` without
            importing it: it is bound to ``numba.cuda`` when the kernel is compiled, so the
            plugin module imports no numba (and numba's simulator can still be chosen).
        name: for messages; defaults to the function's name.

    Example:
        >>> def scale(x, y, n, a):
        ...     pass
        >>> NumbaKernel(scale)
        NumbaKernel('scale')
    """

    def __init__(self, function: Callable[..., None], *, name: Optional[str] = None) -> None:
        if not callable(function):
            msg = f"NumbaKernel needs the kernel's Python function (got {function!r})."
            raise TypeError(msg)
        self.function = function
        self.name = name or getattr(function, "__name__", "kernel")
        self._jitted: Any = None
        self._compiled: Dict[Tuple[Any, ...], Any] = {}

    def __repr__(self) -> str:
        return f"NumbaKernel({self.name!r})"

    def __deepcopy__(self, memo: dict) -> "NumbaKernel":
        return self  # compiled code is immutable and per device: shared by clones

    def jitted(self) -> Any:
        """The ``numba.cuda.jit`` dispatcher (a ``FakeCUDAKernel`` in the simulator)."""
        if self._jitted is None:
            cuda = numba_cuda()
            with _lock:
                if self._jitted is None:
                    self._jitted = cuda.jit(_with_cuda_global(self.function, cuda))
        return self._jitted

    def compiled(self, args: Sequence[Any], device: int) -> Any:
        """The kernel compiled for ``args``' types on ``device`` and loaded there (cached).

        In the simulator there is nothing to compile: the dispatcher itself is returned.
        Call from ``configure_plugin``, never from ``enqueue``.
        """
        jitted = self.jitted()
        if simulated():
            return jitted
        from numba import typeof  # noqa: PLC0415 - numba is optional
        from numba.core import types as nbtypes  # noqa: PLC0415 - numba is optional

        sig = tuple(nbtypes.Array(typeof(a.dtype.type(0)), len(a.shape), "C")
                    if isinstance(a, ArraySlot) else typeof(a) for a in args)
        key = (int(device), sig)
        with _lock:
            hit = self._compiled.get(key)
            if hit is None:
                cuda = numba_cuda()
                with cuda.gpus[int(device)]:
                    hit = jitted.compile(sig)
                    hit.bind()  # load the module on this device now, not in enqueue
                self._compiled[key] = hit
        return hit


class NumbaLaunch:
    """One launch of a :class:`NumbaKernel` with fixed configuration, called like ``Launch``.

    Build it in ``configure_plugin``; call it in ``enqueue`` as ``launch(stream, *pointers)``,
    one pointer per :class:`ArraySlot` in ``args``, in order.

    Args:
        kernel: the :class:`NumbaKernel`.
        grid, block: as for :class:`pyplugins.runtime.launch.Launch` (a zero in ``grid``: no launch).
        args: the kernel's parameters: an :class:`ArraySlot` per tensor, NumPy scalars
            (``np.int64(n)``, ``np.float32(a)``) for the rest.
        device: the device the launch runs on (ignored by the simulator).
        name: for messages; defaults to the kernel's name.

    Attributes:
        path: how a call launches: ``"driver"`` (numba's compiled kernel through the prepacked
            ``cuLaunchKernel`` of a :class:`~pyplugins.runtime.launch.Launch`), ``"numba"``
            (numba's own launch, per-call device arrays: the fallback) or ``"simulator"``.
        fallback_reason: why the path is ``"numba"`` on a GPU, else None.
        prepacked: the :class:`~pyplugins.runtime.launch.Launch` a call makes on the
            ``"driver"`` path, else None.

    Raises:
        LaunchError: bad dims or arguments (Python ints/floats are refused: their C type is
            ambiguous, as for ``Launch``).
        MissingDependencyError: numba-cuda is not installed.
    """

    __slots__ = ("kernel", "grid", "block", "device", "name", "pointer_count", "skips",
                 "simulated", "spec", "path", "fallback_reason", "prepacked", "_args", "_slots",
                 "_descs", "_compiled", "_streams", "_view", "__weakref__")

    def __init__(self, kernel: NumbaKernel, grid: Any, block: Any, args: Sequence[Any] = (), *,
                 device: int = 0, name: Optional[str] = None) -> None:
        if not isinstance(kernel, NumbaKernel):
            msg = f"NumbaLaunch needs a NumbaKernel (got {type(kernel).__name__})."
            raise LaunchError(msg)
        self.kernel, self.name = kernel, name or kernel.name
        self.grid = launch_dims("grid", grid, self.name)
        self.block = launch_dims("block", block, self.name)
        check_launch_limits(self.name, self.grid, self.block)
        self.skips = 0 in self.grid
        self.device = int(device)
        for index, arg in enumerate(args):
            if not isinstance(arg, (ArraySlot, np.generic)):
                msg = (f"argument {index} of numba kernel {self.name!r} must be an ArraySlot or "
                       f"a NumPy scalar such as np.int64(n) (got {type(arg).__name__} {arg!r}).")
                raise LaunchError(msg)
        self.spec = tuple(args)
        self._args = list(args)
        self._slots = [i for i, a in enumerate(args) if isinstance(a, ArraySlot)]
        self.pointer_count = len(self._slots)
        self._compiled = kernel.compiled(args, self.device)
        self.simulated = simulated()
        self._view = _host_view() if self.simulated else _device_view(numba_cuda())
        # The per-slot interface dicts are built once; a call only stores the pointer in them.
        self._descs = [_interface(args[i]) for i in self._slots]
        self._streams: Dict[int, Any] = {}
        self.prepacked: Any = None
        self.fallback_reason: Optional[str] = None
        self.path = "simulator" if self.simulated else "numba"
        if not self.simulated and not self.skips:
            self.prepacked, self.fallback_reason = self._driver_launch()
            if self.prepacked is not None:
                self.path = "driver"
            else:
                logger.warning("numba kernel %r launches through numba's own launch (several "
                               "microseconds more per enqueue), not the prepacked driver call: "
                               "%s", self.name, self.fallback_reason)

    def _driver_launch(self) -> Tuple[Any, Optional[str]]:
        return driver_launch(numba_cuda(), self._compiled, self.spec, self.grid, self.block,
                             self.device, self.name)

    def __call__(self, stream: int, *pointers: int) -> None:
        """Launch on ``stream`` with device arrays over ``pointers``.

        Raises:
            LaunchError: wrong number of pointers, or numba (or the driver) refused the launch.
        """
        launch = self.prepacked
        if launch is not None:  # the prepacked driver call (path "driver")
            launch(stream, *pointers)
            return
        if len(pointers) != self.pointer_count:
            msg = (f"numba launch of kernel {self.name!r} takes {self.pointer_count} pointer(s) "
                   f"after the stream (got {len(pointers)}: {pointers!r}).")
            raise LaunchError(msg)
        if self.skips:
            return
        args = self._args
        for slot, desc, ptr in zip(self._slots, self._descs, pointers):
            desc["data"] = (int(ptr), False)
            args[slot] = self._view(desc)
        if self.simulated:
            self._compiled[self.grid, self.block](*args)
            return
        numba_stream = self._streams.get(stream)
        if numba_stream is None:
            numba_stream = self._streams[stream] = numba_cuda().external_stream(int(stream))
        self._compiled.launch(args, self.grid, self.block, numba_stream, 0)

    def __deepcopy__(self, memo: dict) -> "NumbaLaunch":
        """A launch of the same compiled kernel with its own per-call argument list and dicts.

        Plugin clones (one per execution context, maybe on other threads) must not share them.
        """
        return NumbaLaunch(self.kernel, self.grid, self.block, self.spec, device=self.device,
                           name=self.name)

    def __repr__(self) -> str:
        where = "simulator" if self.simulated else f"device={self.device}, path={self.path}"
        return (f"NumbaLaunch({self.name!r}, grid={self.grid}, block={self.block}, "
                f"pointers={self.pointer_count}, {where})")


def _with_cuda_global(function: Callable[..., None], cuda: Any) -> Callable[..., None]:
    """``function`` with ``cuda`` in its globals (a copy of them; the module is left alone)."""
    if function.__globals__.get("cuda") is cuda:
        return function
    scope = dict(function.__globals__, cuda=cuda)
    bound = types.FunctionType(function.__code__, scope, function.__name__,
                               function.__defaults__, function.__closure__)
    bound.__qualname__, bound.__module__ = function.__qualname__, function.__module__
    return bound


def _interface(slot: ArraySlot) -> Dict[str, Any]:
    """An array-interface dict (CUDA's or NumPy's: the same keys) for ``slot``, data unset."""
    return {"shape": slot.shape, "typestr": slot.dtype.str, "data": (0, False),
            "strides": None, "version": 3, "descr": [("", slot.dtype.str)]}


def _device_view(cuda: Any) -> Callable[[Dict[str, Any]], Any]:
    convert = cuda.from_cuda_array_interface

    def view(desc: Dict[str, Any]) -> Any:
        return convert(desc, owner=None, sync=False)

    return view


class _HostInterface:
    """Exposes a host address through NumPy's ``__array_interface__`` (no copy)."""

    __slots__ = ("__array_interface__",)

    def __init__(self, desc: Dict[str, Any]) -> None:
        self.__array_interface__ = desc


def _host_view() -> Callable[[Dict[str, Any]], Any]:
    """The simulator's device array over a host address: a NumPy view, not a copy."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray  # noqa: PLC0415 - optional

    def view(desc: Dict[str, Any]) -> Any:
        return FakeCUDAArray(np.asarray(_HostInterface(desc)))

    return view

