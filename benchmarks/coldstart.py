"""Section 5: first use of each op with an empty compile cache, a warm disk cache, warm memory.

Two child processes share a fresh ``CUPY_CACHE_DIR``: the first compiles everything (cold), the
second finds CuPy's disk cache filled (warm disk). In each child, an op's first use is
``create_plugin`` + ``configure_plugin`` + one ``enqueue`` + synchronize on a 64 KiB problem;
a second, new plugin of the same op then measures the warm in-memory path. CUDA initialisation,
``import pyplugins.ops`` and each op module's import are timed separately. Ops run in case
order in one process, so one-time costs (loading NVRTC) fall on the first; each plugin class
is measured once (its first case).

Child: ``python -m benchmarks.coldstart --child CASE ...`` prints one JSON object.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

from benchmarks import driver
from benchmarks.cases import select

REPO = Path(__file__).resolve().parent.parent
_SIZES = (1 << 16, 1 << 20)


def _first_use(case: Any, cls: Any) -> Dict[str, Any]:
    import cupy as cp

    dtype = case.dtypes[0]
    prob = next((p for p in (case.problem(s, dtype) for s in _SIZES) if p), None)
    if prob is None:
        return {"error": "no small problem fits this case"}
    rng = cp.random.default_rng(0)
    ins = [driver.random_array(s, d, rng) for s, d in zip(prob.in_shapes, prob.in_dtypes)]
    stream = cp.cuda.Stream(non_blocking=True)
    stream.synchronize()
    cp.cuda.runtime.deviceSynchronize()
    out: Dict[str, Any] = {"dtype": dtype, "in_bytes": prob.in_bytes}
    for key in ("first_s", "second_s"):
        t0 = time.perf_counter()
        cfg = driver.configure(cls, case.fields, prob.in_shapes, prob.in_dtypes, name=key)
        outs = [cp.empty(tuple(s), dtype=d) for s, d in zip(cfg.out_shapes, cfg.out_dtypes)]
        cfg.plugin.enqueue(cfg.in_desc, cfg.out_desc, [int(a.data.ptr) for a in ins],
                           [int(a.data.ptr) for a in outs], 0, int(stream.ptr))
        stream.synchronize()
        out[key] = time.perf_counter() - t0
    return out


def child(names: Sequence[str]) -> Dict[str, Any]:
    """Runs in the child process; the JSON-able timings."""
    t0 = time.perf_counter()
    import cupy as cp

    cp.cuda.Device(0).use()
    cp.empty(1)
    cp.cuda.runtime.deviceSynchronize()
    result: Dict[str, Any] = {"cuda_init_s": time.perf_counter() - t0, "ops": {}}
    t0 = time.perf_counter()
    try:
        import pyplugins.ops  # noqa: F401 - registration is part of start-up
    except ImportError as err:
        result["import_error"] = f"{type(err).__name__}: {err}"
    result["import_ops_s"] = time.perf_counter() - t0
    for case in distinct_plugins(select(names)):
        t0 = time.perf_counter()
        try:
            cls = case.plugin_class()
        except (ImportError, AttributeError) as err:
            result["ops"][case.name] = {"skipped": f"{type(err).__name__}: {err}"}
            continue
        import_s = time.perf_counter() - t0
        try:
            result["ops"][case.name] = dict(_first_use(case, cls), import_s=import_s)
        except Exception as err:  # noqa: BLE001 - recorded, so one broken op does not hide the others
            result["ops"][case.name] = {"error": f"{type(err).__name__}: {err}"}
    return result


def distinct_plugins(cases: Sequence[Any]) -> List[Any]:
    """The first case of each plugin class: a second case of the same class (Pool-avg after
    Pool-max) would find the kernel already compiled and measure nothing cold."""
    seen = set()
    out = []
    for case in cases:
        if (case.module, case.cls) not in seen:
            seen.add((case.module, case.cls))
            out.append(case)
    return out


def _spawn(names: Sequence[str], cache_dir: str) -> Dict[str, Any]:
    env = dict(os.environ, CUPY_CACHE_DIR=cache_dir, PYPLUGINS_TRT="emulator")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchmarks.coldstart", "--child", *names],
                          capture_output=True, text=True, env=env, cwd=str(REPO), timeout=600,
                          check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        return {"error": f"child exited {done.returncode}: {done.stderr.strip()[-2000:]}",
                "process_s": wall}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["process_s"] = wall
    return out


def run(names: Sequence[str], notes: List[str]) -> Dict[str, Any]:
    """Cold then warm-disk child processes over one fresh cache directory."""
    names = [c.name for c in select(names)]
    with tempfile.TemporaryDirectory(prefix="pp-cupy-cache-") as cache:
        cold = _spawn(names, cache)
        warm = _spawn(names, cache)
    for label, run_ in (("cold", cold), ("warm", warm)):
        if "error" in run_:
            notes.append(f"coldstart {label} child failed: {run_['error']}")
    return {"cold_process": cold, "warm_process": warm,
            "problem": "64 KiB of the case's first dtype (1 MiB if 64 KiB does not fit)"}


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--child":
        os.environ.setdefault("PYPLUGINS_TRT", "emulator")
        print(json.dumps(child(sys.argv[2:])))
    else:
        sys.exit("usage: python -m benchmarks.coldstart --child CASE ...")
