"""The checks only IPluginV3 plugins need (tactics, attach_to_context, fields, runtime object state).

Each returns :class:`~pyplugins.checker.checks.Violation` objects whose ``check`` is one of the
V3 names in :data:`pyplugins.checker.checks.CHECKS`. :class:`V3Recorder` watches the trampoline
(:data:`pyplugins.emulator.trampoline.listeners`) for the per-object rules: ``enqueue`` must reach
an object that received ``set_tactic`` and ``on_shape_change`` itself (the binding sizes
``enqueue``'s lists from the counts ``on_shape_change`` cached on that object, §2.5), and
``attach_to_context`` must return a new, independent plugin (§2.4).

Example:
    >>> [v.check for v in tactic_violations([1, 2, 2, 0])]
    ['tactics_invalid', 'tactics_invalid']
    >>> fields_differ([PluginField("a", np.int32([1]), PluginFieldType.INT32)],
    ...               [PluginField("a", np.int32([2]), PluginFieldType.INT32)])
    "field 'a' holds [2] instead of [1]"
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins.checker.checks import Violation
from pyplugins.checker.checks.clones import clone_violations
from pyplugins.checker.checks.recorder import Recorder
from pyplugins.emulator.enums import PluginFieldType
from pyplugins.emulator.plugin_field import PluginField
from pyplugins.testing import TOLERANCES

__all__ = ["V3Recorder", "alias_violations", "fields_differ", "fields_violations",
           "rebuild_violations", "same_arrays", "tactic_output_violations", "tactic_violations"]

__doctest_globals__ = {"np": np, "PluginField": PluginField, "PluginFieldType": PluginFieldType}


def tactic_violations(tactics: Sequence[int]) -> List[Violation]:
    """``get_valid_tactics`` must give unique, non-zero tactics (0 is TensorRT's default tactic;
    NvInferRuntime.h, §2.4)."""
    found = []
    if 0 in tactics:
        msg = (f"get_valid_tactics() returned {list(tactics)}, which contains 0: 0 is the "
               f"default tactic TensorRT passes when a plugin offers none; number custom tactics "
               f"from 1")
        found.append(Violation("tactics_invalid", msg, "get_valid_tactics"))
    repeated = sorted({t for t in tactics if list(tactics).count(t) > 1})
    if repeated:
        msg = (f"get_valid_tactics() returned {list(tactics)}, which repeats {repeated}: "
               f"tactics must be unique, or TensorRT times one twice and cannot tell them apart")
        found.append(Violation("tactics_invalid", msg, "get_valid_tactics"))
    return found


def same_arrays(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape and values (NaN equal to NaN)."""
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal within pyplugins.testing's tolerance for the dtype (exact where it has none)."""
    tol = TOLERANCES.get(a.dtype)
    if a.shape != b.shape or tol is None or a.dtype.kind != "f":
        return same_arrays(a, b)
    return bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol.rtol,
                            atol=tol.atol, equal_nan=True))


def tactic_output_violations(chosen: Sequence[np.ndarray], other: Sequence[np.ndarray],
                             chosen_tactic: int, tactic: int) -> List[Violation]:
    """Two tactics of one format combination must compute the same outputs (GPU)."""
    for j, (a, b) in enumerate(zip(chosen, other)):
        if not _close(a, b):
            msg = (f"output {j} with tactic {tactic} differs from output {j} with the chosen "
                   f"tactic {chosen_tactic} for the same inputs: a tactic must compute the same "
                   f"function (TensorRT may pick either; the choice depends on timing)")
            return [Violation("tactic_outputs_differ", msg, "enqueue")]
    return []


def alias_violations(asked: Dict[int, int], in_types: Sequence[Any],
                     in_shapes: Sequence[Sequence[int]], out_types: Sequence[Any],
                     out_shapes: Sequence[Sequence[int]]) -> Tuple[Dict[int, int], List[Violation]]:
    """The valid aliases among ``get_aliased_input``'s answers (output -> input, -1 = none),
    and a violation per invalid one: no such input, or another type or shape [infer: TensorRT
    writes the output into the input's buffer, so they must match]."""
    aliases, found = {}, []
    for j, k in asked.items():
        if k == -1:
            continue
        problem = None
        if not 0 <= k < len(in_types):
            problem = f"input {k} does not exist ({len(in_types)} inputs)"
        elif in_types[k] != out_types[j] or tuple(in_shapes[k]) != tuple(out_shapes[j]):
            problem = (f"input {k} is {tuple(in_shapes[k])} {in_types[k].name} but output {j} is "
                       f"{tuple(out_shapes[j])} {out_types[j].name}; an aliased output is written "
                       f"in place, so both must have one type and shape")
        if problem:
            found.append(Violation("aliasing", f"get_aliased_input({j}) returned {k}: {problem}",
                                   "get_aliased_input"))
        else:
            aliases[j] = k
    return aliases, found


def _field_value(field: PluginField) -> Any:
    try:
        return field.data.tolist()
    except (AttributeError, ValueError):  # types whose data TensorRT does not read back
        return f"<{field.size} {field.type.name}>"


def _fields_key(fields: Sequence[PluginField]) -> List[Tuple[str, Any, Any]]:
    return [(f.name, f.type, _field_value(f)) for f in fields]


