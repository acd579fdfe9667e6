"""One matplotlib PNG per section, next to the results JSON (skipped, with a note, without
matplotlib). Plots show the same ratios as the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List

from benchmarks import claims, figures, report
from benchmarks.cases import format_bytes


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def write_all(result: Dict[str, Any], json_path: Path, notes: List[str]) -> Dict[str, str]:
    """Write every plot the result has data for; section key -> PNG file name."""
    if not available():
        notes.append("matplotlib is not installed: plots skipped (pip install matplotlib, then "
                     "python -m benchmarks report)")
        return {}
    import matplotlib

    matplotlib.use("Agg")
    makers: Dict[str, Callable[[Any, Dict[str, Any]], bool]] = {
        "overhead": _overhead, "graph": _graph, "bandwidth": _bandwidth, "torch": _torch,
        "coldstart": _coldstart}
    import matplotlib.pyplot as plt

    written = {}
    for key, make in makers.items():
        fig, ax = plt.subplots(figsize=(9, 4.8))
        try:
            if make(ax, result):
                name = f"{json_path.stem}-{key}.png"
                title = ax.get_title()
                ax.set_title(f"{title}\n{result.get('env', {}).get('device') or ''}", fontsize=10)
                fig.tight_layout()
                fig.savefig(json_path.parent / name, dpi=110)
                written[key] = name
        finally:
            plt.close(fig)
    return written


def _overhead(ax: Any, result: Dict[str, Any]) -> bool:
    host = (result.get("overhead") or {}).get("host") or {}
    if not host:
        return False
    kernels = list(host)
    paths = [p for p in report.PATH_LABELS if any(p in host[k] for k in kernels)]
    width = 0.8 / max(len(kernels), 1)
    for i, k in enumerate(kernels):
        vals = [figures.med(host[k].get(p), "host_us") or 0 for p in paths]
        ax.barh([j + i * width for j in range(len(paths))], vals, height=width, label=k)
    ax.set_yticks([j + width * (len(kernels) - 1) / 2 for j in range(len(paths))])
    ax.set_yticklabels([p.replace("_", " ") for p in paths], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("host microseconds per launch (median)")
    ax.set_title("1. Enqueue host overhead")
    ax.legend(fontsize=8)
    return True


def _graph(ax: Any, result: Dict[str, Any]) -> bool:
    graph = {k: g for k, g in ((result.get("overhead") or {}).get("graph") or {}).items()
             if "error" not in g}
    if not graph:
        return False
    labels = ["plugin graph replay", "C++ graph replay", "C++ <<<>>> launch"]
    keys = ["plugin_graph_us", "cpp_graph_us", "cpp_launch_us"]
    width = 0.8 / len(labels)
    for i, (label, key) in enumerate(zip(labels, keys)):
        ax.bar([j + i * width for j in range(len(graph))],
               [figures.med(g, key) or 0 for g in graph.values()], width=width, label=label)
    ax.set_xticks([j + width for j in range(len(graph))])
    ax.set_xticklabels(list(graph))
    ax.set_ylabel("microseconds per kernel (median)")
    ax.set_title("2. CUDA-graph replay")
    ax.legend(fontsize=8)
    return True


def _bandwidth(ax: Any, result: Dict[str, Any]) -> bool:
    groups = claims.by_case(result)
    drawn = False
    cases = list(dict.fromkeys(case for case, _ in groups))
    styles = {"float32": "-", "float16": "--", "int8": ":"}
    for (case, dtype), recs in groups.items():
        pts = [(r["in_bytes"], claims.fraction(r)) for r in recs]
        pts = [(s, f) for s, f in pts if f is not None]
        if pts:
            ax.plot([s for s, _ in pts], [f for _, f in pts], marker="o", ls=styles.get(dtype, "-."),
                    color=f"C{cases.index(case) % 10}", label=f"{case} {dtype}")
            drawn = True
    if not drawn:
        return False
    ax.axhline(figures.TARGETS["copy_fraction"], color="gray", ls="--", lw=1)
    ax.set_xscale("log", base=2)
    sizes = sorted({r["in_bytes"] for recs in groups.values() for r in recs})
    ax.set_xticks(sizes)
    ax.set_xticklabels([format_bytes(s) for s in sizes], fontsize=8)
    ax.set_ylabel("fraction of the fastest copy baseline")
    ax.set_title("3. Kernel efficiency")
    ax.legend(fontsize=7, ncol=2)
    return True


def _torch(ax: Any, result: Dict[str, Any]) -> bool:
    bars = []
    for (case, dtype), recs in claims.by_case(result).items():
        big = [r for r in recs if r.get("torch")]
        if not big:
            continue
        r = big[-1]
        for label in r["torch"]:
            s = claims.speedup(r, label)
            if s is not None:
                bars.append((f"{case} {dtype}\nvs {label} ({format_bytes(r['in_bytes'])})", s))
    if not bars:
        return False
    ax.barh(range(len(bars)), [s for _, s in bars])
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels([b for b, _ in bars], fontsize=6)
    ax.invert_yaxis()
    ax.axvline(1.0, color="gray", ls="--", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("torch time / plugin time (largest size measured; log scale)")
    ax.set_title("4. Against PyTorch")
    return True


def _coldstart(ax: Any, result: Dict[str, Any]) -> bool:
    cs = result.get("coldstart") or {}
    cold = (cs.get("cold_process") or {}).get("ops") or {}
    warm = (cs.get("warm_process") or {}).get("ops") or {}
    ops = [op for op, c in cold.items() if "first_s" in c]
    if not ops:
        return False
    series = [("cold cache", [cold[o]["first_s"] for o in ops]),
              ("warm disk cache", [warm.get(o, {}).get("first_s", 0) for o in ops]),
              ("warm in-memory", [warm.get(o, {}).get("second_s", 0) for o in ops])]
    width = 0.8 / len(series)
    for i, (label, vals) in enumerate(series):
        ax.bar([j + i * width for j in range(len(ops))], vals, width=width, label=label)
    ax.set_xticks([j + width for j in range(len(ops))])
    ax.set_xticklabels(ops, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("seconds to first result")
    ax.set_title("5. Cold and warm start")
    ax.legend(fontsize=8)
    return True
