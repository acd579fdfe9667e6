"""What a result supports: worst-round ratios, targets and verdicts, measurement errors, and the
speed paragraph of the top-level README (generated, never typed by hand).

A claim of "at least" or "at most" takes the worst of the run's rounds; a fraction of copy
bandwidth above ``MAX_FRACTION`` is a measurement error (the baseline was not the fastest way of
moving those bytes), never a kernel beating memory.
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Optional, Sequence, Tuple

from benchmarks import launch_report
from benchmarks.cases import format_bytes
from benchmarks.figures import TARGETS, Target, med, num, ratio, rounds_of

TARGET_MIN_BYTES = 64 << 20
MAX_FRACTION = 1.02
CYTHON = ("driver_cupy", "driver_cuda_bindings")
#: The interfaces of the own-cost rows: label -> the row of the enqueue as TensorRT calls it.
OWN_ENQUEUES = {"V2": "plugin_enqueue", "V3": "plugin_enqueue_v3"}
NUMBA_KERNEL_MIN_BYTES = 16 << 20


def by_case(result: Dict[str, Any]) -> Dict[Tuple[str, str], List[Dict[str, Any]]]:
    groups: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for rec in result.get("kernels") or []:
        groups.setdefault((rec["case"], rec["dtype"]), []).append(rec)
    for recs in groups.values():
        recs.sort(key=lambda r: r["in_bytes"])
    return groups


def baselines(rec: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """name -> {"bytes", "s"}; a one-baseline (schema 1) record's copy as "memcpy"."""
    if "baselines" in rec:
        return rec["baselines"]
    if "copy_s" in rec:
        return {"memcpy": {"bytes": 2 * rec["copy_bytes"], "s": rec["copy_s"]}}
    return {}


def best_baseline(rec: Dict[str, Any]) -> Tuple[Optional[str], Optional[float]]:
    """(name, bytes/s) of the fastest baseline by median time."""
    bws = {n: ratio(b["bytes"], med(b, "s")) for n, b in baselines(rec).items()}
    bws = {n: v for n, v in bws.items() if v}
    if not bws:
        return None, None
    name = max(bws, key=lambda n: bws[n])
    return name, bws[name]


def plugin_bw(rec: Dict[str, Any]) -> Optional[float]:
    return ratio(rec["moved_bytes"], med(rec, "plugin_s"))


def fraction(rec: Dict[str, Any]) -> Optional[float]:
    """Plugin bytes/s over the best baseline's, medians of all replays."""
    return ratio(plugin_bw(rec), best_baseline(rec)[1])


def worst_fraction(rec: Dict[str, Any]) -> Optional[float]:
    """The lowest per-round fraction (each round against that round's best baseline)."""
    plug = rounds_of(rec, "plugin_s")
    bases = [(b["bytes"], rounds_of(b, "s")) for b in baselines(rec).values()]
    vals = []
    for r, t in enumerate(plug):
        best = max((nb / ts[r] for nb, ts in bases if r < len(ts) and ts[r]), default=None)
        if best and t:
            vals.append(rec["moved_bytes"] / t / best)
    return min(vals) if vals else None


def speedup(rec: Dict[str, Any], label: str) -> Optional[float]:
    return ratio(med((rec.get("torch") or {}).get(label), "s"), med(rec, "plugin_s"))


def worst_speedup(rec: Dict[str, Any], label: str) -> Optional[float]:
    t = rounds_of((rec.get("torch") or {}).get(label), "s")
    p = rounds_of(rec, "plugin_s")
    vals = [a / b for a, b in zip(t, p) if b]
    return min(vals) if vals else None


def round_spread(rounds: Sequence[float]) -> float:
    """A timing's own round-to-round noise: max / min - 1 of its rounds (0 for fewer than two).

    Example:
        >>> round(round_spread([1.0, 1.002, 1.001]), 6)
        0.002
    """
    vals = [v for v in rounds if v]
    return max(vals) / min(vals) - 1 if len(vals) > 1 else 0.0


