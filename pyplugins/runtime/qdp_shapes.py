"""QDP's symbolic shapes seen as TensorRT's ``DimsExprs`` and ``IExprBuilder``, so a
``pp.Plugin``'s ``get_output_dimensions`` (and ``aot_launch``) runs on ``tensorrt.plugin``
``ShapeExpr``s.

A QDP register function receives ``TensorDesc``s whose ``shape_expr`` holds one ``ShapeExpr``
per dimension; arithmetic on them (``+ - * // == <``, ``tensorrt.plugin.cdiv``/``max``/``min``)
builds new ones with the builder TensorRT handed the running callback (protocol §8.5). A
``pp.Plugin`` instead writes its shapes against ``IDimensionExpr`` and
``IExprBuilder.operation``, usually through :mod:`pyplugins.runtime.shapes`. This adapter maps one
onto the other with ``tensorrt.plugin``'s public names only, so it works with the emulator and
with TensorRT alike:

==============================  ================================================================
what the plugin sees            what it is
==============================  ================================================================
``inputs[i]`` (a ``DimsExprs``)  :class:`QdpDims`: a list of :class:`QdpExpr`, one per dimension
``QdpExpr.is_constant()``       ``not e.is_fake and e.is_constant`` (fake: the dtype pass)
``get_constant_value()``        ``e.constant_value()``; INT64_MIN when not constant, as TensorRT
``expr_builder.constant(v)``    ``tensorrt.plugin.ShapeExpr(v)``
``operation(SUM|SUB|PROD, ..)``  ``a + b``, ``a - b``, ``a * b``
``operation(FLOOR_DIV, ..)``    ``a // b``
``operation(EQUAL|LESS, ..)``   ``a == b``, ``a < b`` (0 or 1)
``operation(CEIL_DIV|MAX|MIN)``  ``tensorrt.plugin.cdiv``, ``max``, ``min``
==============================  ================================================================

The builder also carries ``dims_exprs(n)`` (an empty :class:`QdpDims`, what ``trt.DimsExprs(n)``
is to TensorRT's builder) and ``expr_type``; :func:`pyplugins.runtime.shapes.output` and
:class:`pyplugins.runtime.shapes.Dim` use them, so ``shapes.dims``/``shapes.output`` code runs
unchanged. Code that builds ``trt.DimsExprs`` itself cannot take a :class:`QdpExpr` (TensorRT's
``DimsExprs`` holds only its own expressions) and fails with TensorRT's type error.

In the dtype pass (``get_output_data_types``) every ``ShapeExpr`` is *fake*: arithmetic gives fake
results and nothing is constant, like the build phase's ``-1`` dims.

Example:
    >>> import pyplugins.emulator.plugin as trtp
    >>> from pyplugins.emulator.dims import IExprBuilder
    >>> from pyplugins.emulator.plugin.sym_exprs import set_expr_builder
    >>> from pyplugins.runtime import shapes
    >>> eb = IExprBuilder()                                     # TensorRT's, in the callback
    >>> set_expr_builder(eb)
    >>> x = QdpDims([QdpExpr(trtp.ShapeExpr(d)) for d in eb._input(0, (-1, 8))])
    >>> b = QdpExprBuilder(trtp)
    >>> d = shapes.dims(x, b)
    >>> out = shapes.output([d[0] * 2, d[1].cdiv(3)], b)
    >>> [e.sym._expr._evaluate({0: (5, 8)}) for e in out]     # _expr, _evaluate: emulator-only
    [10, 3]
    >>> d[1].value, d[0].value
    (8, None)
    >>> set_expr_builder(None)
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Dict, List, Sequence, Tuple

import pyplugins.trt as trt
from pyplugins.errors import ShapeError

__all__ = ["INT64_MIN", "QdpDims", "QdpExpr", "QdpExprBuilder", "dims_of", "shape_exprs"]

#: What TensorRT's ``IDimensionExpr.get_constant_value()`` returns for a non-constant expression.
INT64_MIN = -(2**63)


class QdpExpr:
    """One ``tensorrt.plugin.ShapeExpr`` presented as a ``trt.IDimensionExpr``.

    Attributes:
        sym: the wrapped ``ShapeExpr`` (a ``SymInt32``: usable as a launch parameter or an
            extra kernel argument of ``aot_impl``).
    """

    __slots__ = ("sym",)

    def __init__(self, sym: Any) -> None:
        self.sym = sym

    def is_constant(self) -> bool:
        """Whether the dimension is a build-time constant (never, for a fake expression)."""
        return not self.sym.is_fake and bool(self.sym.is_constant)

    def get_constant_value(self) -> int:
        """The constant, or INT64_MIN when the expression is not one (as TensorRT)."""
        return int(self.sym.constant_value()) if self.is_constant() else INT64_MIN

    def is_size_tensor(self) -> bool:
        """Whether this stands for a size tensor's value."""
        return bool(self.sym.is_size_tensor)

    def __repr__(self) -> str:
        return f"QdpExpr({self.sym!r})"


