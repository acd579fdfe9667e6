"""What limits a profiled kernel: parse an Nsight Compute ``--page details`` text capture (as
``benchmarks/ncu_slowest.sh`` writes it: the op's kernel, then a plain copy kernel of the same
bytes) into key metrics and a stated limiter.

The rule, in order (Nsight Compute's own advice calls a unit below 60 % of its peak a sign of
latency; a short kernel under the profiler never shows 100 %, so DRAM is judged against the
plain copy captured beside it):
  1. DRAM throughput >= ``AT_COPY`` (0.9) x the copy kernel's: **DRAM bandwidth**.
  2. issue slots >= ``BUSY`` (60 %) busy: **instruction issue**.
  3. L2 or L1 throughput >= ``CACHE_ROOF`` (80 %): that **cache's bandwidth**.
  4. otherwise **latency**, with the busiest unit, eligible warps, occupancy and registers.

Example:
    >>> text = '''# pyplugins profile: device=NVIDIA H200; case=Pool-avg; dtype=int8; bytes=67108864
    ...   void pool2d<signed char>(const T1 *, T1 *) (528, 1, 1)x(256, 1, 1), Context 1
    ...     Duration                         us        44.32
    ...     DRAM Throughput                   %        35.38
    ...     L2 Cache Throughput               %        48.56
    ...     Issue Slots Busy               %        58.82
    ...     Eligible Warps Per Scheduler        warp         2.27
    ...   pp_copy16 (163840, 1, 1)x(256, 1, 1), Context 1
    ...     Duration                         us        23.10
    ...     DRAM Throughput                   %        71.02
    ... '''
    >>> op, copy = parse(text)
    >>> op.kernel, op.header["case"], op.metric("Duration"), copy.kernel
    ('pool2d<signed char>', 'Pool-avg', 44.32, 'pp_copy16')
    >>> limiter(op, copy).split(":")[0]
    'latency'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

BUSY = 60.0
AT_COPY = 0.9
CACHE_ROOF = 80.0
COPY_KERNEL = "pp_copy16"
_METRIC = re.compile(r"^ {4}(\S(?:.*?\S)?)\s{2,}(?:(\S+)\s+)?(-?[\d,]*\.?\d+)\s*$")
# "  void name<T>(args) (grid)x(block), ..." or, for an extern "C" kernel, "  name (grid)x(block)"
_KERNEL = re.compile(r"^  (?:void )?([\w:]+(?:<[^(]*>)?)(?:\(.*\))? \((\d+), (\d+), (\d+)\)"
                     r"x\((\d+), (\d+), (\d+)\)")
_HEADER = "# pyplugins profile:"


@dataclass
class Profile:
    """One kernel's capture: its name, launch shape, metrics (name -> (unit, value)), the
    advice lines Nsight Compute printed, and the ``# pyplugins profile:`` header's fields."""

    kernel: str = ""
    grid: Tuple[int, int, int] = (0, 0, 0)
    block: Tuple[int, int, int] = (0, 0, 0)
    metrics: Dict[str, Tuple[str, float]] = field(default_factory=dict)
    advice: List[str] = field(default_factory=list)
    header: Dict[str, str] = field(default_factory=dict)

    def metric(self, name: str) -> Optional[float]:
        """The value of metric ``name`` (the first one of that name), or None."""
        got = self.metrics.get(name)
        return got[1] if got else None


