"""The command line: ``python -m benchmarks [run] [options]`` and ``python -m benchmarks report``.

``run`` measures the sections named by ``--sections`` on the GPU and writes
``benchmarks/results/<date>-<device-slug>.json``, a Markdown rendering and one PNG per section
next to it. ``--quick`` touches no GPU and times nothing: it builds every case, asks importable
plugins for their output shapes through the emulator, and writes the JSON and the Markdown to a
temporary directory (CI runs it). ``report`` regenerates ``benchmarks/README.md``'s results block
(and the plots) from the newest real result, or from ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from benchmarks import env as envinfo
from benchmarks import report
from benchmarks.cases import DEFAULT_SIZES, Case, format_bytes, parse_bytes, select

os.environ.setdefault("PYPLUGINS_TRT", "emulator")

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE / "README.md"
SECTIONS = ("overhead", "graph", "bandwidth", "torch", "coldstart")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="CPU-safe: build cases and the report, time nothing, write to a temp dir")
    p.add_argument("--sections", default=",".join(SECTIONS),
                   help=f"comma list of {', '.join(SECTIONS)} (default: all)")
    p.add_argument("--sizes", default=",".join(DEFAULT_SIZES),
                   help="main-input byte sizes for sections 3-4 (default: %(default)s)")
    p.add_argument("--max-bytes", default="1G", help="drop sizes above this (default: 1G)")
    p.add_argument("--torch-min-bytes", default="0",
                   help="time torch only at sizes >= this (default: every size)")
    p.add_argument("--cases", default="", help="comma list of case names (default: all)")
    p.add_argument("--dtypes", default="", help="comma list of dtypes (default: each case's)")
    p.add_argument("--calls", type=int, default=10000, help="host-timed calls per path and round")
    p.add_argument("--batch", type=int, default=200, help="launches per timed host batch")
    p.add_argument("--graph-kernels", type=int, default=100, help="enqueues per captured graph")
    p.add_argument("--graph-replays", type=int, default=50)
    p.add_argument("--reps", type=int, default=30, help="timed graph replays per measurement")
    p.add_argument("--out", default=None, help="output directory (default: benchmarks/results, "
                   "or a temporary directory with --quick)")
    p.add_argument("--no-plots", action="store_true")
    return p


def _report_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks report",
                                description="Regenerate benchmarks/README.md's results block "
                                            "(and the plots) from a results JSON.")
    p.add_argument("--json", default=None, help="results file (default: newest real one in "
                   "benchmarks/results/)")
    p.add_argument("--readme", default=str(README))
    p.add_argument("--no-plots", action="store_true")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "report":
        return report_main(args[1:])
    if args and args[0] == "run":
        args = args[1:]
    return run_main(_parser().parse_args(args))


def report_main(argv: Sequence[str]) -> int:
    args = _report_parser().parse_args(list(argv))
    path = Path(args.json) if args.json else report.latest(RESULTS)
    readme = Path(args.readme)
    if path is None:
        report.update_readme(readme, "_No results yet: run `python -m benchmarks` on a GPU "
                                     "machine, then `python -m benchmarks report`._")
        print(f"no results in {RESULTS}; {readme} says so")
        return 0
    result = report.load(path)
    notes: List[str] = []
    plots: Dict[str, str] = {}
    if not args.no_plots:
        from benchmarks import plots as plotting

        plots = plotting.write_all(result, path, notes)
    rel = os.path.relpath(path.parent, readme.parent)
    block = report.render(result, {k: f"{rel}/{v}" for k, v in plots.items()})
    block += "".join(f"\n_{n}_\n" for n in notes)
    report.update_readme(readme, block)
    print(f"{readme}: results block regenerated from {path}")
    return 0


def _gpu() -> Optional[str]:
    """None when CuPy sees a GPU, else why not."""
    if os.environ.get("PYPLUGINS_DEVICE", "auto") == "cpu":
        return "PYPLUGINS_DEVICE=cpu"
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return None
        return "CuPy sees no CUDA device"
    except Exception as err:  # no CuPy, no driver: both mean no GPU here
        return f"no GPU through CuPy ({type(err).__name__}: {err})"


def _list(text: str) -> List[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _sizes(args: argparse.Namespace) -> List[int]:
    limit = parse_bytes(args.max_bytes)
    return [s for s in (parse_bytes(t) for t in _list(args.sizes)) if s <= limit]


def _dtypes(case: Case, wanted: List[str]) -> List[str]:
    return [d for d in case.dtypes if not wanted or d in wanted]


def run_main(args: argparse.Namespace) -> int:
    sections = _list(args.sections)
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        print(f"unknown section(s) {unknown}; known: {', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    cases = select(_list(args.cases))
    notes: List[str] = []
    why_not = None if args.quick else _gpu()
    if why_not:
        print(f"cannot measure: {why_not}. Run on a GPU machine, or use --quick.",
              file=sys.stderr)
        return 2
    result: Dict[str, Any] = {
        "schema": 1, "quick": bool(args.quick), "synthetic": False,
        "env": envinfo.collect(gpu=not args.quick), "args": vars(args), "notes": notes,
        "section_seconds": {}}
    out_dir = Path(args.out) if args.out else (
        Path(tempfile.mkdtemp(prefix="pp-bench-quick-")) if args.quick else RESULTS)
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.quick:
        result["quick_cases"] = quick_cases(cases, _sizes(args), _list(args.dtypes), notes)
    else:
        measure_all(args, sections, cases, result, notes)
    stem = ("quick-" if args.quick else "") + f"{envinfo.today()}-" + envinfo.slug(
        result["env"].get("device") or "cpu")
    json_path = out_dir / f"{stem}.json"
    result["file"] = json_path.name
    json_path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    plots: Dict[str, str] = {}
    if not (args.quick or args.no_plots):
        from benchmarks import plots as plotting

        plots = plotting.write_all(result, json_path, notes)
        json_path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    text = report.render(result, plots)
    (out_dir / f"{stem}.md").write_text(text)
    print(text)
    print(f"wrote {json_path} and {stem}.md" + (f" + {len(plots)} plots" if plots else ""))
    return 0


def quick_cases(cases: Sequence[Case], sizes: List[int], dtypes: List[str],
                notes: List[str]) -> List[Dict[str, Any]]:
    """Every case's problems and, where the plugin imports, its own output shapes (CPU only)."""
    from benchmarks import driver

    out = []
    for case in cases:
        try:
            cls = case.plugin_class()
        except (ImportError, AttributeError) as err:
            cls = None
            notes.append(f"{case.name}: pyplugins.ops.{case.module}.{case.cls} not importable "
                         f"yet ({type(err).__name__}); skipped")
        for dtype in _dtypes(case, dtypes):
            for size in sizes:
                prob = case.problem(size, dtype)
                row: Dict[str, Any] = {"case": case.name, "dtype": dtype, "in_bytes": size}
                if prob is None:
                    row["skipped"] = "size does not fit the op's shape rules"
                else:
                    row.update(in_shapes=prob.in_shapes, out_shapes=prob.out_shapes,
                               moved_bytes=prob.moved_bytes)
                    if cls is not None and size == sizes[0]:
                        try:
                            got = driver.output_shapes_only(cls, case.fields, prob.in_shapes,
                                                            prob.in_dtypes)
                            row["plugin_out_shapes"] = got
                            if [tuple(s) for s in got] != list(prob.out_shapes):
                                notes.append(f"{case.name} {dtype}: plugin output shapes {got} "
                                             f"!= case rule {list(prob.out_shapes)}")
                        except Exception as err:  # reported, like every case failure
                            notes.append(f"{case.name} {dtype}: shape inference failed: {err}")
                out.append(row)
    return out


