"""Reports for a ``pyplugins check`` that did not end with ``lifecycle.run``'s own report.

A step past ``--timeout``, a process the plugin crashed (a signal), ended (an exit status) or
grew past ``--memory-limit``, plugin code raising outside any TensorRT callback, and
``--require-gpu`` without an enqueue run each become a defect in a
:class:`~pyplugins.checker.lifecycle_report.LifecycleReport`, so the command still ends with its
report. A *step* is a callback's method name, a phrase starting with ``import`` (the module
import), or ``""`` for pyplugins' own work between callbacks (``last`` then names the callback
before it).

Example:
    >>> report = timeout_report("MyPlugin", ("configure_plugin", 61.0), 60.0)
    >>> report.ok, report.violations[0].method
    (False, 'configure_plugin')
    >>> print(crash_report("MyPlugin", "enqueue", signal=11).violations[0].message[:64])
    enqueue() crashed the process with SIGSEGV (a segmentation fault
"""

from __future__ import annotations

import os
import signal as signals
from typing import Any, Optional, Sequence, Tuple

from pyplugins.checker.checks import Violation
from pyplugins.checker.lifecycle_report import LifecycleReport
from pyplugins.emulator.trampoline import what

__all__ = ["crash_report", "escaped_error_report", "memory_report", "require_gpu",
           "step_label", "timeout_report"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # pyplugins/


#: Why a plugin's process would get a signal, for the ones plugin code causes.
_SIGNALS = {
    "SIGSEGV": "a segmentation fault: a read or write through a bad pointer, often a device "
               "pointer (an input, output or workspace address) used as host memory through "
               "ctypes or NumPy",
    "SIGBUS": "a bus error: a bad or misaligned memory access",
    "SIGABRT": "abort(): a failed C assertion, std::terminate or os.abort()",
    "SIGFPE": "an arithmetic fault, such as an integer division by zero in C",
    "SIGILL": "an illegal instruction",
    "SIGKILL": "killed from outside: by the kernel's out-of-memory killer, or by a user",
}


def _report(name: str, violation: Violation, stopped: str = "the check stopped before enqueue",
            interface: Optional[str] = None) -> LifecycleReport:
    report = LifecycleReport(plugin=name, violations=[violation])
    report.skipped = stopped
    report.interface = interface
    return report


def step_label(step: str, last: str = "") -> str:
    """How a report names a step.

    Example:
        >>> step_label("clone"), step_label("", last="clone")
        ('clone()', "pyplugins' own work between callbacks, after clone() returned")
    """
    if step.startswith("import") or step == "start-up":
        return step
    if step:
        return f"{step}()"
    if last.startswith("import"):
        return f"pyplugins' own work after the {last}"
    if last:
        return f"pyplugins' own work between callbacks, after {last}() returned"
    return "pyplugins' own work before the first callback"


def _method(step: str) -> Optional[str]:
    return step if step and not step.startswith("import") and step != "start-up" else None


def _where(frames: Sequence[str]) -> str:
    return ("; it was at:\n    " + "\n    ".join(frames)) if frames else ""


def timeout_report(name: str, timed_out: Tuple[str, float], limit: float, *,
                   killed: bool = False, last: str = "", frames: Sequence[str] = (),
                   interface: Optional[str] = None) -> LifecycleReport:
    """The report of a check whose step ``timed_out = (step, seconds)`` ran past ``limit``.

    Args:
        killed: the step's process was killed (a child process), not left running (a thread).
        last: the plugin step before, when ``step`` is ``""``.
        frames: the stack where it was stopped, most recent call first.
        interface: the plugin interface, when known.
    """
    step, seconds = timed_out
    label = step_label(step, last)
    fate = "was killed" if killed else "was abandoned"
    hang = ("an endless loop or a very slow step; TensorRT would hang here" if step else
            "a thread the plugin started may hold the GIL, or pyplugins itself is stuck")
    return _report(name, Violation(
        "lifecycle", f"{label} did not return within the {limit:g} s limit (--timeout) and "
        f"{fate} after {seconds:.1f} s: {hang}{_where(frames)}", _method(step)),
        f"the check stopped: {label} ran out of time", interface)


def crash_report(name: str, step: str, *, signal: Optional[int] = None,
                 exit_status: Optional[int] = None, last: str = "",
                 frames: Sequence[str] = (), interface: Optional[str] = None) -> LifecycleReport:
    """The report of a check whose process died in ``step``: killed by ``signal``, or ended
    with ``exit_status`` (``os._exit``, a C ``exit()``) before the check was done."""
    label = step_label(step, last)
    if signal is not None:
        try:
            sig = signals.Signals(signal).name
        except ValueError:
            sig = f"signal {signal}"
        why = _SIGNALS.get(sig, "a signal the process did not handle")
        text = (f"{label} crashed the process with {sig} ({why}); TensorRT's process would die "
                "the same way, with no error message")
    else:
        looks = ", which looks like success" if exit_status == 0 else ""
        text = (f"{label} ended the process with exit status {exit_status}{looks} (os._exit() "
                "or a C exit()), before the check was done; TensorRT's process would end there "
                "too, with no error message: raise an exception instead")
    return _report(name, Violation("lifecycle", text + _where(frames), _method(step)),
                   f"the check stopped: the process died in {label}", interface)


def memory_report(name: str, step: str, grown: int, limit: int, *, last: str = "",
                  interface: Optional[str] = None) -> LifecycleReport:
    """The report of a check whose process grew by ``grown`` bytes, past ``limit``, in ``step``.

    Example:
        >>> memory_report("Op", "clone", 3 << 30, 1 << 30).violations[0].message[:48]
        'clone() grew the memory of the check by 3072 MiB'
    """
    if not step and last and not last.startswith("import"):  # seen just after the callback
        step, label = last, f"{last}() (the callback before the limit was seen)"
    else:
        label = step_label(step, last)
    return _report(name, Violation(
        "lifecycle", f"{label} grew the memory of the check by {grown >> 20} MiB, past the "
        f"limit of {limit >> 20} MiB (--memory-limit), and the process was killed: memory "
        "kept on every call (a leak), or an allocation too large for a plugin call; TensorRT's "
        "process would run out of memory the same way", _method(step)),
        f"the check stopped: {label} used too much memory", interface)


def escaped_error_report(name: str, err: BaseException) -> Optional[LifecycleReport]:
    """A defect report for ``err`` when its traceback passes through plugin code (a creator
    property or ``field_names`` the driver reads directly), else None (pyplugins' own failure)."""
    if not _through_plugin_code(err):
        return None
    return _report(name, Violation(
        "lifecycle", "plugin code raised outside any TensorRT callback (a creator property or "
        f"field_names read directly), which TensorRT does not survive: {what(err)}"))


def _through_plugin_code(err: BaseException) -> bool:
    tb = err.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        path = os.path.abspath(name)
        if not (path.startswith(_PACKAGE + os.sep) or name.startswith("<frozen")
                or f"{os.sep}importlib{os.sep}" in path or os.path.basename(path) in (
                    "threading.py", "contextlib.py")):
            return True
        tb = tb.tb_next
    return False


def require_gpu(report: Any) -> None:
    """``--require-gpu``: add a defect to ``report`` when enqueue did not run (why is said
    once, by the report's verdict and ``skipped``, not again here)."""
    if getattr(report, "enqueue_ran", False):
        return
    report.violations.append(Violation(
        "lifecycle", "--require-gpu: enqueue did not run, so the kernels were not checked",
        "enqueue"))