def parse(text: str) -> List[Profile]:
    """Every profiled kernel of an ``ncu --page details`` text, in order; each carries the
    ``# pyplugins profile: key=value; ...`` header's fields."""
    header: Dict[str, str] = {}
    out: List[Profile] = []
    advice: List[str] = []

    def close() -> None:
        if out:
            out[-1].advice = [" ".join(a.split()) for a in advice if a.startswith("OPT")]
        advice.clear()

    for line in text.splitlines():
        if line.startswith(_HEADER):
            pairs = (kv.split("=", 1) for kv in line[len(_HEADER):].split(";") if "=" in kv)
            header = {k.strip(): v.strip() for k, v in pairs}
            continue
        k = _KERNEL.match(line)
        if k:
            close()
            out.append(Profile(kernel=k.group(1), header=dict(header),
                               grid=tuple(int(k.group(i)) for i in (2, 3, 4)),  # type: ignore
                               block=tuple(int(k.group(i)) for i in (5, 6, 7))))  # type: ignore
            continue
        if not out:
            continue
        stripped = line.strip()
        if stripped.startswith(("OPT", "WRN", "INF")):
            advice.append(stripped)
        elif advice and line.startswith(" " * 10) and stripped:
            advice[-1] += " " + stripped
        else:
            m = _METRIC.match(line)
            if m and m.group(1) not in out[-1].metrics and m.group(1) != "Metric Name":
                out[-1].metrics[m.group(1)] = (m.group(2) or "",
                                               float(m.group(3).replace(",", "")))
    close()
    return out


def split(profiles: Sequence[Profile]) -> Tuple[List[Profile], Optional[Profile]]:
    """(the op's kernels, the copy kernel or None) of a capture."""
    ops = [p for p in profiles if p.kernel != COPY_KERNEL]
    copies = [p for p in profiles if p.kernel == COPY_KERNEL]
    return ops, (copies[-1] if copies else None)


def limiter(p: Profile, copy: Optional[Profile] = None) -> str:
    """One sentence: what limits kernel ``p`` by the module's rule (``copy``: the plain copy
    captured beside it, for the DRAM check; without it DRAM needs ``CACHE_ROOF`` %)."""
    dram, issue = p.metric("DRAM Throughput"), p.metric("Issue Slots Busy")
    l2, l1 = p.metric("L2 Cache Throughput"), p.metric("L1/TEX Cache Throughput")
    copy_dram = copy.metric("DRAM Throughput") if copy else None
    if dram is not None and copy_dram:
        if dram >= AT_COPY * copy_dram:
            return (f"DRAM bandwidth: DRAM throughput {dram:.0f} % of peak, "
                    f"{dram / copy_dram:.2f} x a plain copy's {copy_dram:.0f} %")
    elif dram is not None and dram >= CACHE_ROOF:
        return f"DRAM bandwidth: DRAM throughput {dram:.0f} % of peak"
    if issue is not None and issue >= BUSY:
        instr = p.metric("Executed Instructions")
        more = f", {instr / 1e6:.1f} M warp instructions" if instr else ""
        return f"instruction issue: issue slots {issue:.0f} % busy{more}"
    for name, value in (("L2 bandwidth", l2), ("L1/shared bandwidth", l1)):
        if value is not None and value >= CACHE_ROOF:
            return f"{name}: {value:.0f} % of peak"
    units = [(v, n) for n, v in (("DRAM", dram), ("L2", l2), ("L1", l1), ("issue slots", issue))
             if v is not None]
    busiest = max(units) if units else None
    why = []
    if busiest:
        ref = copy.metric({"DRAM": "DRAM Throughput", "L2": "L2 Cache Throughput",
                           "L1": "L1/TEX Cache Throughput"}.get(busiest[1], "")) if copy else None
        why.append(f"busiest unit {busiest[1]} at {busiest[0]:.0f} %"
                   + (f" (a plain copy: {ref:.0f} %)" if ref is not None else ""))
    eligible, occ = p.metric("Eligible Warps Per Scheduler"), p.metric("Achieved Occupancy")
    regs = p.metric("Registers Per Thread")
    if eligible is not None:
        why.append(f"{eligible:.2f} eligible warps per scheduler")
    if occ is not None:
        why.append(f"{occ:.0f} % achieved occupancy"
                   + (f" at {regs:.0f} registers per thread" if regs else ""))
    stall = next((a.split("%", 1)[-1].strip().split(". ")[0] for a in p.advice
                  if "stalled" in a), None)
    if stall:
        why.append(stall.rstrip("."))
    return f"latency: no unit at its roof; {'; '.join(why)}"


