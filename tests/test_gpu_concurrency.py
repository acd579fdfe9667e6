"""Checks and ``pp.run`` in many threads, on one GPU and across two, give the sequential reports.

A thread storm runs ``pp.run(..., check=True)`` and the checker's library API
(:func:`pyplugins.checker.lifecycle.run`) on shipped ops at once; each job's summary (verdict,
checks, messages, ``[ERROR]`` lines, outputs) must equal the same job run alone. Before the
capture check used thread-local mode and the checker left the legacy stream and
``cudaDeviceSynchronize`` alone, one thread's capture failed the others' (``capture_unsafe``,
``device_error``). Needs a GPU (``gpu``), the two-GPU tests two (``multi_gpu``).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

import pyplugins as pp
from pyplugins.checker import lifecycle
from pyplugins.ops.circ_pad import CircPad
from pyplugins.ops.leaky_relu import LeakyReLU
from pyplugins.runtime import kernels
from pyplugins.runtime.execute import Execution

pytestmark = pytest.mark.gpu

_RNG = np.random.default_rng(7)
#: (name, plugin class, inputs, fields, the expected output)
CASES: List[Tuple[str, Any, List[np.ndarray], Dict[str, Any], np.ndarray]] = []
for _dt in (np.float32, np.float16):
    _x = _RNG.standard_normal((2, 3, 9, 11)).astype(_dt)
    CASES.append((f"CircPad-{np.dtype(_dt).name}", CircPad, [_x], {"pads": [1, 2, 3, 0]},
                  np.pad(_x, [(0, 0), (0, 0), (3, 0), (1, 2)], mode="wrap")))
    _y = _RNG.standard_normal((4, 257)).astype(_dt)
    CASES.append((f"LeakyReLU-{np.dtype(_dt).name}", LeakyReLU, [_y], {"neg_slope": 0.25},
                  np.where(_y >= 0, _y, _y * _dt(0.25)).astype(_dt)))


def _summary(report: Any) -> Tuple[Any, ...]:
    return (report.ok, report.enqueue_ran, report.checks(),
            sorted(v.message for v in report.violations), list(report.errors or ()))


def _job(case: int, device: Any) -> Dict[str, Any]:
    """One case through ``pp.run(check=True)`` and ``lifecycle.run``, on ``device``."""
    name, cls, arrays, fields, want = CASES[case]
    result: Dict[str, Any] = {"name": name, "device": device}
    try:
        got = pp.run(cls, *arrays, check=True, device=device, **fields)
        result["run_ok"] = bool(np.array_equal(np.asarray(got), want))
    except Exception as err:  # noqa: BLE001 - the failure is what the comparison shows
        result["run_ok"] = f"{type(err).__name__}: {err}"
    report = lifecycle.run(cls.creator, arrays, dict(fields), device=device)
    result["summary"] = _summary(report)
    result["report"] = report.format()
    result["outputs_ok"] = report.outputs is not None and np.array_equal(report.outputs[0], want)
    return result


def _storm(devices: List[Any], repeats: int) -> None:
    """Every case on every device, sequentially, then ``repeats`` times each at once in threads
    that start together; every threaded job must match its sequential twin."""
    jobs = [(case, dev) for case in range(len(CASES)) for dev in devices]
    alone = {job: _job(*job) for job in jobs}
    for job, result in alone.items():
        assert result["run_ok"] is True and result["outputs_ok"], (
            f"{job}: wrong alone, before any thread:\n{result['run_ok']}\n{result['report']}")
    work = jobs * repeats
    start = threading.Barrier(len(work))

    def threaded(job: Tuple[int, Any]) -> Dict[str, Any]:
        start.wait(timeout=60)
        return _job(*job)

    with ThreadPoolExecutor(max_workers=len(work)) as pool:
        results = list(pool.map(threaded, work))
    differ = []
    for job, result in zip(work, results):
        twin = alone[job]
        if (result["summary"], result["run_ok"], result["outputs_ok"]) != (
                twin["summary"], twin["run_ok"], twin["outputs_ok"]):
            differ.append(f"--- {result['name']} on device {job[1]!r}: pp.run "
                          f"{result['run_ok']!r}, outputs right {result['outputs_ok']}\n"
                          f"threaded report:\n{result['report']}\nsequential report:\n"
                          f"{twin['report']}")
    assert not differ, (f"{len(differ)} of {len(work)} threaded jobs differ from their "
                        f"sequential run:\n" + "\n".join(differ))


def test_thread_storm_on_one_gpu_matches_sequential_runs():
    _storm(["gpu"], repeats=3)


@pytest.mark.multi_gpu
def test_a_plugin_configured_and_run_on_device_1():
    import cupy as cp

    name, cls, (x,), fields, want = CASES[0]
    kernels.clear_cache(1)
    on_0 = kernels.cached_count(0)
    with Execution(cls.creator, fields, device="gpu:1") as node:
        assert node.device == 1
        (y,) = node(x)
        np.testing.assert_array_equal(y, want, err_msg=f"{name} on GPU 1 (NumPy inputs)")
        with cp.cuda.Device(1):
            x1 = cp.asarray(x)
        (y1,) = node(x1)
        assert y1.device.id == 1, f"{name}: a CuPy output on GPU {y1.device.id}, not 1"
        np.testing.assert_array_equal(cp.asnumpy(y1), want, err_msg=f"{name} on GPU 1 (CuPy)")
    assert kernels.cached_count(1) >= 1, "the kernel was not compiled for GPU 1"
    assert kernels.cached_count(0) == on_0, "running on GPU 1 compiled a kernel for GPU 0"
    np.testing.assert_array_equal(pp.run(cls, x, device=1, **fields), want)


@pytest.mark.multi_gpu
def test_thread_storm_across_two_gpus_matches_sequential_runs():
    _storm(["gpu:0", 1], repeats=2)



def test_a_legacy_stream_plugin_is_caught_without_failing_other_threads_checks():
    """A plugin launching on the legacy default stream, checked beside good plugins: its check
    still reports ``capture_unsafe`` (the poisoned replay), theirs stay clean."""
    from pathlib import Path

    from pyplugins.checker import _fresh

    _fresh.import_module(str(Path(__file__).parent / "emulator" / "plugins" / "bad_capture.py"))
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    good = list(range(len(CASES))) * 2
    start = threading.Barrier(len(good) + 2)

    def bad() -> Any:
        start.wait(timeout=60)
        return lifecycle.run("PPTestCaptureNullStream", [x], device="gpu")

    def fine(case: int) -> Dict[str, Any]:
        start.wait(timeout=60)
        return _job(case, "gpu")

    with ThreadPoolExecutor(max_workers=len(good) + 2) as pool:
        bad_jobs = [pool.submit(bad) for _ in range(2)]
        fine_jobs = [pool.submit(fine, case) for case in good]
        bad_reports = [job.result() for job in bad_jobs]
        results = [job.result() for job in fine_jobs]
    for report in bad_reports:
        assert "capture_unsafe" in report.checks(), report.format()
        assert any("different from the eager run" in v.message or "captured" in v.message
                   for v in report.violations if v.check == "capture_unsafe"), report.format()
    wrong = [f"--- {r['name']}: pp.run {r['run_ok']!r}\n{r['report']}" for r in results
             if not (r["summary"][0] and r["run_ok"] is True and r["outputs_ok"])]
    assert not wrong, "checks beside a legacy-stream plugin went wrong:\n" + "\n".join(wrong)
