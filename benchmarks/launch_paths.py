"""Section 1's launch paths: every way of launching one tiny kernel that the host-overhead table compares.

Every path launches the same compiled kernel with the plugin's own grid, block and argument
bytes (a :class:`Tiny`), so the paths differ only in how the launch is made:

- ``driver_ctypes``: ``cuLaunchKernel`` from libcuda through ctypes, arguments prepacked;
- ``driver_cupy``: the same prepacked call through CuPy's Cython driver binding
  (``cupy_backends.cuda.api.driver.launchKernel``), the binding ``pyplugins.runtime.launch`` uses;
- ``driver_cuda_bindings``: the same through cuda-python (``cuda.bindings.driver``), when
  installed; the cheaper of the two Cython rows is the *Cython floor*;
- ``pyplugins_launch``: :class:`pyplugins.runtime.launch.Launch` alone;
- ``cupy_raw``: ``RawKernel.__call__`` with pointer ints and a cached ``ExternalStream``;
- ``plugin_enqueue``: the plugin's ``enqueue`` called as TensorRT calls it: from C++, by
  ``benchmarks/cpp/trt_call.cpp``, TensorRT's pybind11 trampoline mirrored (:class:`CppTrtCall`);
  where that extension could not be built, by the Python stand-in :class:`TrtCall` (the run's
  notes say so and the result's ``harness`` is ``"python"``);
- ``plugin_enqueue_py``: the same ``enqueue`` through :class:`TrtCall` (informative: what the
  Python stand-in adds to TensorRT's own marshalling);
- ``plugin_enqueue_prebuilt``: the same ``enqueue`` with one prebuilt set of lists (informative);
- ``emulator_trampoline``: through ``pyplugins.emulator.trampoline.enqueue`` (emulator cost);
- ``vendor_sample``: NVIDIA's CuPy sample's per-enqueue pattern;
- ``python_call``: an empty Python ``enqueue`` through the same harness as ``plugin_enqueue``
  (the binding's own cost);
- ``python_call_pybind11``: the same empty ``enqueue`` on a subclass of the extension's
  ``IPluginV2DynamicExt``, so found by pybind11's own ``get_override`` (checks the harness's
  lookup of a plain plugin object against the real one).
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

#: Row order of the host-overhead table (C++ rows come from launch_floor.cu).
ORDER = ("cpp_floor", "cpp_empty", "driver_ctypes", "driver_cupy", "driver_cuda_bindings",
         "pyplugins_launch", "cupy_raw", "plugin_enqueue", "plugin_enqueue_py",
         "plugin_enqueue_prebuilt", "emulator_trampoline", "vendor_sample", "python_call",
         "python_call_pybind11")
#: Paths whose enqueue is empty (no output to check).
EMPTY = ("python_call", "python_call_pybind11")
#: The Cython bindings of cuLaunchKernel; the cheaper one per round is the Cython floor.
CYTHON = ("driver_cupy", "driver_cuda_bindings")


@dataclass
class Tiny:
    """One tiny launch, as the configured plugin packed it: kernel, grid, block, by-value args."""

    case: str
    cpp_key: str
    configured: Any
    launch: Any               # the plugin's pyplugins.runtime.launch.Launch
    function: Any             # the same kernel as a cupy.RawKernel
    values: Tuple[bytes, ...]  # by-value arguments after (x, y), as the plugin packed them
    x: Any
    y: Any
    expected: Any


class TrtCall:
    """``plugin.enqueue`` called the way TensorRT's pybind11 trampoline calls it, in Python.

    TensorRT's binding copies each C++ ``PluginTensorDesc`` into a new Python object, builds new
    Python lists of descriptors and of int pointers, and looks the override up by name on every
    call (docs/trt-protocol.md §3, §12); so does this, with the emulator's public
    ``PluginTensorDesc`` and ``Dims``. Taking the GIL is C++-side and not included. Building the
    descriptors in Python costs several times what the binding's C-level copies cost, so host
    overhead is timed through :class:`CppTrtCall` where it builds; this stand-in serves where a
    plain Python call is wanted (eager timings, profiles) and as the fallback.

    Example:
        >>> from pyplugins.emulator import PluginTensorDesc
        >>> class P:
        ...     def enqueue(self, i, o, x, y, ws, s):
        ...         return (i[0] is not d, type(x) is list, s)
        >>> d = PluginTensorDesc([2, 3])
        >>> TrtCall(P(), [d], [d], [1], [2], 0, 7)()
        (True, True, 7)
    """

    __slots__ = ("plugin", "in_desc", "out_desc", "inputs", "outputs", "workspace", "stream",
                 "_desc", "_dims")

    def __init__(self, plugin: Any, in_desc: Sequence[Any], out_desc: Sequence[Any],
                 inputs: Sequence[int], outputs: Sequence[int], workspace: int,
                 stream: int) -> None:
        from pyplugins.emulator import Dims, PluginTensorDesc

        self.plugin = plugin
        self.in_desc = [(tuple(d.dims), d.type, d.format, d.scale) for d in in_desc]
        self.out_desc = [(tuple(d.dims), d.type, d.format, d.scale) for d in out_desc]
        self.inputs, self.outputs = tuple(inputs), tuple(outputs)
        self.workspace, self.stream = int(workspace), int(stream)
        self._desc, self._dims = PluginTensorDesc, Dims

    def __call__(self) -> Any:
        desc, dims = self._desc, self._dims
        ins = [desc(dims(d), t, f, s) for d, t, f, s in self.in_desc]
        outs = [desc(dims(d), t, f, s) for d, t, f, s in self.out_desc]
        return self.plugin.enqueue(ins, outs, list(self.inputs), list(self.outputs),
                                               self.workspace, self.stream)


class CppTrtCall:
    """``plugin.enqueue`` called from C++ as TensorRT's binding calls it (``trt_call.cpp``).

    ``module`` is the built extension (:func:`benchmarks.overhead.build_trt_call`). The
    descriptors are converted once to the extension's C++ ``PluginTensorDesc``; every enqueue
    then takes the GIL, looks ``enqueue`` up by name, casts fresh descriptor and pointer lists
    and calls, from a C++ loop with the GIL released in between. Calling this object makes one
    enqueue; ``run_batch(n)`` makes ``n`` from one C++ loop, which is how
    :func:`benchmarks.timing.host_loops` times it. An enqueue that raises makes it raise
    RuntimeError (TensorRT would print the error and stop the engine).
    """

    __slots__ = ("_run", "_args")

    def __init__(self, module: Any, plugin: Any, in_desc: Sequence[Any], out_desc: Sequence[Any],
                 inputs: Sequence[int], outputs: Sequence[int], workspace: int,
                 stream: int) -> None:
        def convert(d: Any) -> Any:
            return module.desc([int(v) for v in d.dims], module.DataType(int(d.type)),
                               module.TensorFormat(int(d.format)), float(d.scale))

        self._run = module.run
        self._args = (plugin, [convert(d) for d in in_desc], [convert(d) for d in out_desc],
                      [int(p) for p in inputs], [int(p) for p in outputs], int(workspace),
                      int(stream))

    def __call__(self) -> None:
        self._run(*self._args, 1)

    def run_batch(self, calls: int) -> None:
        """``calls`` enqueues from one C++ loop."""
        self._run(*self._args, calls)


def pybind11_noop(module: Any) -> Any:
    """An empty ``enqueue`` on a Python subclass of the extension's ``IPluginV2DynamicExt``:
    the extension finds it with pybind11's own ``get_override``, as TensorRT's binding does."""
    class Noop(module.IPluginV2DynamicExt):
        def __init__(self) -> None:
            module.IPluginV2DynamicExt.__init__(self)

        def enqueue(self, input_desc: Any, output_desc: Any, inputs: Any, outputs: Any,
                    workspace: int, stream: int) -> None:
            return None

    return Noop()


def scalar(raw: bytes) -> Any:
    """Argument bytes as a NumPy scalar CuPy passes by value unchanged (bits, not meaning)."""
    kinds = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
    if len(raw) in kinds:
        return np.frombuffer(raw, kinds[len(raw)])[0]
    dt = np.dtype([("raw", np.uint64, len(raw) // 8)] if len(raw) % 8 == 0 else
                  [("raw", np.uint8, len(raw))], align=True)
    return np.frombuffer(raw, dt)[0]


class VendorSample:
    """NVIDIA's CuPy plugin sample's ``enqueue`` body, with this kernel's arguments."""

    def __init__(self, tiny: Tiny) -> None:
        self.kernel, self.grid, self.block = tiny.function, tiny.launch.grid, tiny.launch.block
        self.values = tuple(scalar(v) for v in tiny.values)

    def enqueue(self, input_desc: Any, output_desc: Any, inputs: Any, outputs: Any,
                workspace: int, stream: int) -> None:
        import cupy as cp
        from pyplugins.emulator import nptype

        inp_dtype = nptype(input_desc[0].type)
        a_mem = cp.cuda.UnownedMemory(inputs[0], int(np.prod(input_desc[0].dims)) *
                                      cp.dtype(inp_dtype).itemsize, self)
        c_mem = cp.cuda.UnownedMemory(outputs[0], int(np.prod(output_desc[0].dims)) *
                                      cp.dtype(inp_dtype).itemsize, self)
        a_ptr = cp.cuda.MemoryPointer(a_mem, 0)
        c_ptr = cp.cuda.MemoryPointer(c_mem, 0)
        a = cp.ndarray((int(np.prod(input_desc[0].dims)),), dtype=inp_dtype, memptr=a_ptr)
        c = cp.ndarray((int(np.prod(output_desc[0].dims)),), dtype=inp_dtype, memptr=c_ptr)
        cuda_stream = cp.cuda.ExternalStream(stream)
        with cuda_stream:
            self.kernel(self.grid, self.block, (a, c) + self.values)


