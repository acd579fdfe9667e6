"""The builder's format and tactic choice for a QDP plugin: autotune's combinations, asked as
TensorRT asks them, and the ones a strongly typed network can use.

A QDP plugin answers ``get_supported_format_combinations(in_out, num_inputs)`` with every
combination its ``autotune`` expands to, flattened (the default without ``autotune``: the input
types, the registered output types, LINEAR); the binding asks twice per query and keeps the
first answer (:func:`pyplugins.emulator.trampoline_quick.get_supported_format_combinations`).
The network is strongly typed, so only the combinations with the network's input types and the
registered output types can be built (:func:`usable`); they are tried LINEAR first (the
emulator runs ``enqueue`` on LINEAR tensors). Each is configured, asked for its tactics, and
each (combination, tactic) is a build candidate.

Example:
    >>> F, H, L, C = DataType.FLOAT, DataType.HALF, TensorFormat.LINEAR, TensorFormat.HWC
    >>> kept = usable([[(F, C), (F, C)], [(H, L), (H, L)], [(F, L), (F, L)]], [F, F])
    >>> [[(t.name, f.name) for t, f in combo] for combo in kept]
    [[('FLOAT', 'LINEAR'), ('FLOAT', 'LINEAR')], [('FLOAT', 'HWC'), ('FLOAT', 'HWC')]]
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from pyplugins.checker.checks import Violation
from pyplugins.checker.checks.qdp import label
from pyplugins.emulator import trampoline_quick as tq
from pyplugins.emulator.descs import DynamicPluginTensorDesc
from pyplugins.emulator.enums import DataType, TensorFormat
from pyplugins.emulator.tensors import Combo, PluginTensors

__all__ = ["query", "registered_types", "unusable_violation", "usable"]


def query(build: Any, tensors: PluginTensors, want: Sequence[DataType]) -> Optional[List[Combo]]:
    """One format query: ``in_out`` holds the network's types in LINEAR, each tensor's network
    shape and its profile [infer: the descriptors TensorRT passes are not documented; QDP reads
    only their shapes, formats and scales]; the combinations of the answer, or None (-1)."""
    in_out = []
    for k, t in enumerate(want):
        desc = tensors.desc(k, (t, TensorFormat.LINEAR), tensors.net_dims(k))
        in_out.append(DynamicPluginTensorDesc(desc, *(tensors.profile(k, p)
                                                      for p in ("min", "opt", "max"))))
    found = tq.get_supported_format_combinations(build, in_out, tensors.n_in)
    if found is None:
        return None
    return [[(d.type, d.format) for d in combo] for combo in found]


def usable(combos: Sequence[Combo], want: Sequence[DataType]) -> List[Combo]:
    """The combinations with the network's types (inputs, then the registered outputs), LINEAR
    ones first, each once."""
    typed: List[Combo] = []
    for combo in combos:
        if [t for t, _ in combo] == list(want) and list(combo) not in typed:
            typed.append(list(combo))
    return sorted(typed, key=lambda c: any(f != TensorFormat.LINEAR for _, f in c))


def unusable_violation(combos: Sequence[Combo], want: Sequence[DataType], n_in: int,
                       plugin_id: str) -> Violation:
    """The ``format`` violation of a build in which no combination has the network's types.

    Example:
        >>> F, H, L = DataType.FLOAT, DataType.HALF, TensorFormat.LINEAR
        >>> unusable_violation([[(H, L), (H, L)]], [F, F], 1, "ns::p").check
        'format'
    """
    offered = "; ".join(label(c, n_in) for c in combos[:6]) or "none"
    msg = (f"no combination QDP plugin '{plugin_id}' offers has the network's types (inputs "
           f"{[t.name for t in want[:n_in]]}, registered outputs "
           f"{[t.name for t in want[n_in:]]}), so the strongly typed build fails. Offered: "
           f"{offered}. Add those types to autotune's AutoTuneCombination.")
    return Violation("format", msg, "get_supported_format_combinations")


def registered_types(plugin: Any, ranks: Sequence[int]) -> Any:
    """``types -> output types`` of the register function, asked on a throwaway clone of
    ``plugin`` (None where it raises): what the output types are for other input types."""
    def ask(types: List[DataType]) -> Optional[List[DataType]]:
        try:
            return list(plugin.clone().get_output_data_types(list(types), list(ranks)))
        except Exception:  # noqa: BLE001 - the register function refuses those types
            return None
    return ask
