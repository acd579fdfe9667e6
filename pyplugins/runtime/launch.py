"""Capture-safe kernel launches for ``enqueue``, and zero-copy views of TensorRT's pointers.

``enqueue`` must be capture-safe (no device allocation, no host-to-device copy, no synchronize,
no compilation, work only on the stream TensorRT hands over) and short. :class:`Launch` is built
in ``configure_plugin`` from a compiled kernel, its grid, block and by-value arguments; calling it
in ``enqueue`` writes the tensor pointers into a parameter buffer packed at build time and calls
``cuLaunchKernel`` once, through CuPy's Cython binding of the driver API. A call with the same
stream and pointers as the previous one (TensorRT reuses its bindings) skips the writing and makes
the prebound call alone.

Devices: a compiled kernel (a ``CUfunction``) belongs to one device's context. A Launch records
the device it was built for; plugins rebuild it in ``configure_plugin`` on the device that owns
TensorRT's buffers (the current device when TensorRT calls ``configure_plugin`` and
``enqueue``), and ``enqueue`` must run with that device current.

Plugins that prefer array code in ``enqueue`` use :func:`pyplugins.runtime.device.device_view`
instead: slower per call than a Launch (it builds Python objects per pointer).

Example:
    >>> import numpy as np
    >>> from pyplugins.runtime.launch import Launch, POINTER
    >>> launch = Launch(0x1234, grid=0, block=256, device=0,
    ...                 args=(POINTER, POINTER, np.int64(0), np.float32(0.1)))
    >>> launch.skips  # an empty grid launches nothing: valid for empty tensors
    True
    >>> launch(0, 0, 0)  # stream, x, y
"""

from __future__ import annotations

import ctypes
import functools
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import numpy as np

from pyplugins.runtime.device import (current_device, function_handle, import_cupy, import_driver,
                                      no_device_reason)
from pyplugins.errors import LaunchError

__all__ = ["MAX_BLOCK", "MAX_GRID", "MAX_THREADS_PER_BLOCK", "POINTER", "ByValue", "Launch",
           "Unlaunchable", "check_launch_limits", "launch_dims"]

# CUDA's limits on launch dimensions (all compute capabilities pyplugins targets).
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
_DEFAULT_SHARED = 48 * 1024  # above this a kernel must opt in to more dynamic shared memory


class _PointerSlot:
    """Marks a kernel argument that is a device pointer given at each call."""

    def __repr__(self) -> str:
        return "POINTER"


POINTER = _PointerSlot()
"""Place-holder in :class:`Launch`'s ``args`` for a device pointer passed at each call."""


@dataclass(frozen=True)
class ByValue:
    """Raw bytes passed by value (a C struct laid out by hand), with the struct's alignment.

    Example:
        >>> import struct
        >>> ByValue(struct.pack("<qq", 3, 4), align=8).data[:1]
        b'\\x03'
    """

    data: bytes
    align: int

    def __post_init__(self) -> None:
        if not isinstance(self.data, (bytes, bytearray)) or not self.data:
            msg = f"ByValue data must be non-empty bytes (got {self.data!r})."
            raise LaunchError(msg)
        if not isinstance(self.align, int) or self.align < 1 or self.align & (self.align - 1):
            msg = f"ByValue align must be a power of two (got {self.align!r})."
            raise LaunchError(msg)


Dims = Union[int, Sequence[int]]
Arg = Union[_PointerSlot, np.generic, ByValue]


