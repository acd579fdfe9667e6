"""Symbolic expressions of tensorrt.plugin: arithmetic on the callback's builder, fake expressions,
and the version rules (truth value 10.16, builder reset 10.15, ShapeExprs entries 10.9)."""

from __future__ import annotations

import pytest

from pyplugins._config import override
from pyplugins.emulator.dims import IExprBuilder
from pyplugins.emulator.enums import DataType
from pyplugins.checker.size_tensors import SizeTensorBuilder
from pyplugins.emulator.plugin.sym_exprs import expr_builder, set_expr_builder
from pyplugins.errors import QDPAttributeError, QDPDefinitionError, QDPRuntimeError

from .support import create, load


@pytest.fixture
def eb():
    builder = IExprBuilder()
    set_expr_builder(builder)
    yield builder
    set_expr_builder(None)


def _value(expr, shapes):
    return expr._expr._evaluate(shapes)


def test_arithmetic_and_functions_evaluate_at_concrete_shapes(trtp, eb):
    n, c = (trtp.ShapeExpr(e) for e in eb._input(0, (-1, 3)))
    shapes = {0: (10, 3)}
    assert [_value(e, shapes) for e in (n + 1, n - c, n * c, n // 4, trtp.cdiv(n, 4),
                                        trtp.max(n, 16), trtp.min(2, n), n == 10, n < c)] == [
        11, 7, 30, 2, 3, 16, 2, 1, 0]
    assert (c * 2).is_constant and (c * 2).constant_value() == 6
    assert not (n + 1).is_constant
    with pytest.raises(QDPRuntimeError, match="no constant_value"):
        (n + 1).constant_value()
    with pytest.raises(QDPDefinitionError, match="both operands are ints"):
        trtp.cdiv(3, 4)
    shape = trtp.ShapeExprs.from_tuple((n, c, 2))
    assert _value(shape.numel(), shapes) == 60 and len(shape) == 3


def test_outside_a_shape_callback_expressions_are_fake(trtp):
    assert expr_builder() is None
    fake = trtp.ShapeExpr(5)
    assert fake.is_fake and (fake * 3).is_fake
    with pytest.raises(QDPRuntimeError, match="check is_fake"):
        fake.is_constant
    with pytest.raises(QDPAttributeError, match="no IExprBuilder"):
        trtp.SymInt32(4) + 1


def test_truth_value_rule_arrives_in_10_16(trtp, eb):
    n = trtp.ShapeExpr(eb._input(0, (-1,))[0])
    with override(trt_version="11.1"):
        with pytest.raises(QDPRuntimeError, match="no truth value"):
            bool(n == 3)
        assert bool(trtp.ShapeExpr(3) == 3) and not bool(trtp.ShapeExpr(3) == 4)
        with pytest.raises(QDPRuntimeError, match="fake ShapeExpr"):
            bool(trtp.ShapeExpr())
    with override(trt_version="10.15"):  # no __bool__ yet: every expression is true
        assert bool(n == 3) and bool(trtp.ShapeExpr(3) == 4) and bool(trtp.ShapeExpr())


def test_plain_symints_have_no_is_constant_as_in_tensorrt(trtp, eb):
    s = trtp.SymInt32(4)
    assert _value(s, {}) == 4
    with pytest.raises(AttributeError, match="_is_dummy"):
        s.is_constant
    with pytest.raises(QDPDefinitionError, match="Float symbolic expressions"):
        trtp.SymExprs.from_tuple((1.5,))


def test_shape_expr_entries_are_checked_from_10_9(trtp, eb):
    shape = trtp.ShapeExprs(2)
    shape[0] = 4
    assert isinstance(shape[0], trtp.ShapeExpr) and shape[0].constant_value() == 4
    with pytest.raises(QDPDefinitionError, match="ints or ShapeExprs"):
        shape[1] = "x"
    with pytest.raises(IndexError):
        shape[2] = 1
    with override(trt_version="10.8"):
        shape[1] = "x"  # stored as given before 10.9
        assert shape[1] == "x"
    with pytest.raises(QDPDefinitionError, match="at most 8"):
        trtp.ShapeExprs(9)


def test_sym_int_exprs_keep_ints_as_plain_sym_int_exprs(trtp, eb):
    args = trtp.SymIntExprs.from_tuple((1, trtp.SymInt32(2)))
    assert type(args[0]).__name__ == "SymIntExpr" and type(args[1]).__name__ == "SymInt32"
    args[0] = 7
    assert _value(args[0], {}) == 7
    with pytest.raises(QDPDefinitionError):
        args[1] = 1.0


def test_size_tensor_expressions_refuse_arithmetic(trtp, eb):
    n = trtp.ShapeExpr(eb._input(0, (-1,))[0])
    st = trtp.size_tensor(n // 2, n)
    assert st.is_size_tensor and st.dtype == DataType.INT32 and st.shape_expr is not None
    with pytest.raises(QDPDefinitionError, match="size-tensor expression"):
        st.expr() + 1
    assert st.expr().is_size_tensor and not st.expr().is_constant


def test_the_builder_is_forgotten_after_a_callback_from_10_15(trtp):
    load("non_zero")
    builder = SizeTensorBuilder()
    plugin = create("qdp_tests::non_zero", {})
    plugin.get_output_data_types([DataType.FLOAT], [2])
    plugin.get_output_shapes([builder._input(0, (-1, 4))], [], builder)
    assert expr_builder() is None
    with override(trt_version="10.14"):
        plugin.get_output_shapes([builder._input(0, (-1, 4))], [], builder)
        assert expr_builder() is builder  # kept: an expression made later uses a stale builder
    set_expr_builder(None)
