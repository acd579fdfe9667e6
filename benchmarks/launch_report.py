"""Targets, summary rows and report tables of the ``aot`` and ``threads`` sections.

Both are measured from C++: ``aot`` (the stored AOT artifact launched as TensorRT launches it,
:mod:`benchmarks.aot_rows`) and ``threads`` (many threads calling ``enqueue`` through the
trampoline, :mod:`benchmarks.threads`).

:func:`targets` and :func:`summary` feed :func:`benchmarks.claims.targets` and
:func:`benchmarks.claims.summary`; :func:`aot_table` and :func:`threads_table` are the report's
sections. Every ratio is of figures measured in one run.

Example:
    >>> rows = {"cpp_floor": {"host_us": {"rounds": [3.0, 3.0]}},
    ...         "aot_launch": {"host_us": {"rounds": [3.1, 3.3]}}}
    >>> round(worst_ratio(rows, "aot_launch", "cpp_floor", "host_us"), 3)
    1.1
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from benchmarks.figures import TARGETS, Target, med, num, ratio, rounds_of

KERNEL_SIZE = "the kernel-sized problem"
__all__ = ["AOT_LABELS", "aot_table", "summary", "targets", "threads_table", "worst_ratio"]

AOT_LABELS = {
    "cpp_floor": "C++ `<<<>>>` of the same entry kernel (floor)",
    "aot_preevaluated": "`cuLaunchKernel` of the artifact's kernel, parameters packed once",
    "aot_launch": "**AOT launch as TensorRT runs it** (expressions evaluated, packed, "
                  "`cuLaunchKernel`, every launch)",
}


def worst_ratio(rows: Dict[str, Any], path: str, base: str, metric: str) -> Optional[float]:
    """The highest per-round ratio of ``path``'s ``metric`` to ``base``'s (None without both)."""
    vals = [a / b for a, b in zip(rounds_of(rows.get(path), metric),
                                  rounds_of(rows.get(base), metric)) if b]
    return max(vals) if vals else None


def _aot_ops(result: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in ((result.get("aot") or {}).get("ops") or {}).items()
            if "paths" in v}


def _kernel_ratio(rec: Dict[str, Any], key: str = "kernel_time") -> Optional[float]:
    kt = rec.get(key) or {}
    return ratio(med(kt, "aot_us"), med(kt, "jit_us"))


def round_spread(rows: Dict[str, Any], path: str, base: str, metric: str) -> Optional[str]:
    """``"lo-hi (n rounds)"``: the range of the per-round ratios of ``path`` to ``base``.

    Example:
        >>> rows = {"a": {"host_us": {"rounds": [3.0, 3.0]}}, "b": {"host_us": {"rounds": [3.3, 3.0]}}}
        >>> round_spread(rows, "b", "a", "host_us")
        '1.00-1.10x (2 rounds)'
    """
    vals = [a / b for a, b in zip(rounds_of(rows.get(path), metric),
                                  rounds_of(rows.get(base), metric)) if b]
    if not vals:
        return None
    return f"{num(min(vals))}-{num(max(vals))}x ({len(vals)} rounds)"


def _aot_targets(result: Dict[str, Any]) -> List[Target]:
    out: List[Target] = []
    for op, rec in _aot_ops(result).items():
        rows = rec["paths"]
        bad = [f"{p}: {r['check']}" for p, r in rows.items() if r.get("check", "ok") != "ok"]
        for metric, key, what in (("host_us", "aot_vs_cpp_host", "host, worst round"),
                                  ("graph_us", "aot_vs_cpp_graph",
                                   "graph replay per kernel, worst round")):
            limit = TARGETS[key]
            r = worst_ratio(rows, "aot_launch", "cpp_floor", metric)
            measured = f"{num(r)}x" + (f" (refused: {'; '.join(bad)})" if bad else "")
            out.append((f"{op}: AOT launch <= {limit}x C++ `<<<>>>` ({what})", measured,
                        None if r is None and not bad else (not bad and r is not None
                                                            and r <= limit)))
        kt = rec.get("kernel_time") or {}
        k = _kernel_ratio(rec)
        limit = TARGETS["aot_kernel_vs_jit"]
        if kt.get("check", "ok") != "ok":
            out.append((f"{op}: AOT kernel time = JIT kernel time (within {limit:.0%})",
                        str(kt["check"]), False))
        elif k is not None:
            out.append((f"{op}: AOT kernel time = JIT kernel time (within {limit:.0%}, "
                        f"{(result.get('aot') or {}).get('kernel_bytes')}, static-shape engine)",
                        f"{num(k, 3)}x", abs(k - 1) <= limit))
    return out


def _thread_configs(result: Dict[str, Any]) -> Dict[str, Any]:
    return ((result.get("threads") or {}).get("configs") or {})


#: The row families of the threads section the target applies to: (metric, what, label).
THREAD_ROWS = (("enqueue_per_s", "enqueue", ""),
               ("aot_per_s", "launch", ", AOT kernel launched by C++ threads"),
               ("cpp_per_s", "launch", ", C++ `<<<>>>` threads"))


def _worst_vs_one(rows: Dict[str, Any], metric: str) -> Optional[Tuple[float, str]]:
    """(lowest per-round ratio of a thread count's ``metric`` to 1 thread's, that count)."""
    one = rounds_of(rows.get("1"), metric)
    vals = [(b / a, t) for t, row in rows.items() if t != "1"
            for a, b in zip(one, rounds_of(row, metric)) if a]
    return min(vals) if vals else None


def _thread_targets(result: Dict[str, Any]) -> List[Target]:
    out: List[Target] = []
    limit = TARGETS["threads_vs_one"]
    for name, cfg in _thread_configs(result).items():
        rows = cfg.get("rows") or {}
        for metric, what, label in THREAD_ROWS:
            got = _worst_vs_one(rows, metric)
            if got is None:
                continue
            worst, at = got
            out.append((f"threads, {name}{label}: aggregate {what} rate >= {limit}x the "
                        "1-thread rate (every thread count, worst round)",
                        f"{num(worst)}x (at {at} threads)", worst >= limit))
    return out


def targets(result: Dict[str, Any]) -> List[Target]:
    """(what, measured, met?) of the ``aot`` and ``threads`` sections."""
    return _aot_targets(result) + _thread_targets(result)


def summary(result: Dict[str, Any]) -> List[List[str]]:
    """Rows of the run's closing table for both sections."""
    rows = []
    for op, rec in _aot_ops(result).items():
        p = rec["paths"]
        rows.append([f"{op} AOT launch", "host",
                     f"{num(worst_ratio(p, 'aot_launch', 'cpp_floor', 'host_us'))}x C++",
                     f"graph {num(worst_ratio(p, 'aot_launch', 'cpp_floor', 'graph_us'))}x; "
                     f"kernel {num(_kernel_ratio(rec), 3)}x JIT"])
    for name, cfg in _thread_configs(result).items():
        rs = cfg.get("rows") or {}
        top = max(rs, key=int, default=None)
        if top is None:
            continue
        rows.append([f"threads ({name})", f"{top} threads",
                     f"{num(ratio(med(rs[top], 'enqueue_per_s'), med(rs.get('1'), 'enqueue_per_s')))}x "
                     "1 thread",
                     f"{num(ratio(med(rs[top], 'enqueue_per_s'), med(rs[top], 'cpp_per_s')))}x "
                     "C++ threads; AOT kernel from C++ threads "
                     f"{num(ratio(med(rs[top], 'aot_per_s'), med(rs.get('1'), 'aot_per_s')))}x "
                     "1 thread"])
    return rows


