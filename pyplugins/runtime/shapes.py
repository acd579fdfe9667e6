"""Pythonic shape arithmetic for ``get_output_dimensions``, over TensorRT's ``IExprBuilder``.

TensorRT's ``IDimensionExpr`` has no operators: every ``a + b`` must be written
``expr_builder.operation(trt.DimensionOperation.SUM, a, b)`` and every int wrapped with
``expr_builder.constant(...)``. :class:`Dim` wraps an expression and gives it ``+ - * //``,
:meth:`Dim.cdiv`, :meth:`Dim.max`, :meth:`Dim.min`, with plain ints mixed in freely. Only
``constant``, ``operation``, ``is_constant``, ``get_constant_value``, ``DimsExprs(n)`` and item
assignment are used, so the same code runs on real TensorRT and on the emulator.

Expressions are valid only during the ``get_output_dimensions`` call that received the builder
(docs/trt-protocol.md §6): compute with them there, never store them on the plugin.

Example (CircPad: pad the last ``len(pads) // 2`` dims)::

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        x = shapes.dims(inputs[0], expr_builder)          # list of Dim
        for i in range(len(self.pads) // 2):
            x[-1 - i] = x[-1 - i] + self.pads[2 * i] + self.pads[2 * i + 1]
        return shapes.output(x, expr_builder)            # a trt.DimsExprs

(:class:`pyplugins.Plugin` also accepts a returned list of :class:`Dim`/ints and converts it.)

The module also has helpers for the *concrete* dims ``configure_plugin`` and ``enqueue`` see:
:func:`volume` and :func:`is_concrete`.

Example:
    >>> import pyplugins.trt as trt
    >>> from pyplugins.runtime import shapes
    >>> eb = trt.IExprBuilder()
    >>> x = shapes.dims(eb._input(0, [2, -1, 7]), eb)     # _input: emulator-only helper
    >>> y = [x[0] * 3, x[1].cdiv(4), x[2] // 2 + 1]
    >>> [d.value for d in y]
    [6, None, 4]
    >>> y[1].expr._evaluate({0: (2, 10, 7)})              # _evaluate: emulator-only
    3
"""

from __future__ import annotations

import builtins
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union, cast

import pyplugins.trt as trt
from pyplugins.errors import ShapeError

_Op = trt.DimensionOperation
IntLike = Union[int, "Dim"]


