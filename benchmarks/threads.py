"""Section ``threads`` (docs/benchmarks.md item 8): many threads calling ``enqueue`` at once.

TensorRT runs each execution context's ``enqueue`` on the application's thread, through the
pybind11 trampoline, which takes the GIL for the Python part of every call (protocol §3, §9).
Here ``trt_call.cpp``'s ``run_threads`` starts T C++ threads (1, 2, 4, 8), each with its own
LeakyReLU plugin object configured on its device (thread i on device i mod the GPU count), its
own buffers and its own non-blocking stream, and makes enqueues as TensorRT does for a fixed wall
time: the aggregate calls per second. Beside it, in the same round: the empty Python
``enqueue`` through the same trampoline (the GIL-bound part alone) and C++ threads launching
the same kernel with ``<<<>>>`` (``benchmarks/cpp/threads_floor.cu``), and C++ threads launching
the op's AOT artifact as TensorRT does, no Python (:mod:`benchmarks.threads_aot`). On one GPU,
and on two when there are two. Each thread's output is checked after the last round.

The target (aggregate >= the 1-thread rate) is checked for every row family. The JIT rows
cannot meet it under a GIL: TensorRT's binding takes the GIL for every ``enqueue`` (protocol
§3, §9), which pyplugins cannot change, so even the empty ``enqueue`` falls as threads are added;
the AOT row is what removes the cap.

Free-threaded CPython: where the interpreter runs without a GIL (``sys._is_gil_enabled()`` is
False) the rows are that interpreter's; the result's ``note`` says which it was.

Example::

    result = run(counts=[1, 2, 4, 8], seconds=0.25, rounds=3, deadline=None, notes=[])
    result["configs"]["1 GPU"]["rows"]["4"]["enqueue_per_s"]["median"]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from benchmarks import driver, nvcc, overhead, threads_aot
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
            "`enqueue` column) however many threads call; C++ threads, and the AOT row, are "
            "not. No free-threaded row: the GPU machine has CPython 3.12 with a GIL and no "
            "network. Checked (2026-11-26) what could be carried there: the interpreter is the "
            "obstacle. CPython is not on PyPI (portable-python 2.1.0, the one package there "
            "that names portable interpreters, is a 45 KB build tool that fetches CPython's "
            "sources from python.org when it runs; pbs-installer downloads from GitHub), "
            "the development machine reaches PyPI alone, and its repository tool refuses "
            "CPython's repository (2.3 GB, over its 500 MB limit), so no 3.14t can be built "
            "from source either. CuPy would fit only barely: cupy-cuda13x 14.2.0's cp314t "
            "wheel is 65 MiB, over the 64 MiB a call may carry, so it would have to travel in "
            "parts. A free-threaded row needs a machine image with a 3.14t interpreter (then "
            "this note reports it).")


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

    return nvcc.build(workdir / "threads_floor", [CPP_SOURCE], arch, includes=[kernels_dir()],
                      missing="nvcc not found: the C++ threads are not measured")


def stats(per_round: List[float]) -> Dict[str, Any]:
    """``{"min", "median", "rounds"}`` of per-round rates.

    Example:
        >>> stats([3.0, 1.0, 2.0])
        {'min': 1.0, 'median': 2.0, 'rounds': [3.0, 1.0, 2.0]}
    """
    return {"min": min(per_round), "median": statistics.median(per_round),
            "rounds": list(per_round)}


def measure_config(module: Any, lanes: List[Lane], floor: Optional[Path], counts: Sequence[int],
                   seconds: float, rounds: int,
                   aot: Optional[Tuple[Path, Path]] = None) -> Dict[str, Any]:
    """Rows per thread count for these lanes (see the module docstring); ``aot``: the
    ``aot_threads`` binary and the artifact :func:`benchmarks.threads_aot.prepare` wrote."""
    plugins = [lane.cfg.plugin for lane in lanes]
    noops = [_Noop() for _ in lanes]
    per: Dict[int, Dict[str, List[float]]] = {t: {"enqueue_per_s": [], "noop_per_s": []}
                                              for t in counts}
    enqueue_rate(module, lanes, plugins, seconds / 4)  # warm-up, every lane
    cpp_rounds: List[Dict[str, float]] = []
    aot_rounds: List[Dict[str, float]] = []
    floor_error = aot_error = None
    devices = sorted({lane.device for lane in lanes})
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
        if aot is not None and aot_error is None:
            got, aot_error = threads_aot.measure(aot[0], aot[1], counts, seconds, devices,
                                                 SHAPE)
            if got is not None:
                aot_rounds.append(got)
    rows: Dict[str, Any] = {}
    for t in counts:
        row = {k: stats(v) for k, v in per[t].items()}
        if cpp_rounds:
            row["cpp_per_s"] = stats([r[str(t)] for r in cpp_rounds])
        if aot_rounds and not aot_error:
            row["aot_per_s"] = stats([r[str(t)] for r in aot_rounds])
        rows[str(t)] = row
    bad = [b for lane in lanes if (b := lane.check())]
    return {"devices": devices, "rows": rows, "check": "; ".join(bad) or "ok",
            **({"cpp_error": floor_error} if floor_error else {}),
            **({"aot_error": aot_error} if aot_error else {})}


def _aot_setup(cls: Any, fields: Dict[str, Any], arch: str, workdir: Path,
               notes: List[str]) -> Optional[Tuple[Path, Path]]:
    """The ``aot_threads`` binary and the op's artifact (input and JIT output of a lane on
    device 0), or None with a note saying why not."""
    import cupy as cp

    exe, why = threads_aot.build(arch, workdir)
    flat = None
    if exe is not None:
        lane = Lane(cls, fields, 0)
        flat, why = threads_aot.prepare(cls, fields, SHAPE, cp.asnumpy(lane.x).tobytes(),
                                        cp.asnumpy(lane.expected).tobytes(), workdir)
    if exe is None or flat is None:
        notes.append(f"threads: no AOT row: {why}")
        return None
    return exe, flat


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
        arch = f"sm_{cp.cuda.Device().compute_capability}"
        floor, why = build_floor(arch, Path(tmp))
        if why:
            notes.append(f"threads: {why}")
        case = select([CASE])[0]
        cls = case.plugin_class()
        aot = _aot_setup(cls, case.fields, arch, Path(tmp), notes)
        ndev = cp.cuda.runtime.getDeviceCount()
        configs = {"1 GPU": [0]} if ndev < 2 else {"1 GPU": [0], "2 GPUs": [0, 1]}
        for name, devices in configs.items():
            if deadline is not None and time.perf_counter() > deadline:
                notes.append(f"threads: {name} not measured, the run's budget was spent")
                continue
            lanes = [Lane(cls, case.fields, devices[i % len(devices)]) for i in range(max(counts))]
            cfg = measure_config(module, lanes, floor, counts, seconds, rounds, aot)
            if cfg["check"] != "ok":
                notes.append(f"threads, {name}: {cfg['check']}; its rows are refused")
                cfg["rows"] = {}
            for key in ("cpp_error", "aot_error"):
                if key in cfg:
                    notes.append(f"threads, {name}: {cfg[key]}")
            result["configs"][name] = cfg
            print(f"[threads] {name} done", flush=True)
    return result
