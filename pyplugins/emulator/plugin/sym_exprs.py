"""Symbolic integers of ``tensorrt.plugin``: ``SymInt32``/``16``/``8``, ``ShapeExpr`` and ``SizeTensorShapeExpr`` (§8).

An expression wraps an ``IDimensionExpr`` of the ``IExprBuilder`` TensorRT handed to the callback
that is running (``get_output_shapes``, ``get_launch_params``); ``+ - * // == <`` build new ones
with it (``cdiv``, ``max``, ``min`` are functions). Outside such a callback there is no builder:
a ``ShapeExpr`` made from an int is then *fake* (the dtype pass of ``get_output_data_types`` runs
the register function with fake shapes), and so is every result of arithmetic on a fake one.

Version rules (TensorRT's ``_tensor.py`` and ``_plugin_class.py``, cited in docs/trt-protocol.md §8):
the builder is forgotten after each callback from 10.15 (before, it stays set); a non-constant or
fake expression has no truth value from 10.16 (``bool()`` raises; before, every expression is
true, so ``if a == b:`` is always taken); ``ShapeExprs[i] = v`` converts ints and refuses other
values from 10.9 (before, it stores anything; :mod:`pyplugins.emulator.plugin.sym_lists`).

Example:
    >>> from pyplugins.emulator.dims import IExprBuilder
    >>> eb = IExprBuilder()
    >>> x = eb._input(0, (-1, 4))
    >>> set_expr_builder(eb)
    >>> n = ShapeExpr(x[0]) * ShapeExpr(x[1]) + 1
    >>> n.is_constant, n._expr._evaluate({0: (3, 4)})
    (False, 13)
    >>> bool(ShapeExpr(4) == 4)
    True
    >>> set_expr_builder(None)
    >>> ShapeExpr(4).is_fake
    True
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import Any, Union

from pyplugins.emulator import surface
from pyplugins.emulator.bases_quick import ISymExpr
from pyplugins.emulator.dims import IDimensionExpr
from pyplugins.emulator.enums import DimensionOperation as Op
from pyplugins.emulator.version import emulated_version
from pyplugins.errors import QDPAttributeError, QDPDefinitionError, QDPRuntimeError

__all__ = ["ShapeExpr", "SizeTensorShapeExpr", "SymExpr", "SymExprImpl", "SymInt16", "SymInt32",
           "SymInt8", "SymIntExpr", "add_truth_observer", "expr_builder", "remove_truth_observer",
           "set_expr_builder"]


class _Builder(threading.local):
    """The callback's ``IExprBuilder``. TensorRT keeps it in one class attribute; per thread
    here, because the emulator's checks run plugins in several threads at once."""

    value: Any = None


_BUILDER = _Builder()


def expr_builder() -> Any:
    """The ``IExprBuilder`` of the running shape callback, or None outside one."""
    return _BUILDER.value


def set_expr_builder(builder: Any) -> None:
    """Enter (a builder) or leave (None) a shape-calculation context."""
    _BUILDER.value = builder


class _Observers(threading.local):
    def __init__(self) -> None:
        self.callbacks: list = []


_TRUTH_OBSERVERS = _Observers()


def add_truth_observer(callback: Any) -> None:
    """Emulator-side (TensorRT has no such hook): call ``callback(expr)`` whenever this thread
    asks a symbolic expression that is fake or not constant for its truth value (``if a == b:``,
    ``max(a, b)``), before the version's answer (always True before 10.16, an error after).
    The QDP checker uses it to find shape functions that branch on symbolic dimensions.

    Example:
        >>> seen = []
        >>> add_truth_observer(seen.append)
        >>> try:
        ...     bool(ShapeExpr())   # a fake expression (the dtype pass): True, or 10.16+ raises
        ... except QDPRuntimeError:
        ...     pass
        >>> remove_truth_observer(seen.append)
        >>> len(seen)
        1
    """
    _TRUTH_OBSERVERS.callbacks.append(callback)


def remove_truth_observer(callback: Any) -> None:
    """Stop calling ``callback`` (added with :func:`add_truth_observer`)."""
    _TRUTH_OBSERVERS.callbacks.remove(callback)


def _observe_truth_test(expr: "SymIntExpr") -> None:
    if not _TRUTH_OBSERVERS.callbacks:
        return
    try:
        symbolic = getattr(expr, "_is_dummy", False) or not expr._expr.is_constant()
    except Exception:  # noqa: BLE001 - no expression at all (built outside a context)
        symbolic = True
    if symbolic:
        for callback in list(_TRUTH_OBSERVERS.callbacks):
            callback(expr)


