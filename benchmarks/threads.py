"""Section ``threads`` (docs/benchmarks.md item 8): many threads calling ``enqueue`` at once.

TensorRT runs each execution context's ``enqueue`` on the application's thread, through the
pybind11 trampoline, which takes the GIL for the Python part of every call (protocol §3, §9).
Here ``trt_call.cpp``'s ``run_threads`` starts T C++ threads (1, 2, 4, 8), each with its own
LeakyReLU plugin object configured on its device (thread i on device i mod the GPU count), its
own buffers and its own non-blocking stream, and makes enqueues as TensorRT does for a fixed wall
time: the aggregate calls per second. Beside it, in the same round: the empty Python
``enqueue`` through the same trampoline (the GIL-bound part alone) and C++ threads launching
the same kernel with ``<<<>>>`` (``benchmarks/cpp/threads_floor.cu``). On one GPU, and on two
when there are two. Each thread's output is checked after the last round.

Free-threaded CPython: where the interpreter runs without a GIL (``sys._is_gil_enabled()`` is
False) the rows are that interpreter's; the result's ``note`` says which it was.

Example::

    result = run(counts=[1, 2, 4, 8], seconds=0.25, rounds=3, deadline=None, notes=[])
    result["configs"]["1 GPU"]["rows"]["4"]["enqueue_per_s"]["median"]
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from benchmarks import driver, overhead
from benchmarks.cases import select

CPP_SOURCE = Path(__file__).resolve().parent / "cpp" / "threads_floor.cu"
CASE = "LeakyReLU"
SHAPE = (1024,)


def gil_note() -> str:
    """Which interpreter ran, and what that means for the rows."""
    enabled = getattr(sys, "_is_gil_enabled", lambda: True)()
    version = sys.version.split()[0]
    if not enabled:
        return (f"Python {version} ran free-threaded (no GIL): the enqueues of different "
                "threads run their Python in parallel.")
    return (f"Python {version} with the GIL: the Python part of every enqueue holds it, so the "
            "aggregate rate is capped near the single-thread rate of that part (the empty "
            "`enqueue` column) however many threads call; C++ threads are not. No free-threaded "
            "row: the GPU machine has CPython 3.12 (no free-threaded build) and no network to "
            "bring a 3.13t interpreter and a CuPy built for it.")


class Lane:
    """One thread's plugin (configured on its device), buffers and stream."""

    def __init__(self, cls: Any, fields: Dict[str, Any], device: int) -> None:
        import cupy as cp

        self.device = device
        with cp.cuda.Device(device):
            self.cfg = driver.configure(cls, fields, [SHAPE], ["float32"], name=f"lane{device}")
            self.x = driver.random_array(SHAPE, "float32", cp.random.default_rng(device))
            self.y = cp.full(SHAPE, np.nan, dtype=cp.float32)
            self.expected = cp.where(self.x >= 0, self.x, self.x * np.float32(0.01))
            self.stream = cp.cuda.Stream(non_blocking=True)
            cp.cuda.runtime.deviceSynchronize()

    def check(self) -> Optional[str]:
        """None when the output is the reference, else what is wrong."""
        import cupy as cp

        with cp.cuda.Device(self.device):
            self.stream.synchronize()
            if not bool(cp.array_equal(self.y, self.expected)):
                return f"the output of the plugin on device {self.device} is wrong"
        return None


def _desc(module: Any, d: Any) -> Any:
    return module.desc([int(v) for v in d.dims], module.DataType(int(d.type)),
                       module.TensorFormat(int(d.format)), float(d.scale))


class _Noop:
    def enqueue(self, input_desc: Any, output_desc: Any, inputs: Any, outputs: Any,
                workspace: int, stream: int) -> None:
        return None


def enqueue_rate(module: Any, lanes: Sequence[Lane], plugins: Sequence[Any],
                 seconds: float) -> float:
    """Aggregate enqueues per second of ``len(lanes)`` threads (``run_threads``), thread i
    calling ``plugins[i]`` on ``lanes[i]``'s buffers and stream, its device current."""
    import cupy as cp

    cfg = lanes[0].cfg
    devices = [lane.device for lane in lanes]
    got = module.run_threads(
        list(plugins), [_desc(module, d) for d in cfg.in_desc],
        [_desc(module, d) for d in cfg.out_desc], [[int(lane.x.data.ptr)] for lane in lanes],
        [[int(lane.y.data.ptr)] for lane in lanes], [int(lane.stream.ptr) for lane in lanes],
        lambda i: cp.cuda.runtime.setDevice(devices[i]), float(seconds))
    for lane in lanes:
        with cp.cuda.Device(lane.device):
            lane.stream.synchronize()
    return sum(got["calls"]) / got["seconds"]


