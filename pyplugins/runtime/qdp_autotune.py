"""A ``pp.Plugin``'s format rules as QDP autotune combinations: every (type, format) tuple its
``supports_format_combination`` accepts, found the way TensorRT's builder asks.

QDP's ``autotune`` returns ``AutoTuneCombination``s instead of answering position by position
(protocol §8.5). :func:`combinations` runs the TensorRT search over the plugin's own
``supports_format_combination`` (its ``dtypes``/``same_as`` rules or its own method): position
by position, inputs first, every ``trt.DataType`` and ``trt.TensorFormat`` as candidates, with
``in_out`` entries after ``pos`` left as junk, as the builder does (§2.1); the descriptors carry
the dims autotune knows (``-1`` for runtime dims). The search stops at TensorRT's limit of 100
combinations. Each accepted tuple becomes one ``AutoTuneCombination`` of explicit names, with
the class's tactic ids (:mod:`pyplugins.runtime.tactics`).

Example:
    >>> import pyplugins.trt as trt
    >>> from pyplugins.ops.seq_repeat import SeqRepeat
    >>> found = combinations(SeqRepeat(factor=2), [(2, 3), (2, 6)], 1)
    >>> [(tuple(t.name for t in types), formats[0].name) for types, formats in found]
    ... # doctest: +NORMALIZE_WHITESPACE
    [(('FLOAT', 'FLOAT'), 'LINEAR'), (('HALF', 'HALF'), 'LINEAR'), (('INT8', 'INT8'), 'LINEAR'),
     (('INT32', 'INT32'), 'LINEAR')]
    >>> spec_strings(found[1])
    ('HALF,HALF', 'LINEAR,LINEAR')
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import pyplugins.trt as trt

__all__ = ["LIMIT", "combinations", "spec_strings"]

#: TensorRT's default ``format_combination_limit`` (protocol §7): the most combinations kept.
LIMIT = 100

Combination = Tuple[Tuple[Any, ...], Tuple[Any, ...]]


def _desc(dims: Sequence[int], dtype: Any, fmt: Any) -> Any:
    desc = trt.PluginTensorDesc()  # TensorRT's has only the no-argument constructor (§12)
    desc.dims = trt.Dims(tuple(int(d) for d in dims))
    desc.type = dtype
    desc.format = fmt
    desc.scale = -1.0
    return desc


def combinations(plugin: Any, dims: Sequence[Sequence[int]], num_inputs: int,
                 limit: int = LIMIT) -> List[Combination]:
    """Every ``(types, formats)`` the plugin's ``supports_format_combination`` accepts for
    tensors of these ``dims`` (inputs then outputs), in search order, at most ``limit``.

    Exceptions of ``supports_format_combination`` propagate (they name the plugin).
    """
    types = list(trt.DataType.__members__.values())
    formats = list(trt.TensorFormat.__members__.values())
    candidates = [[_desc(d, t, f) for t in types for f in formats] for d in dims]
    n = len(dims)
    found: List[Combination] = []

    def search(prefix: List[Any]) -> None:
        pos = len(prefix)
        if pos == n:
            found.append((tuple(d.type for d in prefix), tuple(d.format for d in prefix)))
            return
        for cand in candidates[pos]:
            if len(found) >= limit:
                return
            in_out = prefix + [cand] * (n - pos)  # after pos: junk, as TensorRT's builder
            if plugin.supports_format_combination(pos, in_out, num_inputs):
                search(prefix + [cand])

    search([])
    return found


def spec_strings(combination: Combination) -> Tuple[str, str]:
    """The ``AutoTuneCombination(types, formats)`` strings of one combination (member names)."""
    types, formats = combination
    return ",".join(t.name for t in types), ",".join(f.name for f in formats)
