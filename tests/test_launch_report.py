"""The ``aot`` and ``threads`` benchmark sections without a GPU: their targets, summary rows and
report tables from a fixture result (synthetic, clearly labelled), the output check that refuses
a wrong row, the generated ``<<<>>>`` floor (compiled with nvcc where there is one) and the CLI's
section names. Nothing here times."""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # benchmarks/ is a top-level folder, not an installed package
    sys.path.insert(0, str(REPO))

from benchmarks import aot_rows, claims, figures, launch_report, report, threads
from benchmarks.run import SECTIONS, main


def _m(*rounds):
    return {"min": min(rounds), "median": sorted(rounds)[len(rounds) // 2], "rounds": list(rounds)}


def _paths(host, graph, check="ok"):
    return {"host_us": _m(*host), "sync_us": _m(*(h + 2 for h in host)),
            "graph_us": _m(*graph), "check": check}


def fixture() -> dict:
    """A result holding only the two sections; every number made up."""
    return {
        "schema": 2, "synthetic": True, "quick": False, "file": "fixture.json",
        "env": {"device": "FIXTURE GPU", "date": "2000-01-01T00:00:00+00:00"},
        "args": {"rounds": 3}, "notes": [],
        "aot": {"calls": 1000, "batch": 100, "rounds": 3, "graph_kernels": 10,
                "graph_replays": 5, "kernel_bytes": "16M", "dtype": "float32", "ops": {
                    "LeakyReLU": {
                        "entry": "leaky_relu_aot<float>", "in_shapes": [[1, 1024]],
                        "net_shapes": [[-1, 1024]], "eval_us": _m(0.05, 0.06, 0.05),
                        "plan": {"grid": [1, 1, 1], "block": [256, 1, 1], "extra": [1024, 7]},
                        "paths": {"cpp_floor": _paths([3.0, 3.0, 3.0], [1.0, 1.0, 1.0]),
                                  "aot_preevaluated": _paths([3.0, 3.05, 3.0], [1.0, 1.0, 1.0]),
                                  # median 1.02x, worst round 1.07x: the target takes the worst
                                  "aot_launch": _paths([3.06, 3.21, 3.03], [1.0, 1.02, 1.01])},
                        "kernel_time": {"check": "ok", "in_shapes": [[4096, 1024]],
                                        "jit_us": _m(10.0, 10.1, 10.0),
                                        "aot_us": _m(10.1, 10.0, 10.2)}},
                    "RMSNorm": {
                        "entry": "rmsnorm_aot<float>", "in_shapes": [[1, 4096], [4096]],
                        "paths": {"cpp_floor": _paths([3.5, 3.5, 3.5], [1.2, 1.2, 1.2]),
                                  "aot_preevaluated": _paths([3.5, 3.5, 3.5], [1.2, 1.2, 1.2]),
                                  "aot_launch": {"check": "output differs from the JIT "
                                                          "enqueue at byte 4 of 16384"}},
                        "kernel_time": {"check": "ok", "jit_us": _m(20.0, 20.0, 20.0),
                                        "aot_us": _m(24.0, 24.0, 24.0)},
                        "kernel_time_dynamic": {"check": "ok", "jit_us": _m(20.0, 20.0, 20.0),
                                                "aot_us": _m(20.0, 20.0, 20.0)}},
                    "SeqRepeat": {"skipped": "AOT build failed: KernelCompileError: x"}}},
        "threads": {"case": "LeakyReLU", "problem": "float32 [1024]", "seconds": 0.5,
                    "rounds": 3, "note": threads.gil_note(), "configs": {
                        "1 GPU": {"devices": [0], "check": "ok", "rows": {
                            "1": {"enqueue_per_s": _m(100e3, 101e3, 99e3),
                                  "noop_per_s": _m(900e3, 900e3, 900e3),
                                  "cpp_per_s": _m(300e3, 300e3, 300e3),
                                  "aot_per_s": _m(250e3, 250e3, 250e3)},
                            "2": {"enqueue_per_s": _m(100e3, 102e3, 101e3),
                                  "noop_per_s": _m(800e3, 800e3, 800e3),
                                  "cpp_per_s": _m(500e3, 500e3, 500e3),
                                  # one round below the 1-thread rate: the AOT target fails
                                  "aot_per_s": _m(450e3, 240e3, 460e3)}}},
                        "2 GPUs": {"devices": [0, 1], "check": "ok", "rows": {
                            "1": {"enqueue_per_s": _m(100e3, 100e3, 100e3)},
                            # a convoy: round 2 falls below the 1-thread rate
                            "8": {"enqueue_per_s": _m(110e3, 90e3, 105e3)}}}}}}


def _verdicts(result):
    return {w: (m, ok) for w, m, ok in claims.targets(result)}


def test_aot_targets_take_the_worst_round_and_refuse_a_wrong_output():
    v = _verdicts(fixture())
    assert v["LeakyReLU: AOT launch <= 1.05x C++ `<<<>>>` (host, worst round)"] == ("1.07x", False)
    m, ok = v["LeakyReLU: AOT launch <= 1.05x C++ `<<<>>>` (graph replay per kernel, worst round)"]
    assert (m, ok) == ("1.02x", True)
    m, ok = v["RMSNorm: AOT launch <= 1.05x C++ `<<<>>>` (host, worst round)"]
    assert ok is False and "refused: aot_launch: output differs" in m
    kt = "AOT kernel time = JIT kernel time (within 3%, 16M, static-shape engine)"
    assert v[f"LeakyReLU: {kt}"] == ("1.010x", True)
    assert v[f"RMSNorm: {kt}"] == ("1.200x", False)  # the dynamic profile's 1.00x is no excuse
    assert not any(w.startswith("SeqRepeat") for w in v)  # skipped: no verdict, a note


def test_thread_targets_catch_a_round_below_the_single_thread_rate():
    v = _verdicts(fixture())
    limit = figures.TARGETS["threads_vs_one"]
    one = "threads, 1 GPU: aggregate enqueue rate >= 1.0x the 1-thread rate (every thread " \
          "count, worst round)"
    assert limit == 1.0 and v[one] == ("1.00x (at 2 threads)", True)
    m, ok = v[one.replace("1 GPU", "2 GPUs")]
    assert (m, ok) == ("0.90x (at 8 threads)", False)
    result = fixture()
    result["threads"]["configs"]["2 GPUs"]["rows"]["8"]["enqueue_per_s"] = _m(101e3, 100e3, 120e3)
    assert _verdicts(result)[one.replace("1 GPU", "2 GPUs")][1] is True
    # every row family gets the target: the AOT row and the C++ threads too
    aot = ("threads, 1 GPU, AOT kernel launched by C++ threads: aggregate launch rate >= 1.0x "
           "the 1-thread rate (every thread count, worst round)")
    assert v[aot] == ("0.96x (at 2 threads)", False)
    cpp = aot.replace("AOT kernel launched by C++ threads", "C++ `<<<>>>` threads")
    assert v[cpp] == ("1.67x (at 2 threads)", True)
    assert not any("2 GPUs, AOT" in w for w in v)  # no AOT figures there: no verdict


def test_report_renders_the_aot_and_threads_tables():
    md = report.render(fixture())
    assert "### 8. AOT launch as TensorRT runs it" in md and "### 9. Many contexts at once" in md
    assert "| **AOT launch as TensorRT runs it** (expressions evaluated, packed, " \
           "`cuLaunchKernel`, every launch) | 3.06 | 1.02x | 5.06 | 1.01x | 1.01 | 1.01x | ok |" \
           in md
    assert "| **AOT launch as TensorRT runs it** (expressions evaluated, packed, " \
           "`cuLaunchKernel`, every launch) | refused |" in md
    assert "**SeqRepeat**: AOT build failed" in md
    assert ("Kernel time at [[4096, 1024]] (static-shape engine): AOT 10.10 us, JIT 10.00 us, "
            "ratio 1.010.") in md
    assert ("Kernel time at the kernel-sized problem (dynamic profile, informational): AOT "
            "20.00 us, JIT 20.00 us, ratio 1.000.") in md
    assert "Spread: AOT launch / C++ host per round 1.01-1.07x (3 rounds)" in md
    assert "| 2 | 101000 | 1.01x | 800000 | 500000 | 0.20x | 450000 | 1.80x |" in md
    assert ("even the empty `enqueue` falls from 900000 calls/s at 1 thread to 800000 at 2 "
            "(0.89x)") in md
    assert "launched by C++ threads it goes from 250000 launches/s at 1 thread to 450000" in md
    assert "| 8 | 105000 | 1.05x | n/a | n/a | n/a |" in md
    assert ("The aggregate peaks at 2 thread(s), 1.01x the 1-thread rate; the empty `enqueue` "
            "alone, which holds the GIL for its whole Python part, peaks at 900000 calls/s") in md
    assert "with the GIL" in md or "free-threaded" in md
    rows = {r[0]: r for r in claims.summary(fixture())}
    assert "LeakyReLU AOT launch" in rows and "threads (2 GPUs)" in rows
    assert rows["threads (1 GPU)"][3].endswith("AOT kernel from C++ threads 1.80x 1 thread")
    # a result without the sections renders as before: no new headings
    bare = {k: v for k, v in fixture().items() if k not in ("aot", "threads")}
    assert "AOT launch as TensorRT" not in report.render(bare)


def test_threads_table_says_why_when_skipped():
    assert launch_report.threads_table({"threads": {"skipped": "no pybind11"}}) == [
        "_Not measured: no pybind11._"]


def test_output_check_refuses_wrong_bytes_and_a_touched_guard():
    assert aot_rows.output_check(b"abcd" + b"\xff" * 4, b"abcd", 4) is None
    assert "byte 2 of 4" in aot_rows.output_check(b"abXd" + b"\xff" * 4, b"abcd", 4)
    assert "past the end" in aot_rows.output_check(b"abcd\x00" + b"\xff" * 3, b"abcd", 4)
    assert "holds 5 bytes" in aot_rows.output_check(b"abcd\xff", b"abcd", 4)


def test_sections_are_named_on_the_command_line(capsys):
    assert {"aot", "threads"} <= set(SECTIONS)
    assert main(["--quick", "--sections", "aot,threads,nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_only_ops_with_an_aot_implementation_get_rows():
    from benchmarks.cases import select
    from pyplugins.ops import LeakyReLU, Pool

    notes = []
    got = aot_rows.aot_cases(select(), notes)
    classes = [cls for _case, cls in got]
    assert LeakyReLU in classes and len(classes) == len(set(classes))
    assert Pool not in classes or Pool.aot_launch  # an op joins once it has aot_launch
    assert notes == []


@pytest.mark.slow
def test_the_generated_floor_compiles_with_the_launcher_and_a_wrong_one_does_not(tmp_path):
    """The <<<>>> floor of LeakyReLU's AOT entry, linked with aot_launch.cu (nvcc; no GPU
    needed to build); the same source with an argument missing fails to compile."""
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    from pyplugins.ops import LeakyReLU
    from pyplugins.runtime.aot import AotLaunch

    obj, why = aot_rows.compile_launcher("sm_90", tmp_path)
    assert why is None, why
    launch = AotLaunch(LeakyReLU.aot_kernel, "float", 1, 256, (1, 2))
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    exe, why = aot_rows.build_launcher(obj, aot_rows.floor_source(launch, 1, 2, 1), [], "sm_90",
                                       good)
    assert why is None and exe.is_file(), why
    exe, why = aot_rows.build_launcher(obj, aot_rows.floor_source(launch, 1, 1, 1), [], "sm_90",
                                       bad)
    assert exe is None and "nvcc failed" in why


@pytest.mark.slow
def test_the_aot_threads_program_compiles_and_its_inputs_are_written(tmp_path):
    """aot_threads.cu builds with nvcc (no GPU needed); prepare writes LeakyReLU's artifact,
    first dimension dynamic (so every launch evaluates), with the shape and both byte files."""
    from benchmarks import threads_aot
    from pyplugins.ops import LeakyReLU

    if shutil.which("nvcc") is not None:
        exe, why = threads_aot.build("sm_90", tmp_path)
        assert why is None and exe.is_file(), why
    flat, why = threads_aot.prepare(LeakyReLU, {"neg_slope": 0.01}, (1024,), b"x" * 4096,
                                    b"y" * 4096, tmp_path)
    assert why is None, why
    text = flat.read_bytes().split(b"\nimage ")[0].decode()
    assert "kernel _Z14leaky_relu_aot" in text and " i 0 0" in text, text
    assert "extra arguments [1024, " in (tmp_path / "plan.txt").read_text()
    assert (tmp_path / "want0.bin").read_bytes() == b"y" * 4096
    flat, why = threads_aot.prepare(LeakyReLU, {"neg_slope": "x"}, (1024,), b"", b"", tmp_path)
    assert flat is None and "not built" in why


def test_fixture_is_not_mutated_by_rendering():
    result = fixture()
    before = copy.deepcopy(result)
    report.render(result)
    assert result == before