class Launch:
    """One kernel launch with fixed configuration, replayed in ``enqueue`` with new pointers.

    Build it in ``configure_plugin``; call it in ``enqueue`` as ``launch(stream, *pointers)``.
    A call writes the pointers into the preallocated parameter buffer and calls
    ``cuLaunchKernel``: no allocation, no copy, no synchronization, so it is capture-safe.
    When ``stream`` and ``pointers`` equal (``==``) the previous call's, the buffer already holds
    them and the call is the prebound ``cuLaunchKernel`` alone. Reusing the buffer is safe, also
    under stream capture: the driver copies each parameter out of the memory ``kernelParams``
    points to when the launch (or the captured kernel node) is made, so later writes never reach
    an earlier launch (CUDA Driver API, ``cuLaunchKernel`` and ``cuGraphAddKernelNode``: each
    ``kernelParams[i]`` "must point to a region of memory from which the actual kernel parameter
    will be copied").

    Args:
        function: the compiled kernel: a ``cupy.RawKernel`` (from :meth:`Kernel.function`), a
            ``cupy.cuda.Function``, or a raw ``CUfunction`` handle as an int. The object is kept
            alive as long as the Launch.
        grid: blocks, an int or up to three ints. A zero anywhere means no work: calls then
            launch nothing (empty tensors).
        block: threads per block, an int or up to three ints.
        args: the kernel's parameters in order: :data:`POINTER` for each pointer given per call;
            NumPy scalars (``np.int32(n)``, ``np.int64(n)``, ``np.float32(a)``...) for scalars;
            for structs, a NumPy structured scalar (``arr[0]``, ``np.zeros((), dt)[()]``) of a
            dtype with C layout (build it with ``align=True``), or :class:`ByValue`.
        shared_mem: dynamic shared memory per block in bytes.
        device: the device the kernel was loaded on; None means the current device.
        name: used in error messages; defaults to the kernel's name.

    Raises:
        LaunchError: a dimension over CUDA's limits, an argument whose C type is ambiguous
            (a Python int or float), or a struct dtype without C layout.

    Example:
        >>> import numpy as np
        >>> launch = Launch(0x1234, grid=(0,), block=(128,), device=0,
        ...                 args=(POINTER, np.int32(7)), name="k")
        >>> launch.pointer_count, launch.block
        (1, (128, 1, 1))
        >>> launch(0, 0xA0)  # an empty grid launches nothing, but the pointer is written
        >>> launch.param_bytes(0) == (0xA0).to_bytes(8, "little")
        True
    """

    __slots__ = ("name", "label", "device", "grid", "block", "shared_mem", "skips",
                 "pointer_count", "function_ptr", "layout", "_owner", "_storage", "_params",
                 "_params_ptr", "_slots", "_go", "_args", "_stream", "_pointers", "_inputs",
                 "_outputs", "_bound", "__weakref__")

    def __init__(self, function: Any, grid: Dims, block: Dims, args: Sequence[Arg] = (), *,
                 shared_mem: int = 0, device: Optional[int] = None,
                 name: Optional[str] = None) -> None:
        self.name = name or str(getattr(function, "__name__", None) or
                                getattr(function, "name", None) or "kernel")
        #: Who launches it, prefixed to error messages (``pp.Plugin`` sets "plugin 'X' ...").
        self.label = ""
        self.grid = launch_dims("grid", grid, self.name)
        self.block = launch_dims("block", block, self.name)
        self.shared_mem = _nonneg_int("shared_mem", shared_mem, self.name)
        self.skips = 0 in self.grid
        check_launch_limits(self.name, self.grid, self.block)

        self._args = tuple(args)
        self._storage, self._params, self._slots, self.layout = _pack(args, self.name)
        self.pointer_count = len(self._slots)
        self._params_ptr = self._params.ctypes.data
        self.device = current_device() if device is None else int(device)
        self._owner = function
        self.function_ptr = function_handle(function, self.device, self.name)
        # The stream and pointers of the last call (as __call__'s tuple, or enqueue's lists),
        # and _go bound to that stream: a call that repeats them is this one C call (_load
        # rebinds on any difference).
        self._stream: Any = None
        self._pointers: Optional[tuple] = None
        self._inputs: Optional[list] = None
        self._outputs: Optional[list] = None
        self._bound: Any = None
        if self.skips:
            self._go = _no_launch
            return
        driver = import_driver()
        _prepare_function(driver, self.function_ptr, self.block, self.shared_mem, self.device,
                          self.name, function)
        # Everything but (stream, kernelParams, extra) is bound now.
        self._go = functools.partial(driver.launchKernel, self.function_ptr, *self.grid,
                                     *self.block, self.shared_mem)

    def __call__(self, stream: int, *pointers: int) -> None:
        """Launch on ``stream`` with ``pointers`` filling the :data:`POINTER` slots in order.

        Raises:
            LaunchError: wrong number or type of pointers, or the driver refused the launch.
        """
        try:
            same = pointers == self._pointers and stream == self._stream
        except (TypeError, ValueError):  # objects that do not compare as ints (arrays): _load says
            same = False
        if not same:
            self._load(stream, pointers)
        try:
            self._bound()
        except Exception as err:  # CUDADriverError; cupy is imported lazily
            raise self._failed(stream, err) from err

    def enqueue(self, input_desc: Any, output_desc: Any, inputs: Sequence[int],
                outputs: Sequence[int], workspace: int, stream: int) -> None:
        """``self(stream, *inputs, *outputs)``, called with TensorRT's ``enqueue`` arguments
        (the descriptors and the workspace are not used).

        The same launch without building the argument tuple: when ``stream`` and the two lists
        equal the previous ``enqueue``'s (one compare each), the call is the prebound
        ``cuLaunchKernel`` alone; otherwise the pointers are written as ``__call__`` writes
        them, and copies of the lists kept. :class:`pyplugins.Plugin` hands TensorRT this
        bound method as the plugin's ``enqueue`` while its ``launch`` is a Launch and its
        class keeps the default ``enqueue``: the hot path is then this one Python call.

        Raises:
            LaunchError: wrong number or type of pointers, or the driver refused the launch.

        Example:
            >>> import numpy as np
            >>> launch = Launch(0x1234, grid=0, block=256, device=0,
            ...                 args=(POINTER, POINTER, np.int64(0)))
            >>> launch.enqueue([], [], [0xA0], [0xB0], 0, 7)
            >>> launch.param_bytes(0) == (0xA0).to_bytes(8, "little")
            True
        """
        try:
            same = inputs == self._inputs and outputs == self._outputs and stream == self._stream
        except (TypeError, ValueError):  # objects that do not compare as ints (arrays): _load says
            same = False
        if not same:
            self._load(stream, (*inputs, *outputs))
            # Copies: a caller that refills its own lists in place must not look like a repeat.
            self._inputs, self._outputs = list(inputs), list(outputs)
        try:
            self._bound()
        except Exception as err:  # CUDADriverError; cupy is imported lazily
            raise self._failed(stream, err) from err

    def _load(self, stream: int, pointers: tuple) -> None:
        """Write ``pointers`` into the buffer and bind the launch to ``stream`` (a cache miss)."""
        # A failed write leaves nothing cached; enqueue sets its lists after a good one.
        self._pointers = self._inputs = self._outputs = None
        try:
            self._slots[:] = pointers
        except (TypeError, ValueError) as err:
            raise self._bad_pointers(pointers) from err
        self._bound = functools.partial(self._go, stream, self._params_ptr, 0)
        self._stream, self._pointers = stream, pointers

    def __deepcopy__(self, memo: dict) -> "Launch":
        """A Launch of the same kernel with its own parameter buffer.

        Plugin clones (one per execution context, possibly on other threads) must not share the
        buffer that each call writes its pointers into.
        """
        return Launch(self._owner, self.grid, self.block, self._args,
                      shared_mem=self.shared_mem, device=self.device, name=self.name)

    def __repr__(self) -> str:
        return (f"Launch({self.name!r}, grid={self.grid}, block={self.block}, "
                f"shared_mem={self.shared_mem}, pointers={self.pointer_count}, "
                f"device={self.device})")

    def param_bytes(self, index: int) -> bytes:
        """The bytes the next launch passes as parameter ``index`` (for tests and debugging)."""
        offset, size = self.layout[index]
        return bytes(self._storage[offset:offset + size])

    def _bad_pointers(self, pointers: tuple) -> LaunchError:
        return LaunchError(
            f"{self.label + ': ' if self.label else ''}Launch of kernel {self.name!r} takes "
            f"{self.pointer_count} device pointer(s) after the stream (got {len(pointers)}: "
            f"{pointers!r}); pass ints such as inputs[0], outputs[0] from enqueue.")

    def _failed(self, stream: int, err: Exception) -> LaunchError:
        return LaunchError(
            f"{self.label + ': ' if self.label else ''}cuLaunchKernel refused kernel "
            f"{self.name!r} (grid {self.grid}, block {self.block}, "
            f"shared_mem {self.shared_mem} B, stream {stream!r}, device {self.device}): {err}. "
            "Check that the current device is the one the kernel was loaded on and that the "
            "stream belongs to it.")


