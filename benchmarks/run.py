"""The command line: ``python -m benchmarks [run|report|digest|slowest|profile] ...`` (or
``python benchmarks/run.py ...``).

``run`` measures the sections named by ``--sections`` on the GPU (``model`` also without one:
the model runner's NumPy references) and writes
``benchmarks/results/<date>-<device-slug>.json``, a Markdown rendering and one PNG per section
next to it. ``--quick`` touches no GPU and times nothing: it builds every case, asks importable
plugins for their output shapes through the emulator, and writes the JSON and the Markdown to a
temporary directory (CI runs it). A run exits 3 when a fraction of copy bandwidth exceeds 1.02
(a measurement error; the rows are named), after writing everything. ``report`` regenerates
``benchmarks/README.md``'s results block and the speed paragraph of ``README.md`` from the newest
real result of each device (plots too, with matplotlib; without it stderr says the plots were
skipped, and nothing about it is written into the READMEs). ``digest`` prints the source digest a
result records; ``slowest`` prints the case, dtype and size of a result's lowest fraction of copy
bandwidth at >= 64 MiB (what ``benchmarks/ncu_slowest.sh`` profiles); ``profile FILE...``
prints what limits the kernel of each Nsight Compute capture (``benchmarks/profile_summary.py``).
Each subcommand answers ``--help``.
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

if __package__ in (None, ""):  # run as a script: python benchmarks/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import claims
from benchmarks import env as envinfo
from benchmarks import report
from benchmarks.cases import DEFAULT_SIZES, Case, format_bytes, parse_bytes, select

os.environ.setdefault("PYPLUGINS_TRT", "emulator")

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE / "README.md"
TOP_README = HERE.parent / "README.md"
MEASUREMENT_ERROR = 3
SECTIONS = ("overhead", "graph", "aot", "threads", "bandwidth", "torch", "coldstart", "model",
            "numba")
#: Sections that also measure without a GPU (the model runner's NumPy references).
CPU_SECTIONS = ("model",)


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
    p.add_argument("--model-calls", type=int, default=2000,
                   help="timed inferences per path, device and round of the model section")
    p.add_argument("--batch", type=int, default=200, help="launches per timed host batch")
    p.add_argument("--graph-kernels", type=int, default=100, help="enqueues per captured graph")
    p.add_argument("--graph-replays", type=int, default=50)
    p.add_argument("--threads", default="1,2,4,8",
                   help="thread counts of the threads section (default: %(default)s)")
    p.add_argument("--thread-seconds", type=float, default=0.25,
                   help="seconds each thread count runs per round in the threads section")
    p.add_argument("--reps", type=int, default=20,
                   help="timed graph replays per measurement and round")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds of every measurement; claims take the worst (default: 3)")
    p.add_argument("--budget-s", type=float, default=0.0,
                   help="stop starting kernel records after this many seconds of the run, with "
                        "a note (0: no limit)")
    p.add_argument("--commit", default=None,
                   help="the commit measured, HASH or HASH+dirty, where the tree has no .git "
                        "(default: $PYPLUGINS_BENCH_COMMIT, else git)")
    p.add_argument("--out", default=None, help="output directory (default: benchmarks/results, "
                   "or a temporary directory with --quick)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--resume", default=None, metavar="JSON",
                   help="continue a result of this device and commit: its sections are kept, the "
                        "ones asked for are measured into it (a run split over two commands)")
    return p


def _report_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks report",
                                description="Regenerate benchmarks/README.md's results block, "
                                            "README.md's speed paragraph (and the plots) from "
                                            "the newest result of each device.")
    p.add_argument("--json", action="append", default=None,
                   help="results file (repeatable; default: newest real one per device in "
                        "benchmarks/results/)")
    p.add_argument("--readme", default=str(README))
    p.add_argument("--top-readme", default=str(TOP_README))
    p.add_argument("--no-plots", action="store_true")
    return p


def _digest_parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog="python -m benchmarks digest",
                                   description="Print the digest of the measured source files "
                                               "that a result records (env.source_digest).")


def _slowest_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks slowest",
                                description="Print 'CASE DTYPE BYTES' of the kernel record with "
                                            "the lowest worst-round fraction of copy bandwidth "
                                            "at >= 64 MiB (what benchmarks/ncu_slowest.sh "
                                            "profiles).")
    p.add_argument("results", nargs="*", metavar="RESULT.json",
                   help="results files (default: the newest real one per device in "
                        "benchmarks/results/)")
    return p


def _profile_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks profile",
                                description="Print what limits the kernel of each Nsight Compute "
                                            "text capture (ncu --page details, as "
                                            "benchmarks/ncu_slowest.sh writes it).")
    p.add_argument("captures", nargs="+", metavar="NCU_TEXT", help="capture files")
    return p


def _existing(paths: Sequence[str], what: str) -> Optional[str]:
    """None when every path is a file, else the message naming the first that is not."""
    for name in paths:
        if not Path(name).is_file():
            return f"{what} {name!r}: no such file"
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "report":
        return report_main(args[1:])
    if args and args[0] == "digest":
        _digest_parser().parse_args(args[1:])
        print(envinfo.source_digest())
        return 0
    if args and args[0] == "slowest":
        return slowest_main(args[1:])
    if args and args[0] == "profile":
        from benchmarks import profile_summary

        captures = _profile_parser().parse_args(args[1:]).captures
        missing = _existing(captures, "NCU_TEXT")
        if missing:
            print(f"python -m benchmarks profile: {missing}", file=sys.stderr)
            return 2
        return profile_summary.main(captures)
    if args and args[0] == "run":
        args = args[1:]
    return run_main(_parser().parse_args(args))


def report_main(argv: Sequence[str]) -> int:
    args = _report_parser().parse_args(list(argv))
    paths = [Path(j) for j in args.json] if args.json else report.latest_per_device(RESULTS)
    readme, top = Path(args.readme), Path(args.top_readme)
    notes: List[str] = []
    if not args.no_plots:
        from benchmarks import plots as plotting

        if plotting.available():
            for path in paths:
                plotting.write_all(report.load(path), path, notes)
        else:  # said here, not written into the READMEs: they are tracked files
            notes.append("plots skipped: matplotlib is not installed (pip install matplotlib, "
                         "then run this again); the READMEs keep linking the PNGs already in "
                         f"{RESULTS.name}/")
    for note in dict.fromkeys(notes):
        print(f"python -m benchmarks report: {note}", file=sys.stderr)
    block, speed = report.readme_blocks(paths, readme.parent)
    report.update_block(readme, block)
    if top.exists():
        report.update_block(top, speed, report.SPEED_BEGIN, report.SPEED_END)
    for path in paths:  # each run's own page, judged as the READMEs now judge it
        path.with_suffix(".md").write_text(report.run_page(path))
    print(f"{readme} and {top}: regenerated from {', '.join(map(str, paths)) or 'no results'}")
    return 0


def slowest_main(argv: Sequence[str]) -> int:
    """Print "CASE DTYPE BYTES" of the lowest worst-round fraction at >= 64 MiB."""
    results = _slowest_parser().parse_args(list(argv)).results
    missing = _existing(results, "RESULT.json")
    if missing:
        print(f"python -m benchmarks slowest: {missing}", file=sys.stderr)
        return 2
    paths = [Path(a) for a in results] or report.latest_per_device(RESULTS)
    recs = [r for r in (claims.slowest(report.load(p)) for p in paths) if r is not None]
    if not recs:
        print("no kernel record at >= 64 MiB", file=sys.stderr)
        return 2
    rec = min(recs, key=lambda r: claims.worst_fraction(r) or 0.0)
    print(f"{rec['case']} {rec['dtype']} {rec['in_bytes']}")
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
    except Exception as err:  # noqa: BLE001 - no CuPy, no driver: both mean no GPU here
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
    why_not = None if args.quick or set(sections) <= set(CPU_SECTIONS) else _gpu()
    if why_not:
        print(f"cannot measure: {why_not}. Run on a GPU machine, or use --quick.",
              file=sys.stderr)
        return 2
    result: Dict[str, Any] = {
        "schema": 2, "quick": bool(args.quick), "synthetic": False,
        "env": envinfo.collect(gpu=not args.quick and _gpu() is None, commit=args.commit),
        "args": vars(args),
        "notes": notes, "section_seconds": {}}
    if args.resume:
        try:
            result = resumed(result, json.loads(Path(args.resume).read_text()), sections)
        except (OSError, ValueError) as err:
            print(f"--resume {args.resume}: {err}", file=sys.stderr)
            return 2
        notes = result["notes"]
    out_dir = Path(args.out) if args.out else (
        Path(tempfile.mkdtemp(prefix="pp-bench-quick-")) if args.quick else RESULTS)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = ("quick-" if args.quick else "") + f"{envinfo.today()}-" + envinfo.slug(
        result["env"].get("device") or "cpu")
    json_path = out_dir / f"{stem}.json"
    result["file"] = json_path.name

    def save() -> None:  # after every section, so a run cut short keeps what it measured
        json_path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    if args.quick:
        result["quick_cases"] = quick_cases(cases, _sizes(args), _list(args.dtypes), notes)
    else:
        measure_all(args, sections, cases, result, notes, save)
    save()
    plots: Dict[str, str] = {}
    if not (args.quick or args.no_plots):
        from benchmarks import plots as plotting

        plots = plotting.write_all(result, json_path, notes)
        save()
    text = report.render(result, plots)
    (out_dir / f"{stem}.md").write_text(text)
    print(text)
    print(f"wrote {json_path} and {stem}.md" + (f" + {len(plots)} plots" if plots else ""))
    print(report.summary_table(result))
    errors = claims.measurement_errors(result)
    if errors:
        print(f"MEASUREMENT ERROR: fraction of copy bandwidth above {claims.MAX_FRACTION} "
              "(the baseline is wrong, not the kernel fast) in:\n  " + "\n  ".join(errors),
              file=sys.stderr)
        return MEASUREMENT_ERROR
    return 0


def resumed(fresh: Dict[str, Any], earlier: Dict[str, Any], sections: Sequence[str]
            ) -> Dict[str, Any]:
    """``earlier`` (a result of this device and commit) continued by a run of ``sections``:
    its measurements and notes kept, the run's arguments added under ``resumed_args``.

    Raises:
        ValueError: another device or commit, or a section measured twice.

    Example:
        >>> env = {"device": "H100", "git_commit": "abc"}
        >>> fresh = {"env": env, "args": {"sections": "torch"}, "notes": [], "section_seconds": {}}
        >>> out = resumed(fresh, {"env": env, "notes": ["n"], "section_seconds": {"aot": 9}}, ["torch"])
        >>> out["notes"], out["resumed_args"]
        (['n'], [{'sections': 'torch'}])
    """
    for key in ("device", "git_commit"):
        if earlier.get("env", {}).get(key) != fresh["env"].get(key):
            msg = (f"it was measured with {key} {earlier.get('env', {}).get(key)!r}, this run "
                   f"has {fresh['env'].get(key)!r}; a result continues on the same of both")
            raise ValueError(msg)
    again = [s for s in sections if s in earlier.get("section_seconds", {})]
    if again:
        msg = f"section(s) {', '.join(again)} already measured there"
        raise ValueError(msg)
    out = dict(earlier)
    out["resumed_args"] = list(earlier.get("resumed_args", [])) + [fresh["args"]]
    out.setdefault("notes", [])
    out.setdefault("section_seconds", {})
    return out


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
                        except Exception as err:  # noqa: BLE001 - reported, like every case failure
                            notes.append(f"{case.name} {dtype}: shape inference failed: {err}")
                out.append(row)
    return out


def measure_all(args: argparse.Namespace, sections: List[str], cases: Sequence[Case],
                result: Dict[str, Any], notes: List[str], save: Any) -> None:
    """Run the sections in order, timing each, saving after each."""
    secs = result["section_seconds"]
    start = time.perf_counter()
    if "overhead" in sections or "graph" in sections:
        from benchmarks import overhead

        t0 = time.perf_counter()
        print("[overhead/graph] ...", flush=True)
        result["overhead"] = overhead.run(
            calls=args.calls, batch=args.batch,
            graph_kernels=args.graph_kernels, graph_replays=args.graph_replays,
            rounds=args.rounds, want_overhead="overhead" in sections, want_graph="graph" in sections, notes=notes)
        split = result["overhead"]["seconds"]
        secs["overhead"] = split["setup_and_cpp"] + split["host"]
        secs["graph"] = split["graph"]
        secs["overhead+graph wall"] = time.perf_counter() - t0
        save()
    deadline = start + args.budget_s if args.budget_s else None
    if "aot" in sections:
        from benchmarks import aot_rows

        t0 = time.perf_counter()
        print("[aot] ...", flush=True)
        result["aot"] = aot_rows.run(calls=args.calls, batch=args.batch,
                                     graph_kernels=args.graph_kernels,
                                     graph_replays=args.graph_replays, rounds=args.rounds,
                                     deadline=deadline, notes=notes, cases=cases)
        secs["aot"] = time.perf_counter() - t0
        save()
    if "threads" in sections:
        from benchmarks import threads

        t0 = time.perf_counter()
        print("[threads] ...", flush=True)
        result["threads"] = threads.run(counts=[int(t) for t in _list(args.threads)],
                                        seconds=args.thread_seconds, rounds=args.rounds,
                                        deadline=deadline, notes=notes)
        secs["threads"] = time.perf_counter() - t0
        save()
    if "bandwidth" in sections or "torch" in sections:
        t0 = time.perf_counter()
        result["kernels"] = _kernels(args, sections, cases, notes, start)
        secs["bandwidth+torch wall"] = time.perf_counter() - t0
        save()
    if "coldstart" in sections:
        from benchmarks import coldstart

        t0 = time.perf_counter()
        print("[coldstart] ...", flush=True)
        result["coldstart"] = coldstart.run([c.name for c in cases], notes)
        secs["coldstart"] = time.perf_counter() - t0
        save()
    if "model" in sections:
        from benchmarks import model_runner

        t0 = time.perf_counter()
        print("[model] ...", flush=True)
        devices = ["cpu"] + (["gpu"] if _gpu() is None else [])
        result["model"] = model_runner.run(calls=args.model_calls, rounds=args.rounds,
                                           devices=devices, notes=notes)
        secs["model"] = time.perf_counter() - t0
    if "numba" in sections:
        from benchmarks import numba_cases

        t0 = time.perf_counter()
        print("[numba] ...", flush=True)
        result["numba"] = numba_cases.run(numba_cases.RUN_SIZES, calls=args.calls)
        secs["numba"] = time.perf_counter() - t0


def _kernels(args: argparse.Namespace, sections: List[str], cases: Sequence[Case],
             notes: List[str], start: float) -> List[Dict[str, Any]]:
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
                if args.budget_s and time.perf_counter() - start > args.budget_s:
                    notes.append(f"{case.name} {dtype} {format_bytes(size)}: not measured, the "
                                 f"run's budget of {args.budget_s:.0f} s was spent")
                    continue
                labels = case.torch if "torch" in sections and size >= torch_min else ()
                t0 = time.perf_counter()
                rec = bandwidth.measure(case, cls, prob, reps=args.reps, rounds=args.rounds,
                                        l2_bytes=l2, torch_labels=labels, notes=notes)
                if rec is None:
                    continue
                rec["wall_s"] = time.perf_counter() - t0
                records.append(rec)
                frac = claims.fraction(rec)
                print(f"[kernels] {case.name} {dtype} {format_bytes(size)}: "
                      f"{report.num(frac)} of copy, {rec['wall_s']:.1f} s", flush=True)
    return records


if __name__ == "__main__":
    sys.exit(main())