def render(profiles: Sequence[Profile], source: str = "") -> List[str]:
    """Markdown lines for a capture: what was profiled, the key metrics of the op's kernel(s)
    and the copy, each op kernel's limiter, and Nsight Compute's advice for the first."""
    ops, copy = split(profiles)
    if not ops:
        return [f"No kernel of the op in the capture{f' `{source}`' if source else ''}."]
    head = ops[0].header
    what = " ".join(x for x in (head.get("case"), head.get("dtype")) if x)
    size = head.get("bytes", "")
    lines = [f"Profiled with Nsight Compute: {what or 'a kernel'}"
             + (f" at {int(size) >> 20} MiB" if size.isdigit() else "")
             + (f" on the {head['device']}" if head.get("device") else "")
             + (f", commit {head['commit']}" if head.get("commit") else "")
             + (f", {head['date']}" if head.get("date") else "")
             + (f" (`{source}`)" if source else "") + "."]
    keys = ("Duration", "DRAM Throughput", "L2 Cache Throughput", "L1/TEX Cache Throughput",
            "Issue Slots Busy", "Executed Instructions", "Eligible Warps Per Scheduler",
            "Achieved Occupancy", "Registers Per Thread")
    for p in ops + ([copy] if copy else []):
        cells = [f"{k} {p.metrics[k][1]:,.2f} {p.metrics[k][0]}".rstrip()
                 for k in keys if k in p.metrics]
        role = "copy of the same bytes" if p is copy else f"grid {p.grid[0]} x {p.block[0]}"
        lines.append(f"- `{p.kernel}` ({role}): " + "; ".join(cells) + ".")
    for p in ops:
        lines.append(f"- **`{p.kernel}` is limited by {limiter(p, copy)}.**")
    lines += [f"- Nsight Compute: {a}" for a in ops[0].advice[:4]]
    return lines


def latest_for_device(results_dir: Path, device_slug: str) -> Optional[Path]:
    """The newest ``<date>-<device_slug>-ncu-*.txt`` in ``results_dir`` (by name), or None."""
    found = sorted(Path(results_dir).glob(f"*-{device_slug}-ncu-*.txt"))
    return found[-1] if found else None


def attach(result: Dict[str, object], results_dir: Path) -> None:
    """Put the newest capture of ``result``'s device in ``results_dir`` into ``result``
    (``result["profile"]``: file, case, dtype, bytes, digest, the limiter of its first op
    kernel and the Markdown lines), for the report and its profile target."""
    from benchmarks.env import slug

    device = str((result.get("env") or {}).get("device") or "")  # type: ignore[union-attr]
    path = latest_for_device(results_dir, slug(device)) if device else None
    if path is None:
        return
    profiles = parse(path.read_text())
    ops, copy = split(profiles)
    if not ops:
        return
    head = dict(ops[0].header)
    if not head.get("case"):  # a capture without the header: case and dtype from its name
        rest = path.stem.split("-ncu-", 1)[-1].split("-")
        if rest and rest[-1].isdigit():
            head["bytes"] = rest.pop()
        if len(rest) >= 2:
            head["case"], head["dtype"] = "-".join(rest[:-1]), rest[-1]
    result["profile"] = {"file": path.name, "case": head.get("case"), "dtype": head.get("dtype"),
                         "bytes": head.get("bytes"), "digest": head.get("digest"),
                         "limiter": limiter(ops[0], copy), "lines": render(profiles, path.name)}


def main(argv: Sequence[str]) -> int:
    """``python -m benchmarks profile FILE...``: print each capture's summary."""
    if not argv:
        print("usage: python -m benchmarks profile NCU_TEXT...")
        return 2
    for name in argv:
        print("\n".join(render(parse(Path(name).read_text()), Path(name).name)) + "\n")
    return 0
