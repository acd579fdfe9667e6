"""The child process of ``pyplugins check MODEL.onnx``: ``python -m pyplugins.models.check_child WORKDIR``.

:func:`pyplugins.models.isolated_check.run_isolated` starts it with a work directory, as the
plugin module check starts :mod:`pyplugins.checker.check_child` (whose :func:`start` and
:func:`finish` it shares). Its steps show on ``WORKDIR/steps``: the model's own (loading, shape
inference) and every plugin callback, with the plugin node being checked in the board's info
(``{"node": ..., "op": ...}``). After each plugin node it rewrites ``WORKDIR/progress.json``
(``{"nodes": [...JSON of each node...], "texts": [...its text...]}``), so a parent whose child
died mid-model still reports the nodes checked before. Its answer, ``WORKDIR/result.json``, is
one of::

    {"report": {...the --json object...}, "text": "...", "printed": [...]}
    {"usage": "message", "printed": [...]}        (exit 2: the command line or model is wrong)
    {"environment": "message", "printed": [...]}  (exit 2: the check cannot run)

Example (the request the parent writes)::

    {"args": {"target": "m.onnx", "inputs": ["x=1x8:float32"], "plugin_modules": [],
              "device": "auto", "memory_limit": null}, "parent": 4242}
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from pyplugins.checker.check_child import (StepWatch, child_main, quiet_callback_error_logs,
                                           write_json)
from pyplugins.checker.command import EnvironmentFailure, UsageError
from pyplugins.checker.isolate import OWN_WORK, StepBoard, resident_self
from pyplugins.emulator import trampoline
from pyplugins.models.check_report import NodeCheck

__all__ = ["main"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Check the model of ``argv[0]``'s request (a work directory) and end the process; returns
    2 only for a malformed call."""
    return child_main(argv, "pyplugins.models.check_child", _run)


def _run(args: Dict[str, Any], board: StepBoard, work: Path) -> Dict[str, Any]:
    from pyplugins.models.check import check_model  # noqa: PLC0415 - after the board is up
    from pyplugins.models.commands import parse_named_input  # noqa: PLC0415
    from pyplugins.models.runner import ModelRunError  # noqa: PLC0415

    board.publish(OWN_WORK, "", time.monotonic())  # start-up done: what dies now is not ours
    quiet_callback_error_logs(logging.getLogger("pyplugins"))
    printed: List[str] = []
    done: Dict[str, List[Any]] = {"nodes": [], "texts": []}

    def note(event: Any) -> None:
        if event.error:
            printed.append(event.error)

    def on_node(entry: NodeCheck, finished: bool) -> None:
        if finished:
            done["nodes"].append(entry.to_dict())
            done["texts"].append(entry.format())
            write_json(work, "progress.json", done)
            board.set_info({})
        else:
            board.set_info({"node": entry.node, "op": entry.op})

    trampoline.listeners.append(note)
    limit = (int(args["memory_limit"]) << 20) if args.get("memory_limit") else 0
    board.set_baseline(resident_self(), threading.get_ident(), limit)
    try:
        inputs = {spec.pop("name"): spec for spec in map(parse_named_input, args["inputs"])}
        watch = StepWatch(board)
        with trampoline.watching(watch):
            report = check_model(args["target"], inputs, args["plugin_modules"],
                                 device=args["device"], watch=watch, on_node=on_node,
                                 qdp=args.get("qdp"))
    except (ModelRunError, ValueError, UsageError) as err:
        return {"usage": str(err), "printed": printed}
    except (ImportError, EnvironmentFailure) as err:
        return {"environment": str(err), "printed": printed}
    board.publish(OWN_WORK, "", time.monotonic())
    return {"report": report.to_dict(), "text": report.format(), "printed": printed}


if __name__ == "__main__":
    sys.exit(main())