class Unlaunchable:
    """Stands where a plugin keeps its :class:`Launch` until ``configure_plugin`` can build one.

    Calling it raises :class:`LaunchError` with ``why``, so an ``enqueue`` that reaches a plugin
    object without a packed launch fails with the reason instead of an ``AttributeError``.
    A plugin sets it in ``__init__`` and in ``configure_plugin`` whenever no launch can be built
    (build-phase ``-1`` dims, or no usable GPU: see :func:`pyplugins.runtime.device.usable_device`).
    :class:`pyplugins.Plugin`'s default ``configure_plugin`` does this for plugins with a
    ``plan`` hook.

    Example:
        >>> launch = Unlaunchable("plugin 'CircPad': no configure_plugin with concrete dims yet")
        >>> launch(0, 0x10, 0x20)
        Traceback (most recent call last):
        ...
        pyplugins.errors.LaunchError: plugin 'CircPad': no configure_plugin with concrete dims yet
    """

    __slots__ = ("why",)
    __pp_shared__ = True  # immutable: clones may share it (plugin.clone and the clone check know)

    def __init__(self, why: str) -> None:
        self.why = why

    def __call__(self, stream: int, *pointers: int) -> None:
        raise LaunchError(self.why)

    @classmethod
    def unconfigured(cls, plugin: str, why: str) -> "Unlaunchable":
        """For a plugin object whose execution-phase ``configure_plugin`` has not packed a launch.

        Example:
            >>> Unlaunchable.unconfigured("RMSNorm", "no configure_plugin yet").why.split(";")[0]
            "plugin 'RMSNorm': enqueue found no kernel launch (no configure_plugin yet)"
        """
        return cls(f"plugin {plugin!r}: enqueue found no kernel launch ({why}); TensorRT calls "
                   "configure_plugin with concrete dims on the same object before enqueue, and "
                   "that call builds it.")

    @classmethod
    def no_device(cls, plugin: str) -> "Unlaunchable":
        """For a ``configure_plugin`` that ran where no GPU was usable: ``enqueue`` cannot run.

        The message says so plainly, then gives the detail of
        :func:`pyplugins.runtime.device.no_device_reason`.

        Example:
            >>> from pyplugins._config import override
            >>> with override(device="cpu"):
            ...     print(Unlaunchable.no_device("Pool").why)
            plugin 'Pool': enqueue cannot run: there was no usable CUDA GPU when configure_plugin
            ran, so no kernel was compiled; run it on a machine with a CUDA GPU. Detail: no usable
            CUDA GPU (PYPLUGINS_DEVICE=cpu asks for none)
        """
        detail = no_device_reason() or "a GPU became usable only later"
        return cls(f"plugin {plugin!r}: enqueue cannot run: there was no usable CUDA GPU when "
                   f"configure_plugin ran, so no kernel was compiled; run it on a machine with a "
                   f"CUDA GPU. Detail: {detail}")

    def __deepcopy__(self, memo: dict) -> "Unlaunchable":
        return self  # immutable

    def __repr__(self) -> str:
        return f"Unlaunchable({self.why!r})"


