"""Runs one case's enqueue under a profiler: ``python -m benchmarks.profile_case CASE DTYPE BYTES``.

Configures the case's plugin as the harness does, warms it up, then, between
``cuProfilerStart`` and ``cuProfilerStop``, calls ``enqueue`` once (as TensorRT calls it) and
launches the ``copy_kernel`` baseline once on the same number of bytes, so a profiler started
with ``--profile-from-start off`` (``benchmarks/ncu_slowest.sh``) sees the op's kernel(s) first
and a plain copy last, to compare with (``benchmarks/profile_summary.py``).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
from typing import Sequence

os.environ.setdefault("PYPLUGINS_TRT", "emulator")


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile_case",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("case", help="a case name of benchmarks/cases.py, e.g. Pool-avg-5x5s2")
    parser.add_argument("dtype", help="e.g. float32, float16, int8")
    parser.add_argument("bytes", type=int, help="the main input's size in bytes")
    args = parser.parse_args(list(argv))
    import cupy as cp

    from benchmarks import baselines, driver
    from benchmarks.cases import select
    from benchmarks.launch_paths import TrtCall

    case = select([args.case])[0]
    prob = case.problem(args.bytes, args.dtype)
    if prob is None:
        print(f"{case.name} has no {args.dtype} problem of {args.bytes} bytes", file=sys.stderr)
        return 2
    cfg = driver.configure(case.plugin_class(), case.fields, prob.in_shapes, prob.in_dtypes)
    rng = cp.random.default_rng(0)
    ins = [driver.random_array(s, d, rng) for s, d in zip(prob.in_shapes, prob.in_dtypes)]
    outs = [cp.empty(tuple(s), dtype=d) for s, d in zip(cfg.out_shapes, cfg.out_dtypes)]
    ws = cp.empty(max(cfg.workspace_bytes, 1), dtype=cp.uint8)
    stream = cp.cuda.Stream(non_blocking=True)
    cp.cuda.runtime.deviceSynchronize()
    call = TrtCall(cfg.plugin, cfg.in_desc, cfg.out_desc, [int(a.data.ptr) for a in ins],
                   [int(a.data.ptr) for a in outs], int(ws.data.ptr), int(stream.ptr))
    copy = baselines.copy_launcher(prob.moved_bytes, stream)
    for _ in range(3):
        call()
        copy()
    stream.synchronize()
    libcuda = ctypes.CDLL("libcuda.so.1")
    libcuda.cuProfilerStart()
    call()
    copy()
    stream.synchronize()
    libcuda.cuProfilerStop()
    print(f"profiled one enqueue of {case.name} {prob.dtype} {prob.in_shapes} -> "
          f"{cfg.out_shapes}, then one copy_kernel of the same bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