def build_floor(arch: str, workdir: Path) -> Tuple[Optional[Path], Optional[str]]:
    """nvcc-build threads_floor; (binary, None) or (None, why not)."""
    from pyplugins.runtime.kernels import kernels_dir

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None, "nvcc not found: the C++ threads are not measured"
    exe = workdir / "threads_floor"
    cmd = [nvcc, "-O2", "-std=c++17", f"-arch={arch}", f"-I{kernels_dir()}", str(CPP_SOURCE),
           "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        return None, f"nvcc failed ({' '.join(cmd)}): {done.stderr.strip()[-2000:]}"
    return exe, None


def stats(per_round: List[float]) -> Dict[str, Any]:
    """``{"min", "median", "rounds"}`` of per-round rates.

    Example:
        >>> stats([3.0, 1.0, 2.0])
        {'min': 1.0, 'median': 2.0, 'rounds': [3.0, 1.0, 2.0]}
    """
    return {"min": min(per_round), "median": statistics.median(per_round),
            "rounds": list(per_round)}


def measure_config(module: Any, lanes: List[Lane], floor: Optional[Path], counts: Sequence[int],
                   seconds: float, rounds: int) -> Dict[str, Any]:
    """Rows per thread count for these lanes (see the module docstring)."""
    plugins = [lane.cfg.plugin for lane in lanes]
    noops = [_Noop() for _ in lanes]
    per: Dict[int, Dict[str, List[float]]] = {t: {"enqueue_per_s": [], "noop_per_s": []}
                                              for t in counts}
    enqueue_rate(module, lanes, plugins, seconds / 4)  # warm-up, every lane
    cpp_rounds: List[Dict[str, float]] = []
    floor_error = None
    for _ in range(rounds):
        for t in counts:
            per[t]["enqueue_per_s"].append(enqueue_rate(module, lanes[:t], plugins[:t], seconds))
            per[t]["noop_per_s"].append(enqueue_rate(module, lanes[:t], noops[:t], seconds))
        if floor is not None and floor_error is None:
            launch = lanes[0].cfg.plugin.launch
            argv = [str(floor), ",".join(map(str, counts)), str(seconds), "1",
                    ",".join(str(d) for d in sorted({lane.device for lane in lanes})),
                    str(launch.grid[0]), str(launch.block[0])]
            done = subprocess.run(argv, capture_output=True, text=True, check=False,
                                  timeout=600)
            if done.returncode != 0:
                floor_error = f"threads_floor failed: {done.stderr.strip()[-1000:]}"
            else:
                cpp_rounds.append(json.loads(done.stdout)["rounds"][0])
    rows: Dict[str, Any] = {}
    for t in counts:
        row = {k: stats(v) for k, v in per[t].items()}
        if cpp_rounds:
            row["cpp_per_s"] = stats([r[str(t)] for r in cpp_rounds])
        rows[str(t)] = row
    bad = [b for lane in lanes if (b := lane.check())]
    return {"devices": sorted({lane.device for lane in lanes}), "rows": rows,
            "check": "; ".join(bad) or "ok", **({"cpp_error": floor_error} if floor_error else {})}


def run(*, counts: Sequence[int], seconds: float, rounds: int, deadline: Optional[float],
        notes: List[str]) -> Dict[str, Any]:
    """The section's result: ``configs`` ("1 GPU", and "2 GPUs" when there are two)."""
    import cupy as cp

    counts = sorted({int(c) for c in counts if int(c) > 0})
    result: Dict[str, Any] = {"case": CASE, "problem": f"float32 {list(SHAPE)}",
                              "seconds": seconds, "rounds": rounds, "counts": counts,
                              "note": gil_note(), "configs": {}}
    with tempfile.TemporaryDirectory(prefix="pp-threads-") as tmp:
        module, why = overhead.build_trt_call(Path(tmp))
        if module is None:
            result["skipped"] = why
            notes.append(f"threads: {why}")
            return result
        floor, why = build_floor(f"sm_{cp.cuda.Device().compute_capability}", Path(tmp))
        if why:
            notes.append(f"threads: {why}")
        case = select([CASE])[0]
        cls = case.plugin_class()
        ndev = cp.cuda.runtime.getDeviceCount()
        configs = {"1 GPU": [0]} if ndev < 2 else {"1 GPU": [0], "2 GPUs": [0, 1]}
        for name, devices in configs.items():
            if deadline is not None and time.perf_counter() > deadline:
                notes.append(f"threads: {name} not measured, the run's budget was spent")
                continue
            lanes = [Lane(cls, case.fields, devices[i % len(devices)]) for i in range(max(counts))]
            cfg = measure_config(module, lanes, floor, counts, seconds, rounds)
            if cfg["check"] != "ok":
                notes.append(f"threads, {name}: {cfg['check']}; its rows are refused")
                cfg["rows"] = {}
            if "cpp_error" in cfg:
                notes.append(f"threads, {name}: {cfg['cpp_error']}")
            result["configs"][name] = cfg
            print(f"[threads] {name} done", flush=True)
    return result
