"""The builder's format search: which (type, format) combinations a plugin accepts, and the pick.

TensorRT asks ``supports_format_combination(pos, in_out, num_inputs)`` tensor by tensor, depth
first: ``in_out[:pos]`` hold what it already chose, ``in_out[pos]`` the candidate, and the entries
after ``pos`` are junk (§2.1), here :class:`~pyplugins.checker.checks.beyond_pos.PoisonedDesc` objects that
report a read. Each tensor is offered its declared type first, then :data:`TYPE_TABLE`, in its
declared format first, then :data:`FORMAT_TABLE` (rank >= 3) or LINEAR. In a strongly typed
network only the combinations that keep the declared input types and ``get_output_datatype``'s
output types can be used (:func:`choose_formats`); the first of those is built, and all are timed.

Example:
    >>> from pyplugins.emulator import trampoline
    >>> from pyplugins.emulator.bases import IPluginV2DynamicExt
    >>> from pyplugins.emulator.specs import TensorSpec
    >>> from pyplugins.emulator.tensors import PluginTensors
    >>> class Copy(IPluginV2DynamicExt):
    ...     def supports_format_combination(self, pos, in_out, num_inputs):
    ...         return in_out[pos].format == TensorFormat.LINEAR and (
    ...             pos == 0 or in_out[pos].type == in_out[0].type)
    >>> tensors = PluginTensors([TensorSpec.parse("4:float16")], {"net": [(4,)]})
    >>> combos, tried, found = search_formats(Copy(), tensors, [DataType.HALF, DataType.HALF])
    >>> [[t.name for t, _ in c] for c in combos][:3], len(tried), found
    ([['HALF', 'HALF'], ['FLOAT', 'FLOAT'], ['INT8', 'INT8']], 30, [])
    >>> timed, found = choose_formats(combos, tried, [DataType.HALF, DataType.HALF], 1)
    >>> [[t.name for t, _ in c] for c in timed], found
    ([['HALF', 'HALF']], [])
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from pyplugins.emulator import trampoline
from pyplugins.emulator.bases import IPluginV2DynamicExt
from pyplugins.checker.checks import Violation
from pyplugins.checker.checks.beyond_pos import PoisonedDesc, PoisonProbe
from pyplugins.checker.checks.formats import unusable_violations
from pyplugins.emulator.descs import DynamicPluginTensorDesc
from pyplugins.emulator.enums import DataType, TensorFormat
from pyplugins.checker.checks.pybind import v2_types
from pyplugins.emulator.tensors import Combo, PluginTensors

__all__ = ["FORMAT_TABLE", "MAX_CALLS", "TYPE_TABLE", "Tried", "choose_formats", "search_formats"]

#: Types offered to supports_format_combination after the declared one (those NumPy can hold).
TYPE_TABLE = (DataType.FLOAT, DataType.HALF, DataType.INT8, DataType.INT32, DataType.INT64,
              DataType.BOOL, DataType.UINT8)
#: Formats offered to tensors of rank >= 3 after the declared one (rank < 3: LINEAR only).
FORMAT_TABLE = (TensorFormat.LINEAR, TensorFormat.CHW4, TensorFormat.HWC8, TensorFormat.HWC)

#: The emulator's own bound on supports_format_combination calls in one search, so that a plugin
#: accepting every prefix but few whole combinations cannot make the search run for hours.
MAX_CALLS = 20000

#: One ``supports_format_combination`` call: ``(pos, the prefix chosen before it, candidate,
#: answer)``; the answer is None where the plugin returned None (which the binding reads as False).
Tried = Tuple[int, Tuple[Tuple[DataType, TensorFormat], ...], Tuple[DataType, TensorFormat],
              Optional[bool]]


def search_formats(plugin: object, tensors: PluginTensors, declared: Sequence[DataType], *,
                   ask: Optional[Callable[..., bool]] = None, limit: Optional[int] = None,
                   dynamic: bool = False) -> Tuple[List[Combo], List[Tried], List[Violation]]:
    """Ask ``plugin`` about every candidate combination, as the builder does.

    Args:
        plugin: the builder's plugin object (P2).
        tensors: the plugin's tensors (their network shapes and declared formats).
        declared: the declared types, inputs then outputs (get_output_datatype's for outputs).
        ask: the trampoline call (default: V2's ``supports_format_combination``).
        limit: the most calls (default ``IPluginV2DynamicExt.FORMAT_COMBINATION_LIMIT``).
        dynamic: offer ``DynamicPluginTensorDesc`` entries (V3) instead of ``PluginTensorDesc``.

    Returns:
        The accepted combinations in the order found (at most
        ``IPluginV2DynamicExt.FORMAT_COMBINATION_LIMIT``: TensorRT stops after 100 combinations
        *found*, NvInferRuntime.h:441-476), every call made (at most :data:`MAX_CALLS`), and the
        reads of ``in_out`` entries
        after ``pos`` (``in_out_beyond_pos`` violations).
    """
    n_in, n = tensors.n_in, len(declared)
    candidates = []
    for k in range(n):
        fmt0 = tensors.specs[k].format if k < n_in else TensorFormat.LINEAR
        formats = FORMAT_TABLE if len(tensors.net_dims(k)) >= 3 else (TensorFormat.LINEAR,)
        types = [declared[k]] + [t for t in TYPE_TABLE if t != declared[k]]
        if not dynamic:  # V2 plugins never get BOOL or UINT8 tensors; V3 plugins may
            types = v2_types(types)
        fmts = [fmt0] + [f for f in formats if f is not fmt0]
        candidates.append([(t, f) for t in types for f in fmts])
    probe, combos, tried = PoisonProbe(), [], []
    nones: List[bool] = []  # per call: the plugin returned None

    def note_none(event: Any) -> None:
        if event.method == "supports_format_combination":
            nones.append(bool(event.extra.get("returned_none")))

    ask = trampoline.supports_format_combination if ask is None else ask
    limit = IPluginV2DynamicExt.FORMAT_COMBINATION_LIMIT if limit is None else limit

    def desc(k: int, cand: Tuple[DataType, TensorFormat]) -> Any:
        plain = tensors.desc(k, cand, tensors.net_dims(k))
        if not dynamic:
            return plain
        return DynamicPluginTensorDesc(plain, *(tensors.profile(k, p) for p in ("min", "opt", "max")))

    def search(pos: int, prefix: Combo) -> None:
        for cand in candidates[pos]:
            if len(combos) >= limit or len(tried) >= MAX_CALLS:
                return
            in_out = ([desc(k, prefix[k]) for k in range(pos)] + [desc(pos, cand)]
                      + [PoisonedDesc(j, probe) for j in range(pos + 1, n)])
            probe.arm(pos)
            nones.clear()
            ok = ask(plugin, pos, in_out, n_in)
            probe.disarm()
            tried.append((pos, tuple(prefix), cand, None if not ok and any(nones) else ok))
            if ok and pos == n - 1:
                combos.append(prefix + [cand])
            elif ok:
                search(pos + 1, prefix + [cand])

    trampoline.listeners.insert(0, probe.disarm)  # before any listener reads in_out
    trampoline.listeners.append(note_none)
    try:
        if n:
            search(0, [])
        else:
            combos.append([])
    finally:
        trampoline.listeners.remove(probe.disarm)
        trampoline.listeners.remove(note_none)
    return combos, tried, probe.violations()


def choose_formats(combos: Sequence[Combo], tried: Sequence[Tried], want: Sequence[DataType],
                   n_in: int) -> Tuple[Optional[List[Combo]], List[Violation]]:
    """The accepted combinations that keep the network's types (first = chosen), or None.

    Args:
        combos: the accepted combinations, as :func:`search_formats` found them.
        tried: every call it made.
        want: the network's types, inputs then outputs.
        n_in: how many of them are inputs.

    Returns:
        The usable combinations (None when there are none: the strongly typed build fails) and,
        when there are none, why: an ``output_mismatch`` or a ``format`` violation.
    """
    typed = [c for c in combos if [t for t, _ in c] == list(want)]
    if typed:
        return typed, []
    return None, unusable_violations(combos, tried, want, n_in)
