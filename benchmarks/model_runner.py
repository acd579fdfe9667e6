"""Section "model": a whole model with plugin nodes through pyplugins' execution path, beside
onnxruntime on the original graph (``benchmarks/README.md``, "What is measured", item 7).

The model is ``demos/model_demo.py``'s transformer block (batch 2, sequence 8, hidden 32), its
subgraphs replaced by the shipped plugins in-process (six plugin nodes: RMSNorm x2, RoPE x2,
LReLU_TRT, CircPad). ``ModelRunner`` runs the replaced model: ordinary ops in onnxruntime
sessions, each plugin node through :class:`pyplugins.runtime.execute.Execution`. onnxruntime
(CPU provider) runs the original. After one untimed first inference (the set-up: sessions,
plugin configuration; reported apart), each round times ``calls`` inferences of the runner, then
``calls`` of onnxruntime, with ``time.perf_counter`` around each; per plugin node, the wall time
the runner records (``NodeRun.seconds``). Devices: ``cpu`` (NumPy references) always, ``gpu``
(the kernels, NumPy arrays crossing each plugin node) when CuPy sees a GPU. The outputs are
compared with onnxruntime's first. Nothing here needs a GPU; missing onnx, onnxruntime or
onnx-graphsurgeon skip the section with a note.

Example (not timed here)::

    from benchmarks import model_runner
    notes = []
    result = model_runner.run(calls=200, rounds=3, devices=["cpu"], notes=notes)
    result["devices"]["cpu"]["runner_ms"]["median"]
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

from benchmarks.timing import stats

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "demos" / "model_demo.py"
NEEDS = ("onnx", "onnxruntime", "onnx_graphsurgeon")


def _demo() -> Any:
    """``demos/model_demo.py`` as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("pyplugins_model_demo", DEMO)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def models(seed: int = 1) -> Dict[str, Any]:
    """The original block, the replaced one, the feeds and the replacement counts."""
    import numpy as np
    import onnx_graphsurgeon as gs

    from pyplugins.models.polygraphy_plugins import apply

    demo = _demo()
    original = demo.export(demo.make_block())
    graph = gs.import_onnx(original)
    counts = apply(graph)
    x = np.random.default_rng(seed).standard_normal((demo.BATCH, demo.SEQ, demo.HIDDEN))
    return {"original": original, "replaced": gs.export_onnx(graph), "counts": dict(counts),
            "feeds": {"x": x.astype(np.float32)},
            "shape": f"batch {demo.BATCH}, sequence {demo.SEQ}, hidden {demo.HIDDEN}"}


def _with_rounds(per_round: List[List[float]]) -> Dict[str, Any]:
    """Stats (ms) over every sample, plus each round's median (the worst round: the highest)."""
    out = stats([v for r in per_round for v in r], 1e3)
    out["rounds"] = [stats(r, 1e3)["median"] for r in per_round]
    return out


def _device(runner: Any, session: Any, feeds: Dict[str, Any], want: Any, calls: int,
            rounds: int) -> Dict[str, Any]:
    import numpy as np

    clock = time.perf_counter
    t0 = clock()
    got = runner.infer(feeds)["y"]
    first = clock() - t0
    record: Dict[str, Any] = {
        "first_s": first, "max_abs_diff": float(np.max(np.abs(got.astype(np.float64) - want))),
        "nodes": {r.node: {"plugin": r.plugin, "how": r.how, "why": r.why}
                  for r in runner.node_runs}}
    mine: List[List[float]] = []
    theirs: List[List[float]] = []
    nodes: Dict[str, List[List[float]]] = {n: [] for n in record["nodes"]}
    plugin_total: List[List[float]] = []
    for _ in range(rounds):
        times, node_times, totals = [], {n: [] for n in nodes}, []
        for _ in range(calls):
            t0 = clock()
            runner.infer(feeds)
            times.append(clock() - t0)
            totals.append(sum(r.seconds for r in runner.node_runs))
            for r in runner.node_runs:
                node_times[r.node].append(r.seconds)
        mine.append(times)
        plugin_total.append(totals)
        for n, values in node_times.items():
            nodes[n].append(values)
        times = []
        for _ in range(calls):
            t0 = clock()
            session.run(["y"], feeds)
            times.append(clock() - t0)
        theirs.append(times)
    record["runner_ms"] = _with_rounds(mine)
    record["onnxruntime_ms"] = _with_rounds(theirs)
    record["plugin_nodes_ms"] = _with_rounds(plugin_total)
    for n, per_round in nodes.items():
        record["nodes"][n]["ms"] = _with_rounds(per_round)
    return record


def run(*, calls: int, rounds: int, devices: Sequence[str], notes: List[str]) -> Dict[str, Any]:
    """The section's record: per device, the runner's and onnxruntime's time per inference."""
    missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
    if missing:
        notes.append(f"model runner: {', '.join(missing)} not installed: section skipped "
                     "(pip install 'pyplugins[models]')")
        return {"skipped": f"needs {', '.join(missing)}"}
    import onnxruntime as ort

    from pyplugins.models.runner import ModelRunner

    built = models()
    session = ort.InferenceSession(built["original"].SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    want = session.run(["y"], built["feeds"])[0]
    result: Dict[str, Any] = {
        "model": f"demos/model_demo.py block ({built['shape']})",
        "plugin_nodes": built["counts"], "calls": calls, "rounds": rounds,
        "onnxruntime": ort.__version__, "devices": {}}
    for device in devices:
        runner = ModelRunner(built["replaced"], device=device)
        result["devices"][device] = _device(runner, session, built["feeds"], want, calls, rounds)
    return result
