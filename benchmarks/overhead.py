"""Sections 1 and 2: host cost of one ``enqueue``, and CUDA-graph replay of captured enqueues.

Section 1b, pyplugins' own host cost per ``enqueue`` of every shipped op (V2 and V3), is timed
in the same rounds (:mod:`benchmarks.own_cost`).

The paths (see :mod:`benchmarks.launch_paths`) take turns batch by batch in each of ``rounds``
rounds; the C++ floor (``benchmarks/cpp/launch_floor.cu``, built with nvcc now: the plugins'
kernels and an empty kernel launched with ``<<<>>>``) runs in its own process before every round
and after the last, and round ``r`` is compared with the mean of the floor runs around it.
Ratios that support a claim take the worst round. The plugin's ``enqueue`` is called from C++ as
TensorRT calls it by ``benchmarks/cpp/trt_call.cpp``, a pybind11 extension built now with the
host compiler; where it cannot be built, by the Python stand-in, and the notes say why.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import shutil
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from benchmarks import driver, launch_paths, nvcc, own_cost, timing
from benchmarks.launch_paths import Tiny
from benchmarks.cases import select

CPP_SOURCE = Path(__file__).resolve().parent / "cpp" / "launch_floor.cu"
TRT_CALL_SOURCE = Path(__file__).resolve().parent / "cpp" / "trt_call.cpp"


#: The tiny problems: case name -> (float32 input shape, launch_floor.cu's kernel key, reference).
TINY = {
    "LeakyReLU": ((1024,), "leaky_relu",
                  lambda cp, x: cp.where(x >= 0, x, x * np.float32(0.01))),
    "CircPad": ((1, 1, 32, 32), "circ_pad",
                lambda cp, x: cp.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="wrap")),
}


TINY_KEYS = tuple(v[1] for v in TINY.values()) + ("empty",)


def _tiny(name: str, cp: Any, notes: List[str]) -> Optional[Tiny]:
    from pyplugins.runtime.launch import Launch

    shape, cpp_key, reference = TINY[name]
    case = select([name])[0]
    try:
        cls = case.plugin_class()
        cfg = driver.configure(cls, case.fields, [shape], ["float32"], name="overhead")
    except (ImportError, AttributeError, driver.SetupError) as err:
        notes.append(f"{name}: plugin unavailable ({type(err).__name__}: {err}); its host-"
                     "overhead rows are skipped")
        return None
    launch = getattr(cfg.plugin, "launch", None)
    if not isinstance(launch, Launch) or launch.pointer_count != 2:
        notes.append(f"{name}: the plugin has no two-pointer pyplugins.runtime.launch.Launch named "
                     "'launch', which the baselines copy; skipped")
        return None
    function = _launched_function(cls, launch)
    if function is None:
        notes.append(f"{name}: none of the plugin class's Kernel attributes compiled for float "
                     "is the function its launch calls; skipped")
        return None
    values = tuple(launch.param_bytes(i) for i, (offset, _) in enumerate(launch.layout)
                   if offset >= 8 * launch.pointer_count)
    x = driver.random_array(shape, "float32", cp.random.default_rng(len(shape)))
    return Tiny(name, cpp_key, cfg, launch, function, values, x,
                cp.empty(cfg.out_shapes[0], dtype=cp.float32), reference(cp, x))


def _launched_function(cls: Any, launch: Any) -> Any:
    """The ``cupy.RawKernel`` (float) of whichever :class:`pyplugins.runtime.kernels.Kernel` class
    attribute ``launch`` calls (ops pick between kernels per shape), or None."""
    from pyplugins.runtime.kernels import Kernel

    for attr in dir(cls):
        kernel = getattr(cls, attr, None)
        if isinstance(kernel, Kernel):
            function = kernel.function("float")
            if int(function.kernel.ptr) == launch.function_ptr:
                return function
    return None


def build_cpp_floor(arch: str, workdir: Path) -> Tuple[Optional[Path], Optional[str]]:
    """nvcc-build launch_floor; (binary, None) or (None, why not)."""
    from pyplugins.runtime.kernels import kernels_dir

    return nvcc.build(workdir / "launch_floor", [CPP_SOURCE], arch, includes=[kernels_dir()],
                      missing="nvcc not found: C++ floor skipped")


def pybind11_include() -> Optional[str]:
    """The pybind11 headers' directory: the ``pybind11`` package's, else the copy inside torch
    (``torch/include/pybind11``), found without importing torch; None when neither exists."""
    try:
        import pybind11
        return pybind11.get_include()
    except ImportError:
        pass
    spec = importlib.util.find_spec("torch")
    for root in (spec.submodule_search_locations or []) if spec else []:
        if (Path(root) / "include" / "pybind11" / "pybind11.h").is_file():
            return str(Path(root) / "include")
    return None


def build_trt_call(workdir: Path) -> Tuple[Any, Optional[str]]:
    """Build and import ``trt_call.cpp`` (module ``pp_trt_call``); (module, None) or (None, why
    not)."""
    cxx = shutil.which("g++") or shutil.which("c++")
    py_include = sysconfig.get_paths()["include"]
    pb_include = pybind11_include()
    missing = [what for what, ok in (("a C++ compiler (g++/c++)", cxx),
                                     (f"Python.h in {py_include}",
                                      (Path(py_include) / "Python.h").is_file()),
                                     ("pybind11 headers (pip install pybind11, or torch)",
                                      pb_include)) if not ok]
    if missing:
        return None, f"C++ trampoline not built: missing {', '.join(missing)}"
    out = workdir / f"pp_trt_call{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
    cmd = [str(cxx), "-O2", "-shared", "-fPIC", "-std=c++17", "-fvisibility=hidden",
           f"-I{py_include}", f"-I{pb_include}", str(TRT_CALL_SOURCE), "-o", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, (f"C++ trampoline did not build ({' '.join(cmd)}): "
                      f"{done.stderr.strip()[-2000:]}")
    try:
        spec = importlib.util.spec_from_file_location("pp_trt_call", out)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as err:  # noqa: BLE001 - a build that does not import is reported like a failed build
        return None, f"C++ trampoline built but did not import: {type(err).__name__}: {err}"
    return module, None


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
        pad_kernel = pad.launch.name.split("<")[0]  # the kernel CircPad.plan chose
        self.args = [str(leaky.grid[0]), str(leaky.block[0]), str(pad.launch.grid[0]),
                     str(pad.launch.block[0]), pad_kernel, pad.values[0].hex()]

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
    """Per kernel, one figure per round from ``rounds + 1`` launch_floor runs (before each
    round and after the last): round ``r`` gets the mean of runs ``r`` and ``r + 1``. Each
    metric keeps ``rounds`` (those means), ``median`` (their median), ``min`` (of the minima)
    and ``runs`` (each run's median)."""
    if any("skipped" in r for r in runs):
        return next(r for r in runs if "skipped" in r)
    out: Dict[str, Any] = {k: runs[0][k] for k in ("device", "cuda_runtime", "cuda_driver")}
    for key in TINY_KEYS:
        per = [r[key] for r in runs if key in r]
        if not per:
            continue
        merged: Dict[str, Any] = {"calls": sum(p["calls"] for p in per), "batch": per[0]["batch"],
                                  "graph_kernels": per[0]["graph_kernels"]}
        for metric in ("host_us", "sync_us", "graph_us"):
            medians = [p[metric]["median"] for p in per]
            rounds = ([(a + b) / 2 for a, b in zip(medians, medians[1:])] if len(medians) > 1
                      else medians)
            merged[metric] = {"min": min(p[metric]["min"] for p in per),
                              "median": statistics.median(rounds), "rounds": rounds,
                              "runs": medians}
        out[key] = merged
    return out


def _check(tiny: Tiny, name: str, fn: Callable, stream: Any) -> Optional[str]:
    """Poison y, launch once, compare: None when right, else what went wrong."""
    import cupy as cp

    tiny.y.fill(np.nan)
    cp.cuda.runtime.deviceSynchronize()  # the fill ran on the legacy stream
    try:
        returned = fn()
    except Exception as err:  # noqa: BLE001 - a path that cannot launch is reported in its row
        return f"raised {type(err).__name__}: {err}"
    stream.synchronize()
    bad = launch_paths.launch_status(name, returned)
    if bad or name in launch_paths.EMPTY:
        return bad
    if not bool(cp.array_equal(tiny.y, tiny.expected)):
        return "output differs from the reference"
    return None


def merge_rounds(per_round: List[Dict[str, Dict[str, Any]]]) -> Dict[str, Dict[str, Any]]:
    """host_loops results of several rounds as one row per path: per metric ``rounds`` (each
    round's median), ``median`` (their median) and ``min``; calls summed; where the rounds kept
    their batches, ``host_us`` ``batches``: one list per round, turn by turn."""
    out: Dict[str, Dict[str, Any]] = {}
    for name in per_round[0]:
        rows = [r[name] for r in per_round if name in r]
        row: Dict[str, Any] = {"calls": sum(r["calls"] for r in rows), "batch": rows[0]["batch"]}
        for metric in ("host_us", "sync_us"):
            meds = [r[metric]["median"] for r in rows]
            row[metric] = {"min": min(r[metric]["min"] for r in rows),
                           "median": statistics.median(meds), "rounds": meds}
        if all("batches_us" in r for r in rows):
            row["host_us"]["batches"] = [r["batches_us"] for r in rows]
        out[name] = row
    return out


def run(*, calls: int, batch: int, graph_kernels: int, graph_replays: int, rounds: int,
        want_overhead: bool, want_graph: bool, notes: List[str]) -> Dict[str, Any]:
    """Measure sections 1 and/or 2; the JSON-able results (timings under ``seconds``)."""
    import cupy as cp

    t0 = time.perf_counter()
    rounds = max(1, rounds)
    stream = cp.cuda.Stream(non_blocking=True)
    tinies = {name: t for name in TINY if (t := _tiny(name, cp, notes)) is not None}
    cp.cuda.runtime.deviceSynchronize()
    with tempfile.TemporaryDirectory(prefix="pp-trt-call-") as tmp:  # loaded: the file can go
        trt_call, why = build_trt_call(Path(tmp))
    if why:
        notes.append(f"{why}; the plugin enqueue rows use the Python stand-in TrtCall (fresh "
                     "emulator descriptors built in Python: an overestimate of TensorRT's cost)")
    result: Dict[str, Any] = {"problem": {
        name: f"float32 {list(t.x.shape)} -> {list(t.y.shape)}, grid {t.launch.grid[0]} x "
              f"{t.launch.block[0]} threads" for name, t in tinies.items()},
        "calls": calls, "batch": batch, "rounds": rounds, "trt_call": True,
        "harness": "python" if trt_call is None else "cpp"}
    seconds = {"setup_and_cpp": 0.0, "host": 0.0, "graph": 0.0}
    per_round: Dict[str, List[Dict[str, Any]]] = {name: [] for name in tinies}
    graph: Dict[str, Any] = {}
    checks: Dict[str, Dict[str, Optional[str]]] = {}
    paths = {name: launch_paths.variants(t, stream, notes, trt_call)
             for name, t in tinies.items()}
    owns = {name: own for name in (own_cost.OPS if want_overhead else ())
            if (own := own_cost.build(name, cp, stream, trt_call, notes)) is not None}
    own_rounds: Dict[str, List[Dict[str, Any]]] = {name: [] for name in owns}
    for name, tiny in tinies.items():
        checks[name] = {p: _check(tiny, p, fn, stream) for p, fn in paths[name].items()}
        for p, bad in checks[name].items():
            if bad:
                notes.append(f"{name} {p}: {bad}")
        paths[name] = {p: fn for p, fn in paths[name].items()
                       if not (bad := checks[name][p]) or not bad.startswith("raised")}
    with tempfile.TemporaryDirectory(prefix="pp-floor-") as tmp:
        floor_exe = CppFloor(f"sm_{cp.cuda.Device().compute_capability}", tinies, Path(tmp))
        floor_runs = [floor_exe.run(calls, batch, graph_kernels, graph_replays)]
        seconds["setup_and_cpp"] += time.perf_counter() - t0
        for _ in range(rounds if want_overhead else 0):
            t0 = time.perf_counter()
            for name in tinies:
                per_round[name].append(timing.host_loops(paths[name], stream.synchronize,
                                                         calls=calls, batch=batch))
            for name, own in owns.items():
                own_rounds[name].append(timing.host_loops(own.paths, stream.synchronize,
                                                          calls=calls, batch=batch,
                                                          keep_batches=True))
            seconds["host"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            floor_runs.append(floor_exe.run(calls, batch, graph_kernels, graph_replays))
            seconds["setup_and_cpp"] += time.perf_counter() - t0
        t1 = time.perf_counter()
        for name in tinies:
            if want_graph:
                graph[name] = _graph_replay(paths[name]["plugin_enqueue"], stream,
                                            graph_kernels, graph_replays)
        seconds["graph"] += time.perf_counter() - t1
    cpp = result["cpp"] = combine_floor_runs(floor_runs)
    if "skipped" in cpp:
        notes.append(cpp["skipped"])
    host: Dict[str, Any] = {}
    for name, tiny in tinies.items():
        rows = merge_rounds(per_round[name]) if per_round[name] else {}
        for p, row in rows.items():
            row["check"] = checks[name][p] or "ok"
        for cpp_key, row_key in ((tiny.cpp_key, "cpp_floor"), ("empty", "cpp_empty")):
            floor = cpp.get(cpp_key)
            if floor and rows:
                rows[row_key] = dict({k: floor[k] for k in ("host_us", "sync_us", "calls",
                                                            "batch")}, check="ok")
        floor = cpp.get(tiny.cpp_key)
        if floor and "plugin_graph_us" in graph.get(name, {}):
            graph[name]["cpp_graph_us"] = floor["graph_us"]
            graph[name]["cpp_launch_us"] = floor["host_us"]
        host[name] = {k: rows[k] for k in launch_paths.ORDER if k in rows}
    if want_overhead:
        result["host"] = host
        result["own"] = {name: {"problem": own.problem, "rows": merge_rounds(own_rounds[name])}
                         for name, own in owns.items() if own_rounds[name]}
    if want_graph:
        result["graph"] = graph
    result["seconds"] = seconds
    return result


def _graph_replay(enqueue: Callable, stream: Any, kernels: int, replays: int) -> Dict[str, Any]:
    try:
        graph = timing.capture(stream, lambda: [enqueue() for _ in range(kernels)])
    except Exception as err:  # noqa: BLE001 - capture failure is a finding, not a crash
        return {"error": f"capture failed: {type(err).__name__}: {err}"}
    seconds = timing.replay_seconds(graph, stream, reps=replays)
    return {"kernels": kernels, "replays": replays,
            "plugin_graph_us": timing.stats(seconds, 1e6 / kernels)}
