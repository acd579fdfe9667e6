"""Timers: host-side launch loops, CUDA-event timing of captured graphs, and summary stats.

Host overhead is timed with ``time.perf_counter`` over short batches (a batch never fills the
launch queue), synchronizing between batches; device time with CUDA events around graph
replays, so launch gaps and host overhead stay out of kernel-efficiency figures.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Dict, List, Sequence


def stats(values: Sequence[float], scale: float = 1.0) -> Dict[str, float]:
    """min / quartiles / median / max of ``values`` times ``scale``, plus the sample count."""
    vals = sorted(v * scale for v in values)
    q = statistics.quantiles(vals, n=4) if len(vals) > 1 else [vals[0]] * 3
    return {"min": vals[0], "p25": q[0], "median": statistics.median(vals), "p75": q[2],
            "max": vals[-1], "n": len(vals)}


def host_loops(fns: Dict[str, Callable[[], Any]], sync: Callable[[], Any], *, calls: int,
               batch: int = 200, warmup_batches: int = 5,
               keep_batches: bool = False) -> Dict[str, Dict[str, Any]]:
    """Per-call microseconds of each path in ``fns``: host side only, and loop plus ``sync``.

    Paths take turns batch by batch (the order rotating), so drifts in clocks or load fall on
    all of them alike. Per path and turn: a batch of ``batch`` calls timed alone ("host", then
    synchronized untimed) and a batch timed together with ``sync`` ("sync"). Each path gets
    ``ceil(calls / batch)`` turns after ``warmup_batches`` untimed ones. A path with a
    ``run_batch(n)`` method makes its ``n`` calls itself (a loop in C++, as TensorRT calls
    ``enqueue``) instead of being called ``n`` times from this loop. With ``keep_batches``, each
    path's ``batches_us`` lists its host microseconds per call turn by turn, so that two paths
    can be compared turn by turn (:func:`benchmarks.claims.paired_rounds`).
    """
    names = list(fns)
    n_batches = max(1, -(-calls // batch))
    rng = range(batch)
    batched = {name: getattr(fn, "run_batch", None) for name, fn in fns.items()}
    for name in names:
        fn, run_batch = fns[name], batched[name]
        for _ in range(warmup_batches):
            if run_batch is None:
                for _ in rng:
                    fn()
            else:
                run_batch(batch)
            sync()
    host: Dict[str, List[float]] = {n: [] for n in names}
    both: Dict[str, List[float]] = {n: [] for n in names}
    clock = time.perf_counter
    for b in range(n_batches):
        shift = b % len(names)
        for name in names[shift:] + names[:shift]:
            fn, run_batch = fns[name], batched[name]
            t0 = clock()
            if run_batch is None:
                for _ in rng:
                    fn()
            else:
                run_batch(batch)
            t1 = clock()
            sync()
            host[name].append(t1 - t0)
            t0 = clock()
            if run_batch is None:
                for _ in rng:
                    fn()
            else:
                run_batch(batch)
            sync()
            both[name].append(clock() - t0)
    per_us = 1e6 / batch
    out = {n: {"host_us": stats(host[n], per_us), "sync_us": stats(both[n], per_us),
               "calls": n_batches * batch, "batch": batch} for n in names}
    if keep_batches:
        for n in names:
            out[n]["batches_us"] = [t * per_us for t in host[n]]
    return out


def rounds(timers: Dict[str, Callable[[int], List[float]]], *, reps: int, rounds: int,
           warmup_reps: int) -> Dict[str, List[List[float]]]:
    """Each timer's ``reps`` samples per round, for ``rounds`` rounds, after one warm-up round.

    ``timers`` maps a name to a function taking a repetition count and returning that many
    samples (e.g. :func:`replay_seconds` of one graph). The warm-up round calls every timer
    once with ``warmup_reps`` and discards what it returns, so the first timed round does not
    pay for clocks ramping up or memory touched for the first time. The timers then take turns,
    the order rotating one place per round.

    Example:
        >>> calls = []
        >>> def timer(name):
        ...     return lambda n: calls.append((name, n)) or [1.0] * n
        >>> got = rounds({"a": timer("a"), "b": timer("b")}, reps=3, rounds=2, warmup_reps=1)
        >>> calls
        [('a', 1), ('b', 1), ('a', 3), ('b', 3), ('b', 3), ('a', 3)]
        >>> got["a"]
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    names = list(timers)
    if warmup_reps > 0:
        for name in names:
            timers[name](warmup_reps)
    out: Dict[str, List[List[float]]] = {n: [] for n in names}
    for r in range(max(1, rounds)):
        shift = r % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            out[name].append(timers[name](reps))
    return out


def capture(stream: Any, body: Callable[[], Any]) -> Any:
    """Run ``body`` under CUDA-graph capture on the CuPy ``stream``; the instantiated graph.

    Ends the capture even when ``body`` raises, so the stream is usable afterwards.
    """
    stream.begin_capture()
    try:
        body()
    except BaseException:
        try:
            stream.end_capture()
        except Exception:  # noqa: BLE001 - the capture may already be invalidated; the body's error matters
            pass
        raise
    return stream.end_capture()


def replay_seconds(graph: Any, stream: Any, *, reps: int, warmup: int = 2) -> List[float]:
    """Seconds of each of ``reps`` replays of a CuPy graph, by CUDA events on ``stream``."""
    import cupy as cp

    for _ in range(warmup):
        graph.launch(stream)
    stream.synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for _ in range(reps):
        start.record(stream)
        graph.launch(stream)
        end.record(stream)
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
    return out


class TorchGraph:
    """A torch CUDA graph of ``fn(0) .. fn(calls - 1)``, replayed on demand (one capture, many
    rounds); ``close()`` frees it.

    The results of the last ``keep`` calls stay alive during capture, so the graph writes its
    outputs round-robin into ``keep`` + 1 buffers: give the plugin's number of output sets, or
    torch would write every call into one buffer, which stays in L2 when it fits there.
    """

    def __init__(self, fn: Callable[[int], Any], *, calls: int, keep: int = 1) -> None:
        import collections

        import torch

        self.side = torch.cuda.Stream()
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):  # eager warm-up, as torch.cuda.graph requires
            fn(0)
        torch.cuda.current_stream().wait_stream(self.side)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        held: collections.deque = collections.deque(maxlen=max(keep, 1))
        with torch.cuda.graph(self.graph, stream=self.side):
            for i in range(calls):
                held.append(fn(i))
        held.clear()

    def seconds(self, reps: int, warmup: int = 2) -> List[float]:
        """Seconds of each of ``reps`` replays, by CUDA events."""
        import torch

        with torch.cuda.stream(self.side):
            for _ in range(warmup):
                self.graph.replay()
            self.side.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            out = []
            for _ in range(reps):
                start.record(self.side)
                self.graph.replay()
                end.record(self.side)
                end.synchronize()
                out.append(start.elapsed_time(end) * 1e-3)
        return out

    def close(self) -> None:
        import torch

        self.graph = None
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