def timing_noise(rec: Dict[str, Any]) -> float:
    """The run's timing noise at ``rec``'s size: the largest round-to-round spread
    (:func:`round_spread`) among its copy baselines (:func:`baselines`: ``memcpy``,
    ``copy_kernel``, ``shape_copy``), timed the same way in the same run and independent of the
    two timings a parity claim compares; 0 without them. Three rounds of one timing can spread
    far less than the run's noise by chance, so no one baseline's spread stands for it alone.

    Example:
        >>> rec = {"baselines": {"copy_kernel": {"s": {"rounds": [1.0, 1.001]}},
        ...                      "memcpy": {"s": {"rounds": [1.0, 1.0002]}}}}
        >>> round(timing_noise(rec), 6)
        0.001
    """
    spreads = [round_spread(rounds_of(b, "s")) for b in baselines(rec).values()]
    return max(spreads, default=0.0)


def at_torch_parity(rec: Dict[str, Any], label: str) -> Optional[bool]:
    """Whether ``rec`` is at least as fast as its torch equivalent ``label`` within noise: no
    round's speedup (torch's time / the plugin's, round by round) is below 1 by more than
    :func:`timing_noise`. Two kernels at the same bandwidth roof tie; which one wins a round,
    or the median round, is then noise, and the claim does not rest on it. None without rounds.

    Example:
        >>> rec = {"plugin_s": {"rounds": [1.0, 1.0, 1.0]},
        ...        "torch": {"t": {"s": {"rounds": [1.001, 0.9999, 0.9998]}}},
        ...        "baselines": {"copy_kernel": {"s": {"rounds": [1.0, 1.0011, 1.0]}}}}
        >>> at_torch_parity(rec, "t")  # worst round 0.9998, the copy's rounds spread 0.11 %
        True
        >>> rec["baselines"]["copy_kernel"]["s"]["rounds"] = [1.0, 1.00005, 1.0]
        >>> at_torch_parity(rec, "t")  # the same worst round is more than that noise below 1
        False
    """
    t = rounds_of((rec.get("torch") or {}).get(label), "s")
    p = rounds_of(rec, "plugin_s")
    vals = [a / b for a, b in zip(t, p) if b]
    if not vals:
        return None
    return min(vals) >= TARGETS["vs_torch"] - timing_noise(rec)


def host_worst(rows: Dict[str, Any], path: str, base: str) -> Optional[float]:
    """Worst (highest) per-round ratio of ``path``'s host time to ``base``'s; ``base`` may be
    "cython" (per round, the cheaper Cython binding)."""
    mine = rounds_of(rows.get(path), "host_us")
    if base == "cython":
        lists = [rounds_of(rows.get(k), "host_us") for k in CYTHON if k in rows]
        theirs = [min(v) for v in zip(*lists)] if lists else []
    else:
        theirs = rounds_of(rows.get(base), "host_us")
    vals = [a / b for a, b in zip(mine, theirs) if b]
    return max(vals) if vals else None


def paired_rounds(rows: Dict[str, Any], a: str, b: str) -> List[float]:
    """Per round, path ``a``'s host microseconds per call less path ``b``'s: the median, over
    the round's turns, of the difference of the two paths' batches of the same turn, where both
    kept their batches (:func:`benchmarks.timing.host_loops` ``keep_batches``), else the
    difference of the rounds' medians; empty when a path is missing. Paired turns cancel a
    drift of the host's speed that lasts longer than a turn (a few milliseconds), which the
    rounds' medians, each taken over its own batches, do not.

    Example:
        >>> def row(rounds, batches):
        ...     return {"host_us": {"rounds": rounds, "batches": batches}}
        >>> rows = {"a": row([5.1, 7.1], [[5.0, 5.1, 9.0], [7.0, 7.2, 7.1]]),
        ...         "b": row([4.9, 7.0], [[4.9, 5.0, 4.8], [6.9, 7.0, 7.0]])}
        >>> [round(v, 2) for v in paired_rounds(rows, "a", "b")]
        [0.1, 0.1]
        >>> del rows["b"]["host_us"]["batches"]  # older results: the rounds' medians
        >>> [round(v, 2) for v in paired_rounds(rows, "a", "b")]
        [0.2, 0.1]
    """
    ra, rb = rows.get(a), rows.get(b)
    ba = ((ra or {}).get("host_us") or {}).get("batches")
    bb = ((rb or {}).get("host_us") or {}).get("batches")
    if ba and bb and len(ba) == len(bb):
        return [statistics.median(x - y for x, y in zip(ta, tb)) for ta, tb in zip(ba, bb)
                if ta and tb]
    return [x - y for x, y in zip(rounds_of(ra, "host_us"), rounds_of(rb, "host_us"))]


