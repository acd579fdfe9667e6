"""Sections 3 and 4: each op's device time against the copy baselines and against torch.

For every case x dtype x size the plugin is configured through the trampoline and captured in
a CUDA graph of ``k`` enqueues; so are ``k`` calls of each copy baseline
(:mod:`benchmarks.baselines`) and of each torch equivalent. When the data would fit in L2, ``k``
rotates over enough input/output sets to overflow it twice. Then ``rounds`` rounds each replay
every graph ``reps`` times in turn (median per round), after one untimed warm-up round, so a
claim can take the worst round.
Bytes moved: each input read once plus each output written once. Sizes up to ``SMALL_MAX`` are
also timed eagerly (a loop of enqueues as TensorRT calls them, then a synchronize), for the
fraction of the C++ launch floor they reach.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Dict, List, Optional, Sequence

from benchmarks import baselines, driver, timing, versus_torch
from benchmarks.cases import Case, Problem, format_bytes
from benchmarks.launch_paths import TrtCall

_BATCH_SECONDS = 2e-3   # aim for this much device work per timed graph replay
_MAX_SETS = 2048
_GUESS_BW = 2.5e12      # bytes/s, only to size batches
SMALL_MAX = 1 << 20     # sizes up to this get the eager launch-floor measurement
_EAGER_BATCH = 200


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


def _rounds_stats(per_round: List[List[float]], scale: float) -> Dict[str, Any]:
    """Pooled stats of every replay, plus each round's median under ``rounds``."""
    pooled = timing.stats([v for r in per_round for v in r], scale)
    pooled["rounds"] = [statistics.median(r) * scale for r in per_round]
    return pooled


def measure(case: Case, plugin_cls: Any, prob: Problem, *, reps: int, rounds: int,
            l2_bytes: int, torch_labels: Sequence[str],
            notes: List[str]) -> Optional[Dict[str, Any]]:
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
        "calls_per_graph": calls, "reps": reps, "rounds": rounds}

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
    enqueues = [TrtCall(cfg.plugin, cfg.in_desc, cfg.out_desc, [int(a.data.ptr) for a in i],
                        [int(a.data.ptr) for a in o], ws_ptr, sp) for i, o in zip(ins, outs)]
    timers: Dict[str, Any] = {}
    try:
        graph = timing.capture(stream, lambda: [enqueues[j % sets]() for j in range(calls)])
        timers["plugin"] = lambda reps, graph=graph: timing.replay_seconds(graph, stream,
                                                                          reps=reps)
    except Exception as err:  # noqa: BLE001 - a capture failure is a finding for the report
        notes.append(f"{tag}: plugin graph capture/replay failed: {type(err).__name__}: {err}")
        record["plugin_error"] = f"{type(err).__name__}: {err}"
    base = baselines.build(in_bytes, out_bytes, moved, sets, calls, stream)
    for name, (_nbytes, replay) in base.items():
        timers[name] = replay
    torch_graphs = _torch_graphs(case, prob, ins, outs, enqueues, stream, sets, calls,
                                 torch_labels, record) if torch_labels else {}
    timers.update({f"torch:{k}": g.seconds for k, g in torch_graphs.items()})
    per_round = timing.rounds(timers, reps=reps, rounds=rounds, warmup_reps=max(2, reps // 4))
    if "plugin" in per_round:
        record["plugin_s"] = _rounds_stats(per_round["plugin"], 1.0 / calls)
    record["baselines"] = {name: {"bytes": nbytes, "s": _rounds_stats(per_round[name],
                                                                       1.0 / calls)}
                           for name, (nbytes, _replay) in base.items()}
    for label, g in torch_graphs.items():
        record["torch"][label]["s"] = _rounds_stats(per_round[f"torch:{label}"], 1.0 / calls)
        g.close()
    if prob.in_bytes <= SMALL_MAX and "plugin" in timers:
        record["eager_us"] = _eager(enqueues, stream, rounds)
    record["seconds"] = {"measure": time.perf_counter() - t0}
    del ins, outs, ws, base, timers, torch_graphs
    cp.get_default_memory_pool().free_all_blocks()
    return record


def _eager(enqueues: List[Any], stream: Any, rounds: int, batches: int = 25) -> Dict[str, Any]:
    """Microseconds per call of a loop of enqueues (as TensorRT calls them) plus synchronize."""
    sets = len(enqueues)
    per_round: List[List[float]] = []
    for _ in range(max(1, rounds)):
        vals = []
        for b in range(batches + 2):
            t0 = time.perf_counter()
            for j in range(_EAGER_BATCH):
                enqueues[(b * _EAGER_BATCH + j) % sets]()
            stream.synchronize()
            if b >= 2:  # two warm-up batches
                vals.append((time.perf_counter() - t0) / _EAGER_BATCH)
        per_round.append(vals)
    return _rounds_stats(per_round, 1e6)


def _torch_graphs(case: Case, prob: Problem, ins: List[List[Any]], outs: List[List[Any]],
                  enqueues: List[Any], stream: Any, sets: int, calls: int,
                  labels: Sequence[str], record: Dict[str, Any]) -> Dict[str, Any]:
    """Captured torch graphs per label; ``record["torch"]`` gets each label's error or skip."""
    import torch

    results: Dict[str, Any] = record.setdefault("torch", {})
    graphs: Dict[str, Any] = {}
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
            graphs[label] = timing.TorchGraph(lambda j, fns=fns: fns[j % sets](), calls=calls,
                                              keep=sets)
            results[label] = {"rel_err": err}
        except Exception as exc:  # noqa: BLE001 - recorded: a torch failure must not end the run
            results[label] = {"error": f"{type(exc).__name__}: {exc}"}
    return graphs