def _x(value: Optional[float]) -> str:
    """A ratio cell: ``1.02x``, or ``n/a``."""
    return "n/a" if value is None else f"{num(value)}x"


def _table(head: List[str], rows: List[List[str]]) -> List[str]:
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            + ["| " + " | ".join(r) + " |" for r in rows])


def aot_table(result: Dict[str, Any]) -> List[str]:
    """The report's "AOT launch as TensorRT runs it" section."""
    aot = result.get("aot") or {}
    ops = aot.get("ops") or {}
    if not ops:
        return ["_Not measured in this run._"]
    n_rounds = aot.get("host_rounds", aot.get("rounds"))
    shared = ("; both read the same inputs and write the same outputs (compared bit for bit "
              "beforehand in separate ones)" if any(
                  (rec.get("kernel_time") or {}).get("buffers") == "shared"
                  for rec in ops.values()) else "")
    lines = [f"Each op's AOT artifact, built through the emulator's QDP AOT path, launched by "
             "`benchmarks/cpp/aot_launch.cu` (driver API, no Python; expressions compiled once "
             "at load into a flat program, run at every launch) on a tiny float32 problem. A "
             f"round: {aot.get('calls')} launches per path in batches of {aot.get('batch')}, "
             "the three paths interleaved batch by batch in an order that rotates from batch "
             "to batch; each batch timed alone (host) and with its synchronize; a path's round "
             "figure is the median of its batches, the same rule for every path; then a graph "
             f"of {aot.get('graph_kernels')} launches per path, replayed "
             f"{aot.get('graph_replays')} times, paths in turns. {n_rounds} rounds. Tables show "
             "medians over rounds; the targets take the worst round, and each op's spread line "
             "gives the range of the per-round host ratios and the quartiles of every batch. "
             "Every path's output is compared bit for bit with the JIT `enqueue`'s; a wrong one "
             "is refused. Kernel time: the AOT kernel and the JIT `enqueue` at "
             f"{aot.get('kernel_bytes')}, CUDA graphs replayed in turns{shared}, the artifact "
             "built for "
             "that shape alone (a static-shape engine: the target); the dynamic-profile "
             "artifact's figure (its row chosen at the profile's max, docs/aot.md) is "
             "informational.", ""]
    for op, rec in ops.items():
        if "paths" not in rec:
            lines += [f"**{op}**: {rec.get('skipped', 'not measured')}", ""]
            continue
        rows, floor = rec["paths"], rec["paths"].get("cpp_floor") or {}
        table = []
        for key, row in rows.items():
            if row.get("check", "ok") != "ok":
                table.append([AOT_LABELS.get(key, key), "refused", "", "", "", "", "",
                              row["check"]])
                continue
            h, s, g = med(row, "host_us"), med(row, "sync_us"), med(row, "graph_us")
            table.append([AOT_LABELS.get(key, key), num(h), _x(ratio(h, med(floor, "host_us"))),
                          num(s), _x(ratio(s, med(floor, "sync_us"))), num(g),
                          _x(ratio(g, med(floor, "graph_us"))), "ok"])
        plan = rec.get("plan") or {}
        facts = [f"`{rec.get('entry')}`", f"inputs {rec.get('in_shapes')}"]
        facts += [f"{what} {value}" for what, value in (
            ("network", rec.get("net_shapes")), ("grid", plan.get("grid")),
            ("block", plan.get("block")), ("extra arguments", plan.get("extra"))) if value]
        if med(rec, "eval_us") is not None:
            facts.append(f"evaluating every expression alone {num(med(rec, 'eval_us'), 3)} us"
                         + (f" ({rec['eval_instructions']} instructions)"
                            if "eval_instructions" in rec else ""))
        lines += [f"**{op}** ({', '.join(facts)})", ""]
        lines += _table(["path", "host us/launch", "x C++", "loop+sync us", "x C++",
                         "graph us/kernel", "x C++", "output"], table)
        spread = round_spread(rows, "aot_launch", "cpp_floor", "host_us")
        if spread:
            quart = "; ".join(f"{k} {num(row['host_us']['q25'])}-{num(row['host_us']['q75'])}"
                              for k, row in rows.items()
                              if "q25" in (row.get("host_us") or {}))
            lines += ["", f"Spread: AOT launch / C++ host per round {spread}"
                      + (f"; host us per launch, quartiles of every batch: {quart}" if quart
                         else "") + "."]
        for key, what in (("kernel_time", "static-shape engine"),
                          ("kernel_time_dynamic", "dynamic profile, informational")):
            kt = rec.get(key) or {}
            entry = f" `{kt['entry']}`" if kt.get("entry") else ""
            if kt.get("check") == "ok":
                lines += ["", f"Kernel time at {kt.get('in_shapes', KERNEL_SIZE)} ({what}"
                          f"{entry}): AOT {num(med(kt, 'aot_us'), 2)} us, JIT "
                          f"{num(med(kt, 'jit_us'), 2)} us, ratio "
                          f"{num(_kernel_ratio(rec, key), 3)}."]
            elif kt:
                lines += ["", f"Kernel time ({what}): {kt.get('check')}."]
        lines.append("")
    return lines[:-1]


