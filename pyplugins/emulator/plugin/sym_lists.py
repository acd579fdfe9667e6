"""The lists of symbolic expressions of ``tensorrt.plugin``: ``SymExprs``, ``ShapeExprs`` (a
tensor's shape) and ``SymIntExprs`` (§8).

``ShapeExprs`` converts an int assigned to an entry into a ``ShapeExpr`` and refuses other values
from 10.9; before, it stores whatever it is given (and ``get_output_shapes`` fails on it later).

Example:
    >>> from pyplugins.emulator.dims import IExprBuilder
    >>> from pyplugins.emulator.plugin.sym_exprs import set_expr_builder
    >>> eb = IExprBuilder()
    >>> set_expr_builder(eb)
    >>> shape = ShapeExprs.from_tuple((ShapeExpr(eb._input(0, (-1,))[0]), 3))
    >>> shape.numel()._expr._evaluate({0: (5,)})
    15
    >>> set_expr_builder(None)
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from pyplugins.emulator.dims import MAX_DIMS
from pyplugins.emulator.plugin.sym_exprs import ShapeExpr, SymExpr, SymInt32, SymIntExpr
from pyplugins.emulator.version import emulated_version
from pyplugins.errors import QDPDefinitionError

__all__ = ["ShapeExprs", "SymExprs", "SymIntExprs", "from_scalar"]


def from_scalar(value: Any) -> SymInt32:
    """``SymInt32(value)`` for an int; floats and other values are refused.

    Raises:
        QDPDefinitionError: a float or another non-int value (TensorRT raises ValueError).
    """
    if isinstance(value, int):
        return SymInt32(value)
    kind = "Float symbolic expressions are not supported" if isinstance(value, float) else \
        f"Unsupported type {type(value).__name__!r} for a symbolic expression"
    msg = f"{kind} (got {value!r}): use an int or a SymInt32/ShapeExpr"
    raise QDPDefinitionError(msg)


class SymExprs:
    """A fixed-length list of symbolic expressions (10.9+); ints become ``SymInt32``.

    Example:
        >>> s = SymExprs(2)
        >>> len(s), s[0]
        (2, None)
    """

    def __init__(self, length: int) -> None:
        self._length = length
        self._exprs: list = [None] * length

    @classmethod
    def from_tuple(cls, exprs: Iterable[Any]) -> "SymExprs":
        """A list holding ``exprs`` (ints converted)."""
        items = [e if isinstance(e, SymExpr) else from_scalar(e) for e in exprs]
        inst = cls(len(items))
        inst._exprs = items
        return inst

    def __iter__(self) -> Iterator[Any]:
        return iter(self._exprs)

    def __getitem__(self, index: int) -> Any:
        return self._exprs[index]

    def __len__(self) -> int:
        return self._length

    def __setitem__(self, index: int, expr: Any) -> None:
        if index >= self._length:
            msg = f"index {index} out of range for {type(self).__name__} of length {self._length}"
            raise IndexError(msg)
        self._exprs[index] = expr if isinstance(expr, SymExpr) else from_scalar(expr)

    def __repr__(self) -> str:
        return f"SymExprs[{', '.join(repr(s) for s in self._exprs)}]"


class ShapeExprs(SymExprs):
    """A tensor's shape as :class:`ShapeExpr` entries (at most 8); ``numel()`` is their product.

    Example:
        >>> len(ShapeExprs(3)), ShapeExprs(2, _is_dummy=True)[0].is_fake
        (3, True)
    """

    def __init__(self, length: int, _is_dummy: bool = False) -> None:
        if length > MAX_DIMS:
            msg = f"ShapeExprs holds at most {MAX_DIMS} dimensions (trt.Dims.MAX_DIMS); got {length}"
            raise QDPDefinitionError(msg)
        super().__init__(length)
        self._is_dummy = _is_dummy
        if _is_dummy:
            self._exprs = [ShapeExpr()] * length

    @classmethod
    def from_tuple(cls, exprs: Iterable[Any]) -> "ShapeExprs":
        """A shape holding ``exprs`` (non-ShapeExpr values go through ``ShapeExpr(value)``)."""
        items = [e if isinstance(e, ShapeExpr) else ShapeExpr(e) for e in exprs]
        inst = cls(len(items))
        inst._exprs = items
        return inst

    def numel(self) -> ShapeExpr:
        """The number of elements, symbolically."""
        ret = ShapeExpr(1)
        for s in self._exprs:
            ret = ret * s
        return ret

    def __setitem__(self, index: int, value: Any) -> None:
        if index >= self._length:
            msg = f"index {index} out of range for ShapeExprs of length {self._length}"
            raise IndexError(msg)
        if emulated_version() >= (10, 9) and not isinstance(value, ShapeExpr):
            if not isinstance(value, int):
                msg = f"ShapeExprs entries must be ints or ShapeExprs (got {type(value).__name__})"
                raise QDPDefinitionError(msg)
            value = ShapeExpr(value)
        self._exprs[index] = value

    def __repr__(self) -> str:
        return f"ShapeExprs[{', '.join(repr(s) for s in self._exprs)}]"

    def _clone(self) -> "ShapeExprs":
        ret = ShapeExprs.from_tuple(e._clone() for e in self._exprs)
        ret._is_dummy = self._is_dummy
        return ret


class SymIntExprs(SymExprs):
    """A list of :class:`SymIntExpr` (the extra kernel arguments of ``aot_impl``, 10.9+).

    Ints become plain ``SymIntExpr`` (not ``SymInt32``), which ``get_launch_params`` refuses, as
    in TensorRT: wrap values with ``SymInt32(...)``.
    """

    @classmethod
    def from_tuple(cls, exprs: Iterable[Any]) -> "SymIntExprs":
        """A list holding ``exprs`` (non-SymIntExpr values go through ``SymIntExpr(value)``)."""
        items = [e if isinstance(e, SymIntExpr) else SymIntExpr(e) for e in exprs]
        inst = cls(len(items))
        inst._exprs = items
        return inst

    def __setitem__(self, index: int, value: Any) -> None:
        if index >= self._length:
            msg = f"index {index} out of range for SymIntExprs of length {self._length}"
            raise IndexError(msg)
        if not isinstance(value, SymIntExpr):
            if not isinstance(value, int):
                msg = f"SymIntExprs entries must be ints or SymIntExprs (got {type(value).__name__})"
                raise QDPDefinitionError(msg)
            value = SymIntExpr(value)
        self._exprs[index] = value

    def __repr__(self) -> str:
        return f"SymIntExprs[{', '.join(repr(s) for s in self._exprs)}]"
