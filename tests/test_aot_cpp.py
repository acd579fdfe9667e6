"""The C++ AOT launcher's artifact reader and expression evaluator (benchmarks/cpp/aot_flat.h),
compiled here with the host compiler into benchmarks/cpp/aot_plan.cpp (no GPU, no CUDA
header): for several shapes it must evaluate every launch field, extra argument and output
shape as pyplugins.checker.aot_artifact.evaluate does. Nothing here times."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # benchmarks/ is a top-level folder, not an installed package
    sys.path.insert(0, str(REPO))

from benchmarks import aot_export
from pyplugins.checker.aot_artifact import AOTArtifact
from pyplugins.errors import AOTArtifactError

CPP = REPO / "benchmarks" / "cpp"


def _in(i: int, d: int) -> Dict[str, Any]:
    return {"input": i, "dim": d}


def _op(name: str, a: Dict[str, Any], b: Dict[str, Any]) -> Dict[str, Any]:
    return {"op": name, "a": a, "b": b}


def _c(v: int) -> Dict[str, Any]:
    return {"const": v}


#: Every operation, with operands that go negative (FLOOR_DIV and CEIL_DIV round as Python's,
#: by a power of two too, which the C++ program shifts).
EVERY_OP = AOTArtifact(
    "k", b"\x00PTX bytes\nwith a newline", "ptx",
    {"grid_x": _op("CEIL_DIV", _op("SUB", _in(0, 0), _c(700)), _c(256)),
     "grid_y": _op("MAX", _op("FLOOR_DIV", _op("SUB", _c(3), _in(1, 0)), _c(4)), _c(1)),
     "block_x": _op("MIN", _op("PROD", _in(0, 1), _c(32)), _c(1024)),
     "shared_mem": _op("SUM", _op("EQUAL", _in(0, 0), _in(1, 0)), _op("LESS", _in(1, 0),
                                                                       _in(0, 1)))},
    [{"dtype": "INT32", "expr": _op("FLOOR_DIV", _op("SUB", _c(1), _in(0, 0)), _c(3))},
     {"dtype": "INT32", "expr": _op("CEIL_DIV", _op("SUB", _c(1), _in(1, 0)), _c(-2))},
     {"dtype": "INT32", "expr": {"size": 1, "opt": _c(5), "upper": _op("PROD", _in(0, 0),
                                                                       _in(0, 1))}},
     # divisions by a power of two (compiled to shifts) of negative operands
     {"dtype": "INT32", "expr": _op("FLOOR_DIV", _op("SUB", _c(1), _in(0, 0)), _c(4))},
     {"dtype": "INT32", "expr": _op("CEIL_DIV", _op("SUB", _c(1), _in(0, 1)), _c(8))},
     # non-negative operands (the 32-bit path), divisor not a power of two
     {"dtype": "INT32", "expr": _op("CEIL_DIV", _in(0, 0), _c(3))},
     {"dtype": "INT32", "expr": _op("CEIL_DIV", _c(1), _op("SUM", _in(0, 1), _c(1)))},
     {"dtype": "INT32", "expr": _op("FLOOR_DIV", _in(0, 0), _op("SUM", _in(0, 1), _c(2)))}],
    [[_in(0, 0), _op("SUM", _in(0, 1), _in(1, 0))], [_op("PROD", _in(1, 0), _c(2))]],
    ["FLOAT", "HALF"], ["FLOAT", "INT32"], ["LINEAR"] * 4, 0, "ns::every_op")
SHAPES = [[(1, 1), (1,)], [(7, 100), (9,)], [(4096, 3), (0,)], [(999, 4), (13,)],
          [(0, 0), (2,)]]


@pytest.fixture(scope="module")
def aot_plan(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("needs a C++ compiler (g++)")
    exe = tmp_path_factory.mktemp("aot_plan") / "aot_plan"
    done = subprocess.run([cxx, "-O1", "-std=c++17", "-Wall", "-Werror", f"-I{CPP}",
                           str(CPP / "aot_plan.cpp"), "-o", str(exe)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return exe


def _run(exe: Path, flat: bytes, shapes: Sequence[Sequence[Sequence[int]]],
         tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "artifact.flat"
    path.write_bytes(flat)
    lines = [" ".join([str(len(s))] + [f"{len(d)} {' '.join(map(str, d))}".strip() for d in s])
             for s in shapes]
    return subprocess.run([str(exe), str(path)], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=60)


def _python(art: AOTArtifact, shapes: Sequence[Sequence[int]]) -> str:
    try:
        plan = art.launch_plan(dict(enumerate(tuple(s) for s in shapes)))
    except AOTArtifactError:
        return "error"
    words: List[Any] = ["grid", *plan["grid"], "block", *plan["block"], "shared",
                        plan["shared_mem"], "extra", *plan["extra"], "outputs"]
    for out in plan["outputs"]:
        words += [len(out), *out]
    return " ".join(map(str, words))


def test_cpp_evaluates_every_operation_as_python_does(aot_plan, tmp_path):
    done = _run(aot_plan, aot_export.flat_bytes(EVERY_OP), SHAPES, tmp_path)
    assert done.returncode == 0, done.stderr
    got = done.stdout.splitlines()
    assert len(got) == len(SHAPES)
    for line, shapes in zip(got, SHAPES):
        assert line == _python(EVERY_OP, shapes), shapes
    # the rounding that differs between C++ and Python division is exercised
    assert _python(EVERY_OP, SHAPES[1]).split(" extra ")[1].startswith("-2 4 700")


def test_a_division_by_zero_is_an_error_line_not_a_crash(aot_plan, tmp_path):
    art = AOTArtifact("k", b"x", "ptx", {"grid_x": _op("CEIL_DIV", _c(4), _in(0, 0))}, [],
                      [], ["FLOAT"], [], ["LINEAR"], 0)
    done = _run(aot_plan, aot_export.flat_bytes(art), [[(0,)], [(3,)]], tmp_path)
    assert done.stdout.splitlines() == ["error an expression divides by zero",
                                        _python(art, [(3,)])]


def test_a_damaged_export_is_refused_with_its_reason(aot_plan, tmp_path):
    flat = aot_export.flat_bytes(EVERY_OP)
    for damaged, reason in ((flat[:-1], "truncated"),
                            (flat.replace(b"CEIL_DIV", b"CEIL_DIX", 1), "CEIL_DIX"),
                            (flat.replace(b"PPAOTFLAT 1", b"PPAOTFLAT 2"), "format version")):
        done = _run(aot_plan, damaged, SHAPES[:1], tmp_path)
        assert done.returncode == 2 and reason in done.stderr, done.stderr


def test_an_expression_without_a_flat_form_is_refused_in_python():
    with pytest.raises(ValueError, match="no flat form"):
        aot_export.expr_tokens({"op": "POW", "a": _c(1), "b": _c(2)})
    with pytest.raises(ValueError, match="white space"):
        aot_export.flat_bytes(AOTArtifact("a kernel", b"", "ptx", {}, [], [], [], [], [], 0))


def test_constants_are_folded_and_shared_subexpressions_computed_once(aot_plan, tmp_path):
    """What runs per launch: a grid of constants only costs nothing; one input dimension read
    by several fields is loaded once; a shared sum is computed once."""
    shared = _op("SUM", _in(0, 0), _c(2))
    art = AOTArtifact(
        "k", b"x", "ptx",
        {"grid_x": _op("PROD", _op("SUM", _c(2), _c(3)), _c(4)), "grid_y": shared,
         "block_x": _op("PROD", _c(1), _op("SUM", _c(2), _in(0, 0)))},
        [{"dtype": "INT32", "expr": shared}, {"dtype": "INT32", "expr": _op("SUB", _in(0, 0),
                                                                            _c(0))}],
        [[_in(0, 0)]], ["FLOAT"], ["FLOAT"], ["LINEAR"] * 2, 0)
    path = tmp_path / "fold.flat"
    path.write_bytes(aot_export.flat_bytes(art))
    done = subprocess.run([str(aot_plan), "--count", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == ["instructions", "2"], done.stdout + done.stderr
    done = _run(aot_plan, aot_export.flat_bytes(art), [[(5,)], [(-9,)]], tmp_path)
    assert done.stdout.splitlines() == [_python(art, [(5,)]), _python(art, [(-9,)])]


@pytest.mark.slow
def test_every_aot_op_built_through_the_emulator_evaluates_the_same_in_cpp(aot_plan, tmp_path):
    """Every shipped op with an AOT kernel, built as TensorRT builds an AOT plugin
    (benchmarks/aot_build.py) with the dimensions that differ between the benchmark's tiny and
    kernel-sized problems dynamic: the compiled C++ program's plan equals Python's at the
    profile's bounds and between them."""
    from benchmarks import aot_build, aot_rows
    from benchmarks.cases import parse_bytes, select

    cases = aot_rows.aot_cases(select(), [])
    assert {c.name for c, _ in cases} >= {"LeakyReLU", "CircPad", "Pool-max", "RoPE"}
    for case, cls in cases:
        tiny = aot_rows.tiny_problem(case)
        big = case.problem(parse_bytes("16M"), aot_rows.DTYPE)
        lo = [tuple(map(min, s, t)) for s, t in zip(tiny.in_shapes, big.in_shapes)]
        hi = [tuple(map(max, s, t)) for s, t in zip(tiny.in_shapes, big.in_shapes)]
        built = aot_build.build(cls, case.fields, lo=lo, hi=hi, dtypes=list(tiny.in_dtypes))
        assert -1 in built.net_shapes[0], case.name
        mid = [tuple(a if a == b else (a + b) // 2 + 1 for a, b in zip(s, t))
               for s, t in zip(lo, hi)]
        shapes = [lo, hi, mid]
        done = _run(aot_plan, aot_export.flat_bytes(built.artifact), shapes, tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [_python(built.artifact, s) for s in shapes], (
            case.name)