class Dim:
    """One dimension expression with Python operators.

    Attributes:
        expr: the wrapped ``trt.IDimensionExpr``.
        builder: the ``trt.IExprBuilder`` it came from (used to wrap ints and combine).
    """

    __slots__ = ("expr", "builder")

    def __init__(self, expr: Any, builder: Any) -> None:
        if expr is None:
            msg = ("shape expression is None: TensorRT returned no expression (an invalid "
                   "operation such as a division by a constant zero, or an unfilled DimsExprs slot)")
            raise ShapeError(msg)
        self.expr = expr
        self.builder = builder

    # -- inspection -------------------------------------------------------------------------------

    @property
    def is_constant(self) -> bool:
        """Whether the dimension is known at build time."""
        return bool(self.expr.is_constant())

    @property
    def value(self) -> Optional[int]:
        """The dimension's value when constant, else None."""
        return int(self.expr.get_constant_value()) if self.expr.is_constant() else None

    def __int__(self) -> int:
        value = self.value
        if value is None:
            msg = (f"dimension {self!r} is not a build-time constant; keep it symbolic (use Dim "
                   "arithmetic) or test .is_constant first")
            raise ShapeError(msg)
        return value

    __index__ = __int__

    def __repr__(self) -> str:
        value = self.value
        return f"Dim({value})" if value is not None else f"Dim({self.expr!r})"

    def __bool__(self) -> bool:
        msg = ("a Dim has no truth value at build time (it may be symbolic); compare .value, or "
               "use .eq()/.lt() to build a 0/1 expression")
        raise ShapeError(msg)

    # -- arithmetic -------------------------------------------------------------------------------

    def _wrap(self, other: Any) -> Any:
        if isinstance(other, Dim):
            return other.expr
        if isinstance(other, int) and not isinstance(other, bool):
            return self.builder.constant(int(other))
        if isinstance(other, (trt.IDimensionExpr, _expr_type(self.builder))):
            return other
        if hasattr(other, "__index__") and not isinstance(other, (bool, float)):
            return self.builder.constant(int(other.__index__()))
        return None

    def _op(self, op: Any, a: Any, b: Any, symbol: str) -> "Dim":
        if a is None or b is None:
            return NotImplemented
        result = self.builder.operation(op, a, b)
        if result is None:
            msg = f"shape expression {symbol} is invalid (TensorRT refused {op.name}; a division by zero?)"
            raise ShapeError(msg)
        return Dim(result, self.builder)

    def __add__(self, other: IntLike) -> "Dim":
        return self._op(_Op.SUM, self.expr, self._wrap(other), f"{self!r} + {other!r}")

    __radd__ = __add__

    def __sub__(self, other: IntLike) -> "Dim":
        return self._op(_Op.SUB, self.expr, self._wrap(other), f"{self!r} - {other!r}")

    def __rsub__(self, other: IntLike) -> "Dim":
        return self._op(_Op.SUB, self._wrap(other), self.expr, f"{other!r} - {self!r}")

    def __mul__(self, other: IntLike) -> "Dim":
        return self._op(_Op.PROD, self.expr, self._wrap(other), f"{self!r} * {other!r}")

    __rmul__ = __mul__

    def __floordiv__(self, other: IntLike) -> "Dim":
        return self._op(_Op.FLOOR_DIV, self.expr, self._wrap(other), f"{self!r} // {other!r}")

    def __rfloordiv__(self, other: IntLike) -> "Dim":
        return self._op(_Op.FLOOR_DIV, self._wrap(other), self.expr, f"{other!r} // {self!r}")

    def __truediv__(self, other: Any) -> "Dim":
        msg = "dimensions are integers: use // (floor division) or .cdiv() (ceiling division)"
        raise ShapeError(msg)

    __rtruediv__ = __truediv__

    def cdiv(self, other: IntLike) -> "Dim":
        """Ceiling division ``ceil(self / other)``."""
        return self._op(_Op.CEIL_DIV, self.expr, self._wrap_or_fail(other),
                        f"cdiv({self!r}, {other!r})")

    def max(self, other: IntLike) -> "Dim":
        """The larger of the two dimensions."""
        return self._op(_Op.MAX, self.expr, self._wrap_or_fail(other), f"max({self!r}, {other!r})")

    def min(self, other: IntLike) -> "Dim":
        """The smaller of the two dimensions."""
        return self._op(_Op.MIN, self.expr, self._wrap_or_fail(other), f"min({self!r}, {other!r})")

    def eq(self, other: IntLike) -> "Dim":
        """1 when the dimensions are equal, else 0."""
        return self._op(_Op.EQUAL, self.expr, self._wrap_or_fail(other), f"{self!r} == {other!r}")

    def lt(self, other: IntLike) -> "Dim":
        """1 when ``self < other``, else 0."""
        return self._op(_Op.LESS, self.expr, self._wrap_or_fail(other), f"{self!r} < {other!r}")

    def _wrap_or_fail(self, other: Any) -> Any:
        wrapped = self._wrap(other)
        if wrapped is None:
            msg = f"cannot combine a dimension with {other!r} (a {type(other).__name__}); use ints"
            raise ShapeError(msg)
        return wrapped


# -- module-level helpers -------------------------------------------------------------------------

def wrap(value: Any, builder: Any) -> Dim:
    """A :class:`Dim` from an ``IDimensionExpr``, an int or a :class:`Dim`."""
    if isinstance(value, Dim):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Dim(builder.constant(int(value)), builder)
    if value is None:
        return Dim(None, builder)
    return Dim(value, builder)


def dims(dims_exprs: Any, builder: Any) -> List[Dim]:
    """One input's ``trt.DimsExprs`` as a list of :class:`Dim` (a list you may edit)."""
    return [wrap(dims_exprs[i], builder) for i in range(len(dims_exprs))]


def inputs(all_inputs: Sequence[Any], builder: Any) -> List[List[Dim]]:
    """Every input's dims: ``shapes.inputs(inputs, expr_builder)[i][d]``."""
    return [dims(d, builder) for d in all_inputs]


def output(items: Iterable[Any], builder: Any) -> Any:
    """A ``trt.DimsExprs`` from :class:`Dim` values, ``IDimensionExpr`` values and ints
    (from a builder with ``dims_exprs``, such as the QDP adapter's, what that method makes).

    Raises:
        ShapeError: an entry is neither a dimension nor an int, or there are more than 8.
    """
    entries = list(items)
    if len(entries) > 8:
        msg = f"TensorRT tensors have at most 8 dimensions (got {len(entries)})"
        raise ShapeError(msg)
    make = getattr(builder, "dims_exprs", None)  # a builder of another expression type
    out = make(len(entries)) if make is not None else trt.DimsExprs(len(entries))
    own = _expr_type(builder)
    for i, item in enumerate(entries):
        if isinstance(item, Dim):
            out[i] = item.expr
        elif isinstance(item, int) and not isinstance(item, bool):
            out[i] = builder.constant(int(item))
        elif isinstance(item, (trt.IDimensionExpr, own)):
            out[i] = item
        else:
            msg = (f"output dimension {i} is {item!r} (a {type(item).__name__}); expected a Dim, "
                   "an IDimensionExpr or an int")
            raise ShapeError(msg)
    return out


