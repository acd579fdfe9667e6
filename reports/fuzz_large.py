"""The large fuzz run of ``pyplugins check``'s inputs: >= 100,000 seeded cases, figures to a table.

Run from the repository root: ``PYTHONPATH=$PWD python3 reports/fuzz_large.py [CASES] [SEED]``.
Writes ``reports/fuzz-large.md`` (cases, clean errors, unclear errors, crashes, hangs per target,
the slowest case and the process's peak memory). The cases and their judging are
``tests/fuzz/harness.py``'s; this script only draws many of them.
"""

from __future__ import annotations

import os
import platform
import random
import resource
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYPLUGINS_TRT", "emulator")
os.environ["PYPLUGINS_DEVICE"] = "cpu"

from pyplugins import emulator  # noqa: E402 - after the sys.path and knobs set above
from tests.fuzz import harness  # noqa: E402

# Share of the cases per target; command lines are the slowest, so fewer.
SHARES = {"blobs": 0.35, "fields": 0.35, "onnx": 0.28, "command lines": 0.02}


def main() -> int:
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 2026
    warnings.simplefilter("ignore")
    emulator.install()
    classes, blobs = harness.plugin_classes(), harness.blobs()
    plugin_file = str(ROOT / "tests" / "emulator" / "plugins" / "circ_pad.py")
    rng = random.Random(seed)
    rows, slowest = {}, (0.0, "")
    start = time.monotonic()
    os.environ["PYPLUGINS_DEVICE"] = "cpu"
    saved_fd2 = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)  # the trampoline's [ERROR] lines go to fd 2
        try:
            for target, share in SHARES.items():
                results = []
                for _ in range(int(total * share) + 1):
                    name = rng.choice(list(classes))
                    if target == "blobs":
                        case = harness.blob_case(rng, classes[name], blobs[name])
                    elif target == "fields":
                        case = harness.fields_case(rng, classes[name])
                    elif target == "onnx":
                        case = harness.onnx_case(rng)
                    else:
                        case = harness.cli_case(rng, plugin_file)
                    t0 = time.monotonic()
                    results.append(harness.timed(case))
                    slowest = max(slowest, (time.monotonic() - t0, target))
                rows[target] = harness.tally(results)
        finally:
            os.dup2(saved_fd2, 2)
    seconds = time.monotonic() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines = [
        "# Large fuzz run of `pyplugins check`'s inputs",
        "",
        f"`PYTHONPATH=$PWD python3 reports/fuzz_large.py {total} {seed}` on "
        f"{platform.machine()} / Python {platform.python_version()}, CPU only, one core: "
        f"{seconds:.0f} s, slowest case {slowest[0] * 1e3:.0f} ms ({slowest[1]}), "
        f"peak memory {peak_mb:.0f} MB. Judging: `tests/fuzz/harness.py` (clean = accepted, or "
        f"refused with a documented error naming plugin and field; hang = over "
        f"{harness.HANG_S:g} s).",
        "",
        "| target | cases | clean | unclear errors | crashes | hangs |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    sums = dict.fromkeys(harness.OUTCOMES, 0)
    for target, tally in rows.items():
        n = sum(tally.values())
        lines.append(f"| {target} | {n} | " + " | ".join(str(tally[k]) for k in harness.OUTCOMES)
                     + " |")
        for k in harness.OUTCOMES:
            sums[k] += tally[k]
    lines.append(f"| **all** | **{sum(sums.values())}** | " +
                 " | ".join(f"**{sums[k]}**" for k in harness.OUTCOMES) + " |")
    out = ROOT / "reports" / "fuzz-large.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if sums["crash"] == 0 and sums["hang"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
