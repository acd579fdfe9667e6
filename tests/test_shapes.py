"""shapes: every operator on Dim, constants folded, symbolic dims evaluated (emulator-only
``_evaluate``), outputs built as TensorRT's DimsExprs, and the concrete-shape helpers."""

from __future__ import annotations

import pytest

import pyplugins.trt as trt
from pyplugins.runtime import shapes
from pyplugins.errors import ShapeError
from pyplugins.runtime.shapes import Dim

IN = (5, 12, 7)  # concrete shape of input 0 used for evaluation


@pytest.fixture
def eb():
    return trt.IExprBuilder()


@pytest.fixture
def sym(eb):
    """Input 0 with every dim dynamic (-1), wrapped."""
    return shapes.dims(eb._input(0, [-1, -1, -1]), eb)


def ev(d: Dim) -> int:
    return d.expr._evaluate({0: IN})


@pytest.mark.parametrize("build, expected", [
    (lambda a, b: a + b, 5 + 12), (lambda a, b: a + 3, 8), (lambda a, b: 3 + a, 8),
    (lambda a, b: a - b, 5 - 12), (lambda a, b: a - 2, 3), (lambda a, b: 20 - a, 15),
    (lambda a, b: a * b, 60), (lambda a, b: a * 4, 20), (lambda a, b: 4 * a, 20),
    (lambda a, b: b // a, 2), (lambda a, b: b // 5, 2), (lambda a, b: 26 // a, 5),
    (lambda a, b: b.cdiv(a), 3), (lambda a, b: b.cdiv(5), 3), (lambda a, b: a.cdiv(12), 1),
    (lambda a, b: a.max(b), 12), (lambda a, b: a.max(9), 9), (lambda a, b: a.min(b), 5),
    (lambda a, b: a.min(2), 2), (lambda a, b: a.eq(5), 1), (lambda a, b: a.eq(b), 0),
    (lambda a, b: a.lt(b), 1), (lambda a, b: b.lt(a), 0),
    (lambda a, b: shapes.cdiv(b, a), 3), (lambda a, b: shapes.max(a, b), 12),
    (lambda a, b: shapes.min(a, b), 5), (lambda a, b: shapes.maximum(7, a), 7),
    (lambda a, b: (a + b) * 2 // 3 - 1, (5 + 12) * 2 // 3 - 1),
])
def test_operators_symbolic_and_constant(eb, sym, build, expected):
    a, b = sym[0], sym[1]
    result = build(a, b)
    assert isinstance(result, Dim)
    assert not result.is_constant and result.value is None
    assert ev(result) == expected
    # the same expression over constant inputs folds to a constant with the same value
    ca, cb = shapes.dims(eb._input(0, list(IN)), eb)[:2]
    folded = build(ca, cb)
    assert folded.is_constant and folded.value == expected and int(folded) == expected


def test_int_only_helpers_stay_ints():
    assert shapes.cdiv(7, 2) == 4 and shapes.max(3, 4) == 4 and shapes.min(3, 4) == 3
    assert shapes.cdiv(0, 5) == 0 and shapes.cdiv(-7, 2) == -3


def test_helpers_wrap_ints_with_a_builder(eb):
    d = shapes.cdiv(7, 2, eb)
    assert isinstance(d, Dim) and d.value == 4
    assert shapes.wrap(3, eb).value == 3 and shapes.wrap(shapes.wrap(3, eb), eb).value == 3


def test_output_builds_dimsexprs_from_mixed_entries(eb, sym):
    out = shapes.output([sym[0], 4, sym[2] * 2, eb.constant(9)], eb)
    assert isinstance(out, trt.DimsExprs) and len(out) == 4
    assert [e._evaluate({0: IN}) for e in out] == [5, 4, 14, 9]
    assert out[1].is_constant() and out[1].get_constant_value() == 4


def test_output_rejects_bad_entries_and_rank(eb, sym):
    with pytest.raises(ShapeError, match="output dimension 1 is 2.5"):
        shapes.output([sym[0], 2.5], eb)
    with pytest.raises(ShapeError, match="at most 8"):
        shapes.output([1] * 9, eb)


def test_inputs_wraps_every_input(eb):
    all_dims = shapes.inputs([eb._input(0, [2, -1]), eb._input(1, [4])], eb)
    assert [len(d) for d in all_dims] == [2, 1]
    assert all_dims[0][0].value == 2 and all_dims[0][1].value is None
    assert all_dims[0][1].expr._evaluate({0: (2, 6), 1: (4,)}) == 6


def test_mistakes_have_clear_errors(eb, sym):
    with pytest.raises(ShapeError, match="use // .* or .cdiv"):
        sym[0] / 2
    with pytest.raises(ShapeError, match="no truth value"):
        bool(sym[0])
    with pytest.raises(ShapeError, match="not a build-time constant"):
        int(sym[0])
    with pytest.raises(TypeError):
        sym[0] + 1.5
    with pytest.raises(ShapeError, match="cannot combine"):
        sym[0].max(1.5)
    c = shapes.wrap(4, eb)
    with pytest.raises(ShapeError, match="invalid"):
        c // 0  # TensorRT returns None for a constant division by zero
    with pytest.raises(ShapeError, match="unfilled"):
        shapes.dims(trt.DimsExprs(2), eb)


def test_repr_and_index(eb, sym):
    c = shapes.wrap(3, eb)
    assert repr(c) == "Dim(3)" and [10, 11, 12, 13][c] == 13
    assert "in0[0]" in repr(sym[0])


def test_uses_only_the_real_tensorrt_surface(eb, monkeypatch):
    """Dim must work with an IExprBuilder offering only constant/operation."""
    calls = []
    real_operation = eb.operation

    def operation(op, a, b):
        calls.append(op)
        return real_operation(op, a, b)

    monkeypatch.setattr(eb, "operation", operation)
    d = shapes.dims(eb._input(0, [-1]), eb)[0]
    (d + 1) * 2 // 3
    d.cdiv(2).max(1).min(9)
    Op = trt.DimensionOperation  # noqa: N806 - an enum class
    assert calls == [Op.SUM, Op.PROD, Op.FLOOR_DIV, Op.CEIL_DIV, Op.MAX, Op.MIN]


def test_volume_and_is_concrete():
    assert shapes.volume(trt.Dims([2, 3, 4])) == 24 and shapes.volume([]) == 1
    assert shapes.volume((0, 5)) == 0
    assert shapes.is_concrete([2, 3]) and not shapes.is_concrete(trt.Dims([2, -1]))
    with pytest.raises(ShapeError, match="runtime dimension"):
        shapes.volume([2, -1])