def _no_launch(stream: int, params: int, extra: int) -> None:
    """The launch of an empty grid: nothing to do."""


# ---------------------------------------------------------------------------------------------
# build-time helpers


def launch_dims(what: str, value: Dims, name: str) -> tuple[int, int, int]:
    """``value`` (an int or 1 to 3 ints) as three launch dims for kernel ``name``.

    Raises:
        LaunchError: not 1 to 3 non-negative ints.

    Example:
        >>> launch_dims("grid", 7, "k"), launch_dims("block", (32, 4), "k")
        ((7, 1, 1), (32, 4, 1))
    """
    if isinstance(value, (int, np.integer)):
        items: tuple = (value,)
    elif isinstance(value, (tuple, list)):
        items = tuple(value)
    else:
        items = ()
    if not 1 <= len(items) <= 3 or not all(isinstance(v, (int, np.integer)) and not
                                           isinstance(v, bool) for v in items):
        msg = (f"{what} of kernel {name!r} must be an int or 1 to 3 ints "
               f"(got {value!r}).")
        raise LaunchError(msg)
    if any(v < 0 for v in items):
        msg = f"{what} of kernel {name!r} must not be negative (got {value!r})."
        raise LaunchError(msg)
    return tuple(int(v) for v in items) + (1,) * (3 - len(items))  # type: ignore[return-value]