def fields_differ(first: Sequence[PluginField], second: Sequence[PluginField]) -> Optional[str]:
    """How ``second`` differs from ``first`` (names, types, values), as a phrase, or None."""
    a, b = _fields_key(first), _fields_key(second)
    if a == b:
        return None
    names_a, names_b = [k[0] for k in a], [k[0] for k in b]
    if names_a != names_b:
        return f"the fields are {names_b} instead of {names_a}"
    for (name, ta, va), (_, tb, vb) in zip(a, b):
        if ta != tb:
            return f"field {name!r} is {tb.name} instead of {ta.name}"
        if va != vb:
            return f"field {name!r} holds {vb} instead of {va}"
    return "the fields differ"


def fields_violations(first: Optional[Sequence[PluginField]],
                      second: Optional[Sequence[PluginField]]) -> List[Violation]:
    """Two ``get_fields_to_serialize()`` calls on the same plugin must agree (the engine holds
    one of them; §4.2)."""
    if first is None or second is None:
        return []
    diff = fields_differ(first, second)
    if diff is None:
        return []
    msg = (f"get_fields_to_serialize() gave different results on two calls on the same plugin "
           f"({diff}): the engine stores whichever call TensorRT made, so deserialization "
           f"depends on chance. Build the fields from the plugin's state only.")
    return [Violation("fields_nondeterministic", msg, "get_fields_to_serialize")]


def rebuild_violations(engine: Sequence[PluginField],
                       rebuilt: Optional[Sequence[PluginField]]) -> List[Violation]:
    """The plugin ``create_plugin(RUNTIME)`` rebuilt from the engine's fields must serialize to
    the same fields: what does not round-trip is lost at deserialization (§4.2)."""
    if rebuilt is None:
        return []
    diff = fields_differ(engine, rebuilt)
    if diff is None:
        return []
    msg = (f"the plugin create_plugin(name, fields, TensorRTPhase.RUNTIME) rebuilt from the "
           f"engine's fields serializes differently ({diff}): create_plugin does not read back "
           f"everything get_fields_to_serialize writes, so the deserialized engine runs another "
           f"plugin than the one built")
    return [Violation("fields_incomplete", msg, "create_plugin")]


class V3Recorder:
    """A trampoline listener for the per-object V3 rules; its ``violations`` grow as it sees calls.

    Args:
        recorder: the run's :class:`~pyplugins.checker.checks.recorder.Recorder` (for object labels and
            the current step).
    """

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.violations: List[Violation] = []
        self._state: Dict[int, Tuple[Any, Dict[str, bool]]] = {}
        self._reported: set = set()

    def _of(self, obj: Any) -> Dict[str, bool]:
        entry = self._state.get(id(obj))
        if entry is None or entry[0] is not obj:
            entry = (obj, {})
            self._state[id(obj)] = entry
        return entry[1]

    def _report(self, check: str, obj: Any, message: str, method: str) -> None:
        key = (check, id(obj))
        if key not in self._reported:
            self._reported.add(key)
            self.violations.append(Violation(check, message, method))

    def __call__(self, event: Any) -> None:
        if event.method in ("set_tactic", "on_shape_change"):
            self._of(event.obj)[event.method] = event.error is None
        elif event.method == "attach_to_context" and event.result is not None:
            self._attach_check(event.obj, event.result)
        elif event.method == "enqueue":
            self.check_ready(event.obj, self.recorder.step or "run")

    def _attach_check(self, source: Any, attached: Any) -> None:
        label = f"attach_to_context() of {self.recorder.label(source)}"
        if attached is not source:  # mutable state both hold: reported when one changes it
            self.recorder.shared.track(source, self.recorder.label(source), attached,
                                       self.recorder.label(attached), via="attach_to_context")
        for found in clone_violations(source, attached, label):
            found.check, found.method = "attach_shares_state", "attach_to_context"
            if attached is source:
                found.message = (f"{label} returned the object itself: TensorRT gives each "
                                 f"execution context its own plugin (it must be a clone of the "
                                 f"whole IPluginV3, §2.4), so two contexts would share one "
                                 f"object's tactic, shapes and buffers. Return self.clone().")
            if found.message not in self._reported:
                self._reported.add(found.message)
                self.violations.append(found)

    def check_ready(self, obj: Any, step: str) -> None:
        """Report an ``enqueue`` (made, or due without a GPU) on ``obj`` in ``step`` if ``obj``
        did not get ``on_shape_change`` and ``set_tactic`` itself."""
        state = self._of(obj)
        label = self.recorder.label(obj)
        if not state.get("on_shape_change"):
            how = "never had on_shape_change called" if "on_shape_change" not in state else \
                "raised in on_shape_change"
            msg = (f"enqueue ({step}) reached {label}, which {how}: the binding sizes enqueue's "
                   f"lists from the counts on_shape_change caches on the same runtime object "
                   f"(§2.5), so it got empty lists. get_capability_interface(RUNTIME) must keep "
                   f"returning the same object, and on_shape_change must succeed.")
            self._report("shape_change_not_kept", obj, msg, "enqueue")
        if not state.get("set_tactic"):
            how = "never received set_tactic" if "set_tactic" not in state else \
                "raised in set_tactic"
            msg = (f"enqueue ({step}) reached {label}, which {how}: TensorRT sets the chosen "
                   f"tactic on the runtime object before enqueue, so this enqueue runs a tactic "
                   f"nobody chose. Keep the tactic on the object that gets set_tactic.")
            self._report("tactic_not_set", obj, msg, "enqueue")
