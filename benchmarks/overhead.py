"""Sections 1 and 2: host cost of one ``enqueue``, and CUDA-graph replay of captured enqueues.

Every path launches the same compiled kernel (``Kernel(...).function(...)``, the one the plugin
uses) on a tiny problem, on one non-blocking stream:

- ``cpp_floor``: ``<<<>>>`` from C++ (``benchmarks/cpp/launch_floor.cu``, built with nvcc now);
- ``driver_ctypes``: ``cuLaunchKernel`` from libcuda through ctypes, arguments prepacked;
- ``pyplugins_launch``: :class:`pyplugins.launch.Launch` alone (CuPy's Cython driver binding);
- ``cupy_raw``: ``RawKernel.__call__`` with pointer ints and a cached ``ExternalStream``;
- ``vendor_sample``: NVIDIA's CuPy sample's per-enqueue pattern (UnownedMemory ->
  MemoryPointer -> ndarray per pointer, a new ExternalStream, ``with stream:``, the call);
- ``plugin_enqueue``: the shipped plugin's ``enqueue`` called as TensorRT calls it;
- ``emulator_trampoline``: the same through ``pyplugins.emulator.trampoline.enqueue``, which
  copies descriptors per call (an emulator cost, not TensorRT's; informative only);
- ``python_call``: a Python method taking enqueue's six arguments and doing nothing.
"""

from __future__ import annotations

import ctypes
import functools
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from benchmarks import driver, timing
from benchmarks.cases import select

CPP_SOURCE = Path(__file__).resolve().parent / "cpp" / "launch_floor.cu"
_C_ORDER = ("cpp_floor", "driver_ctypes", "pyplugins_launch", "cupy_raw", "plugin_enqueue",
            "emulator_trampoline", "vendor_sample", "python_call")


@dataclass
class Tiny:
    """One tiny launch: the kernel, its grid, the by-value arguments after (x, y), buffers."""

    case: str
    function: Any
    grid: int
    block: int
    values: Tuple[Any, ...]
    x: Any
    y: Any
    expected: Any
    fields: Dict[str, Any]


def _leaky_relu(cp: Any) -> Tiny:
    from pyplugins.kernels import Kernel

    n = 1024
    x = driver.random_array((n,), "float32", cp.random.default_rng(1))
    fn = Kernel("leaky_relu.cu", "leaky_relu<{T}>").function("float")
    expected = cp.where(x >= 0, x, x * np.float32(0.01))
    return Tiny("LeakyReLU", fn, 1, 256, (np.int64(n), np.float32(0.01)), x,
                cp.empty_like(x), expected, {"neg_slope": 0.01})