def measure_all(args: argparse.Namespace, sections: List[str], cases: Sequence[Case],
                result: Dict[str, Any], notes: List[str]) -> None:
    """Run the GPU sections in order, timing each."""
    secs = result["section_seconds"]
    if "overhead" in sections or "graph" in sections:
        from benchmarks import overhead

        t0 = time.perf_counter()
        print("[overhead/graph] ...", flush=True)
        result["overhead"] = overhead.run(
            calls=args.calls, batch=args.batch,
            graph_kernels=args.graph_kernels, graph_replays=args.graph_replays,
            want_overhead="overhead" in sections, want_graph="graph" in sections, notes=notes)
        split = result["overhead"]["seconds"]
        secs["overhead"] = split["setup_and_cpp"] + split["host"]
        secs["graph"] = split["graph"]
        secs["overhead+graph wall"] = time.perf_counter() - t0
    if "bandwidth" in sections or "torch" in sections:
        t0 = time.perf_counter()
        result["kernels"] = _kernels(args, sections, cases, notes)
        secs["bandwidth"] = sum(r["seconds"]["plugin_and_copy"] for r in result["kernels"])
        secs["torch"] = sum(r["seconds"]["torch"] for r in result["kernels"])
        secs["bandwidth+torch wall"] = time.perf_counter() - t0
    if "coldstart" in sections:
        from benchmarks import coldstart

        t0 = time.perf_counter()
        print("[coldstart] ...", flush=True)
        result["coldstart"] = coldstart.run([c.name for c in cases], notes)
        secs["coldstart"] = time.perf_counter() - t0


def _kernels(args: argparse.Namespace, sections: List[str], cases: Sequence[Case],
             notes: List[str]) -> List[Dict[str, Any]]:
    import cupy as cp

    from benchmarks import bandwidth

    l2 = int(cp.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    torch_min = parse_bytes(args.torch_min_bytes)
    if "torch" in sections:
        try:
            import torch  # noqa: F401
        except ImportError:
            notes.append("torch is not installed: section 4 skipped")
            sections = [s for s in sections if s != "torch"]
    records = []
    for case in cases:
        try:
            cls = case.plugin_class()
        except (ImportError, AttributeError) as err:
            notes.append(f"{case.name}: pyplugins.ops.{case.module}.{case.cls} not importable "
                         f"yet ({type(err).__name__}: {err}); skipped")
            continue
        for dtype in _dtypes(case, _list(args.dtypes)):
            for size in _sizes(args):
                prob = case.problem(size, dtype)
                if prob is None:
                    notes.append(f"{case.name} {dtype} {format_bytes(size)}: does not fit the "
                                 "op's shape rules; skipped")
                    continue
                labels = case.torch if "torch" in sections and size >= torch_min else ()
                t0 = time.perf_counter()
                rec = bandwidth.measure(case, cls, prob, reps=args.reps, l2_bytes=l2,
                                        torch_labels=labels, notes=notes)
                if rec is None:
                    continue
                rec["wall_s"] = time.perf_counter() - t0
                records.append(rec)
                frac = report.fraction(rec)
                print(f"[kernels] {case.name} {dtype} {format_bytes(size)}: "
                      f"{report.num(frac)} of copy, {rec['wall_s']:.1f} s", flush=True)
    return records