def _nonneg_int(what: str, value: Any, name: str) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
        msg = f"{what} of kernel {name!r} must be a non-negative int (got {value!r})."
        raise LaunchError(msg)
    return int(value)


def check_launch_limits(name: str, grid: tuple[int, ...], block: tuple[int, ...]) -> None:
    """Raise :class:`LaunchError` where ``grid`` or ``block`` exceeds CUDA's launch limits.

    Example:
        >>> check_launch_limits("k", (1, 1, 1), (1024, 1, 1))
    """
    for axis, (g, limit) in enumerate(zip(grid, MAX_GRID)):
        if g > limit:
            msg = (f"grid of kernel {name!r} is {grid}: dim {'xyz'[axis]} = {g} exceeds CUDA's "
                   f"limit {limit}; launch fewer blocks and loop (grid-stride) in the kernel.")
            raise LaunchError(msg)
    if 0 in block:
        msg = f"block of kernel {name!r} is {block}: every dim must be at least 1."
        raise LaunchError(msg)
    threads = math.prod(block)
    over = [b > limit for b, limit in zip(block, MAX_BLOCK)]
    if any(over) or threads > MAX_THREADS_PER_BLOCK:
        msg = (f"block of kernel {name!r} is {block} ({threads} threads): CUDA allows at most "
               f"{MAX_BLOCK} and {MAX_THREADS_PER_BLOCK} threads per block.")
        raise LaunchError(msg)


def _prepare_function(driver: Any, ptr: int, block: tuple[int, ...], shared_mem: int,
                      device: int, name: str, function: Any) -> None:
    """Check the block against the kernel's own limit and opt in to large shared memory."""
    if isinstance(function, (int, np.integer)):
        return  # a bare handle: nothing to query without trusting it
    cupy = import_cupy()
    with cupy.cuda.Device(device):
        try:
            limit = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, ptr)
            if math.prod(block) > limit:
                msg = (f"block of kernel {name!r} is {block} ({math.prod(block)} threads) but "
                       f"this kernel can run at most {limit} threads per block on device "
                       f"{device} (register use); launch smaller blocks.")
                raise LaunchError(msg)
            if shared_mem > _DEFAULT_SHARED:
                driver.funcSetAttribute(
                    ptr, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_mem)
        except driver.CUDADriverError as err:
            msg = (f"kernel {name!r} cannot be launched with block {block} and {shared_mem} B "
                   f"of dynamic shared memory on device {device}: {err}")
            raise LaunchError(msg) from err


