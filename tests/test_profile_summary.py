"""benchmarks/profile_summary.py: Nsight Compute captures parsed, the limiter rule, and the
report's profile target (CPU only; captures are written here in ncu's text format)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks import claims, profile_summary as ps, report
from benchmarks.run import main
from tests.test_benchmarks import synthetic_result

COMMITTED = REPO / "benchmarks" / "results"


def capture(op: dict, copy: dict = None, header: str = "", advice: str = "") -> str:
    """A capture in ``ncu --page details`` text layout: an op kernel, then the copy kernel."""
    def block(name: str, metrics: dict) -> str:  # extern "C" kernels print no signature
        rows = "\n".join(f"    {k:<40} {u:>6} {v:>12}" for k, (u, v) in metrics.items())
        sig = "" if name == "pp_copy16" else "(const float *, float *, long long)"
        return (f"  {name}{sig} (528, 1, 1)x(256, 1, 1), "
                f"Context 1, Stream 13, Device 0, CC 9.0\n    Section: GPU Speed Of Light\n"
                f"    Metric Name   Metric Unit Metric Value\n{rows}\n{advice}")
    text = (header + "\n" if header else "") + "==PROF== Connected\n" + block("void op_kernel<float>", op)
    if copy is not None:
        text += "\n" + block("pp_copy16", copy)
    return text


def metrics(dram: float, l2: float = 30.0, l1: float = 20.0, issue: float = 20.0) -> dict:
    return {"Duration": ("us", "30.00"), "DRAM Throughput": ("%", f"{dram:.2f}"),
            "L2 Cache Throughput": ("%", f"{l2:.2f}"), "L1/TEX Cache Throughput": ("%", f"{l1:.2f}"),
            "Issue Slots Busy": ("%", f"{issue:.2f}"), "Executed Instructions": ("inst", "14,021,460"),
            "Eligible Warps Per Scheduler": ("warp", "1.46"), "Achieved Occupancy": ("%", "44.25"),
            "Registers Per Thread": ("register/thread", "64")}


def test_parse_reads_kernels_launch_shapes_metrics_and_advice():
    advice = ("    OPT   Est. Speedup: 17.91%\n          The memory access pattern for shared "
              "loads causes a 4.1 - way bank\n          conflict.\n")
    got = ps.parse(capture(metrics(54.19), metrics(71.0), "# pyplugins profile: device=NVIDIA "
                           "H200; case=Pool-avg; dtype=int8; bytes=67108864; digest=abc", advice))
    op, copy = got
    assert (op.kernel, op.grid, op.block, copy.kernel) == ("op_kernel<float>", (528, 1, 1),
                                                           (256, 1, 1), "pp_copy16")
    assert op.metric("DRAM Throughput") == 54.19 and op.metric("Executed Instructions") == 14021460
    assert op.header == {"device": "NVIDIA H200", "case": "Pool-avg", "dtype": "int8",
                         "bytes": "67108864", "digest": "abc"}
    assert op.advice == ["OPT Est. Speedup: 17.91% The memory access pattern for shared loads "
                         "causes a 4.1 - way bank conflict."]
    assert ps.split(got) == ([op], copy)


@pytest.mark.parametrize("op, copy, starts", [
    (metrics(66.0), metrics(71.0), "DRAM bandwidth"),           # >= 0.9 x the copy's DRAM
    (metrics(60.0, issue=65.0), metrics(71.0), "instruction issue"),
    (metrics(50.0, l2=85.0), metrics(71.0), "L2 bandwidth"),
    (metrics(50.0, l1=81.0), metrics(71.0), "L1/shared bandwidth"),
    (metrics(54.0, l2=69.0, issue=48.0), metrics(71.0), "latency"),
    (metrics(82.0), None, "DRAM bandwidth"),                    # no copy: the 80 % roof
    (metrics(70.0), None, "latency"),
])
def test_the_limiter_rule_in_its_order(op, copy, starts):
    profiles = ps.parse(capture(op, copy))
    ops, cp = ps.split(profiles)
    assert ps.limiter(ops[0], cp).startswith(starts)


def test_latency_names_the_busiest_unit_against_the_copy():
    ops, cp = ps.split(ps.parse(capture(metrics(54.0, l2=69.0, issue=48.0),
                                        metrics(71.0, l2=74.0))))
    text = ps.limiter(ops[0], cp)
    assert "busiest unit L2 at 69 % (a plain copy: 74 %)" in text
    assert "1.46 eligible warps per scheduler" in text and "64 registers" in text


def _with_profile(tmp_path: Path, case: str, dtype: str, digest: str) -> dict:
    result = synthetic_result()
    result["env"]["device"] = "NVIDIA H200"
    (tmp_path / f"2000-01-01-nvidia-h200-ncu-{case}-{dtype}-67108864.txt").write_text(capture(
        metrics(54.0), metrics(71.0), f"# pyplugins profile: device=NVIDIA H200; case={case}; "
        f"dtype={dtype}; bytes=67108864; digest={digest}"))
    ps.attach(result, tmp_path)
    return result


def test_profile_target_needs_the_slowest_record_and_the_same_sources(tmp_path):
    digest = synthetic_result()["env"]["source_digest"]
    what = "the slowest kernel (>= 64 MiB) profiled with Nsight Compute, limiter stated"
    (tmp_path / "a").mkdir()
    ok = claims.profile_target(_with_profile(tmp_path / "a", "LeakyReLU", "float32", digest))
    assert ok[0] == what and ok[2] is True and ok[1].startswith("LeakyReLU float32: latency")
    (tmp_path / "b").mkdir()
    other = claims.profile_target(_with_profile(tmp_path / "b", "RMSNorm", "float16", digest))
    assert other[2] is False and "the slowest record is LeakyReLU float32" in other[1]
    (tmp_path / "c").mkdir()
    stale = claims.profile_target(_with_profile(tmp_path / "c", "LeakyReLU", "float32", "f" * 16))
    assert stale[2] is False and "other sources" in stale[1]
    none = synthetic_result()
    assert claims.profile_target(none) == (what, "no capture of LeakyReLU float32", False)


def test_the_report_shows_the_capture_and_its_limiter(tmp_path):
    (tmp_path / "r").mkdir()
    result = _with_profile(tmp_path / "r", "LeakyReLU", "float32",
                           synthetic_result()["env"]["source_digest"])
    text = report.render(result)
    assert "6. What limits the slowest kernel" in text
    assert "**`op_kernel<float>` is limited by latency" in text and "`pp_copy16` (copy" in text


def test_profile_command_prints_the_summary(tmp_path, capsys):
    path = tmp_path / "x-ncu-Pool-avg-int8.txt"
    path.write_text(capture(metrics(30.0, issue=70.0), metrics(71.0)))
    assert main(["profile", str(path)]) == 0
    assert "limited by instruction issue: issue slots 70 % busy, 14.0 M warp instructions" in \
        capsys.readouterr().out


def test_every_committed_capture_parses_to_a_kernel_with_metrics():
    files = sorted(COMMITTED.glob("*-ncu-*.txt"))
    assert files, "no committed Nsight Compute capture"
    for path in files:
        ops, _copy = ps.split(ps.parse(path.read_text()))
        assert ops and ops[0].kernel and ops[0].metric("Duration"), path.name
        assert ps.limiter(ops[0], _copy)
