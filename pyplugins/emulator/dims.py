"""``Dims``, ``IDimensionExpr``, ``IExprBuilder`` and ``DimsExprs`` as TensorRT exposes them (§6).

Expressions are symbolic: an input dimension that is dynamic in the network (``-1``) is a symbol,
a static one a constant, and :meth:`IDimensionExpr._evaluate` gives the value for concrete input
shapes (the lifecycle driver evaluates output shapes at each profile's min/opt/max this way).
Constant operations fold, as TensorRT's builder does, so ``is_constant()`` stays meaningful.
Expressions are only valid during the callback that received the builder (§6): using one from an
earlier callback raises, which is how the emulator reports plugins that store them.

Example:
    >>> from pyplugins.emulator import IExprBuilder, DimensionOperation as Op
    >>> eb = IExprBuilder()
    >>> eb.operation(Op.CEIL_DIV, eb.constant(7), eb.constant(2)).get_constant_value()
    4
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Tuple, Union

from pyplugins.emulator import idioms
from pyplugins.emulator.enums import DimensionOperation

MAX_DIMS = 8
INT64_MIN = -(2**63)


class Dims:
    """``trt.Dims``: a tuple-like shape of at most 8 int64 entries (``-1`` marks a runtime dim).

    As TensorRT's binding (§12): it compares equal only to a list or tuple (``Dims == Dims``
    raises TypeError), it is unhashable, and it has no ``nbDims`` (use ``len``).

    Example:
        >>> d = Dims([2, 3, 8])
        >>> len(d), d[-1], tuple(d[1:]), d == (2, 3, 8), d == [2, 3]
        (3, 8, (3, 8), True, False)
    """

    def __init__(self, shape: Iterable[int] = ()) -> None:
        values = tuple(int(v) for v in shape)
        if len(values) > MAX_DIMS:
            msg = f"Dims holds at most {MAX_DIMS} dimensions (got {len(values)}: {values!r})"
            raise ValueError(msg)
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, index: Union[int, slice]) -> Any:
        return self._values[index]

    def __setitem__(self, index: int, value: int) -> None:
        values = list(self._values)
        values[index] = int(value)
        self._values = tuple(values)

    def __iter__(self) -> Iterator[int]:
        return iter(self._values)

    def __eq__(self, other: object) -> bool:
        """Equality with a list or tuple only, as TensorRT's binding (``Dims == Dims`` raises)."""
        if isinstance(other, (tuple, list)):
            return len(other) == len(self._values) and all(
                int(a) == b for a, b in zip(other, self._values))
        msg = ("__eq__(): incompatible function arguments. The following argument types are "
               "supported:\n    1. (self: tensorrt.Dims, arg0: list) -> bool\n"
               f"    2. (self: tensorrt.Dims, arg0: tuple) -> bool\n\nInvoked with: {self!r}, "
               f"{other!r}")
        idioms.refuse("dims_eq", TypeError(msg))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __getattr__(self, name: str) -> Any:
        # pybind11 classes carry the module in their type name (tp_name "tensorrt.Dims")
        msg = f"'tensorrt.{type(self).__name__}' object has no attribute {name!r}"
        raise AttributeError(msg)

    def __hash__(self) -> int:
        idioms.refuse("dims_hash", TypeError("unhashable type: 'tensorrt.Dims'"))

    def __repr__(self) -> str:
        if len(self._values) == 1:
            return f"({self._values[0]},)"
        return f"({', '.join(str(v) for v in self._values)})"

    @property
    def MAX_DIMS(self) -> int:  # noqa: N802 - TensorRT's name
        """The most dimensions a Dims holds (8)."""
        return MAX_DIMS


