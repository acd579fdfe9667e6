"""The two forms ``pyplugins check`` prints a report in: text, and a JSON object.

Example:
    >>> from pyplugins.checker.lifecycle_report import LifecycleReport
    >>> report = LifecycleReport("Op:1:", enqueue_ran=True)
    >>> data = report_json(report, with_trace=False, exit_status=0)
    >>> data["ok"], data["exit_status"]
    (True, 0)
    >>> print(report_text(report, with_trace=False))
    Op:1:: OK
      enqueue ran
"""

from __future__ import annotations

import json
from typing import Any, Dict

import numpy as np

__all__ = ["json_text", "report_json", "report_text"]


def report_json(report: Any, *, with_trace: bool, exit_status: int) -> Dict[str, Any]:
    """``report.to_dict()`` with the exit status, and the trace (a list, maybe empty) when
    ``with_trace``; JSON-able through :func:`json_text`."""
    data = report.to_dict()
    trace = getattr(report, "trace", None)
    if with_trace:
        data["trace"] = trace.to_json() if trace is not None else []
    data.setdefault("exit_status", exit_status)
    return data


def report_text(report: Any, *, with_trace: bool) -> str:
    """``report.format()``, then the callback timeline when ``with_trace`` and there is one."""
    text = report.format()
    trace = getattr(report, "trace", None)
    if with_trace and trace is not None:
        text += "\n\nCallback timeline:\n" + trace.format_timeline()
    return text


def json_text(data: Any) -> str:
    """``data`` as indented JSON; NumPy values, enums, sets and tuples become JSON values and
    anything else its ``repr``.

    Example:
        >>> import numpy as np
        >>> print(json_text({"shape": (2, 3), "n": np.int64(4)}))
        {
          "shape": [
            2,
            3
          ],
          "n": 4
        }
    """
    return json.dumps(data, indent=2, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "name") and hasattr(value, "value"):
        return value.name
    if isinstance(value, (set, tuple)):
        return list(value)
    return repr(value)
