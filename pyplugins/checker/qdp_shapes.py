"""The shape checks of a QDP plugin: a register function that branches on symbolic dimensions, and
descriptions that change between TensorRT's two passes over it.

TensorRT runs a QDP plugin's register function twice: on fake shapes of the inputs' ranks for the
output types (``get_output_data_types``), then on the inputs' symbolic shapes for the output
shapes (``get_output_shapes``), and evaluates those expressions for every shape the profile
allows. Python control flow cannot follow a symbolic dimension: before 10.16 every expression
object is true (constants too), so ``if inp.shape_expr[0] == 1:`` always takes its branch, and
from 10.16 it raises (protocol §8.1). :class:`BranchWatch` records every truth test of a fake or
non-constant expression while the register function runs, with the plugin's own file and line
(``shape_branch``); a test of a constant (a static dimension) is no defect from 10.16 and is
not reported.

``impl_output_desc``: the output types of the shape pass must be those of the type pass (the
engine allocates by the latter; ``autotune``, ``aot_impl`` and ``impl`` see the former).

Example:
    >>> with BranchWatch() as watch:
    ...     pass
    >>> watch.records, branch_violations(watch.records, "get_output_shapes")
    ([], [])
"""

from __future__ import annotations

import os
import traceback
from typing import Any, List, Optional, Sequence, Tuple

from pyplugins.checker.checks import Violation
from pyplugins.emulator.plugin import sym_exprs

__all__ = ["BranchWatch", "branch_violations", "output_descs_types", "pass_type_violations"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class BranchWatch:
    """Inside the block, record each truth test of a fake or non-constant symbolic expression.

    Attributes:
        records: ``(where, kind)`` per test: ``"file.py:12 in fn"`` (the first frame outside
            pyplugins) and ``"fake"`` or ``"symbolic"``.
    """

    def __init__(self) -> None:
        self.records: List[Tuple[str, str]] = []

    def __enter__(self) -> "BranchWatch":
        sym_exprs.add_truth_observer(self._seen)
        return self

    def __exit__(self, *exc: Any) -> None:
        sym_exprs.remove_truth_observer(self._seen)

    def _seen(self, expr: Any) -> None:
        where = "?"
        for frame in reversed(traceback.extract_stack()[:-1]):
            if not os.path.abspath(frame.filename).startswith(_PACKAGE):
                where = f"{os.path.basename(frame.filename)}:{frame.lineno} in {frame.name}"
                break
        kind = "fake" if getattr(expr, "_is_dummy", False) else "symbolic"
        if (where, kind) not in self.records:
            self.records.append((where, kind))


def branch_violations(records: Sequence[Tuple[str, str]], method: str) -> List[Violation]:
    """One ``shape_branch`` violation for the truth tests a :class:`BranchWatch` saw in
    ``method`` (``get_output_data_types``: fake shapes; ``get_output_shapes``: symbolic)."""
    if not records:
        return []
    places = ", ".join(f"{where} ({kind})" for where, kind in records)
    msg = (f"the register function tests a symbolic dimension for truth ({places}) while "
           f"TensorRT runs it in {method}: Python cannot branch on a dimension that is only "
           f"known per inference. Before TensorRT 10.16 every expression is true, so the "
           f"branch is always taken; from 10.16 it raises. Build the result with expressions "
           f"instead (trtp.max/min, arithmetic), or test `e.is_constant` first.")
    return [Violation("shape_branch", msg, method)]


def pass_type_violations(type_pass: Sequence[Any], shape_pass: Sequence[Any],
                         plugin_id: str) -> List[Violation]:
    """``impl_output_desc`` when the register function's output types differ between the type
    pass and the shape pass.

    Example:
        >>> from pyplugins.emulator.enums import DataType
        >>> [v.check for v in pass_type_violations([DataType.FLOAT], [DataType.HALF], "ns::p")]
        ['impl_output_desc']
    """
    if list(type_pass) == list(shape_pass):
        return []
    msg = (f"QDP plugin '{plugin_id}': the register function gives output types "
           f"{[getattr(t, 'name', t) for t in type_pass]} in get_output_data_types but "
           f"{[getattr(t, 'name', t) for t in shape_pass]} in get_output_shapes: TensorRT "
           f"allocates by the first, while autotune, aot_impl and impl read the second. The "
           f"output dtype must not depend on the shapes.")
    return [Violation("impl_output_desc", msg, "get_output_shapes")]


def output_descs_types(plugin: Any) -> Optional[List[Any]]:
    """The output types of the descriptors the last ``get_output_shapes`` built on ``plugin``
    (QDP keeps them as ``output_descs``), or None."""
    descs: Optional[Sequence[Any]] = getattr(plugin, "output_descs", None)
    if descs is None:
        return None
    return [getattr(d, "dtype", None) for d in descs]