def _value_bytes(arg: Any, index: int, name: str) -> tuple[bytes, int]:
    """(bytes, alignment) of a by-value argument."""
    if isinstance(arg, ByValue):
        return bytes(arg.data), arg.align
    if isinstance(arg, np.void):
        dt = arg.dtype
        if dt.fields is None:
            msg = (f"argument {index} of kernel {name!r} is an unstructured np.void; pass a "
                   "structured scalar or ByValue(bytes, align).")
            raise LaunchError(msg)
        align = _c_alignment(dt)
        if not _has_c_layout(dt):
            msg = (f"argument {index} of kernel {name!r} has dtype {dt} whose layout differs "
                   "from the C struct's (padding); build it with np.dtype(fields, align=True).")
            raise LaunchError(msg)
        return arg.tobytes(), align
    if isinstance(arg, np.generic) and arg.dtype.kind in "biuf":
        return arg.tobytes(), arg.dtype.alignment
    if isinstance(arg, (bool, int, float)):
        msg = (f"argument {index} of kernel {name!r} is the Python {type(arg).__name__} "
               f"{arg!r}, whose C type is ambiguous; wrap it as np.int32(...), np.int64(...) "
               "or np.float32(...) to match the kernel's parameter.")
        raise LaunchError(msg)
    msg = (f"argument {index} of kernel {name!r} cannot be passed by value (got "
           f"{type(arg).__name__} {arg!r}); use POINTER, a NumPy scalar, a NumPy structured "
           "scalar or ByValue.")
    raise LaunchError(msg)


def _c_alignment(dt: np.dtype) -> int:
    if dt.fields is None:
        return _c_alignment(dt.base) if dt.subdtype else dt.alignment
    return max((_c_alignment(f[0]) for f in dt.fields.values()), default=1)


def _has_c_layout(dt: np.dtype) -> bool:
    """Whether a structured dtype's offsets and size are what a C compiler would choose."""
    fields = dt.fields
    if fields is None:  # a plain scalar: its own layout is C's
        return True
    offset = 0
    for field_dt, field_offset, *_ in sorted(fields.values(), key=lambda f: f[1]):
        if field_dt.fields is not None and not _has_c_layout(field_dt):
            return False
        align = _c_alignment(field_dt)
        offset = -(-offset // align) * align
        if field_offset != offset:
            return False
        offset += field_dt.itemsize
    align = _c_alignment(dt)
    return dt.itemsize == -(-offset // align) * align


def _pack(args: Sequence[Arg], name: str
          ) -> tuple[np.ndarray, np.ndarray, Any, tuple[tuple[int, int], ...]]:
    """Lay out the parameter buffer: pointer slots first, then by-value data, each aligned.

    Returns the storage bytes, the ``void*[]`` array cuLaunchKernel reads (one address per
    parameter, in parameter order), a ctypes ``uint64`` array over the pointer slots, and each
    parameter's (offset, size) in the storage.
    """
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        msg = f"args of kernel {name!r} must be a sequence (got {args!r})."
        raise LaunchError(msg)
    n_ptr = sum(1 for a in args if a is POINTER)
    layout: list[tuple[int, int]] = []
    values: list[tuple[int, bytes]] = []
    ptr_index = 0
    end = 8 * n_ptr
    max_align = 16
    for index, arg in enumerate(args):
        if arg is POINTER:
            layout.append((8 * ptr_index, 8))
            ptr_index += 1
            continue
        data, align = _value_bytes(arg, index, name)
        max_align = max(max_align, align)
        start = -(-end // align) * align
        layout.append((start, len(data)))
        values.append((start, data))
        end = start + len(data)
    raw = np.zeros(max(end, 8) + max_align, dtype=np.uint8)
    shift = (-raw.ctypes.data) % max_align
    storage = raw[shift:shift + max(end, 8)]
    for start, data in values:
        storage[start:start + len(data)] = np.frombuffer(data, dtype=np.uint8)
    base = storage.ctypes.data
    params = np.array([base + off for off, _ in layout] or [0], dtype=np.uint64)
    slots = (ctypes.c_uint64 * n_ptr).from_buffer(storage.data)  # memoryview: a Buffer when typed
    return storage, params, slots, tuple(layout)
