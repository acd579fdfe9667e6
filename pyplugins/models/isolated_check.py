"""``pyplugins check MODEL.onnx`` in a supervised child process (the command's default).

The model check runs in ``python -m pyplugins.models.check_child`` under
:func:`pyplugins.checker.isolate.run_child`, as a plugin module's check does
(:mod:`pyplugins.checker.check_runner`): a plugin that crashes the process (SIGSEGV,
``abort``), ends it (``os._exit``), hangs past ``--timeout`` (even holding the GIL) or grows it
past ``--memory-limit`` while a node is checked gives exit 1 and a report that keeps the nodes
checked before, names the plugin node, the callback and the signal or exit status, and, with
``--json``, one JSON object on stdout. :func:`pyplugins.models.check.check_model` is the
in-process library API; ``--in-process`` (and ``pyplugins.cli.main(argv)``) runs it here.

Example:
    >>> from pyplugins.checker.isolate import BoardState, ChildOutcome
    >>> outcome = ChildOutcome(signal=11, board=BoardState(
    ...     kind=1, step="configure_plugin", number=3, info={"node": "pad", "op": "CircPad"}))
    >>> report = stopped_report(outcome, timeout=60.0, own_limit=300.0)
    >>> report.ok, report.nodes[0].node, report.nodes[0].report.violations[0].message[:51]
    (False, 'pad', 'configure_plugin() crashed the process with SIGSEGV')
"""

from __future__ import annotations

import os
import sys
from typing import Any, List

from pyplugins.checker import isolate, verdicts
from pyplugins.checker.check_runner import OWN_WORK_LIMIT_S, plugin_frames, start_child
from pyplugins.checker.command import EnvironmentFailure, write
from pyplugins.checker.report_output import json_text
from pyplugins.models.check_report import ModelCheckReport, NodeCheck, RenderedNode

__all__ = ["run_isolated", "stopped_report"]


def run_isolated(args: Any, timeout: float) -> int:
    """Check ``args.target`` in a supervised child; print the report; 0 or 1.

    Raises:
        UsageError: the child found the command line or the model wrong (exit 2).
        EnvironmentFailure: the check cannot run, or the child died before it began (exit 2).
    """
    request = {"args": {"target": os.path.abspath(args.target), "inputs": list(args.inputs),
                        "plugin_modules": [_absolute(m) for m in args.plugin_modules],
                        "device": args.device, "memory_limit": args.memory_limit,
                        "qdp": getattr(args, "qdp", None)},
               "parent": os.getpid()}
    own_limit = max(timeout, OWN_WORK_LIMIT_S)
    outcome, result = start_child("pyplugins.models.check_child", request, timeout)
    if "report" in result:
        data = result["report"]
        write(sys.stdout, json_text(data) if args.json else result["text"])
        return 0 if data.get("ok") else 1
    board = outcome.board
    if board.number == 0 or board.step == "start-up":  # before any model or plugin code: ours
        msg = (f"the check's child process ended ({_how(outcome, own_limit)}) during its "
               "start-up, before it read the model; its output, if any, is above")
        raise EnvironmentFailure(msg)
    report = stopped_report(outcome, timeout, own_limit)
    write(sys.stdout, json_text(report.to_dict()) if args.json else report.format())
    return 1


def stopped_report(outcome: isolate.ChildOutcome, timeout: float,
                   own_limit: float) -> ModelCheckReport:
    """The report of a child that died or was stopped before it answered: the nodes it had
    finished (its progress), then the plugin node it was checking, failed with the callback and
    the signal, exit status, time or memory; or, outside any node, how the model's own step
    ended."""
    progress = outcome.progress or {}
    nodes: List[Any] = [RenderedNode(d, t) for d, t in zip(progress.get("nodes", []),
                                                            progress.get("texts", []))]
    board = outcome.board
    node, op = board.info.get("node"), board.info.get("op")
    name = str(op or "the model")
    frames = plugin_frames(isolate.frames_of(outcome.fault, board.thread))
    if outcome.stopped == "timeout":
        limit = timeout if board.kind == isolate.PLUGIN_STEP else own_limit
        lifecycle = verdicts.timeout_report(name, (board.step, outcome.seconds), limit,
                                            killed=True, last=board.last, frames=frames)
    elif outcome.stopped == "memory":
        lifecycle = verdicts.memory_report(name, board.step, outcome.resident,
                                           board.memory_limit, last=board.last)
    else:
        lifecycle = verdicts.crash_report(name, board.step, signal=outcome.signal,
                                          exit_status=outcome.exit_status, last=board.last,
                                          frames=frames)
    message = lifecycle.violations[0].message
    report = ModelCheckReport(nodes)
    if node is not None:
        problem = ("its check was stopped by the time limit (see below)"
                   if outcome.stopped == "timeout" else None)
        report.nodes.append(NodeCheck(str(node), str(op), report=lifecycle, problem=problem))
        message = f"node {node!r}: {message}"
    if outcome.stopped == "timeout":
        report.timed_out = message
    elif node is None:
        report.died = message
    return report


def _how(outcome: isolate.ChildOutcome, own_limit: float) -> str:
    if outcome.stopped == "timeout":
        return f"ran past {own_limit:g} s"
    if outcome.stopped == "memory":
        return f"used {outcome.resident >> 20} MiB"
    if outcome.signal is not None:
        return f"signal {outcome.signal}"
    return f"exit status {outcome.exit_status}"


def _absolute(module: str) -> str:
    """A ``--plugins`` file path made absolute (the child's working directory is the same, but
    a path must not depend on it); a dotted module name as it is."""
    return os.path.abspath(module) if module.endswith(".py") or os.sep in module else module