def _gil_cap(rows: Dict[str, Any]) -> str:
    """Where the GIL caps the aggregate: the best thread count against one thread, and the
    empty ``enqueue``'s best aggregate (the GIL-bound part alone)."""
    rates = {t: med(r, "enqueue_per_s") for t, r in rows.items()}
    rates = {t: v for t, v in rates.items() if v}
    if "1" not in rates or len(rates) < 2:
        return ""
    best = max(rates, key=lambda t: rates[t])
    noop = max((v for r in rows.values() if (v := med(r, "noop_per_s"))), default=None)
    text = (f"The aggregate peaks at {best} thread(s), {_x(ratio(rates[best], rates['1']))} "
            "the 1-thread rate")
    if noop:
        text += (f"; the empty `enqueue` alone, which holds the GIL for its whole Python part, "
                 f"peaks at {num(noop, 0)} calls/s, the ceiling any thread count can reach")
    return text + "." + _gil_verdict(rows)


def _gil_verdict(rows: Dict[str, Any]) -> str:
    """Why the JIT rows cannot meet the threads target under a GIL, with the empty
    ``enqueue``'s numbers, and what the AOT row reaches instead ("" without the figures)."""
    counts = sorted((t for t in rows if med(rows[t], "noop_per_s")), key=int)
    if len(counts) < 2 or counts[0] != "1":
        return ""
    top = counts[-1]
    one, many = med(rows["1"], "noop_per_s"), med(rows[top], "noop_per_s")
    text = (f" Under a GIL the JIT rows cannot meet the threads target: TensorRT's binding takes "
            "the GIL for every `enqueue` (docs/trt-protocol.md §3, §9), which pyplugins cannot "
            "change, and handing it from thread to thread costs more than the call, so even "
            f"the empty `enqueue` falls from {num(one, 0)} calls/s at 1 thread to "
            f"{num(many, 0)} at {top} ({_x(ratio(many, one))}).")
    a1, an = med(rows["1"], "aot_per_s"), med(rows[top], "aot_per_s")
    if a1 and an:
        text += (" pyplugins' answer is the AOT kernel (QDP `aot_impl`), which runs no Python "
                 f"at enqueue: launched by C++ threads it goes from {num(a1, 0)} launches/s at "
                 f"1 thread to {num(an, 0)} at {top} ({_x(ratio(an, a1))}).")
    return text