class _Noop:
    def enqueue(self, input_desc: Any, output_desc: Any, inputs: Any, outputs: Any,
                workspace: int, stream: int) -> None:
        return None


class _Params:
    """A prepacked ``void**`` kernelParams array for (x, y, by-value args...), kept alive."""

    def __init__(self, tiny: Tiny) -> None:
        self.holders: List[Any] = [ctypes.c_void_p(tiny.x.data.ptr),
                                   ctypes.c_void_p(tiny.y.data.ptr)]
        self.holders += [ctypes.create_string_buffer(v, len(v)) for v in tiny.values]
        self.array = (ctypes.c_void_p * len(self.holders))(
            *[ctypes.addressof(h) for h in self.holders])
        self.address = ctypes.addressof(self.array)


def _ctypes_launch(tiny: Tiny, stream_ptr: int, params: _Params) -> Callable[[], Any]:
    lib = ctypes.CDLL("libcuda.so.1")
    launch = lib.cuLaunchKernel
    launch.restype = ctypes.c_int
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    fn = functools.partial(launch, ctypes.c_void_p(tiny.launch.function_ptr), *tiny.launch.grid,
                           *tiny.launch.block, tiny.launch.shared_mem,
                           ctypes.c_void_p(stream_ptr), params.array, None)
    fn.keep = (params, lib)  # type: ignore[attr-defined]
    return fn