def own_additive(rows: Dict[str, Any], enqueue: str = "plugin_enqueue") -> List[float]:
    """``enqueue``'s host microseconds less the empty enqueue's (``python_call``, the binding's
    cost) less the cheaper prepacked Cython launch of the same kernel in a tight loop, one per
    round (the rounds' medians); empty when a part is missing. It assumes the launch costs
    inside the trampoline what it costs in a tight loop, which the measurements refute
    (:func:`launch_in_trampoline`); :func:`own_cost` does not assume it.

    Example:
        >>> def row(*us):
        ...     return {"host_us": {"rounds": list(us)}}
        >>> rows = {"plugin_enqueue": row(6.9, 7.2), "python_call": row(1.6, 1.6),
        ...         "driver_cupy": row(3.7, 3.9), "driver_cuda_bindings": row(4.3, 3.8)}
        >>> [round(v, 2) for v in own_additive(rows)]
        [1.6, 1.8]
    """
    lists = [rounds_of(rows.get(k), "host_us") for k in CYTHON if k in rows]
    cython = [min(v) for v in zip(*lists)] if lists else []
    mine = rounds_of(rows.get(enqueue), "host_us")
    empty = rounds_of(rows.get("python_call"), "host_us")
    return [a - b - c for a, b, c in zip(mine, empty, cython)]


def launch_in_trampoline(rows: Dict[str, Any]) -> List[float]:
    """Per round, what the prepacked launch costs inside an ``enqueue`` called through the
    trampoline beyond its cost in a tight loop: ``launch_only`` less the empty enqueue less the
    Cython launch (:func:`own_additive` of ``launch_only``); no pyplugins code runs in it.

    Example:
        >>> def row(*us):
        ...     return {"host_us": {"rounds": list(us)}}
        >>> rows = {"python_call": row(1.5), "driver_cupy": row(3.5), "launch_only": row(5.25)}
        >>> launch_in_trampoline(rows)
        [0.25]
    """
    return own_additive(rows, "launch_only") if "launch_only" in rows else []


def own_cost(rows: Dict[str, Any], enqueue: str = "plugin_enqueue") -> List[float]:
    """pyplugins' own host microseconds per enqueue, one per round: ``enqueue``'s time less the
    ``launch_only`` path's (an ``enqueue`` whose body is the same prepacked Cython launch alone,
    called through the same trampoline: the binding and the launch as TensorRT's call pays
    them), paired turn by turn (:func:`paired_rounds`). Results without ``launch_only`` (made
    before it existed) give :func:`own_additive`. Empty when a part is missing.

    Example:
        >>> def row(*us):
        ...     return {"host_us": {"rounds": list(us)}}
        >>> rows = {"plugin_enqueue": row(6.0, 7.0), "python_call": row(1.5, 1.5),
        ...         "driver_cupy": row(3.5, 3.5), "launch_only": row(5.75, 6.8)}
        >>> [round(v, 2) for v in own_cost(rows)]
        [0.25, 0.2]
        >>> del rows["launch_only"]
        >>> [round(v, 2) for v in own_cost(rows)]
        [1.0, 2.0]
    """
    if "launch_only" in rows:
        return paired_rounds(rows, enqueue, "launch_only") if enqueue in rows else []
    return own_additive(rows, enqueue)


def own_cost_how(rows: Dict[str, Any]) -> str:
    """How :func:`own_cost` reads ``rows``, for a target's wording."""
    if "launch_only" in rows:
        return ("enqueue - the same prepacked launch alone in an enqueue through the same "
                "trampoline, paired turns, worst round")
    return "enqueue - empty enqueue - Cython launch, worst round"