class IDimensionExpr:
    """``trt.IDimensionExpr``: an opaque dimension expression made by an :class:`IExprBuilder`.

    It has no arithmetic operators (real TensorRT has none); use ``IExprBuilder.operation`` or
    :mod:`pyplugins.runtime.shapes`.
    """

    __slots__ = ("_builder", "_kind", "_value", "_symbol", "_op", "_a", "_b")

    def __init__(self) -> None:
        msg = "IDimensionExpr cannot be created directly; use IExprBuilder.constant/operation"
        raise TypeError(msg)

    @classmethod
    def _make(cls, builder: "IExprBuilder", kind: str, *, value: int = 0,
              symbol: Optional[Tuple[int, int]] = None, op: Optional[DimensionOperation] = None,
              a: Optional["IDimensionExpr"] = None, b: Optional["IDimensionExpr"] = None
              ) -> "IDimensionExpr":
        self = object.__new__(cls)
        self._builder, self._kind, self._value = builder, kind, value
        self._symbol, self._op, self._a, self._b = symbol, op, a, b
        return self

    def is_constant(self) -> bool:
        """Whether the expression is a compile-time constant."""
        self._check_alive("is_constant")
        return self._kind == "const"

    def get_constant_value(self) -> int:
        """The constant's value; INT64_MIN when the expression is not constant (as TensorRT)."""
        self._check_alive("get_constant_value")
        return self._value if self._kind == "const" else INT64_MIN

    def is_size_tensor(self) -> bool:
        """Whether this is a V3 size-tensor expression (``declare_size_tensor``'s result)."""
        self._check_alive("is_size_tensor")
        return self._kind == "size"

    def _check_alive(self, what: str) -> None:
        if not self._builder._alive:
            msg = (f"IDimensionExpr.{what}() on an expression whose callback has returned: "
                   "TensorRT expressions are only valid during the call that received the "
                   "IExprBuilder (do not store them on the plugin)")
            raise RuntimeError(msg)

    def _evaluate(self, shapes: Mapping[int, Sequence[int]]) -> int:
        """Value for concrete input shapes: ``shapes[input_index][dim_index]``."""
        if self._kind == "const":
            return self._value
        if self._kind == "sym":
            i, d = self._symbol
            return int(shapes[i][d])
        if self._kind == "size":  # output _value's size tensor: its value if known, else upper
            key = ("size", self._value)
            return int(shapes[key]) if key in shapes else self._b._evaluate(shapes)
        return _apply(self._op, self._a._evaluate(shapes), self._b._evaluate(shapes))

    def __repr__(self) -> str:
        if self._kind == "const":
            return str(self._value)
        if self._kind == "sym":
            return f"in{self._symbol[0]}[{self._symbol[1]}]"
        if self._kind == "size":
            return f"size_tensor(out{self._value}, opt={self._a!r}, upper={self._b!r})"
        return f"{self._op.name}({self._a!r}, {self._b!r})"


def expr_tree(expr: IDimensionExpr) -> dict:
    """Emulator-side: ``expr`` as plain data, what an engine stores of an expression (the AOT
    artifact of the QDP checker keeps launch parameters this way): ``{"const": v}``,
    ``{"input": i, "dim": d}``, ``{"op": "SUM", "a": ..., "b": ...}`` or
    ``{"size": k, "opt": ..., "upper": ...}`` (output ``k``'s size tensor).

    Example:
        >>> eb = IExprBuilder()
        >>> x = eb._input(0, (-1, 4))
        >>> expr_tree(eb.operation(DimensionOperation.PROD, x[0], x[1]))
        {'op': 'PROD', 'a': {'input': 0, 'dim': 0}, 'b': {'const': 4}}
    """
    if expr._kind == "const":
        return {"const": int(expr._value)}
    if expr._kind == "sym":
        return {"input": int(expr._symbol[0]), "dim": int(expr._symbol[1])}
    if expr._kind == "size":
        return {"size": int(expr._value), "opt": expr_tree(expr._a), "upper": expr_tree(expr._b)}
    return {"op": expr._op.name, "a": expr_tree(expr._a), "b": expr_tree(expr._b)}