def circ_pad_params(in_shape: Tuple[int, ...], pads: List[int], itemsize: int,
                    block: int) -> Tuple[Any, int]:
    """``CircPadParams`` (kernels_cu/circ_pad.cu's launch contract) as a NumPy struct, + grid."""
    rank = len(in_shape)
    in_dims = [1] * (8 - rank) + list(in_shape)
    out_dims = list(in_dims)
    shift = [0] * 8
    for i in range(len(pads) // 2):
        d = 7 - i
        out_dims[d] += pads[2 * i] + pads[2 * i + 1]
        shift[d] = (-pads[2 * i]) % in_dims[d]
    strides = [int(np.prod(in_dims[d + 1:])) for d in range(8)]
    rows = int(np.prod(out_dims[:7]))
    group = 1
    while group < 32 and group < out_dims[7]:
        group *= 2
    unroll = 4 if itemsize >= 8 else 32 // itemsize
    strip_len = out_dims[7] if out_dims[7] <= 8 * group * unroll else 8 * group * unroll
    strips = -(-out_dims[7] // strip_len)
    dt = np.dtype([("in_dims", "<i8", 8), ("out_dims", "<i8", 8), ("shift", "<i8", 8),
                   ("in_strides", "<i8", 8), ("rows", "<i8"), ("strips", "<i8"),
                   ("strip_len", "<i8"), ("group", "<i8")], align=True)
    value = np.zeros((), dt)
    value["in_dims"], value["out_dims"], value["shift"] = in_dims, out_dims, shift
    value["in_strides"], value["rows"], value["strips"] = strides, rows, strips
    value["strip_len"], value["group"] = strip_len, group
    return value[()], -(-rows * strips * group // block)


def _circ_pad(cp: Any) -> Tiny:
    from pyplugins.kernels import Kernel

    pads = [1, 1, 1, 1]
    x = driver.random_array((1, 1, 32, 32), "float32", cp.random.default_rng(2))
    params, grid = circ_pad_params(x.shape, pads, 4, 256)
    fn = Kernel("circ_pad.cu", "circ_pad<{T}>").function("float")
    expected = cp.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="wrap")
    return Tiny("CircPad", fn, grid, 256, (params,), x, cp.empty_like(expected), expected,
                {"pads": pads})


class VendorSample:
    """NVIDIA's CuPy plugin sample's ``enqueue`` body, with this kernel's arguments."""

    def __init__(self, tiny: Tiny) -> None:
        self.kernel, self.tiny = tiny.function, tiny

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
            self.kernel((self.tiny.grid,), (self.tiny.block,), (a, c) + self.tiny.values)


class _Noop:
    def enqueue(self, input_desc: Any, output_desc: Any, inputs: Any, outputs: Any,
                workspace: int, stream: int) -> None:
        return None


def _libcuda_launch(tiny: Tiny, stream_ptr: int) -> Callable[[], int]:
    """A prepacked ``cuLaunchKernel`` through ctypes (the bare driver-API path)."""
    lib = ctypes.CDLL("libcuda.so.1")
    launch = lib.cuLaunchKernel
    launch.restype = ctypes.c_int
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    holders: List[Any] = [ctypes.c_void_p(tiny.x.data.ptr), ctypes.c_void_p(tiny.y.data.ptr)]
    holders += [ctypes.create_string_buffer(np.asarray(v).tobytes()) for v in tiny.values]
    params = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
    fn = functools.partial(launch, ctypes.c_void_p(int(tiny.function.kernel.ptr)), tiny.grid, 1,
                           1, tiny.block, 1, 1, 0, ctypes.c_void_p(stream_ptr), params, None)
    fn.keep = (holders, params, lib)  # type: ignore[attr-defined]
    return fn


def _variants(tiny: Tiny, stream: Any, notes: List[str]) -> Tuple[Dict[str, Callable], Any]:
    import cupy as cp
    from pyplugins.emulator import trampoline
    from pyplugins.launch import POINTER, Launch

    sp = int(stream.ptr)
    x, y = int(tiny.x.data.ptr), int(tiny.y.data.ptr)
    ext = cp.cuda.ExternalStream(sp)
    launch = Launch(tiny.function, tiny.grid, tiny.block, (POINTER, POINTER) + tiny.values)
    out: Dict[str, Callable] = {
        "driver_ctypes": _libcuda_launch(tiny, sp),
        "pyplugins_launch": functools.partial(launch, sp, x, y),
        "cupy_raw": functools.partial(tiny.function, (tiny.grid,), (tiny.block,),
                                      (x, y) + tiny.values, stream=ext),
    }
    configured = None
    case = select([tiny.case])[0]
    try:
        configured = driver.configure(case.plugin_class(), tiny.fields, [tiny.x.shape],
                                      [tiny.x.dtype.name], name="overhead")
    except (ImportError, AttributeError) as err:
        notes.append(f"{tiny.case}: plugin not importable yet ({type(err).__name__}: {err}); "
                     "plugin rows skipped")
    except driver.SetupError as err:
        notes.append(f"{tiny.case}: plugin could not be configured: {err}")
    from pyplugins.emulator import DataType, PluginTensorDesc, TensorFormat

    in_desc = [PluginTensorDesc(list(tiny.x.shape), DataType.FLOAT, TensorFormat.LINEAR)]
    out_desc = [PluginTensorDesc(list(tiny.y.shape), DataType.FLOAT, TensorFormat.LINEAR)]
    if configured is not None:
        p = configured.plugin
        in_desc, out_desc = configured.in_desc, configured.out_desc
        out["plugin_enqueue"] = functools.partial(p.enqueue, in_desc, out_desc, [x], [y], 0, sp)
        out["emulator_trampoline"] = functools.partial(trampoline.enqueue, p, in_desc, out_desc,
                                                       [x], [y], 0, sp)
    out["vendor_sample"] = functools.partial(VendorSample(tiny).enqueue, in_desc, out_desc,
                                             [x], [y], 0, sp)
    out["python_call"] = functools.partial(_Noop().enqueue, in_desc, out_desc, [x], [y], 0, sp)
    return out, configured


def _check(tiny: Tiny, name: str, fn: Callable, stream: Any) -> Optional[str]:
    """Poison y, launch once, compare: None when right, else what went wrong."""
    import cupy as cp

    tiny.y.fill(np.nan)
    stream.synchronize()
    rc = fn()
    stream.synchronize()
    if name == "driver_ctypes" and rc != 0:
        return f"cuLaunchKernel returned {rc}"
    if name == "python_call":
        return None
    if not bool(cp.array_equal(tiny.y, tiny.expected)):
        return "output differs from the reference"
    return None


def build_cpp_floor(arch: str, workdir: Path) -> Tuple[Optional[Path], Optional[str]]:
    """nvcc-build launch_floor; (binary, None) or (None, why not)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None, "nvcc not found: C++ floor skipped"
    from pyplugins.kernels import kernels_dir

    exe = workdir / "launch_floor"
    cmd = [nvcc, "-O2", "-std=c++17", f"-arch={arch}", f"-I{kernels_dir()}", str(CPP_SOURCE),
           "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, f"nvcc failed ({' '.join(cmd)}): {done.stderr.strip()[-2000:]}"
    return exe, None


def run_cpp_floor(arch: str, calls: int, batch: int, graph_kernels: int,
                  replays: int) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pp-floor-") as tmp:
        exe, why = build_cpp_floor(arch, Path(tmp))
        if exe is None:
            return {"skipped": why}
        done = subprocess.run([str(exe), str(calls), str(batch), str(graph_kernels),
                               str(replays)], capture_output=True, text=True, check=False,
                              timeout=300)
    if done.returncode != 0:
        return {"skipped": f"launch_floor failed: {done.stderr.strip()[-2000:]}"}
    return json.loads(done.stdout)


def run(*, calls: int, batch: int, rounds: int, graph_kernels: int, graph_replays: int,
        want_overhead: bool, want_graph: bool, notes: List[str]) -> Dict[str, Any]:
    """Measure sections 1 and/or 2; the JSON-able results."""
    import cupy as cp

    arch = f"sm_{cp.cuda.Device().compute_capability}"
    result: Dict[str, Any] = {"problem": {
        "LeakyReLU": "1024 float32 elements, grid 1 x 256 threads",
        "CircPad": "float32 [1, 1, 32, 32] padded to [1, 1, 34, 34]",
    }, "calls": calls, "batch": batch, "rounds": rounds}
    cpp = run_cpp_floor(arch, calls, batch, graph_kernels, graph_replays)
    if "skipped" in cpp:
        notes.append(cpp["skipped"])
    result["cpp"] = cpp
    cpp_key = {"LeakyReLU": "leaky_relu", "CircPad": "circ_pad"}
    stream = cp.cuda.Stream(non_blocking=True)
    host: Dict[str, Any] = {}
    graph: Dict[str, Any] = {}
    with stream:
        for make in (_leaky_relu, _circ_pad):
            tiny = make(cp)
            cp.cuda.runtime.deviceSynchronize()
            variants, configured = _variants(tiny, stream, notes)
            checks = {name: _check(tiny, name, fn, stream) for name, fn in variants.items()}
            for name, bad in checks.items():
                if bad:
                    notes.append(f"{tiny.case} {name}: {bad}")
            rows: Dict[str, Any] = {}
            if want_overhead:
                samples: Dict[str, List[Dict[str, Any]]] = {name: [] for name in variants}
                for r in range(rounds):
                    order = list(variants) if r % 2 == 0 else list(reversed(variants))
                    for name in order:
                        samples[name].append(timing.host_loop(
                            variants[name], stream.synchronize, calls=calls, batch=batch))
                for name, per_round in samples.items():
                    rows[name] = _merge_rounds(per_round)
                    rows[name]["check"] = checks[name] or "ok"
                floor = cpp.get(cpp_key[tiny.case])
                if floor:
                    rows["cpp_floor"] = {"host_us": floor["host_us"], "sync_us": floor["sync_us"],
                                         "calls": floor["calls"], "batch": floor["batch"],
                                         "check": "ok"}
                host[tiny.case] = {k: rows[k] for k in _C_ORDER if k in rows}
            if want_graph and configured is not None:
                graph[tiny.case] = _graph_replay(variants["plugin_enqueue"], stream,
                                                 graph_kernels, graph_replays)
                floor = cpp.get(cpp_key[tiny.case])
                if floor:
                    graph[tiny.case]["cpp_graph_us"] = floor["graph_us"]
                    graph[tiny.case]["cpp_launch_us"] = floor["host_us"]
    if want_overhead:
        result["host"] = host
    if want_graph:
        result["graph"] = graph
    return result


def _merge_rounds(per_round: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Round medians side by side, and min / median of the round medians."""
    out: Dict[str, Any] = {"calls": sum(r["calls"] for r in per_round),
                           "batch": per_round[0]["batch"]}
    for key in ("host_us", "sync_us"):
        medians = [r[key]["median"] for r in per_round]
        out[key] = {"min": min(r[key]["min"] for r in per_round),
                    "median": float(np.median(medians)), "rounds": medians}
    return out


def _graph_replay(enqueue: Callable, stream: Any, kernels: int, replays: int) -> Dict[str, Any]:
    try:
        graph = timing.capture(stream, lambda: [enqueue() for _ in range(kernels)])
    except Exception as err:  # capture failure is a finding, not a crash
        return {"error": f"capture failed: {type(err).__name__}: {err}"}
    seconds = timing.replay_seconds(graph, stream, reps=replays)
    return {"kernels": kernels, "replays": replays,
            "plugin_graph_us": timing.stats(seconds, 1e6 / kernels)}

