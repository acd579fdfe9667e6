"""Sections 3 and 4: each op's device time against a device-to-device copy and against torch.

For every case x dtype x size the plugin is configured through the trampoline, and three things
are timed side by side with CUDA events around replays of captured CUDA graphs (so launch gaps
and host overhead stay out): ``k`` plugin enqueues, ``k`` ``cudaMemcpyAsync`` moving the same
number of bytes (half read, half written), and ``k`` calls of each torch equivalent. When the
data would fit in L2, ``k`` rotates over enough input/output sets to overflow it twice, so the
cache is not what gets measured. Bytes moved: each input read once plus each output written once.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any, Dict, List, Optional, Sequence

from benchmarks import driver, timing, versus_torch
from benchmarks.cases import Case, Problem, format_bytes

_BATCH_SECONDS = 2e-3   # aim for this much device work per timed graph replay
_MAX_SETS = 2048
_GUESS_BW = 2.5e12      # bytes/s, only to size batches


def _sets_for(moved: int, l2_bytes: int) -> int:
    return max(1, min(_MAX_SETS, math.ceil(2 * l2_bytes / max(moved, 1))))


def _calls_for(moved: int, sets: int) -> int:
    per_call = moved / _GUESS_BW + 2e-6
    return sets * max(1, math.ceil(_BATCH_SECONDS / (sets * per_call)))


def _make_inputs(case: Case, prob: Problem, rng: Any) -> List[Any]:
    arrays = []
    for i, (shape, dt) in enumerate(zip(prob.in_shapes, prob.in_dtypes)):
        if case.name == "RMSNorm" and i == 1:
            arrays.append(driver.positive_array(shape, dt, rng))
        else:
            arrays.append(driver.random_array(shape, dt, rng))
    return arrays


def measure(case: Case, plugin_cls: Any, prob: Problem, *, reps: int, l2_bytes: int,
            torch_labels: Sequence[str], notes: List[str]) -> Optional[Dict[str, Any]]:
    """One record (see module docstring), or None when the plugin cannot be set up."""
    import cupy as cp

    tag = f"{case.name} {prob.dtype} {format_bytes(prob.in_bytes)}"
    try:
        cfg = driver.configure(plugin_cls, case.fields, prob.in_shapes, prob.in_dtypes)
    except driver.SetupError as err:
        notes.append(f"{tag}: not configured: {err}")
        return None
    if [tuple(s) for s in cfg.out_shapes] != [tuple(s) for s in prob.out_shapes]:
        notes.append(f"{tag}: plugin output shapes {cfg.out_shapes} differ from the case's "
                     f"rule {list(prob.out_shapes)}; bytes counted from the plugin's")
    out_bytes = sum(math.prod(s) * cp.dtype(d).itemsize
                    for s, d in zip(cfg.out_shapes, cfg.out_dtypes))
    in_bytes = sum(math.prod(s) * cp.dtype(d).itemsize
                   for s, d in zip(prob.in_shapes, prob.in_dtypes))
    moved = int(in_bytes + out_bytes)
    sets = _sets_for(moved, l2_bytes)
    calls = _calls_for(moved, sets)
    record: Dict[str, Any] = {
        "case": case.name, "dtype": prob.dtype, "in_bytes": prob.in_bytes, "moved_bytes": moved,
        "in_shapes": [list(s) for s in prob.in_shapes],
        "out_shapes": [list(s) for s in cfg.out_shapes], "sets": sets,
        "calls_per_graph": calls, "reps": reps}

    t0 = time.perf_counter()
    stream = cp.cuda.Stream(non_blocking=True)
    rng = cp.random.default_rng(prob.in_bytes)
    ins = [_make_inputs(case, prob, rng) for _ in range(sets)]
    outs = [[cp.empty(tuple(s), dtype=d) for s, d in zip(cfg.out_shapes, cfg.out_dtypes)]
            for _ in range(sets)]
    ws = cp.empty(cfg.workspace_bytes, dtype=cp.uint8) if cfg.workspace_bytes else None
    ws_ptr = int(ws.data.ptr) if ws is not None else 0
    cp.cuda.runtime.deviceSynchronize()  # inputs were made on the legacy stream
    sp = int(stream.ptr)
    enqueues = [functools.partial(cfg.plugin.enqueue, cfg.in_desc, cfg.out_desc,
                                  [int(a.data.ptr) for a in i], [int(a.data.ptr) for a in o],
                                  ws_ptr, sp) for i, o in zip(ins, outs)]
    try:
        graph = timing.capture(stream, lambda: [enqueues[j % sets]() for j in range(calls)])
        record["plugin_s"] = timing.stats(timing.replay_seconds(graph, stream, reps=reps),
                                          1.0 / calls)
        del graph
    except Exception as err:  # a capture failure is a finding for the report
        notes.append(f"{tag}: plugin graph capture/replay failed: {type(err).__name__}: {err}")
        record["plugin_error"] = f"{type(err).__name__}: {err}"
    record["copy_bytes"], record["copy_s"] = _copy(moved, sets, calls, stream, reps)
    t1 = time.perf_counter()
    if torch_labels:
        record["torch"] = _torch(case, prob, cfg, ins, outs, enqueues, stream, sets, calls,
                                 reps, torch_labels)
    record["seconds"] = {"plugin_and_copy": t1 - t0, "torch": time.perf_counter() - t1}
    del ins, outs, ws
    cp.get_default_memory_pool().free_all_blocks()
    return record


def copy_bytes(moved: int) -> int:
    """Bytes each copy moves (read, and again written): half of ``moved``, rounded down to a
    whole MiB above 2 MiB (else to 4 KiB). On an H100 a copy of 256 MiB + 4 KiB ran at 0.8 of
    the speed of 256 MiB (copies of other sizes take a slower path), and the roofline should not
    depend on such accidents; bandwidth is computed from the bytes actually copied."""
    half = moved // 2
    grain = 1 << 20 if half >= 2 << 20 else 4096
    return max(grain, half // grain * grain)


def _copy(moved: int, sets: int, calls: int, stream: Any, reps: int) -> tuple:
    import cupy as cp

    nbytes = copy_bytes(moved)
    src = [cp.empty(nbytes, dtype=cp.uint8) for _ in range(sets)]
    dst = [cp.empty(nbytes, dtype=cp.uint8) for _ in range(sets)]
    kind = cp.cuda.runtime.memcpyDeviceToDevice
    sp = int(stream.ptr)

    def body() -> None:
        for j in range(calls):
            cp.cuda.runtime.memcpyAsync(dst[j % sets].data.ptr, src[j % sets].data.ptr, nbytes,
                                        kind, sp)
    for a in src:
        a.fill(1)
    cp.cuda.runtime.deviceSynchronize()
    graph = timing.capture(stream, body)
    seconds = timing.replay_seconds(graph, stream, reps=reps)
    return nbytes, timing.stats(seconds, 1.0 / calls)


def _torch(case: Case, prob: Problem, cfg: Any, ins: List[List[Any]], outs: List[List[Any]],
           enqueues: List[Any], stream: Any, sets: int, calls: int, reps: int,
           labels: Sequence[str]) -> Dict[str, Any]:
    import torch

    results: Dict[str, Any] = {}
    t_ins = [[torch.from_dlpack(a) for a in s] for s in ins]
    enqueues[0]()
    stream.synchronize()
    got = [torch.from_dlpack(a) for a in outs[0]]
    for label in labels:
        if not versus_torch.supported(label, prob.dtype):
            results[label] = {"skipped": f"torch has no {prob.dtype} kernel"}
            continue
        try:
            fns = [versus_torch.prepare(label, case.fields, s) for s in t_ins]
            want = fns[0]()
            err = versus_torch.relative_error(got, want)
            del want
            seconds = timing.torch_graph_seconds(lambda j: fns[j % sets](), calls=calls,
                                                 reps=reps, keep=sets)
            results[label] = {"s": timing.stats(seconds, 1.0 / calls), "rel_err": err}
        except Exception as exc:  # recorded: a torch failure must not end the run
            results[label] = {"error": f"{type(exc).__name__}: {exc}"}
        torch.cuda.empty_cache()
    return results