def threads_table(result: Dict[str, Any]) -> List[str]:
    """The report's "Many contexts at once" section."""
    th = result.get("threads") or {}
    configs = th.get("configs") or {}
    if not configs:
        return [f"_Not measured: {th['skipped']}._" if th.get("skipped")
                else "_Not measured in this run._"]
    lines = [f"{th.get('case')} ({th.get('problem')}): T threads, each its own plugin object, "
             "stream and buffers (thread i on device i mod the GPU count), call `enqueue` "
             "through `benchmarks/cpp/trt_call.cpp`'s trampoline (GIL taken per call, as "
             f"TensorRT's binding does) for {th.get('seconds')} s per round, {th.get('rounds')} "
             "rounds; beside C++ threads launching the same kernel with `<<<>>>` on their own "
             "streams, C++ threads launching the op's AOT artifact as TensorRT does (expressions "
             "evaluated per launch, `cuLaunchKernel`, no Python: `benchmarks/cpp/aot_threads.cu`)"
             ", and the empty Python `enqueue` through the same trampoline (the GIL-bound "
             "part alone). Aggregate calls per second, medians over rounds. " + str(
                 th.get("note", "")), ""]
    for name, cfg in configs.items():
        rows = cfg.get("rows") or {}
        one = med(rows.get("1"), "enqueue_per_s")
        aot_one = med(rows.get("1"), "aot_per_s")
        table = [[t, f"{num(med(r, 'enqueue_per_s'), 0)}",
                  _x(ratio(med(r, "enqueue_per_s"), one)),
                  f"{num(med(r, 'noop_per_s'), 0)}", f"{num(med(r, 'cpp_per_s'), 0)}",
                  _x(ratio(med(r, "enqueue_per_s"), med(r, "cpp_per_s"))),
                  f"{num(med(r, 'aot_per_s'), 0)}", _x(ratio(med(r, "aot_per_s"), aot_one))]
                 for t, r in sorted(rows.items(), key=lambda kv: int(kv[0]))]
        lines += [f"**{name}** (devices {cfg.get('devices')})", ""]
        lines += _table(["threads", "plugin enqueue calls/s", "x 1 thread",
                         "empty enqueue calls/s", "C++ `<<<>>>` launches/s", "enqueue / C++",
                         "AOT kernel, C++ threads, launches/s", "AOT x 1 thread"],
                        table) + [""]
        cap = _gil_cap(rows)
        if cap:
            lines += [cap, ""]
    return lines[:-1]
