"""The functions of ``tensorrt.plugin``: ``cdiv``, ``max``, ``min`` (symbolic), ``size_tensor`` and
``from_shape_expr`` (§8).

``cdiv``/``max``/``min`` take a ``ShapeExpr`` (or ``SymInt32``) and an int or expression, not two
ints (TensorRT refuses that), and build ``DimensionOperation`` CEIL_DIV/MAX/MIN with the running
callback's builder. Inside the module ``max`` and ``min`` shadow the builtins, as in TensorRT.

Example:
    >>> from pyplugins.emulator.dims import IExprBuilder
    >>> from pyplugins.emulator.plugin.sym_exprs import ShapeExpr, set_expr_builder
    >>> eb = IExprBuilder()
    >>> set_expr_builder(eb)
    >>> n = ShapeExpr(eb._input(0, (-1,))[0])
    >>> [e._expr._evaluate({0: (10,)}) for e in (cdiv(n, 4), max(n, 16), min(3, n))]
    [3, 16, 3]
    >>> set_expr_builder(None)
"""

from __future__ import annotations

from typing import Any, Tuple, Union

from pyplugins.emulator.enums import DataType, DimensionOperation
from pyplugins.emulator.plugin.descriptors import SizeTensorDesc, TensorDesc
from pyplugins.emulator.plugin.sym_exprs import ShapeExpr, SymIntExpr
from pyplugins.emulator.plugin.sym_lists import ShapeExprs
from pyplugins.errors import QDPDefinitionError

__all__ = ["cdiv", "from_shape_expr", "max", "min", "size_tensor"]

_Operand = Union[int, SymIntExpr]


def _binary(op: DimensionOperation, first: _Operand, second: _Operand) -> Any:
    if isinstance(first, int):
        if isinstance(second, int):
            msg = (f"tensorrt.plugin.{op.name.lower()}: both operands are ints ({first}, {second})"
                   "; one must be a symbolic expression (compute int results in Python)")
            raise QDPDefinitionError(msg)
        first = ShapeExpr(first)
    return first._op(op, second)


def cdiv(first: _Operand, second: _Operand) -> Any:
    """Symbolic ceiling division ``first / second`` (not both ints)."""
    return _binary(DimensionOperation.CEIL_DIV, first, second)


def max(first: _Operand, second: _Operand) -> Any:  # noqa: A001 - TensorRT's name
    """The symbolic maximum (not both ints)."""
    return _binary(DimensionOperation.MAX, first, second)


def min(first: _Operand, second: _Operand) -> Any:  # noqa: A001 - TensorRT's name
    """The symbolic minimum (not both ints)."""
    return _binary(DimensionOperation.MIN, first, second)


def size_tensor(opt: ShapeExpr, upper_bound: ShapeExpr) -> SizeTensorDesc:
    """A size-tensor output descriptor with autotune extent ``opt`` and bound ``upper_bound``."""
    return SizeTensorDesc(opt, upper_bound)


def from_shape_expr(shape_expr: Union[Tuple[Union[ShapeExpr, int], ...], ShapeExprs],
                    dtype: DataType) -> TensorDesc:
    """A descriptor of shape ``shape_expr`` (a tuple of expressions and ints, or ShapeExprs)."""
    shape = ShapeExprs.from_tuple(shape_expr) if isinstance(shape_expr, tuple) else shape_expr
    return TensorDesc(shape, dtype)
