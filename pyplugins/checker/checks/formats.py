"""The format checks: no usable format combination (``format``, ``output_mismatch``), and
accepted combinations whose ``enqueue`` does not implement their layout (``format_unimplemented``).

TensorRT's builder asks ``supports_format_combination`` for every candidate
(:mod:`pyplugins.checker.format_search`); in a strongly typed network only the accepted
combinations that keep the network's types can be built. When none does, the build fails and
:func:`unusable_violations` says why. Which of several the builder runs is decided by timing, so
on a GPU the runtime ``enqueue`` runs once per accepted combination
(:func:`pyplugins.checker.runtime_enqueue.format_runs`, inputs laid out as
:mod:`pyplugins.emulator.layouts` does) and :func:`format_mismatch` compares each with the first.

Example:
    >>> from pyplugins.emulator.enums import DataType, TensorFormat
    >>> half = [(DataType.HALF, TensorFormat.LINEAR)] * 2
    >>> [v.check for v in unusable_violations([half], [], [DataType.FLOAT] * 2, 1)]
    ['format']
    >>> combo_label([(DataType.HALF, TensorFormat.CHW4)] * 2)
    '[HALF/CHW4, HALF/CHW4]'
    >>> one = [np.ones(3, np.float16)]
    >>> format_mismatch("[HALF/CHW4]", "[HALF/LINEAR]", one, one) is None
    True
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from pyplugins.checker.checks import Violation
from pyplugins.testing import assert_close

__all__ = ["combo_label", "format_mismatch", "runs_note", "unusable_violations"]


def combo_label(combo: Sequence[Any]) -> str:
    """``[FLOAT/LINEAR, FLOAT/CHW4]``: one (type, format) per tensor, inputs then outputs."""
    return "[" + ", ".join(f"{t.name}/{f.name}" for t, f in combo) + "]"


def format_mismatch(label: str, baseline_label: str, baseline: Sequence[np.ndarray],
                    got: Sequence[np.ndarray]) -> Optional[Violation]:
    """A ``format_unimplemented`` violation when the outputs of the run on combination ``label``
    (read back to LINEAR) differ from the run on ``baseline_label`` beyond the per-dtype
    tolerances of :mod:`pyplugins.testing` (the combinations have the same types)."""
    try:
        for i, (want, have) in enumerate(zip(baseline, got)):
            assert_close(have, want, have.dtype, what=f"output {i}")
    except (AssertionError, KeyError, ValueError) as err:
        msg = (f"supports_format_combination accepts {label}, but enqueue run on it (inputs laid "
               f"out in those formats, the outputs read back from theirs) differs from the run "
               f"on {baseline_label}: {err}. TensorRT's builder picks among the accepted "
               f"combinations by timing, so it may run this one: lay the data out as "
               f"desc.format says in enqueue (see docs/formats.md), or accept only the formats "
               f"enqueue implements.")
        return Violation("format_unimplemented", msg, "supports_format_combination")
    return None


def runs_note(ran: Sequence[str], not_run: Sequence[str]) -> str:
    """The report's note on the accepted combinations: which ran, which did not and why."""
    parts = []
    if ran:
        parts.append(f"enqueue ran on {len(ran)} accepted format combination(s): {', '.join(ran)}")
    if not_run:
        parts.append(f"not run: {'; '.join(not_run)}")
    return "; ".join(parts)


def unusable_violations(combos: Sequence[Any], tried: Sequence[Any], want: Sequence[Any],
                        n_in: int) -> List[Violation]:
    """Why no accepted combination keeps the network's types (the strongly typed build fails).

    Args:
        combos: the accepted combinations (one (type, format) per tensor, inputs then outputs).
        tried: every ``supports_format_combination`` call, ``(pos, prefix, candidate, answer)``.
        want: the network's types, inputs then outputs.
        n_in: how many of them are inputs.

    Returns:
        An ``output_mismatch`` violation when the inputs' types are accepted but an output's
        differs from ``get_output_datatype``'s, else a ``format`` violation.
    """
    violations: List[Violation] = []
    names = [t.name for t in want]
    same_inputs = [c for c in combos if [t for t, _ in c[:n_in]] == list(want[:n_in])]
    if same_inputs:
        combo = same_inputs[0]
        for j, (t, _) in enumerate(combo[n_in:]):
            if t is not want[n_in + j]:
                msg = (f"supports_format_combination accepts output {j} as {t.name} for "
                       f"inputs {names[:n_in]}, but get_output_datatype({j}, ...) "
                       f"returned {want[n_in + j].name}: in a strongly typed network the "
                       f"output keeps get_output_datatype's type, which the plugin refuses, "
                       f"so the build fails. Make both agree.")
                violations.append(Violation("output_mismatch", msg,
                                            "supports_format_combination"))
                break
    else:
        accepted = ", ".join(str([f"{t.name}/{f.name}" for t, f in c]) for c in combos[:4])
        refused = [(pos, cand) for pos, prefix, cand, ok in tried
                   if not ok and cand[0] is want[pos]
                   and [t for t, _ in prefix] == list(want[:pos])][:1]
        where = (f"; it refused in_out[{refused[0][0]}] = {refused[0][1][0].name}/"
                 f"{refused[0][1][1].name}" if refused else "")
        msg = (f"no format combination keeps the network's types {names} (inputs as "
               f"declared, outputs from get_output_datatype): {len(tried)} "
               f"supports_format_combination calls{where}; accepted combinations: "
               f"{accepted or 'none'}. The strongly typed build fails.")
        nones = sum(1 for t in tried if t[3] is None)
        if nones:
            msg += (f" {nones} of the {len(tried)} calls returned None (a path that ends "
                    f"without returning, or a bare `return`), which TensorRT's binding reads as "
                    f"False: return True or False on every path.")
        violations.append(Violation("format", msg, "supports_format_combination"))
    return violations
