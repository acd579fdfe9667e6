"""LeakyReLU's numba kernel against its CUDA C++ kernel: device time by size, and enqueue host cost.

Two measurements, GPU only (``python -m benchmarks.numba_cases [--sizes 1M,64M] [--calls N]``,
JSON on stdout):

- **kernel**: for each input byte size (float32), the median device time of the numba launch
  (:class:`pyplugins.runtime.numba_launch.NumbaLaunch`) and of the CUDA C++ launch
  (:class:`pyplugins.runtime.launch.Launch`), both replayed from CUDA graphs so host cost is excluded,
  and their ratio; both outputs are checked equal first.
- **enqueue**: host microseconds per call of ``launch(stream, x, y)`` for the two launch objects
  on a 4 KiB tensor (the call a plugin's ``enqueue`` makes; target: numba's at most 2x), and of
  wrapping one pointer as a numba device array (``cuda.from_cuda_array_interface``), which
  numba's own launch (the fallback path) does twice per call. ``path`` says how the
  NumbaLaunch launched (``"driver"``: the prepacked call; ``"numba"``: numba's own launch).

``python -m benchmarks`` runs both as its ``numba`` section (sizes :data:`RUN_SIZES`).

Without a GPU it prints ``{"skipped": why}`` and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from benchmarks.cases import format_bytes, parse_bytes
from benchmarks.timing import capture, host_loops, replay_seconds, stats

DEFAULT_SIZES = ("64K", "1M", "16M", "64M", "256M")
#: The sizes the full benchmark run (``python -m benchmarks``, section ``numba``) measures: the
#: kernel target holds at >= 16 MiB (:data:`benchmarks.claims.NUMBA_KERNEL_MIN_BYTES`).
RUN_SIZES = ("64K", "16M", "64M")


def _launches(cp: Any, n: int, device: int) -> Dict[str, Any]:
    from pyplugins.runtime.launch import POINTER, Launch
    from pyplugins.runtime.numba_launch import ArraySlot, NumbaLaunch
    from pyplugins.ops.leaky_relu import BLOCK, LeakyReLU, grid_size
    from pyplugins.ops.leaky_relu import NUMBA_BLOCK, LeakyReLUNumba, numba_grid

    slope = np.float32(0.1)
    return {
        "numba": NumbaLaunch(LeakyReLUNumba.numba_kernel, grid=numba_grid(n),
                             block=NUMBA_BLOCK, device=device,
                             args=(ArraySlot((n,), np.float32), ArraySlot((n,), np.float32),
                                   np.int64(n), slope)),
        "cuda_cpp": Launch(LeakyReLU.kernel.function("float", device), grid=grid_size(n, 4),
                           block=BLOCK, device=device,
                           args=(POINTER, POINTER, np.int64(n), slope)),
    }


def kernel_times(cp: Any, sizes: Sequence[str]) -> List[Dict[str, Any]]:
    """Median device time of each launch per size (graph replays), outputs checked equal."""
    device = cp.cuda.runtime.getDevice()
    stream = cp.cuda.Stream(non_blocking=True)
    rows = []
    for text in sizes:
        n = parse_bytes(text) // 4
        x = cp.random.standard_normal(n, dtype=cp.float32)
        outs = {name: cp.empty(n, cp.float32) for name in ("numba", "cuda_cpp")}
        launches = _launches(cp, n, device)
        row: Dict[str, Any] = {"size": format_bytes(n * 4), "elements": n}
        for name, launch in launches.items():
            def call(launch: Any = launch, y: Any = outs[name], x: Any = x) -> None:
                launch(stream.ptr, x.data.ptr, y.data.ptr)

            row[name] = stats(replay_seconds(capture(stream, call), stream, reps=20), 1e6)  # us
            row[name]["GBps"] = 2 * n * 4 / (row[name]["median"] * 1e3)
        row["outputs_equal"] = bool(cp.array_equal(outs["numba"], outs["cuda_cpp"]))
        row["numba_over_cuda_cpp"] = row["numba"]["median"] / row["cuda_cpp"]["median"]
        rows.append(row)
        del x, outs
    return rows


def enqueue_overhead(cp: Any, calls: int) -> Dict[str, Any]:
    """Host microseconds per ``launch(stream, x, y)`` call, and per numba device-array view."""
    from pyplugins.runtime.numba_launch import numba_cuda

    device = cp.cuda.runtime.getDevice()
    stream = cp.cuda.Stream(non_blocking=True)
    n = 1024
    x, y = cp.ones(n, cp.float32), cp.empty(n, cp.float32)
    launches = _launches(cp, n, device)
    cuda = numba_cuda()
    desc = {"shape": (n,), "typestr": "<f4", "data": (x.data.ptr, False), "strides": None,
            "version": 3}
    fns = {name: (lambda launch=launch: launch(stream.ptr, x.data.ptr, y.data.ptr))
           for name, launch in launches.items()}
    fns["numba_view_only"] = lambda: cuda.from_cuda_array_interface(desc, owner=None,
                                                                    sync=False)
    return host_loops(fns, stream.synchronize, calls=calls)


def run(sizes: Sequence[str] = DEFAULT_SIZES, calls: int = 20000) -> Dict[str, Any]:
    """Both measurements, or ``{"skipped": why}`` without a GPU."""
    try:
        import cupy as cp

        if cp.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("CuPy sees no CUDA device")
    except Exception as err:  # noqa: BLE001 - no CuPy, no driver, no device: skipped
        return {"skipped": f"no GPU ({type(err).__name__}: {err})"}
    import numba_cuda

    probe = _launches(cp, 1024, cp.cuda.runtime.getDevice())["numba"]
    return {"numba_cuda": numba_cuda.__version__,
            "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
            "path": probe.path, "fallback_reason": probe.fallback_reason,
            "kernel": kernel_times(cp, sizes), "enqueue": enqueue_overhead(cp, calls)}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Print :func:`run`'s result as JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.numba_cases")
    parser.add_argument("--sizes", default=",".join(DEFAULT_SIZES))
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.sizes.split(","), args.calls), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