def own_rows(result: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Op -> the rows its own cost is read from: section 1b's (every op), else, for results
    made before it, section 1's V2 rows of its tiny problems."""
    over = result.get("overhead") or {}
    if over.get("own"):
        return {op: rec["rows"] for op, rec in over["own"].items()}
    return dict(over.get("host") or {})


def _own_targets(result: Dict[str, Any]) -> List[Target]:
    out: List[Target] = []
    limit = TARGETS["own_enqueue_us"]
    for op, rows in own_rows(result).items():
        for label, key in OWN_ENQUEUES.items():
            if key not in rows:
                continue
            vals = own_cost(rows, key)
            worst = max(vals) if vals else None
            out.append((f"{op} {label}: pyplugins' own host cost per enqueue <= {limit} us "
                        f"({own_cost_how(rows)})",
                        f"{num(worst)} us", None if worst is None else worst <= limit))
    return out


def numba_targets(result: Dict[str, Any]) -> List[Target]:
    """NumbaLaunch against Launch (host, median per call) and the numba LeakyReLU kernel
    against the CUDA C++ one (device, worst size at >= 16 MiB), from the ``numba`` record."""
    rec = result.get("numba") or {}
    out: List[Target] = []
    host = rec.get("enqueue") or {}
    r = ratio(med(host.get("numba"), "host_us"), med(host.get("cuda_cpp"), "host_us"))
    if r is not None:
        limit = TARGETS["numba_host"]
        path = f", path {rec['path']}" if rec.get("path") else ""
        out.append((f"numba: NumbaLaunch host cost <= {limit}x Launch's (LeakyReLU)",
                    f"{num(r)}x{path}", r <= limit))
    big = [row for row in rec.get("kernel") or []
           if 4 * row.get("elements", 0) >= NUMBA_KERNEL_MIN_BYTES and "numba_over_cuda_cpp" in row]
    if big:
        worst = max(big, key=lambda row: row["numba_over_cuda_cpp"])
        limit = TARGETS["numba_kernel"]
        ok = worst["numba_over_cuda_cpp"] <= limit and all(b.get("outputs_equal") for b in big)
        out.append((f"numba: LeakyReLU kernel <= {limit}x the CUDA C++ kernel's time at >= "
                    f"{format_bytes(NUMBA_KERNEL_MIN_BYTES)} (worst size)",
                    f"{num(worst['numba_over_cuda_cpp'])}x (at {worst['size']})", ok))
    return out


def measurement_errors(result: Dict[str, Any]) -> List[str]:
    """Every record whose fraction of the best baseline exceeds MAX_FRACTION."""
    out = []
    for rec in result.get("kernels") or []:
        f = fraction(rec)
        if f is not None and f > MAX_FRACTION:
            out.append(f"{rec['case']} {rec['dtype']} {format_bytes(rec['in_bytes'])}: "
                       f"{num(f)} of the best copy baseline ({best_baseline(rec)[0]})")
    return out


def _host_targets(result: Dict[str, Any]) -> List[Target]:
    out = _own_targets(result)
    host = (result.get("overhead") or {}).get("host") or {}
    for kernel, rows in host.items():
        vendor = rounds_of(rows.get("vendor_sample"), "host_us")
        plugin = rounds_of(rows.get("plugin_enqueue"), "host_us")
        vals = [a / b for a, b in zip(vendor, plugin) if b]
        r = min(vals) if vals else None
        limit = TARGETS["vendor_vs_enqueue"]
        out.append((f"{kernel}: plugin enqueue >= {limit}x faster than the vendor sample",
                    f"{num(r)}x", None if r is None else r >= limit))
    return out


def slowest(result: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The kernel record at >= 64 MiB with the lowest worst-round fraction of copy, or None."""
    recs = [(f, r) for r in result.get("kernels") or []
            if r["in_bytes"] >= TARGET_MIN_BYTES and (f := worst_fraction(r)) is not None]
    return min(recs, key=lambda t: t[0])[1] if recs else None


def profile_target(result: Dict[str, Any]) -> Optional[Target]:
    """Whether the slowest record has an Nsight Compute capture of the same sources with its
    limiter stated (``result["profile"]``, put there by ``profile_summary.attach``)."""
    rec = slowest(result)
    if rec is None:
        return None
    what = "the slowest kernel (>= 64 MiB) profiled with Nsight Compute, limiter stated"
    prof = result.get("profile")
    if not prof:
        return what, f"no capture of {rec['case']} {rec['dtype']}", False
    same_case = (prof.get("case"), prof.get("dtype")) == (rec["case"], rec["dtype"])
    same_src = prof.get("digest") == (result.get("env") or {}).get("source_digest")
    measured = f"{prof.get('case')} {prof.get('dtype')}: {str(prof.get('limiter')).split(';')[0]}"
    if not same_case:
        measured += f" (but the slowest record is {rec['case']} {rec['dtype']})"
    elif not same_src:
        measured += " (but captured from other sources than this run's)"
    return what, measured, same_case and same_src


def _noise_note(rec: Dict[str, Any], label: str) -> str:
    """", copies' round noise 0.12 %" where the worst round is below parity: what the verdict
    allowed."""
    s = worst_speedup(rec, label)
    if s is None or s >= TARGETS["vs_torch"]:
        return ""
    return f", copies' round noise {timing_noise(rec) * 100:.2f} %"


def targets(result: Dict[str, Any]) -> List[Target]:
    """(what, measured, met?) for every target the result can speak to."""
    from benchmarks.versus_torch import COMPOSED

    out = _host_targets(result) + numba_targets(result)
    errors = measurement_errors(result)
    if result.get("kernels"):
        out.append((f"no fraction of copy bandwidth above {MAX_FRACTION}",
                    f"{len(errors)} above" if errors else "none above", not errors))
    for (case, dtype), recs in by_case(result).items():
        big = [r for r in recs if r["in_bytes"] >= TARGET_MIN_BYTES and fraction(r) is not None]
        if big:
            worst = min(big, key=lambda r: worst_fraction(r) or 0)
            f = worst_fraction(worst)
            out.append((f"{case} {dtype}: >= {TARGETS['copy_fraction']} of copy bandwidth at "
                        ">= 64 MiB (worst round)",
                        f"{num(f)} (at {format_bytes(worst['in_bytes'])})",
                        None if f is None else f >= TARGETS["copy_fraction"]))
        speedups = [(label, worst_speedup(r, label), r) for r in big
                    for label in (r.get("torch") or {}) if worst_speedup(r, label) is not None]
        if speedups:
            label, s, r = min(speedups, key=lambda t: t[1])
            parity = all(at_torch_parity(rr, lab) for lab, _s, rr in speedups)
            out.append((f"{case} {dtype}: >= torch (every equivalent, >= 64 MiB, worst round "
                        "within noise)",
                        f"{num(s)}x (vs {label}, {format_bytes(r['in_bytes'])}){_noise_note(r, label)}",
                        parity))
        composed = [(s, r) for label, s, r in speedups if label in COMPOSED]
        if composed:
            s, r = min(composed, key=lambda t: t[0])
            limit = TARGETS["vs_torch_composed"]
            out.append((f"{case} {dtype}: >= {limit}x torch composed (worst round)",
                        f"{num(s)}x ({format_bytes(r['in_bytes'])})", s >= limit))
    prof = profile_target(result)
    if prof:
        out.append(prof)

    return out + model_targets(result) + launch_report.targets(result)


def model_targets(result: Dict[str, Any]) -> List[Target]:
    """The model runner on a CPU (NumPy references): time per inference and per plugin node,
    worst round (an absolute time: the execution path's own target, measured beside
    onnxruntime)."""
    rec = ((result.get("model") or {}).get("devices") or {}).get("cpu")
    if not rec or not rec.get("runner_ms"):
        return []
    worst = max(rec["runner_ms"]["rounds"])
    nodes = [(max(n["ms"]["rounds"]), name) for name, n in (rec.get("nodes") or {}).items()
             if n.get("ms")]
    out = [(f"model runner, CPU references: <= {TARGETS['model_ms']} ms per inference "
            "(worst round)", f"{num(worst, 3)} ms", worst <= TARGETS["model_ms"])]
    if nodes:
        slow, name = max(nodes)
        out.append((f"model runner, CPU references: <= {TARGETS['model_node_ms']} ms per plugin "
                    "node (worst round, slowest node)", f"{num(slow, 3)} ms ({name})",
                    slow <= TARGETS["model_node_ms"]))
    return out


def small_sizes(result: Dict[str, Any]) -> List[List[str]]:
    """Rows of the small-size table: time per call against the C++ empty-kernel launch."""
    cpp = ((result.get("overhead") or {}).get("cpp") or {}).get("empty") or {}
    floor_eager, floor_graph = med(cpp, "sync_us"), med(cpp, "graph_us")
    rows = []
    for rec in result.get("kernels") or []:
        if "eager_us" not in rec:
            continue
        eager = med(rec, "eager_us")
        graph = med(rec, "plugin_s")
        graph = graph * 1e6 if graph else None
        rows.append([rec["case"], rec["dtype"], format_bytes(rec["in_bytes"]),
                     f"{num(eager)} us", f"{num(ratio(floor_eager, eager))}",
                     f"{num(graph)} us", f"{num(ratio(floor_graph, graph))}"])
    return rows


def summary(result: Dict[str, Any]) -> List[List[str]]:
    """The short table printed last by a run: one row per op x dtype and per host kernel."""
    rows = []
    host = (result.get("overhead") or {}).get("host") or {}
    for kernel, r in host.items():
        rows.append([f"{kernel} enqueue", "host", f"{num(host_worst(r, 'plugin_enqueue', 'cpp_floor'))}x C++",
                     f"{num(host_worst(r, 'plugin_enqueue', 'cython'))}x Cython"])
    for op, r in own_rows(result).items():
        worst = {label: max(v) for label, key in OWN_ENQUEUES.items()
                 if key in r and (v := own_cost(r, key))}
        if worst:
            rows.append([f"{op} own cost", "host", " / ".join(
                f"{label} {num(v)} us" for label, v in worst.items()), "worst round"])
    for (case, dtype), recs in by_case(result).items():
        big = [r for r in recs if r["in_bytes"] >= TARGET_MIN_BYTES]
        f = min((x for x in (worst_fraction(r) for r in big) if x is not None), default=None)
        s = min((x for r in big for label in (r.get("torch") or {})
                 if (x := worst_speedup(r, label)) is not None), default=None)
        top = max((x for x in (fraction(r) for r in recs) if x is not None), default=None)
        rows.append([case, dtype, f"{num(f)} of copy (worst >= 64 MiB)",
                     f"{num(s)}x torch; max {num(top)}"])
    for device, rec in ((result.get("model") or {}).get("devices") or {}).items():
        mine, theirs = rec.get("runner_ms") or {}, rec.get("onnxruntime_ms") or {}
        rows.append(["model runner", device, f"{num(mine.get('median'), 3)} ms per inference",
                     f"{num(ratio(mine.get('median'), theirs.get('median')), 1)}x onnxruntime"])

    return rows + launch_report.summary(result)


def _worst(items: Sequence[Tuple[float, str]], high: bool) -> Optional[Tuple[float, str]]:
    items = [i for i in items if i[0] is not None]
    if not items:
        return None
    return max(items) if high else min(items)


def speed_paragraph(results: Sequence[Dict[str, Any]]) -> str:
    """The README's speed paragraph from the newest result of each device: every figure the
    worse device's, worst round."""
    if not results:
        return ("Speed: no measurement is committed yet; run `benchmarks/device_run.sh` on a GPU "
                "machine (see [`benchmarks/README.md`](benchmarks/README.md)).")
    devices = " and ".join(f"{r['env'].get('device')} ({str(r['env'].get('date', ''))[:10]})"
                           for r in results)
    rounds = max(int((r.get("args") or {}).get("rounds") or 1) for r in results)
    parts = [f"Speed, generated from the committed runs on {devices} by `python -m benchmarks "
             f"report` (every figure a ratio measured side by side in one run, the worse device's"
             f" figure, the worst of {rounds} round{'s' if rounds > 1 else ''}; details in "
             "[`benchmarks/README.md`](benchmarks/README.md)):"]
    cpp, cython, vendor, own = [], [], [], []
    trt_style = all((r.get("overhead") or {}).get("trt_call") for r in results)
    from_cpp = all((r.get("overhead") or {}).get("harness") == "cpp" for r in results)
    for res in results:
        dev = res["env"].get("device")
        for op, rows in own_rows(res).items():
            for label, key in OWN_ENQUEUES.items():
                vals = own_cost(rows, key) if key in rows else []
                if vals:
                    own.append((max(vals), f"{op} {label}, {dev}"))
        for kernel, rows in ((res.get("overhead") or {}).get("host") or {}).items():
            cpp.append((host_worst(rows, "plugin_enqueue", "cpp_floor"), f"{kernel}, {dev}"))
            cython.append((host_worst(rows, "plugin_enqueue", "cython"), f"{kernel}, {dev}"))
            vendor.append((ratio(med(rows.get("vendor_sample"), "host_us"),
                                 med(rows.get("plugin_enqueue"), "host_us")), f"{kernel}, {dev}"))
    how = ("called from C++ as TensorRT's pybind11 binding calls it (fresh descriptor copies "
           "and lists on every call)" if trt_style and from_cpp else
           "called as TensorRT calls it (fresh descriptor objects and lists on every call)"
           if trt_style else "with one prebuilt set of descriptor lists (this run predates the "
           "TensorRT-style call, so its figure is a lower bound)")
    w_cpp, w_cy, w_v = _worst(cpp, True), _worst(cython, True), _worst(vendor, False)
    w_own = _worst(own, True)
    if w_cpp:
        text = f"a plugin `enqueue` {how} costs at most {num(w_cpp[0])}x a C++ `<<<>>>` launch"
        if w_cy:
            text += (f" and {num(w_cy[0])}x a prepacked `cuLaunchKernel` through the cheapest "
                     "Python (Cython) binding")
        if w_v:
            text += f", and is at least {num(w_v[0], 1)}x cheaper than NVIDIA's CuPy sample's pattern"
        if w_own:
            text += (f"; pyplugins' own part of it (less an `enqueue` through the same "
                     f"trampoline whose body is the same prepacked Cython launch alone) is at "
                     f"most {num(w_own[0])} us ({w_own[1]}; target "
                     f"{TARGETS['own_enqueue_us']} us)")
        parts.append(text + ";")
    below, n_pairs, slow, n_torch, errors = [], 0, [], 0, []
    for res in results:
        dev = res["env"].get("device")
        errors += [f"{e} on {dev}" for e in measurement_errors(res)]
        for (case, dtype), recs in by_case(res).items():
            big = [r for r in recs if r["in_bytes"] >= TARGET_MIN_BYTES]
            fs = [(worst_fraction(r), r) for r in big if worst_fraction(r) is not None]
            if fs:
                n_pairs += 1
                f, r = min(fs, key=lambda t: t[0])
                if f < TARGETS["copy_fraction"]:
                    below.append(f"{case} {dtype} {num(f)} ({dev})")
            ss = [(worst_speedup(r, lab), lab) for r in big for lab in (r.get("torch") or {})
                  if worst_speedup(r, lab) is not None]
            if ss:
                n_torch += 1
                s, lab = min(ss)
                if not all(at_torch_parity(r, la) for r in big for la in (r.get("torch") or {})
                           if worst_speedup(r, la) is not None):
                    slow.append(f"{case} {dtype} {num(s)}x {lab} ({dev})")
    if n_pairs:
        parts.append(f"at 64 MiB and above, {n_pairs - len(below)} of {n_pairs} op/dtype/device "
                     f"runs reach {TARGETS['copy_fraction']} of the fastest copy baseline"
                     + (f" (below: {', '.join(below)})" if below else "") + ";")
    if n_torch:
        parts.append(f"{n_torch - len(slow)} of {n_torch} are at least as fast as every PyTorch "
                     "equivalent there, within the run's timing noise"
                     + (f" (slower: {', '.join(slow)})" if slow else "") + ".")
    if errors:
        parts.append(f"{len(errors)} ratio(s) above {MAX_FRACTION} mark a wrong copy baseline in "
                     f"the committed run{'s' if len(results) > 1 else ''} (e.g. {errors[0]}); "
                     "those runs need re-measuring with the current harness.")
    return " ".join(parts)
