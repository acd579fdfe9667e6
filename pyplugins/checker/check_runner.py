"""Run one ``pyplugins check`` to its printed report: in a supervised child process, or in this one.

Isolated (the command's default), the check runs in ``python -m pyplugins.checker.check_child`` under
:func:`pyplugins.checker.isolate.run_child`: this process only reads the child's answer, so a plugin that
crashes the process (SIGSEGV, ``abort``), ends it (``os._exit``), hangs holding the GIL, grows
its memory past ``--memory-limit``, writes to or closes fd 1 or 2, forks, or leaves a thread
running still gets a report naming the callback, with exit 1 and, with ``--json``, one JSON
object on stdout. What the child printed is replayed on stderr, less the ``[ERROR]`` lines the
report already carries. In-process (``--in-process``, or ``pyplugins.cli.main(argv)``), the check
runs in a thread under :func:`pyplugins.checker.supervise.supervise`: a debugger works, and a crash ends
the command. docs/isolation.md says what the child costs.

Example:
    >>> OWN_WORK_LIMIT_S
    300.0
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from typing import Any, Dict, List, Optional

import pyplugins.emulator
from pyplugins._config import knobs, override
from pyplugins.checker import isolate, verdicts
from pyplugins.checker.supervise import supervise
from pyplugins.emulator import trampoline
from pyplugins.emulator.specs import INPUT_FORM
from pyplugins.checker.command import (EXIT_OK, EXIT_VIOLATION, EnvironmentFailure, UsageError,
                                       interface_of, load_creator, parse_attrs, parse_input,
                                       parse_plugin, printable, report_for_error, run_lifecycle,
                                       write)
from pyplugins.checker.report_output import json_text, report_json, report_text

__all__ = ["ABANDONED", "OWN_WORK_LIMIT_S", "plugin_frames", "run_check", "start_child"]


#: Set when an in-process step ran past --timeout and its thread was left running
#: (``pyplugins.cli.main`` then ends the process).
ABANDONED = threading.Event()

#: The most seconds the child's own work may run between plugin steps (start-up, the driver,
#: the report), when ``--timeout`` is shorter; a plugin thread holding the GIL ends there.
OWN_WORK_LIMIT_S = 300.0

#: The command-line arguments the child needs (``argparse.Namespace`` attributes).
_CHILD_ARGS = ("target", "plugin", "inputs", "attrs", "device", "fresh_process", "trace",
               "shape_inputs", "aliased_io", "require_gpu", "memory_limit", "trace_html",
               "qdp", "calls")


def run_check(args: argparse.Namespace, *, isolated: bool = True) -> int:
    """``pyplugins check MODULE_OR_FILE ...`` for the parsed ``args``: prints the report and
    returns the exit status (:data:`EXIT_OK` or :data:`EXIT_VIOLATION`).

    Args:
        args: the parsed command line (``pyplugins.cli``'s ``check`` parser).
        isolated: run the check in a supervised child process (else in a thread here).

    Raises:
        UsageError: a malformed ``--input``/``--attr``/``--plugin``, a module that cannot be
            imported or names no such creator, or inputs the plugin refuses (exit 2).
        EnvironmentFailure: the environment cannot run the check (exit 2).
        KeyboardInterrupt: Ctrl-C; the child process is killed first.
    """
    if not args.inputs:
        msg = (f"give each plugin input with --input {INPUT_FORM} (repeat it per input, in "
               "order); a check needs the shapes TensorRT would give the plugin")
        raise UsageError(msg)
    try:
        timeout = args.timeout if args.timeout is not None else knobs.check_timeout
    except ValueError as err:
        raise EnvironmentFailure(str(err)) from err
    if isolated:  # the child parses the rest: this process imports nothing heavy
        return _isolated(args, timeout)
    specs = [parse_input(text) for text in args.inputs]
    attrs = parse_attrs(args.attrs)
    if args.plugin is not None:
        parse_plugin(args.plugin)
    return _in_process(args, specs, attrs, timeout)


# -- in a child process ------------------------------------------------------------------------------

def _isolated(args: argparse.Namespace, timeout: float) -> int:
    request = {"args": {k: getattr(args, k, None) for k in _CHILD_ARGS}, "parent": os.getpid()}
    if request["args"]["trace_html"]:  # the child writes the page; its path must not depend on cwd
        request["args"]["trace_html"] = os.path.abspath(request["args"]["trace_html"])
    own_limit = max(timeout, OWN_WORK_LIMIT_S)
    outcome, result = start_child("pyplugins.checker.check_child", request, timeout)
    if "report" in result:
        data = result["report"]
        status = EXIT_OK if data.get("ok") else EXIT_VIOLATION
        write(sys.stdout, json_text(data) if args.json else result["text"])
        return status
    report = _stopped_report(args, outcome, timeout, own_limit)
    return _print(report, args)


def start_child(module: str, request: Dict[str, Any], timeout: float
                ) -> "tuple[isolate.ChildOutcome, Dict[str, Any]]":
    """Run a check's child (``python -m module``, :func:`pyplugins.checker.isolate.run_child`)
    under the emulator, replay on stderr what it printed that is not already in its answer,
    and return ``(outcome, answer)``; the answer has ``report`` and ``text`` when the check
    finished, and nothing when the child ended before it answered.

    Raises:
        UsageError: the child found the command line wrong (exit 2).
        EnvironmentFailure: the child could not start, or the check cannot run (exit 2).
    """
    own_limit = max(timeout, OWN_WORK_LIMIT_S)
    try:
        outcome = isolate.run_child(module, request, timeout=timeout, own_limit=own_limit,
                                    env={"PYPLUGINS_TRT": "emulator"})
    except OSError as err:  # no temporary directory, no process to start
        msg = f"could not start the check's child process: {err} (--in-process runs without one)"
        raise EnvironmentFailure(msg) from err
    result = outcome.result or {}
    replay = isolate.without(outcome.output, result.get("printed", []))
    if replay.strip():
        sys.stderr.write(replay if replay.endswith("\n") else replay + "\n")
        sys.stderr.flush()
    if "usage" in result:
        raise UsageError(result["usage"])
    if "environment" in result:
        raise EnvironmentFailure(result["environment"])
    return outcome, result


def _stopped_report(args: argparse.Namespace, outcome: isolate.ChildOutcome, timeout: float,
                    own_limit: float) -> Any:
    """The defect report of a child that ended (or was stopped) before it answered."""
    board = outcome.board
    if board.number == 0 or board.step == "start-up":  # before any plugin code ran: ours
        how = (f"ran past {own_limit:g} s" if outcome.stopped == "timeout" else
               f"used {outcome.resident >> 20} MiB" if outcome.stopped == "memory" else
               f"ended by signal {outcome.signal}" if outcome.signal is not None else
               f"ended with exit status {outcome.exit_status}")
        msg = (f"the check's child process {how} during its start-up, before it imported the "
               "plugin module; its output, if any, is above")
        raise EnvironmentFailure(msg)
    name = board.info.get("plugin") or args.plugin or printable(args.target).strip("'")
    interface = board.info.get("interface")
    frames = plugin_frames(isolate.frames_of(outcome.fault, board.thread))
    if outcome.stopped == "timeout":
        limit = timeout if board.kind == isolate.PLUGIN_STEP else own_limit
        report = verdicts.timeout_report(name, (board.step, outcome.seconds), limit,
                                         killed=True, last=board.last, frames=frames,
                                         interface=interface)
    elif outcome.stopped == "memory":
        report = verdicts.memory_report(name, board.step, outcome.resident, board.memory_limit,
                                        last=board.last, interface=interface)
    else:
        report = verdicts.crash_report(name, board.step, signal=outcome.signal,
                                       exit_status=outcome.exit_status, last=board.last,
                                       frames=frames, interface=interface)
    report.fresh_process = ("not run: the check stopped" if args.fresh_process
                            else "not asked for")
    return report


def plugin_frames(frames: List[str], most: int = 8) -> List[str]:
    """The innermost frames of a stack dump down to the emulator's (TensorRT's side, which
    called the plugin); the innermost few when the stop was in the emulator itself.

    Example:
        >>> plugin_frames(['File "/p.py", line 3 in configure_plugin'])
        ['File "/p.py", line 3 in configure_plugin']
    """
    emulator = os.path.dirname(os.path.abspath(pyplugins.emulator.__file__)) + os.sep
    plugin = []
    for frame in frames:
        if emulator in frame:
            break
        plugin.append(frame)
    return (plugin or frames[:4])[:most]


# -- in this process ---------------------------------------------------------------------------------

def _in_process(args: argparse.Namespace, specs: List[Dict[str, Any]], attrs: Dict[str, Any],
                timeout: float) -> int:
    interface: List[Optional[str]] = [None]

    def work(watch: Any) -> Any:
        creator, module_ref = load_creator(args, attrs, watch)
        interface[0] = interface_of(creator)
        return run_lifecycle(args, creator, module_ref, specs, attrs)

    redirect = (contextlib.redirect_stdout(sys.stderr) if args.json
                else contextlib.nullcontext())
    saved_trt = sys.modules.get("tensorrt")
    try:
        with override(trt="emulator"), redirect:
            outcome = supervise(work, trampoline.Watch(), timeout)
    finally:  # in-process callers get their `import tensorrt` back
        if saved_trt is None:
            sys.modules.pop("tensorrt", None)
        else:
            sys.modules["tensorrt"] = saved_trt
    name = args.plugin or printable(args.target).strip("'")
    if outcome.timed_out is not None:
        ABANDONED.set()
        report = verdicts.timeout_report(name, outcome.timed_out, timeout,
                                         interface=interface[0])
    elif outcome.error is not None:
        report = report_for_error(name, outcome.error)
        report.interface = interface[0]
    else:
        report = outcome.value
    return _print(report, args)


def _print(report: Any, args: argparse.Namespace) -> int:
    if args.require_gpu:
        verdicts.require_gpu(report)
    status = EXIT_OK if report.ok else EXIT_VIOLATION
    if args.json:
        write(sys.stdout, json_text(report_json(report, with_trace=args.trace,
                                                exit_status=status)))
    else:
        write(sys.stdout, report_text(report, with_trace=args.trace))
    return status
