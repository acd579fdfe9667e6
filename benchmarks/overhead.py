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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from benchmarks import driver, timing
from benchmarks.cases import select

CPP_SOURCE = Path(__file__).resolve().parent / "cpp" / "launch_floor.cu"
_C_ORDER = ("cpp_floor", "driver_ctypes", "pyplugins_launch", "cupy_raw", "plugin_enqueue",
            "emulator_trampoline", "vendor_sample", "python_call")


#: The tiny problems: case name -> (float32 input shape, launch_floor.cu's kernel key, reference).
TINY = {
    "LeakyReLU": ((1024,), "leaky_relu",
                  lambda cp, x: cp.where(x >= 0, x, x * np.float32(0.01))),
    "CircPad": ((1, 1, 32, 32), "circ_pad",
                lambda cp, x: cp.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="wrap")),
}


TINY_KEYS = tuple(v[1] for v in TINY.values())


@dataclass
class Tiny:
    """One tiny launch, as the configured plugin packed it: kernel, grid, block, by-value args.

    Every path launches exactly this (the plugin's own grid and argument bytes), so the paths
    differ only in how the launch is made.
    """

    case: str
    cpp_key: str
    configured: Any
    launch: Any               # the plugin's pyplugins.launch.Launch
    function: Any             # the same kernel as a cupy.RawKernel
    values: Tuple[bytes, ...]  # by-value arguments after (x, y), as the plugin packed them
    x: Any
    y: Any
    expected: Any


def _tiny(name: str, cp: Any, notes: List[str]) -> Optional[Tiny]:
    from pyplugins.launch import Launch

    shape, cpp_key, reference = TINY[name]
    case = select([name])[0]
    try:
        cls = case.plugin_class()
        cfg = driver.configure(cls, case.fields, [shape], ["float32"], name="overhead")
    except (ImportError, AttributeError, driver.SetupError) as err:
        notes.append(f"{name}: plugin unavailable ({type(err).__name__}: {err}); its host-"
                     "overhead rows are skipped")
        return None
    launch, kernel = getattr(cfg.plugin, "launch", None), getattr(cls, "kernel", None)
    if not isinstance(launch, Launch) or kernel is None or launch.pointer_count != 2:
        notes.append(f"{name}: the plugin has no two-pointer pyplugins.launch.Launch named "
                     "'launch' and Kernel named 'kernel', which the baselines copy; skipped")
        return None
    function = kernel.function("float")
    if int(function.kernel.ptr) != launch.function_ptr:
        notes.append(f"{name}: the baselines' kernel is not the plugin's compiled function")
    values = tuple(launch.param_bytes(i) for i, (offset, _) in enumerate(launch.layout)
                   if offset >= 8 * launch.pointer_count)
    x = driver.random_array(shape, "float32", cp.random.default_rng(len(shape)))
    return Tiny(name, cpp_key, cfg, launch, function, values, x,
                cp.empty(cfg.out_shapes[0], dtype=cp.float32), reference(cp, x))


def _scalar(raw: bytes) -> Any:
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
        self.values = tuple(_scalar(v) for v in tiny.values)

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


def _libcuda_launch(tiny: Tiny, stream_ptr: int) -> Callable[[], int]:
    """A prepacked ``cuLaunchKernel`` through ctypes (the bare driver-API path)."""
    lib = ctypes.CDLL("libcuda.so.1")
    launch = lib.cuLaunchKernel
    launch.restype = ctypes.c_int
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    holders: List[Any] = [ctypes.c_void_p(tiny.x.data.ptr), ctypes.c_void_p(tiny.y.data.ptr)]
    holders += [ctypes.create_string_buffer(v, len(v)) for v in tiny.values]
    params = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
    fn = functools.partial(launch, ctypes.c_void_p(tiny.launch.function_ptr), *tiny.launch.grid,
                           *tiny.launch.block, tiny.launch.shared_mem,
                           ctypes.c_void_p(stream_ptr), params, None)
    fn.keep = (holders, params, lib)  # type: ignore[attr-defined]
    return fn


def _variants(tiny: Tiny, stream: Any) -> Dict[str, Callable]:
    import cupy as cp
    from pyplugins.emulator import trampoline

    sp = int(stream.ptr)
    x, y = int(tiny.x.data.ptr), int(tiny.y.data.ptr)
    cfg = tiny.configured
    args = (cfg.in_desc, cfg.out_desc, [x], [y], 0, sp)
    return {
        "driver_ctypes": _libcuda_launch(tiny, sp),
        "pyplugins_launch": functools.partial(tiny.launch, sp, x, y),
        "cupy_raw": functools.partial(tiny.function, tiny.launch.grid, tiny.launch.block,
                                      (x, y) + tuple(_scalar(v) for v in tiny.values),
                                      shared_mem=tiny.launch.shared_mem,
                                      stream=cp.cuda.ExternalStream(sp)),
        "plugin_enqueue": functools.partial(cfg.plugin.enqueue, *args),
        "emulator_trampoline": functools.partial(trampoline.enqueue, cfg.plugin, *args),
        "vendor_sample": functools.partial(VendorSample(tiny).enqueue, *args),
        "python_call": functools.partial(_Noop().enqueue, *args),
    }


def _check(tiny: Tiny, name: str, fn: Callable, stream: Any) -> Optional[str]:
    """Poison y, launch once, compare: None when right, else what went wrong."""
    import cupy as cp

    tiny.y.fill(np.nan)
    cp.cuda.runtime.deviceSynchronize()  # the fill ran on the legacy stream
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


