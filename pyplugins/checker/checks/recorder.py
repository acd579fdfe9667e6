"""The trampoline listener of a lifecycle run: labels, ``[ERROR]`` lines, clones, configure state.

The :class:`Recorder` watches every callback (:data:`pyplugins.emulator.trampoline.listeners`):
it labels plugin objects (P0, P1, ... in order of appearance; creators C0, ...), checks each clone
as it is made (:mod:`~pyplugins.checker.checks.clones`), remembers which objects were configured
(``enqueue_unconfigured``) and keeps the ``[ERROR]`` lines (``callback_error``) and every
``serialize()`` result (:mod:`~pyplugins.checker.checks.serialization`).

Example:
    >>> recorder = Recorder()
    >>> class P:
    ...     pass
    >>> p = P()
    >>> recorder.label(p), recorder.configured(p)
    ('P0 P', None)
    >>> recorder.unconfigured_violation(p, "enqueue").check
    'enqueue_unconfigured'
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from pyplugins.checker.checks import Violation
from pyplugins.checker.checks.clones import SharedState, clone_violations

_LABEL = re.compile(r"\b[PC]\d+\b")

__all__ = ["Recorder"]


class Recorder:
    """Watches every trampoline call during a lifecycle run.

    It labels plugin objects (P0, P1, ... in order of appearance), remembers which objects had a
    successful ``configure_plugin``, checks each clone as it is made, keeps every
    ``serialize()`` result, and collects the ``[ERROR]`` lines the trampoline printed.

    Args:
        check_clones: check each clone as it is made (off for QDP plugins, whose ``clone()`` is
            TensorRT's own code: a new object plus ``__dict__.update``, §8.4).

    Attributes:
        errors: ``(method, line, step, object label)`` for each printed ``[ERROR]`` line.
        violations: clone violations found so far.
        step: a label for the current step; errors are tagged with it.
    """

    def __init__(self, check_clones: bool = True) -> None:
        self.check_clones = check_clones
        self.errors: List[Tuple[str, str, str, str]] = []
        self.violations: List[Violation] = []
        self.step = ""
        self._labels: Dict[int, Tuple[Any, str]] = {}
        self._counts = {"P": 0, "C": 0}
        self._clone_seen: Dict[str, Tuple[Violation, str, List[str]]] = {}
        self.shared = SharedState()
        self._configured: Dict[int, Tuple[Any, bool]] = {}
        self._serialized: Dict[int, List[Optional[bytes]]] = {}

    def label(self, obj: Any) -> str:
        """``"P2 CircPadPlugin"``: the object's label, assigned on first sight."""
        entry = self._labels.get(id(obj))
        if entry is None or entry[0] is not obj:
            prefix = "C" if hasattr(obj, "create_plugin") else "P"
            entry = (obj, f"{prefix}{self._counts[prefix]} {type(obj).__name__}")
            self._counts[prefix] += 1
            self._labels[id(obj)] = entry
        return entry[1]

    def __call__(self, event: Any) -> None:
        if event.method in ("create_plugin", "deserialize_plugin", "clone"):
            self.label(event.obj)
            if event.result is not None:
                self.label(event.result)
        if event.error is not None:
            self.errors.append((event.method, event.error, self.step, self.label(event.obj)))
        if event.method == "configure_plugin":
            self._configured[id(event.obj)] = (event.obj, event.error is None)
        elif event.method == "clone" and event.result is not None and self.check_clones:
            self._clone_check(event.obj, event.result)
        elif event.method == "serialize":
            self._serialized.setdefault(id(event.obj), []).append(
                event.result if isinstance(event.result, bytes) else None)
        if self.step != "capture":  # reading device arrays would break the capture
            for found in self.shared.changes(event.obj, event.method, self._known_label):
                labels = sorted(_LABEL.findall(found.message)[:2], key=lambda t: int(t[1:]))
                self._note(found, _LABEL.sub("", found.message), "->".join(labels))
        if event.method == "destroy":
            self.shared.release(event.obj)

    def _known_label(self, obj: Any) -> Optional[str]:
        entry = self._labels.get(id(obj))
        return entry[1] if entry is not None and entry[0] is obj else None

    def _clone_check(self, source: Any, clone: Any) -> None:
        """Check a clone and watch what it shares with its source."""
        site = f"{self.label(source).split()[0]}->{self.label(clone).split()[0]}"
        text = f"clone() of {self.label(source)} (giving {self.label(clone)})"
        for found in clone_violations(source, clone, text):
            self._note(found, found.message.replace(text, ""), site)
        if clone is not source:
            self.shared.track(source, self.label(source), clone, self.label(clone))

    def _note(self, found: Violation, key: str, site: str) -> None:
        """Keep ``found``; the same problem (``key``) at a later site is noted on the first."""
        if key not in self._clone_seen:
            self._clone_seen[key] = (found, found.message, [site])
            self.violations.append(found)
            return
        first, message, sites = self._clone_seen[key]
        if site not in sites:
            sites.append(site)
            first.message = f"{message} [also at clone {', '.join(sites[1:])}]"

    def configured(self, obj: Any) -> Optional[bool]:
        """True if the last ``configure_plugin`` on ``obj`` succeeded, False if it raised, None
        if it never ran."""
        entry = self._configured.get(id(obj))
        if entry is None or entry[0] is not obj:
            return None
        return entry[1]

    def unconfigured_violation(self, obj: Any, what: str) -> Optional[Violation]:
        """The ``enqueue_unconfigured`` violation for enqueueing ``obj``, or None."""
        state = self.configured(obj)
        if state:
            return None
        how = "never had configure_plugin called" if state is None else \
            "raised in configure_plugin (TensorRT printed the error and carried on)"
        msg = (f"{what} on {self.label(obj)}, which {how}: enqueue then runs on state "
               f"configure_plugin should have set, and the binding sizes the input lists from the "
               f"count configure_plugin caches (§2.3). Make configure_plugin succeed on every "
               f"object, build or runtime, or keep enqueue independent of it.")
        return Violation("enqueue_unconfigured", msg, "enqueue")

    def take_serialized(self, obj: Any) -> List[Optional[bytes]]:
        """The ``serialize()`` results recorded for ``obj`` since the last call, then forget them."""
        return self._serialized.pop(id(obj), [])

    def error_violations(self) -> List[Violation]:
        """A ``callback_error`` per ``[ERROR]`` line printed outside a capture (errors during a
        capture are the ``capture_unsafe`` check's)."""
        return [Violation("callback_error", f"{label} ({step}): {line}", method)
                for method, line, step, label in self.errors if step != "capture"]