class SymExpr(ABC):
    """The interface of a symbolic expression (not exported by TensorRT)."""

    @abstractmethod
    def _op(self, op: Op, other: Any) -> "SymExpr":
        """``op(self, other)`` as a new expression."""

    @property
    @abstractmethod
    def is_constant(self) -> bool:
        """Whether the expression is a build-time constant."""

    @abstractmethod
    def constant_value(self) -> int:
        """The constant's value."""

    @property
    @abstractmethod
    def _expr(self) -> Any:
        """The underlying ``IDimensionExpr`` (None when there is none)."""


class SymIntExpr(SymExpr):
    """A symbolic integer: ``SymIntExpr(value)`` with an int (a constant, only inside a shape
    context), an ``IDimensionExpr`` or another expression.

    ``is_constant``, ``constant_value`` and ``repr`` read an attribute only :class:`ShapeExpr`
    sets, so on a plain ``SymInt32`` they raise AttributeError, as in TensorRT.
    """

    def __init__(self, value: Union[int, IDimensionExpr, "SymIntExpr", None] = None) -> None:
        self._int_expr = None
        if isinstance(value, int):
            builder = expr_builder()
            self._int_expr = builder.constant(value) if builder is not None else None
        elif isinstance(value, IDimensionExpr):
            self._int_expr = value
        elif isinstance(value, SymIntExpr):
            self._int_expr = value._int_expr

    def _op(self, op: Op, other: Union[int, "SymIntExpr"]) -> "SymIntExpr":
        if isinstance(other, int):
            other = SymIntExpr(other)
        builder = expr_builder()
        if builder is None:  # TensorRT: AttributeError on its None builder
            msg = (f"{op.name} of symbolic expressions outside get_output_shapes/get_launch_params"
                   ": there is no IExprBuilder to build it with (TensorRT fails here too)")
            raise QDPAttributeError(msg)
        return SymIntExpr(builder.operation(op, self._expr, other._expr))

    def __add__(self, other: Union[int, "SymIntExpr"]) -> "SymIntExpr":
        return self._op(Op.SUM, other)

    def __sub__(self, other: Union[int, "SymIntExpr"]) -> "SymIntExpr":
        return self._op(Op.SUB, other)

    def __mul__(self, other: Union[int, "SymIntExpr"]) -> "SymIntExpr":
        return self._op(Op.PROD, other)

    def __floordiv__(self, other: Union[int, "SymIntExpr"]) -> "SymIntExpr":
        return self._op(Op.FLOOR_DIV, other)

    def __eq__(self, other: Union[int, "SymIntExpr"]) -> "SymIntExpr":  # type: ignore[override]
        return self._op(Op.EQUAL, other)

    def __lt__(self, other: Union[int, "SymIntExpr"]) -> "SymIntExpr":
        return self._op(Op.LESS, other)

    __hash__ = None  # type: ignore[assignment]  # __eq__ builds an expression

    def __bool__(self) -> bool:
        _observe_truth_test(self)
        if emulated_version() < (10, 16):
            return True  # no __bool__ before 10.16: every expression object is true
        if not self.is_constant:
            msg = ("A non-constant symbolic expression has no truth value (TensorRT 10.16+): "
                   "test `e.is_constant` and compare `e.constant_value()` instead")
            raise QDPRuntimeError(msg)
        return bool(self._expr.get_constant_value())

    def __repr__(self) -> str:
        if self._is_dummy:
            return f"FakeSymIntExpr[id={id(self)}]"
        if not self.is_constant:
            return f"SymIntExpr[id={id(self)}]"
        return f"SymIntExpr[{self._expr.get_constant_value()}]"

    @property
    def is_constant(self) -> bool:
        """Whether this is a build-time constant."""
        if self._is_dummy:
            msg = "A fake SymIntExpr has no is_constant: check is_fake first"
            raise QDPRuntimeError(msg)
        return self._expr.is_constant()

    def constant_value(self) -> int:
        """The constant's value.

        Raises:
            QDPRuntimeError: the expression is not constant.
        """
        if not self.is_constant:
            msg = "A non-constant symbolic expression has no constant_value(): check is_constant"
            raise QDPRuntimeError(msg)
        return self._expr.get_constant_value()

    @property
    def _expr(self) -> Any:
        return self._int_expr

    def _clone(self) -> "SymIntExpr":
        return SymIntExpr(self + 0)


class SymInt32(SymIntExpr):
    """A symbolic 32-bit integer; calling it gives the ``trt.ISymExpr`` TensorRT reads (10.9+)."""

    def __call__(self) -> "SymExprImpl":
        return SymExprImpl(self)


class SymInt8(SymIntExpr):
    """A symbolic 8-bit integer (10.9+)."""


class SymInt16(SymIntExpr):
    """A symbolic 16-bit integer (10.9+)."""