class CppFloor:
    """launch_floor, built once, run with the plugins' own grids, blocks and CircPad bytes."""

    def __init__(self, arch: str, tinies: Dict[str, Tiny], workdir: Path) -> None:
        self.exe: Optional[Path] = None
        self.why: Optional[str] = None
        if set(tinies) != set(TINY):
            self.why = "C++ floor needs both tiny plugins configured (see the notes)"
            return
        self.exe, self.why = build_cpp_floor(arch, workdir)
        leaky, pad = tinies["LeakyReLU"].launch, tinies["CircPad"]
        self.args = [str(leaky.grid[0]), str(leaky.block[0]), str(pad.launch.grid[0]),
                     str(pad.launch.block[0]), pad.values[0].hex()]

    def run(self, calls: int, batch: int, graph_kernels: int, replays: int) -> Dict[str, Any]:
        if self.exe is None:
            return {"skipped": self.why}
        argv = [str(self.exe), str(calls), str(batch), str(graph_kernels), str(replays)]
        done = subprocess.run(argv + self.args, capture_output=True, text=True, check=False,
                              timeout=300)
        if done.returncode != 0:
            return {"skipped": f"launch_floor failed: {done.stderr.strip()[-2000:]}"}
        return json.loads(done.stdout)


def combine_floor_runs(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One figure per kernel from several launch_floor runs: min of the minima, mean of the
    medians (each run's median kept under ``runs``)."""
    if any("skipped" in r for r in runs):
        return next(r for r in runs if "skipped" in r)
    out: Dict[str, Any] = {k: runs[0][k] for k in ("device", "cuda_runtime", "cuda_driver")}
    for key in TINY_KEYS:
        per = [r[key] for r in runs]
        merged: Dict[str, Any] = {"calls": sum(p["calls"] for p in per), "batch": per[0]["batch"],
                                  "graph_kernels": per[0]["graph_kernels"]}
        for metric in ("host_us", "sync_us", "graph_us"):
            medians = [p[metric]["median"] for p in per]
            merged[metric] = {"min": min(p[metric]["min"] for p in per),
                              "median": sum(medians) / len(medians), "runs": medians}
        out[key] = merged
    return out


def run(*, calls: int, batch: int, graph_kernels: int, graph_replays: int,
        want_overhead: bool, want_graph: bool, notes: List[str]) -> Dict[str, Any]:
    """Measure sections 1 and/or 2; the JSON-able results (timings under ``seconds``)."""
    import cupy as cp

    t0 = time.perf_counter()
    stream = cp.cuda.Stream(non_blocking=True)
    tinies = {name: t for name in TINY if (t := _tiny(name, cp, notes)) is not None}
    cp.cuda.runtime.deviceSynchronize()
    result: Dict[str, Any] = {"problem": {
        name: f"float32 {list(t.x.shape)} -> {list(t.y.shape)}, grid {t.launch.grid[0]} x "
              f"{t.launch.block[0]} threads" for name, t in tinies.items()},
        "calls": calls, "batch": batch}
    seconds = {"setup_and_cpp": 0.0, "host": 0.0, "graph": 0.0}
    host: Dict[str, Any] = {}
    graph: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pp-floor-") as tmp:
        floor_exe = CppFloor(f"sm_{cp.cuda.Device().compute_capability}", tinies, Path(tmp))
        floor_runs = [floor_exe.run(calls, batch, graph_kernels, graph_replays)]
        seconds["setup_and_cpp"] += time.perf_counter() - t0
        for tiny in tinies.values():
            variants = _variants(tiny, stream)
            checks = {name: _check(tiny, name, fn, stream) for name, fn in variants.items()}
            for name, bad in checks.items():
                if bad:
                    notes.append(f"{tiny.case} {name}: {bad}")
            t0 = time.perf_counter()
            if want_overhead:
                rows = timing.host_loops(variants, stream.synchronize, calls=calls, batch=batch)
                for name, row in rows.items():
                    row["check"] = checks[name] or "ok"
                host[tiny.case] = rows
            t1 = time.perf_counter()
            if want_graph:
                graph[tiny.case] = _graph_replay(variants["plugin_enqueue"], stream,
                                                 graph_kernels, graph_replays)
            seconds["host"] += t1 - t0
            seconds["graph"] += time.perf_counter() - t1
        t0 = time.perf_counter()
        floor_runs.append(floor_exe.run(calls, batch, graph_kernels, graph_replays))
        seconds["setup_and_cpp"] += time.perf_counter() - t0
    cpp = result["cpp"] = combine_floor_runs(floor_runs)
    if "skipped" in cpp:
        notes.append(cpp["skipped"])
    for tiny in tinies.values():
        floor = cpp.get(tiny.cpp_key)
        if floor and tiny.case in host:
            host[tiny.case]["cpp_floor"] = dict(
                {k: floor[k] for k in ("host_us", "sync_us", "calls", "batch")}, check="ok")
        if floor and "plugin_graph_us" in graph.get(tiny.case, {}):
            graph[tiny.case]["cpp_graph_us"] = floor["graph_us"]
            graph[tiny.case]["cpp_launch_us"] = floor["host_us"]
    if want_overhead:
        result["host"] = {case: {k: rows[k] for k in _C_ORDER if k in rows}
                          for case, rows in host.items()}
    if want_graph:
        result["graph"] = graph
    result["seconds"] = seconds
    return result


def _graph_replay(enqueue: Callable, stream: Any, kernels: int, replays: int) -> Dict[str, Any]:
    try:
        graph = timing.capture(stream, lambda: [enqueue() for _ in range(kernels)])
    except Exception as err:  # capture failure is a finding, not a crash
        return {"error": f"capture failed: {type(err).__name__}: {err}"}
    seconds = timing.replay_seconds(graph, stream, reps=replays)
    return {"kernels": kernels, "replays": replays,
            "plugin_graph_us": timing.stats(seconds, 1e6 / kernels)}