def _cupy_launch(tiny: Tiny, stream_ptr: int, params: _Params) -> Callable[[], Any]:
    from cupy_backends.cuda.api import driver

    fn = functools.partial(driver.launchKernel, tiny.launch.function_ptr, *tiny.launch.grid,
                           *tiny.launch.block, tiny.launch.shared_mem, stream_ptr,
                           params.address, 0)
    fn.keep = params  # type: ignore[attr-defined]
    return fn


def _bindings_launch(tiny: Tiny, stream_ptr: int, params: _Params) -> Callable[[], Any]:
    from cuda.bindings import driver  # ImportError when cuda-bindings is absent

    fn = functools.partial(driver.cuLaunchKernel, driver.CUfunction(tiny.launch.function_ptr),
                           *tiny.launch.grid, *tiny.launch.block, tiny.launch.shared_mem,
                           driver.CUstream(stream_ptr), params.address, 0)
    fn.keep = params  # type: ignore[attr-defined]
    return fn


def launch_status(name: str, returned: Any) -> Optional[str]:
    """None when a driver path's return value means success, else what it returned."""
    if name == "driver_ctypes" and returned != 0:
        return f"cuLaunchKernel returned {returned}"
    if name == "driver_cuda_bindings":
        code = returned[0] if isinstance(returned, tuple) else returned
        if int(code) != 0:
            return f"cuda.bindings cuLaunchKernel returned {code}"
    return None


def variants(tiny: Tiny, stream: Any, notes: List[str],
             trt_call: Any = None) -> Dict[str, Callable]:
    """Every Python launch path of ``tiny`` on ``stream`` (a path that cannot be built is left
    out with a note); ``trt_call`` is the built ``trt_call.cpp`` extension, or None for the
    Python stand-in."""
    import cupy as cp
    from pyplugins.emulator import trampoline

    sp = int(stream.ptr)
    x, y = int(tiny.x.data.ptr), int(tiny.y.data.ptr)
    cfg = tiny.configured
    args = (cfg.in_desc, cfg.out_desc, [x], [y], 0, sp)
    params = _Params(tiny)
    out: Dict[str, Callable] = {"driver_ctypes": _ctypes_launch(tiny, sp, params)}
    for name, make in (("driver_cupy", _cupy_launch), ("driver_cuda_bindings", _bindings_launch)):
        try:
            out[name] = make(tiny, sp, params)
        except Exception as err:  # noqa: BLE001 - a binding that is not installed is a note, not a failure
            notes.append(f"{tiny.case} {name}: not measured ({type(err).__name__}: {err})")
    out.update({
        "pyplugins_launch": functools.partial(tiny.launch, sp, x, y),
        "cupy_raw": functools.partial(tiny.function, tiny.launch.grid, tiny.launch.block,
                                      (x, y) + tuple(scalar(v) for v in tiny.values),
                                      shared_mem=tiny.launch.shared_mem,
                                      stream=cp.cuda.ExternalStream(sp)),
        "plugin_enqueue_prebuilt": functools.partial(cfg.plugin.enqueue, *args),
        "emulator_trampoline": functools.partial(trampoline.enqueue, cfg.plugin, *args),
        "vendor_sample": functools.partial(VendorSample(tiny).enqueue, *args),
    })
    if trt_call is None:
        out["plugin_enqueue"] = TrtCall(cfg.plugin, *args)
        out["python_call"] = TrtCall(_Noop(), *args)
    else:
        out["plugin_enqueue"] = CppTrtCall(trt_call, cfg.plugin, *args)
        out["plugin_enqueue_py"] = TrtCall(cfg.plugin, *args)
        out["python_call"] = CppTrtCall(trt_call, _Noop(), *args)
        out["python_call_pybind11"] = CppTrtCall(trt_call, pybind11_noop(trt_call), *args)
    return out