def _expr_type(builder: Any) -> Any:
    """The expressions a builder other than TensorRT's makes (``expr_type``; the QDP adapter's,
    :mod:`pyplugins.runtime.qdp_shapes`), or ``()`` for TensorRT's builder."""
    return getattr(builder, "expr_type", ())


def _pair(a: IntLike, b: IntLike, builder: Any) -> Optional[Tuple[Dim, IntLike]]:
    """``a`` as a Dim, and ``b``; None when neither is a Dim and there is no builder (the
    caller then computes with the two ints)."""
    if isinstance(a, Dim):
        return a, b
    if isinstance(b, Dim):
        return wrap(a, b.builder), b
    if builder is None:
        return None
    return wrap(a, builder), b


def cdiv(a: IntLike, b: IntLike, builder: Any = None) -> IntLike:
    """Ceiling division of dims or ints (two ints give an int)."""
    pair = _pair(a, b, builder)
    return -((-cast(int, a)) // cast(int, b)) if pair is None else pair[0].cdiv(pair[1])


def maximum(a: IntLike, b: IntLike, builder: Any = None) -> IntLike:
    """The larger of two dims or ints (two ints give an int). Also exported as ``max``."""
    pair = _pair(a, b, builder)
    return builtins.max(cast(int, a), cast(int, b)) if pair is None else pair[0].max(pair[1])


def minimum(a: IntLike, b: IntLike, builder: Any = None) -> IntLike:
    """The smaller of two dims or ints (two ints give an int). Also exported as ``min``."""
    pair = _pair(a, b, builder)
    return builtins.min(cast(int, a), cast(int, b)) if pair is None else pair[0].min(pair[1])


def volume(shape: Iterable[int]) -> int:
    """Number of elements of a concrete shape (a ``trt.Dims`` or a sequence of ints).

    Raises:
        ShapeError: the shape still has a runtime dimension (-1), as in build-phase
            ``configure_plugin``: test :func:`is_concrete` first.
    """
    n = 1
    for d in shape:
        d = int(d)
        if d < 0:
            msg = (f"shape {tuple(int(v) for v in shape)} has a runtime dimension (-1); its "
                   "volume is known only at execution (check shapes.is_concrete(dims) first)")
            raise ShapeError(msg)
        n *= d
    return n


def is_concrete(shape: Iterable[int]) -> bool:
    """Whether a shape has no runtime (-1) dimension: build-phase ``configure_plugin`` sees -1
    for dynamic dims, the execution phase sees concrete ones."""
    return all(int(d) >= 0 for d in shape)


def size_tensor(builder: Any, output_index: int, opt: IntLike, upper: IntLike) -> Dim:
    """Declare output ``output_index`` a size tensor and return the :class:`Dim` it stands for
    (``IExprBuilder.declare_size_tensor``, ``IPluginV3`` only, protocol §6).

    Use the result in another output's shape (e.g. NonZero's ``[rank, count]``); TensorRT then
    reads that output's extent from what ``enqueue`` writes into the size tensor, a 0-D INT32 or
    INT64 output the plugin lists in its ``size_tensors`` class attribute. ``opt`` is the extent
    TensorRT optimizes for, ``upper`` the bound it allocates for; neither may depend on a size
    tensor.

    Example (in ``get_output_dimensions``, output 1 being the count)::

        x = shapes.dims(inputs[0], expr_builder)
        n = x[0] * x[1]                            # upper bound: every element non-zero
        count = shapes.size_tensor(expr_builder, 1, opt=n // 2, upper=n)
        return [len(x), count]
    """
    declare = getattr(builder, "declare_size_tensor", None)
    if declare is None:
        msg = ("size tensors need IPluginV3 (IExprBuilder.declare_size_tensor, TensorRT 10.0+); "
               "register the plugin with interface='v3'.")
        raise ShapeError(msg)
    expr = declare(int(output_index), wrap(opt, builder).expr, wrap(upper, builder).expr)
    return Dim(expr, builder)


max = maximum  # noqa: A001 - shapes.max / shapes.min read naturally
min = minimum  # noqa: A001

__all__ = ["Dim", "cdiv", "dims", "inputs", "is_concrete", "max", "maximum", "min", "minimum",
           "output", "size_tensor", "volume", "wrap"]
