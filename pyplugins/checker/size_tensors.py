"""Data-dependent output shapes of V3 plugins: ``declare_size_tensor``, size-tensor outputs, real extents.

A V3 plugin whose output extent depends on the input *values* (``non_zero``) declares a size
tensor in ``get_output_shapes``: ``expr_builder.declare_size_tensor(k, opt, upper)`` makes
output ``k`` a 0-D INT32/INT64 tensor that ``enqueue`` writes, and returns an expression to use in
other outputs' shapes (§6). TensorRT allocates those outputs at ``upper`` and reads the real
extent from the size tensor after ``enqueue``; the emulator does the same
(:meth:`IDimensionExpr._evaluate` gives ``upper`` until the size is known) and checks the
declarations and the value written.

Example:
    >>> from pyplugins.emulator.dims import DimsExprs
    >>> eb = SizeTensorBuilder()
    >>> x = eb._input(0, (-1, 4))
    >>> upper = eb.operation(DimensionOperation.PROD, x[0], x[1])
    >>> n = eb.declare_size_tensor(1, eb.constant(2), upper)
    >>> n.is_size_tensor(), sorted(eb.declared)
    (True, [1])
    >>> out = DimsExprs([n, eb.constant(2)])
    >>> evaluate(out, {0: (3, 4)}), evaluate(out, {0: (3, 4), ("size", 1): 5})
    ((12, 2), (5, 2))
    >>> size_outputs_of([out, DimsExprs(0)])
    {0: [1]}
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

from pyplugins.checker.checks import Violation
from pyplugins.emulator.dims import DimsExprs, IDimensionExpr, IExprBuilder
from pyplugins.emulator.enums import DataType, DimensionOperation

__all__ = ["SizeTensorBuilder", "declaration_violations", "evaluate", "size_outputs_of",
           "value_violations"]

__doctest_globals__ = {"DimensionOperation": DimensionOperation}


def _sizes_in(expr: Any) -> List[int]:
    """The size-tensor outputs an expression depends on."""
    if not isinstance(expr, IDimensionExpr):
        return []
    if expr._kind == "size":
        return [expr._value]
    if expr._kind == "op":
        return _sizes_in(expr._a) + _sizes_in(expr._b)
    return []


class SizeTensorBuilder(IExprBuilder):
    """The ``IExprBuilder`` a V3 plugin's ``get_output_shapes`` gets: ``declare_size_tensor`` works.

    Attributes:
        declared: output index -> the size-tensor expression declared for it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.declared: Dict[int, IDimensionExpr] = {}

    def declare_size_tensor(self, output_index: int, opt: IDimensionExpr,
                            upper: IDimensionExpr) -> IDimensionExpr:
        """Make output ``output_index`` a size tensor; the result stands for its value."""
        self._check()
        if isinstance(output_index, bool) or not isinstance(output_index, int):
            msg = f"declare_size_tensor(): output_index must be an int (got {output_index!r})"
            raise TypeError(msg)
        for name, arg in (("opt", opt), ("upper", upper)):
            if not isinstance(arg, IDimensionExpr):
                msg = (f"declare_size_tensor(): {name} must be an IDimensionExpr (got {arg!r}); "
                       "wrap ints with expr_builder.constant()")
                raise TypeError(msg)
            arg._check_alive("declare_size_tensor")
        if _sizes_in(opt):
            msg = ("declare_size_tensor(): opt must not depend on a size tensor "
                   "(NvInferRuntime.h: 'opt' is a build-time estimate of the value)")
            raise ValueError(msg)
        expr = IDimensionExpr._make(self, "size", value=output_index, a=opt, b=upper)
        self.declared[output_index] = expr
        return expr


def evaluate(exprs: DimsExprs, shapes: Mapping[Any, Any]) -> Tuple[int, ...]:
    """Evaluate one output's expressions; size tensors give their value in ``shapes`` when
    present (``("size", k)``), else their upper bound."""
    return tuple(e._evaluate(shapes) for e in exprs)


def size_outputs_of(out_exprs: Sequence[DimsExprs]) -> Dict[int, List[int]]:
    """Output index -> the size-tensor outputs its shape depends on (data-dependent outputs)."""
    found: Dict[int, List[int]] = {}
    for i, exprs in enumerate(out_exprs):
        sizes = sorted({k for e in exprs for k in _sizes_in(e)})
        if sizes:
            found[i] = sizes
    return found


def declaration_violations(declared: Mapping[int, IDimensionExpr],
                           out_exprs: Sequence[DimsExprs],
                           out_types: Sequence[DataType]) -> List[Violation]:
    """What is wrong with the size tensors a plugin declared: an index that is not an output,
    a size-tensor output that is not 0-D, or one that is neither INT32 nor INT64 (§6)."""
    found = []
    for k in sorted(declared):
        if not 0 <= k < len(out_exprs):
            msg = (f"declare_size_tensor({k}, ...) names output {k}, but the plugin has "
                   f"{len(out_exprs)} output(s)")
            found.append(Violation("size_tensor", msg, "get_output_shapes"))
            continue
        if len(out_exprs[k]) != 0:
            msg = (f"output {k} is declared a size tensor but get_output_shapes gave it "
                   f"{len(out_exprs[k])} dimension(s): a size tensor is 0-D (trt.DimsExprs(0))")
            found.append(Violation("size_tensor", msg, "get_output_shapes"))
        if out_types[k] not in (DataType.INT32, DataType.INT64):
            msg = (f"output {k} is declared a size tensor but get_output_data_types gave it "
                   f"{out_types[k].name}: a size tensor is INT32 or INT64")
            found.append(Violation("size_tensor", msg, "get_output_data_types"))
    return found


def value_violations(values: Mapping[int, int], uppers: Mapping[int, int]) -> List[Violation]:
    """The size tensors ``enqueue`` wrote, checked against their declared upper bounds."""
    found = []
    for k, value in sorted(values.items()):
        upper = uppers[k]
        if not 0 <= value <= upper:
            msg = (f"enqueue wrote {value} into size tensor output {k}, outside [0, {upper}] "
                   f"(the upper bound declare_size_tensor gave at these input shapes): TensorRT "
                   f"allocated the data-dependent outputs for at most {upper} and would read "
                   f"past them")
            found.append(Violation("size_tensor", msg, "enqueue"))
    return found
