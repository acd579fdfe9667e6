"""Reports for a ``pyplugins check`` that did not end with ``lifecycle.run``'s own report.

A step past ``--timeout``, plugin code raising outside any TensorRT callback, and
``--require-gpu`` without an enqueue run each become a defect in a
:class:`~pyplugins.checker.lifecycle_report.LifecycleReport`, so the command still ends with its report.

Example:
    >>> report = timeout_report("MyPlugin", ("configure_plugin", 61.0), 60.0)
    >>> report.ok, report.violations[0].method
    (False, 'configure_plugin')
"""

from __future__ import annotations

import os
from typing import Any, Optional, Tuple

from pyplugins.checker.checks import Violation
from pyplugins.checker.lifecycle_report import LifecycleReport
from pyplugins.emulator.trampoline import what

__all__ = ["escaped_error_report", "require_gpu", "timeout_report"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # pyplugins/


def _report(name: str, violation: Violation) -> LifecycleReport:
    report = LifecycleReport(plugin=name, violations=[violation])
    report.skipped = "the check stopped before enqueue"
    return report


def timeout_report(name: str, timed_out: Tuple[str, float], limit: float) -> LifecycleReport:
    """The report of a check whose step ``timed_out = (step, seconds)`` ran past ``limit``.

    ``step`` is a callback's method name, or a phrase starting with ``import`` for the module
    import.
    """
    step, seconds = timed_out
    method = None if step.startswith("import") else step
    label = f"{step}()" if method else step
    return _report(name, Violation(
        "lifecycle", f"{label} did not return within the {limit:g} s limit (--timeout) and was "
        f"abandoned after {seconds:.1f} s: an endless loop or a very slow step; TensorRT would "
        "hang here", method))


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
    """``--require-gpu``: add a defect to ``report`` when enqueue did not run."""
    if getattr(report, "enqueue_ran", False):
        return
    why = getattr(report, "skipped", None) or "it failed (see errors)"
    report.violations.append(Violation(
        "lifecycle", f"--require-gpu: enqueue did not run ({why}), so the kernels were not "
        "checked", "enqueue"))
