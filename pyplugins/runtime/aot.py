"""Ahead-of-time launches: the ``aot_launch`` hook's result (:class:`AotLaunch`), the symbolic
tensors it receives (:class:`AotTensor`) and helpers for symbolic launch arithmetic.

Registered as QDP (``@pp.register(interface="qdp")``), a class with an ``aot_launch`` hook gets an
``aot_impl``: TensorRT bakes the kernel's PTX into the engine and launches it itself, without
Python (trtexec, Triton server, C++). ``plan`` computes a launch from concrete shapes at run
time; ``aot_launch`` writes the same launch once, at build time, as expressions of the input
shapes that TensorRT evaluates at every run::

    aot_kernel = pp.Kernel("leaky_relu.cu", "leaky_relu_aot<{T}>")

    def aot_launch(self, inputs, outputs):
        x = inputs[0]
        n = aot.volume(x.dims)                                   # a symbolic shapes.Dim
        grid = aot.at_least_one(shapes.minimum(shapes.cdiv(n, 1024), MAX_GRID[0]))
        return aot.AotLaunch(self.aot_kernel, ctype_from_trt(x.type), grid=grid, block=256,
                             args=(n, aot.float32_bits(self.neg_slope)))

The kernel takes, in TensorRT's order, a pointer per input, then ``args`` (each a 32-bit
``int``: QDP's extra arguments are ``SymInt32``), then a pointer per output (§8.4). Kernels whose
arguments are 64-bit sizes, floats or by-value structs get a small entry kernel in their ``.cu``
that takes int32 arguments and calls the same body (``leaky_relu_aot`` in ``leaky_relu.cu``);
floats travel as their bits (:func:`float32_bits`, read back with ``__int_as_float``).

Dims are :class:`pyplugins.runtime.shapes.Dim`: ``+ - * //``, ``cdiv``, ``max``, ``min``, ``eq``,
``lt`` work, Python's ``if`` and ``%`` do not (the value is known only at run time): write a
choice as arithmetic with :func:`select`, :func:`less` and :func:`divisible`. A choice that must
be made once, for every shape (a kernel, a compile option), is made from what the build knows:
:attr:`AotTensor.shape` (``-1`` for runtime dims) and the profile's :attr:`AotTensor.min` and
:attr:`AotTensor.max`. TensorRT launches the grid it is given, so a grid of 0 blocks is a launch
error: :func:`at_least_one` keeps one block (the kernels return early on empty tensors).

Example:
    >>> import pyplugins.emulator.plugin as trtp
    >>> from pyplugins.emulator.dims import IExprBuilder
    >>> from pyplugins.emulator.plugin.sym_exprs import set_expr_builder
    >>> from pyplugins.runtime import shapes
    >>> from pyplugins.runtime.qdp_shapes import QdpExprBuilder, QdpDims, QdpExpr
    >>> eb = IExprBuilder()
    >>> set_expr_builder(eb)
    >>> b = QdpExprBuilder(trtp)
    >>> d = shapes.dims(QdpDims(QdpExpr(trtp.ShapeExpr(e)) for e in eb._input(0, (-1, 6))), b)
    >>> n = volume(d)
    >>> picked = select(divisible(d[0], 4), n // 4, n)
    >>> [e.expr.sym._expr._evaluate({0: (r, 6)}) for e in (n, picked) for r in (8, 3)]
    [48, 18, 12, 18]
    >>> set_expr_builder(None)
    >>> float32_bits(1.0), float32_bits(-2.0)
    (1065353216, -1073741824)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from pyplugins.errors import PluginDefinitionError, ShapeError
from pyplugins.runtime import shapes
from pyplugins.runtime.device import resident_blocks, usable_device
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import MAX_GRID
from pyplugins.runtime.qdp_shapes import dims_of
from pyplugins.runtime.tactics import Variant

__all__ = ["INT32_MAX", "AotLaunch", "AotTensor", "at_least_one", "build_resident_blocks",
           "divisible", "entry_kernels", "float32_bits", "int32_bound", "less", "select", "variant_grid", "volume"]

#: The largest value an extra argument (``SymInt32``) can carry.
INT32_MAX = 2**31 - 1
Value = Union[int, shapes.Dim]


def float32_bits(value: float) -> int:
    """The bits of ``value`` as a float32, as a signed int32: how a float travels in QDP's
    int32 extra arguments (the kernel reads it back with ``__int_as_float``)."""
    return int(np.array([value], np.float32).view(np.int32)[0])


def volume(dims: Sequence[Value]) -> Value:
    """The product of symbolic (or int) dims; 1 for none."""
    out: Value = 1
    for d in dims:
        out = d * out if isinstance(d, shapes.Dim) else out * d
    return out


def divisible(value: Value, k: int) -> Value:
    """1 when ``value`` is a multiple of ``k``, else 0 (symbolically for a dim)."""
    if isinstance(value, shapes.Dim):
        return (value // k * k).eq(value)
    return int(int(value) % k == 0)


def less(first: Value, second: Value) -> Value:
    """1 when ``first < second``, else 0 (symbolically when either is a dim)."""
    if isinstance(first, shapes.Dim):
        return first.lt(second)
    if isinstance(second, shapes.Dim):
        return shapes.wrap(int(first), second.builder).lt(second)
    return int(int(first) < int(second))


def select(condition: Value, if_one: Value, if_zero: Value) -> Value:
    """``if_one`` where ``condition`` (0 or 1) is 1, else ``if_zero``: for a symbolic
    condition as arithmetic, ``condition * if_one + (1 - condition) * if_zero``."""
    if isinstance(condition, shapes.Dim):
        return condition * if_one + (1 - condition) * if_zero
    return if_one if condition else if_zero


def at_least_one(value: Value) -> Value:
    """``max(value, 1)``: a grid TensorRT can launch when the tensors are empty."""
    return value.max(1) if isinstance(value, shapes.Dim) else max(int(value), 1)


def int32_bound(plugin: str, what: str, value: int, fix: str) -> None:
    """Refuse, at build time, a profile in which ``what`` (an extra argument, computed at the
    profile's max) passes the int32 an AOT kernel takes it as.

    Raises:
        ShapeError: ``value > INT32_MAX``, naming the plugin, the quantity and ``fix``.

    Example:
        >>> int32_bound("Pool", "N * C", 2**31 - 1, "lower the profile's max")
        >>> int32_bound("Pool", "N * C", 2**31, "lower the profile's max")
        Traceback (most recent call last):
        ...
        pyplugins.errors.ShapeError: plugin 'Pool': N * C is 2147483648 at the profile's max,
        beyond the AOT kernel's int32 argument (at most 2147483647); lower the profile's max.
    """
    if int(value) > INT32_MAX:
        msg = (f"plugin {plugin!r}: {what} is {int(value)} at the profile's max, beyond the AOT "
               f"kernel's int32 argument (at most {INT32_MAX}); {fix}.")
        raise ShapeError(msg)


def entry_kernels(table: Sequence[Variant]) -> Dict[str, Kernel]:
    """Each row's AOT entry, by row name: its kernel ``name<{T}>`` as ``name_aot<{T}>``, in the
    same file with the same options and types (the ``.cu`` defines the entry beside the kernel).

    Example:
        >>> from pyplugins.ops.pool import VARIANTS
        >>> entry_kernels(VARIANTS)["pool2d_i8"]
        Kernel('pool.cu', 'pool2d_i8_aot<{T}>', options=(...), dtypes=('int8',))
    """
    out = {}
    for row in table:
        name, sep, rest = row.kernel.expression.partition("<")
        out[row.name] = Kernel(row.kernel.source, f"{name}_aot{sep}{rest}",
                               options=row.kernel.options, dtypes=row.kernel.dtypes)
    return out


def build_resident_blocks(row: Variant, ctype: str) -> Optional[int]:
    """The resident blocks of ``row``'s (JIT) kernel at its block on the GPU the build runs on,
    what ``plan`` caps the row's grid by; None without a usable GPU (it compiles the kernel)."""
    device = usable_device()
    if device is None:
        return None
    return int(resident_blocks(row.kernel.function(ctype, device), row.block, device=device))


def variant_grid(row: Variant, blocks: Value, ctype: str) -> Value:
    """``row.grid`` (:class:`~pyplugins.runtime.tactics.Variant`) as an expression, at least
    one block: ``blocks`` capped at ``row.waves`` waves of the resident blocks of the row's
    kernel on the build's GPU (:func:`build_resident_blocks`; the engine is built for that GPU),
    else, for rows without waves and builds without a usable GPU, at CUDA's grid limit (every
    variant kernel is grid-stride: any grid computes every output).

    Example:
        >>> from pyplugins.runtime.kernels import Kernel
        >>> row = Variant("k", Kernel("k.cu", "k<{T}>"), needs="-", fits=bool,
        ...               blocks=lambda f, b: f, args=lambda f: ())
        >>> variant_grid(row, 5000, "float"), variant_grid(row, 0, "float")
        (5000, 1)
    """
    cap = MAX_GRID[0]
    if row.waves is not None:
        resident = build_resident_blocks(row, ctype)
        if resident is not None:
            cap = row.waves * resident
    return at_least_one(shapes.minimum(blocks, cap))


@dataclass(frozen=True)
class AotTensor:
    """One tensor as ``aot_launch`` sees it.

    Attributes:
        type: its ``trt.DataType`` (the combination being built).
        format: its ``trt.TensorFormat``.
        dims: its dims, symbolic (:class:`pyplugins.runtime.shapes.Dim`): constant where the
            network fixes them, else expressions TensorRT evaluates at run time.
        shape: what the build knows: the dims, ``-1`` where they vary at run time.
        min, max: the optimization profile's bounds (equal to ``shape`` when it is static).
    """

    type: Any
    format: Any
    dims: Tuple[shapes.Dim, ...]
    shape: Tuple[int, ...]
    min: Tuple[int, ...]
    max: Tuple[int, ...]

    @classmethod
    def from_desc(cls, desc: Any, builder: Any) -> "AotTensor":
        """From a QDP ``TensorDesc`` of ``aot_impl`` (symbolic ``shape_expr`` and the concrete
        ``shape`` of the combination being built)."""
        shape = tuple(int(d) for d in desc.shape)
        dynamic = any(d < 0 for d in shape)
        lo = tuple(int(d) for d in desc.shape.min) if dynamic else shape
        hi = tuple(int(d) for d in desc.shape.max) if dynamic else shape
        return cls(desc.dtype, desc.format, tuple(shapes.dims(dims_of(desc), builder)), shape,
                   lo, hi)


def _entries(value: Any, what: str) -> Tuple[Value, ...]:
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(items) <= 3:
        msg = f"AotLaunch {what} has {len(items)} entries; give 1 to 3 (x, y, z)"
        raise PluginDefinitionError(msg)
    return items


def _check_value(value: Any, what: str) -> None:
    if isinstance(value, shapes.Dim):
        return
    if isinstance(value, (float, np.floating)):
        msg = (f"AotLaunch {what} is the float {value!r}; QDP passes 32-bit ints only: pass "
               "aot.float32_bits(value) and read it with __int_as_float in the kernel")
        raise PluginDefinitionError(msg)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        msg = f"AotLaunch {what} is {value!r}; give an int or a symbolic dim (shapes.Dim)"
        raise PluginDefinitionError(msg)
    if not -2**31 <= int(value) <= INT32_MAX:
        msg = f"AotLaunch {what} is {int(value)}, which a 32-bit int cannot hold"
        raise PluginDefinitionError(msg)


@dataclass(frozen=True)
class AotLaunch:
    """What ``aot_launch`` returns: a kernel and its launch, as expressions of the shapes.

    Attributes:
        kernel: the :class:`~pyplugins.runtime.kernels.Kernel` whose expression instantiates
            the entry kernel (compiled to PTX for ``ctype``).
        ctype: the CUDA C++ type ``{T}`` stands for (``"float"``, ``"__half"``).
        grid, block: 1 to 3 ints or dims (x, y, z; the rest are 1).
        args: the extra arguments, in the kernel's order after the input pointers.
        shared_mem: dynamic shared memory in bytes.

    Raises:
        PluginDefinitionError: a kernel that is not a ``pp.Kernel``, a float or out-of-range
            int, or a grid/block of no or more than 3 entries.
    """

    kernel: Kernel
    ctype: str
    grid: Any
    block: Any
    args: Tuple[Value, ...] = ()
    shared_mem: Value = 0

    def __post_init__(self) -> None:
        if not isinstance(self.kernel, Kernel):
            msg = f"AotLaunch kernel must be a pp.Kernel (got {self.kernel!r})"
            raise PluginDefinitionError(msg)
        if not isinstance(self.ctype, str) or not self.ctype:
            msg = (f"AotLaunch ctype must be a CUDA C++ type name such as 'float' "
                   f"(got {self.ctype!r})")
            raise PluginDefinitionError(msg)
        object.__setattr__(self, "args", tuple(self.args))
        for i, value in enumerate(self.args):
            _check_value(value, f"argument {i}")
        for what in ("grid", "block"):
            for i, value in enumerate(_entries(getattr(self, what), what)):
                _check_value(value, f"{what}[{i}]")
        _check_value(self.shared_mem, "shared_mem")

    def dims3(self, what: str) -> Tuple[Value, Value, Value]:
        """``grid`` or ``block`` as three entries (missing ones are 1)."""
        items = _entries(getattr(self, what), what)
        return tuple(items) + (1,) * (3 - len(items))  # type: ignore[return-value]