class SymExprImpl(ISymExpr):
    """The ``trt.ISymExpr`` a ``SymInt32/16/8`` hands TensorRT: argument type INT, its width,
    and its ``IDimensionExpr``."""

    def __init__(self, expr: SymIntExpr) -> None:
        ISymExpr.__init__(self)
        major = emulated_version()[0]
        width = {SymInt32: "INT32", SymInt16: "INT16", SymInt8: "INT8"}
        kind = next((w for klass, w in width.items() if isinstance(expr, klass)), None)
        if kind is None:
            msg = (f"Unknown symbolic expression type {type(expr).__name__} for a kernel argument:"
                   " use SymInt32")
            raise QDPDefinitionError(msg)
        self.type = surface.resolve("PluginArgType", major).INT
        self.dtype = getattr(surface.resolve("PluginArgDataType", major), kind)
        self.expr = expr._expr


class ShapeExpr(SymInt32):
    """One dimension of a tensor's shape, symbolically; fake outside a shape context.

    Example:
        >>> e = ShapeExpr()
        >>> e.is_fake, (e + 1).is_fake
        (True, True)
    """

    def __init__(self, value: Union[int, IDimensionExpr, SymIntExpr, None] = None) -> None:
        super().__init__(value)
        self._exprBuilder = expr_builder()  # TensorRT's attribute name
        self._is_dummy = False
        self._is_size_tensor = False
        if value is None:
            self._is_dummy = True
        elif isinstance(value, int):
            self._is_dummy = self._exprBuilder is None
        elif isinstance(value, ShapeExpr):
            self._is_dummy = value._is_dummy
            self._is_size_tensor = value._is_size_tensor

    def _op(self, op: Op, other: Union[int, "ShapeExpr"]) -> "ShapeExpr":
        if self._is_size_tensor:
            msg = ("Arithmetic on a size-tensor expression is not allowed (a TensorRT limitation):"
                   " use the size tensor's opt/upper_bound expressions instead")
            raise QDPDefinitionError(msg)
        if self._is_dummy:
            return ShapeExpr()
        return ShapeExpr(super()._op(op, other))

    def __bool__(self) -> bool:
        if emulated_version() >= (10, 16) and self._is_dummy:
            _observe_truth_test(self)
            msg = "A fake ShapeExpr has no truth value: check is_fake first"
            raise QDPRuntimeError(msg)
        return super().__bool__()

    def __repr__(self) -> str:
        if self._is_dummy:
            return f"FakeShapeExpr[id={id(self)}]"
        if not self.is_constant:
            return f"ShapeExpr[id={id(self)}]"
        return f"ShapeExpr[{self._expr.get_constant_value()}]"

    @property
    def is_fake(self) -> bool:
        """True outside a shape context (the dtype pass): no constant or value to read."""
        return self._is_dummy

    @property
    def is_size_tensor(self) -> bool:
        """True for the expression of a size tensor (``SizeTensorDesc.expr()``)."""
        return self._is_size_tensor

    @property
    def is_constant(self) -> bool:
        """Whether this is a build-time constant.

        Raises:
            QDPRuntimeError: for a fake expression.
        """
        if self._is_dummy:
            msg = "A fake ShapeExpr has no is_constant: check is_fake first"
            raise QDPRuntimeError(msg)
        return super().is_constant

    def constant_value(self) -> int:
        """The constant's value (raises QDPRuntimeError when not constant)."""
        if not self.is_constant:
            msg = "A non-constant ShapeExpr has no constant_value(): check is_constant first"
            raise QDPRuntimeError(msg)
        return super().constant_value()

    def _clone(self) -> "ShapeExpr":
        ret = ShapeExpr(self + 0)
        ret._is_dummy = self._is_dummy
        ret._is_size_tensor = self._is_size_tensor
        return ret


class SizeTensorShapeExpr(ShapeExpr):
    """The expression of a size tensor (``SizeTensorDesc.expr()``): usable as a dimension of
    another output, declared to TensorRT (``declare_size_tensor``) the first time it is read
    inside ``get_output_shapes``; no arithmetic."""

    def __init__(self, size_tensor_desc: Any) -> None:
        super().__init__()
        self._is_size_tensor = True
        self._is_dummy = size_tensor_desc.opt.is_fake
        self._size_tensor_desc = size_tensor_desc

    def _op(self, op: Op, other: Any) -> "ShapeExpr":
        msg = ("Arithmetic on a size-tensor expression is not allowed (a TensorRT limitation): "
               "use the size tensor's opt/upper_bound expressions instead")
        raise QDPDefinitionError(msg)

    @property
    def is_constant(self) -> bool:
        """Always False for a real size tensor (raises for a fake one)."""
        if self._is_dummy:
            msg = "A fake ShapeExpr has no is_constant: check is_fake first"
            raise QDPRuntimeError(msg)
        return False

    @property
    def _expr(self) -> Any:
        if self._int_expr is None:
            desc = self._size_tensor_desc
            self._int_expr = expr_builder().declare_size_tensor(
                desc.index, desc.opt._expr, desc.upper_bound._expr)
        return self._int_expr

    def __repr__(self) -> str:
        return f"ShapeExpr[is_size_tensor = True, id={id(self)}]"
