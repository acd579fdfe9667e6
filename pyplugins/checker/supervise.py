"""Run one in-process ``pyplugins check`` in a worker thread under a time limit per step.

``pyplugins check`` runs its check in a child process (:mod:`pyplugins.checker.isolate`) that can be
killed; this supervisor serves the check run in the calling process (``--in-process``, for
debuggers, and ``pyplugins.cli.main(argv)``). Python cannot stop a thread, so the limit works like
this: the check runs in a daemon thread that installs a
:class:`~pyplugins.emulator.trampoline.Watch`; the trampoline marks each plugin callback on it
(and the CLI marks the module import). The calling thread polls the watch; when one step has run
longer than the limit, :func:`supervise` returns at once with the step's name (a defect to report)
and leaves the worker behind, still running. The caller writes the report; a command-line process
then ends itself with ``os._exit`` (see ``pyplugins.cli.main``), since the abandoned thread may
never return and an orderly shutdown could wait on it. A callback that holds the GIL (a long
loop in C) starves the polling thread too: only the child process survives that.

Example:
    >>> from pyplugins.emulator.trampoline import Watch
    >>> outcome = supervise(lambda watch: 42, Watch(), timeout=5.0)
    >>> outcome.value, outcome.timed_out
    (42, None)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

from pyplugins.emulator import trampoline

__all__ = ["Outcome", "supervise"]

_POLL_S = 0.02


@dataclass
class Outcome:
    """What :func:`supervise` saw.

    Attributes:
        value: what the work returned (None if it raised or timed out).
        error: the exception it raised, or None.
        timed_out: ``(step, seconds)`` when a step ran past the limit, else None; the worker is
            then still running (abandoned).
    """

    value: Any = None
    error: Optional[BaseException] = None
    timed_out: Optional[Tuple[str, float]] = None


def supervise(work: Callable[[trampoline.Watch], Any], watch: trampoline.Watch,
              timeout: float) -> Outcome:
    """Run ``work(watch)`` in a daemon thread whose callbacks report to ``watch``.

    Args:
        work: the check; it may mark slow steps of its own with ``watch.begin``/``watch.end``.
        watch: shared with the worker; the trampoline sets it around each callback.
        timeout: the most seconds one step (a callback, or a step ``work`` marks) may run.

    Returns:
        An :class:`Outcome`: the value, the exception, or the step that ran out of time.
    """
    outcome = Outcome()

    def body() -> None:
        try:
            with trampoline.watching(watch):
                outcome.value = work(watch)
        except BaseException as err:  # noqa: BLE001 - handed to the caller, whatever it is
            outcome.error = err

    worker = threading.Thread(target=body, name="pyplugins-check", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(_POLL_S)
        running = watch.running()
        if worker.is_alive() and running is not None and running[1] > timeout:
            return Outcome(timed_out=running)
    return outcome