def _apply(op: DimensionOperation, a: int, b: int) -> int:
    if op in (DimensionOperation.FLOOR_DIV, DimensionOperation.CEIL_DIV) and b == 0:
        msg = f"shape expression {op.name}({a}, {b}) divides by zero"
        raise ZeroDivisionError(msg)
    if op is DimensionOperation.SUM:
        return a + b
    if op is DimensionOperation.PROD:
        return a * b
    if op is DimensionOperation.MAX:
        return max(a, b)
    if op is DimensionOperation.MIN:
        return min(a, b)
    if op is DimensionOperation.SUB:
        return a - b
    if op is DimensionOperation.EQUAL:
        return int(a == b)
    if op is DimensionOperation.LESS:
        return int(a < b)
    if op is DimensionOperation.FLOOR_DIV:
        return a // b
    return -((-a) // b)  # CEIL_DIV


class IExprBuilder:
    """``trt.IExprBuilder``: makes constants and operations, the last argument of
    ``get_output_dimensions``.

    Example:
        >>> from pyplugins.emulator import DimensionOperation as Op
        >>> eb = IExprBuilder()
        >>> eb.operation(Op.SUM, eb.constant(2), eb.constant(3)).get_constant_value()
        5
    """

    def __init__(self) -> None:
        self._alive = True

    def constant(self, value: int) -> IDimensionExpr:
        """An expression for the int64 constant ``value``."""
        self._check()
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                value = int(value.__index__())
            except AttributeError:
                msg = f"IExprBuilder.constant() takes an int (got {value!r})"
                raise TypeError(msg) from None
        return IDimensionExpr._make(self, "const", value=int(value))

    def operation(self, op: DimensionOperation, first: IDimensionExpr,
                  second: IDimensionExpr) -> Optional[IDimensionExpr]:
        """``op(first, second)``; folds when both are constant, as TensorRT does."""
        self._check()
        if not isinstance(op, DimensionOperation):
            msg = f"IExprBuilder.operation(): op must be a DimensionOperation (got {op!r})"
            raise TypeError(msg)
        for name, arg in (("first", first), ("second", second)):
            if not isinstance(arg, IDimensionExpr):
                msg = (f"IExprBuilder.operation(): {name} operand must be an IDimensionExpr "
                       f"(got {arg!r}); wrap ints with expr_builder.constant()")
                raise TypeError(msg)
            arg._check_alive("operation")
        if first._kind == "const" and second._kind == "const":
            try:
                return IDimensionExpr._make(self, "const",
                                            value=_apply(op, first._value, second._value))
            except ZeroDivisionError:
                return None  # TensorRT returns nullptr for an invalid operation
        return IDimensionExpr._make(self, "op", op=op, a=first, b=second)

    def declare_size_tensor(self, output_index: int, opt: IDimensionExpr,
                            upper: IDimensionExpr) -> IDimensionExpr:
        """V3-only in TensorRT; V2 plugins cannot declare size tensors."""
        msg = "declare_size_tensor() is only available to IPluginV3 plugins"
        raise RuntimeError(msg)

    def _check(self) -> None:
        if not self._alive:
            msg = ("IExprBuilder used after its get_output_dimensions call returned: it is only "
                   "valid during that call")
            raise RuntimeError(msg)

    # Emulator-side helpers (not part of TensorRT's API).
    def _input(self, input_index: int, dims: Sequence[int]) -> "DimsExprs":
        """Input ``input_index``'s DimsExprs: constants for static dims, symbols for -1."""
        return DimsExprs([
            IDimensionExpr._make(self, "const", value=int(v)) if v >= 0
            else IDimensionExpr._make(self, "sym", symbol=(input_index, d))
            for d, v in enumerate(dims)])

    def _expire(self) -> None:
        self._alive = False


class DimsExprs:
    """``trt.DimsExprs``: up to 8 ``IDimensionExpr``; ``DimsExprs(n)`` has n empty slots to fill.

    Example:
        >>> eb = IExprBuilder()
        >>> out = DimsExprs(2)
        >>> out[0] = eb.constant(4); out[-1] = eb.constant(5)
        >>> [e.get_constant_value() for e in out]
        [4, 5]
    """

    def __init__(self, arg: Union[int, Iterable[IDimensionExpr], None] = None) -> None:
        if arg is None:
            slots: list = []
        elif isinstance(arg, int) and not isinstance(arg, bool):
            slots = [None] * arg
        else:
            slots = list(arg)
            for e in slots:
                if not isinstance(e, IDimensionExpr):
                    msg = f"DimsExprs() takes IDimensionExpr entries (got {e!r})"
                    raise TypeError(msg)
        if len(slots) > MAX_DIMS or len(slots) < 0:
            msg = f"DimsExprs holds at most {MAX_DIMS} dimensions (got {len(slots)})"
            raise ValueError(msg)
        self._slots = slots

    def __len__(self) -> int:
        return len(self._slots)

    def _index(self, index: int) -> int:
        if not isinstance(index, int):
            msg = f"DimsExprs indices must be ints (got {index!r})"
            raise TypeError(msg)
        n = len(self._slots)
        if not -n <= index < n:
            msg = f"DimsExprs index {index} out of range for {n} dimensions"
            raise IndexError(msg)
        return index % n

    def __getitem__(self, index: int) -> Optional[IDimensionExpr]:
        return self._slots[self._index(index)]

    def __setitem__(self, index: int, value: IDimensionExpr) -> None:
        if not isinstance(value, IDimensionExpr):
            msg = (f"DimsExprs[{index}] must be set to an IDimensionExpr (got {value!r}); "
                   "use expr_builder.constant() for ints")
            raise TypeError(msg)
        self._slots[self._index(index)] = value

    def __iter__(self) -> Iterator[Optional[IDimensionExpr]]:
        return iter(self._slots)

    def __repr__(self) -> str:
        return f"DimsExprs({self._slots!r})"