class QdpDims(list):
    """A ``DimsExprs`` of :class:`QdpExpr`: ``len``, ``[i]`` and ``[i] = expr``.

    Example:
        >>> len(QdpDims([None, None]))
        2
    """

    def __repr__(self) -> str:
        return f"QdpDims({list.__repr__(self)})"


class QdpExprBuilder:
    """The ``IExprBuilder`` a ``pp.Plugin`` gets when it runs as a QDP plugin.

    Args:
        trtp: the ``tensorrt.plugin`` module whose ``ShapeExpr``, ``cdiv``, ``max`` and ``min``
            build the expressions (the active TensorRT's).
    """

    #: The expression type :mod:`pyplugins.runtime.shapes` accepts from this builder.
    expr_type = QdpExpr

    def __init__(self, trtp: ModuleType) -> None:
        self._trtp = trtp
        ops = trt.DimensionOperation
        self._ops: Dict[Any, Callable[[Any, Any], Any]] = {
            ops.SUM: lambda a, b: a + b, ops.SUB: lambda a, b: a - b,
            ops.PROD: lambda a, b: a * b, ops.FLOOR_DIV: lambda a, b: a // b,
            ops.EQUAL: lambda a, b: a == b, ops.LESS: lambda a, b: a < b,
            ops.CEIL_DIV: trtp.cdiv, ops.MAX: trtp.max, ops.MIN: trtp.min}

    def constant(self, value: int) -> QdpExpr:
        """``ShapeExpr(value)`` (fake outside a shape callback, as in TensorRT)."""
        return QdpExpr(self._trtp.ShapeExpr(int(value)))

    def operation(self, op: Any, first: QdpExpr, second: QdpExpr) -> QdpExpr:
        """``op(first, second)`` with ``tensorrt.plugin``'s arithmetic.

        Raises:
            ShapeError: an operand that is not a :class:`QdpExpr`, or an unknown operation.
        """
        for what, operand in (("first", first), ("second", second)):
            if not isinstance(operand, QdpExpr):
                msg = (f"IExprBuilder.operation(): the {what} operand is {operand!r}; a plugin "
                       "running as tensorrt.plugin (QDP) combines only the expressions its "
                       "inputs and expr_builder give it")
                raise ShapeError(msg)
        fn = self._ops.get(op)
        if fn is None:
            msg = f"IExprBuilder.operation(): unknown DimensionOperation {op!r}"
            raise ShapeError(msg)
        return QdpExpr(fn(first.sym, second.sym))

    def dims_exprs(self, n: int) -> QdpDims:
        """``n`` empty slots (what ``trt.DimsExprs(n)`` is for TensorRT's builder)."""
        return QdpDims([None] * int(n))

    def declare_size_tensor(self, output_index: int, opt: Any, upper: Any) -> Any:
        """Refused: size tensors of a ``pp.Plugin`` are not mapped onto QDP.

        Raises:
            ShapeError: always.
        """
        msg = ("size tensors (declare_size_tensor) of a pp.Plugin are not mapped onto "
               "tensorrt.plugin (QDP); register the plugin with interface='v3'")
        raise ShapeError(msg)


def dims_of(desc: Any) -> QdpDims:
    """The ``QdpDims`` of a QDP ``TensorDesc``'s ``shape_expr``."""
    return QdpDims(QdpExpr(e) for e in desc.shape_expr)


def shape_exprs(dims: Sequence[Any], plugin: str, output_index: int) -> Tuple[Any, ...]:
    """The ``ShapeExpr``s of what ``get_output_dimensions`` returned (a :class:`QdpDims`).

    Raises:
        ShapeError: an entry that is not an expression of this adapter (an unfilled slot, or a
            ``trt.IDimensionExpr`` made some other way).
    """
    out: List[Any] = []
    for i, entry in enumerate(dims):
        if not isinstance(entry, QdpExpr):
            msg = (f"plugin {plugin!r}: dimension {i} of output {output_index} is {entry!r}; "
                   "as a tensorrt.plugin (QDP) plugin, build output shapes from the inputs' "
                   "dims and expr_builder (pyplugins.runtime.shapes does)")
            raise ShapeError(msg)
        out.append(entry.sym)
    return tuple(out)

