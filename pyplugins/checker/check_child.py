"""The child process of ``pyplugins check``: ``python -m pyplugins.checker.check_child WORKDIR``.

:func:`pyplugins.checker.isolate.run_child` starts it with a work directory. It shows its steps on
``WORKDIR/steps`` (a :class:`StepWatch` the trampoline updates around every callback) with the
memory it may grow by (``--memory-limit``, else :func:`default_memory_limit`), has
:mod:`faulthandler` write a fatal signal's traceback (and, on the parent's SIGUSR1, every
thread's stack) to ``WORKDIR/fault``, runs the check of ``WORKDIR/request.json`` (the parsed
command line) and writes ``WORKDIR/result.json``, one of::

    {"report": {...the --json object...}, "text": "...the text report...", "printed": [...]}
    {"usage": "message", "printed": [...]}        (exit 2: the command line is wrong)
    {"environment": "message", "printed": [...]}  (exit 2: the check cannot run)

``printed`` holds the ``[ERROR]`` lines the trampoline wrote to fd 2 (the parent leaves them out
when it replays the child's output, since the report carries them). Then the child ends with
``os._exit(0)`` at once: no plugin thread, ``atexit`` handler or ``__del__`` can hold it up.

Example:
    >>> import numpy as np
    >>> default_memory_limit([{"shape": (1024,), "max": None, "dtype": np.dtype("float32")}])
    1073807360
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import json
import logging
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins import dtypes
from pyplugins.checker import command as check_command, verdicts
from pyplugins.checker.command import EnvironmentFailure, UsageError
from pyplugins.checker.report_output import json_text, report_json, report_text
from pyplugins.emulator import trampoline
from pyplugins.emulator.trampoline import Watch
from pyplugins.checker.isolate import OWN_WORK, PLUGIN_STEP, StepBoard, resident_self

__all__ = ["MEMORY_BASE", "StepWatch", "child_main", "default_memory_limit", "finish", "main",
           "quiet_callback_error_logs", "start", "write_json"]

#: The default memory limit: this much, plus 16 times the inputs' bytes at the profile's max
#: (the check's own host copies, guard buffers and reference results).
MEMORY_BASE = 1 << 30


class StepWatch(Watch):
    """A trampoline :class:`~pyplugins.emulator.trampoline.Watch` that also shows each step on a
    :class:`~pyplugins.checker.isolate.StepBoard`, for the parent process to read.

    Example:
        >>> import os, tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     watch = StepWatch(StepBoard.create(os.path.join(tmp, "steps")))
        ...     saved = watch.begin("clone")
        ...     during = watch.board.read().step
        ...     watch.end(saved)
        ...     after = watch.board.read()
        >>> during, after.step, after.last
        ('clone', '', 'clone')
    """

    def __init__(self, board: StepBoard) -> None:
        super().__init__()
        self.board = board

    def begin(self, method: str) -> Optional[tuple]:
        saved = super().begin(method)
        self._show(last=method)
        return saved

    def end(self, saved: Optional[tuple]) -> None:
        super().end(saved)
        self._show()

    def _show(self, last: Optional[str] = None) -> None:
        current = self.current
        if current is None:
            self.board.publish(OWN_WORK, "", time.monotonic(), last=last)
        else:
            self.board.publish(PLUGIN_STEP, current[0], current[1], last=last)


def default_memory_limit(specs: Sequence[Dict[str, Any]]) -> int:
    """The bytes a check's process may grow by when ``--memory-limit`` is not given:
    :data:`MEMORY_BASE` plus 16 times the inputs' bytes at the profile's max (``specs`` from
    :func:`pyplugins.checker.command.parse_input`)."""
    total = 0
    for spec in specs:
        dtype = spec["dtype"]
        itemsize = (dtype.itemsize if isinstance(dtype, np.dtype)
                    else max(int(dtypes.itemsize_from_trt(dtype)), 1))
        total += int(np.prod(spec["max"] or spec["shape"], dtype=np.int64)) * itemsize
    return MEMORY_BASE + 16 * total


def start(work: Path) -> Tuple[StepBoard, Dict[str, Any]]:
    """A child's start in its work directory: ``(board, request)``. The board shows
    "start-up"; :mod:`faulthandler` writes a fatal signal's traceback (and, on SIGUSR1, every
    thread's stack) to ``WORKDIR/fault``; the request is ``WORKDIR/request.json``; and the
    process is set to die with its parent (whose pid the request names).

    A child module's ``main`` (as :mod:`pyplugins.models.check_child`'s)::

        board, request = start(work)
        finish(work, {"report": ..., "printed": []})  # ends the process
    """
    board = StepBoard(str(work / "steps"))
    board.publish(OWN_WORK, "start-up", time.monotonic())
    fault = open(work / "fault", "w")  # faulthandler keeps it to the end
    faulthandler.enable(fault, all_threads=True)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, fault, all_threads=True)
    request = json.loads((work / "request.json").read_text())
    _die_with_parent(request["parent"])
    return board, request


def write_json(work: Path, name: str, value: Dict[str, Any]) -> None:
    """Replace ``WORKDIR/name`` with ``value`` as JSON, whole (a reader never sees half).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     write_json(Path(tmp), "progress.json", {"nodes": []})
        ...     sorted(os.listdir(tmp))
        ['progress.json']
    """
    partial = work / (name + ".part")
    partial.write_text(json_text(value))
    os.replace(partial, work / name)


def finish(work: Path, result: Dict[str, Any]) -> None:
    """Write the answer (``WORKDIR/result.json``) and end the process at once
    (``os._exit(0)``: no plugin thread, ``atexit`` handler or ``__del__`` can hold it up);
    see :func:`start` for its use."""
    write_json(work, "result.json", result)
    os._exit(0)


def child_main(argv: Optional[Sequence[str]], module: str,
               run: Callable[[Dict[str, Any], Any, Path], Dict[str, Any]]) -> int:
    """A check child's entry: ``run(request args, board, work directory)`` under the
    supervision :func:`start` sets up, its answer (or pyplugins' own failure) written by
    :func:`finish`, which ends the process; returns 2 only for a malformed call of
    ``python -m module WORKDIR``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or not Path(args[0], "request.json").is_file():
        sys.stderr.write(f"usage: python -m {module} WORKDIR (made by "
                         "pyplugins.checker.isolate.run_child)\n")
        return 2
    work = Path(args[0])
    board, request = start(work)
    try:
        result = run(request["args"], board, work)
    except BaseException:  # noqa: BLE001 - pyplugins' own failure, outside the check's guard
        result = {"environment": "the check failed inside pyplugins (please report it):\n"
                                 + traceback.format_exc(), "printed": []}
    finish(work, result)
    return 0  # not reached: finish ends the process


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the check in ``argv[0]`` (a work directory) and end the process; returns 2 only for
    a malformed call."""
    return child_main(argv, "pyplugins.checker.check_child",
                      lambda args, board, work: _run(args, board))


def _run(request: Dict[str, Any], board: StepBoard) -> Dict[str, Any]:
    args = argparse.Namespace(**request)
    quiet_callback_error_logs(logging.getLogger("pyplugins"))
    printed: List[str] = []

    def note(event: Any) -> None:
        if event.error:
            printed.append(event.error)

    watch = StepWatch(board)
    trampoline.listeners.append(note)
    name = args.plugin or check_command.printable(args.target).strip("'")
    try:
        specs = [check_command.parse_input(text) for text in args.inputs]
        attrs = check_command.parse_attrs(args.attrs)
        if args.plugin is not None:
            check_command.parse_plugin(args.plugin)
        limit = (args.memory_limit << 20 if args.memory_limit is not None
                 else default_memory_limit(specs))
        board.set_baseline(resident_self(), threading.get_ident(), limit)
        with trampoline.watching(watch):
            creator, module_ref = check_command.load_creator(args, attrs, watch)
            interface = check_command.interface_of(creator)
            name = _describe(creator)
            board.set_info({"plugin": name, "interface": interface})
            report = check_command.run_lifecycle(args, creator, module_ref, specs, attrs)
    except UsageError as err:
        return {"usage": str(err), "printed": printed}
    except EnvironmentFailure as err:
        return {"environment": str(err), "printed": printed}
    except BaseException as err:  # noqa: BLE001 - plugin code's or ours, told apart below
        try:
            report = check_command.report_for_error(name, err)
        except (UsageError, EnvironmentFailure) as failure:
            kind = "usage" if isinstance(failure, UsageError) else "environment"
            return {kind: str(failure), "printed": printed}
    board.publish(OWN_WORK, "", time.monotonic())
    if args.require_gpu:
        verdicts.require_gpu(report)
    status = check_command.EXIT_OK if report.ok else check_command.EXIT_VIOLATION
    return {"report": report_json(report, with_trace=args.trace, exit_status=status),
            "text": report_text(report, with_trace=args.trace), "printed": printed}


def _describe(creator: Any) -> str:
    return ":".join("" if v is None else str(v) for v in (
        creator.name, creator.plugin_version, creator.plugin_namespace))


def quiet_callback_error_logs(logger: Any) -> None:
    """Leave out the ``pyplugins`` logger's one-line report of a callback's exception
    (:mod:`pyplugins.runtime.error_reports`): the check's report carries the same exception, in the
    ``[ERROR]`` line TensorRT prints, so the command says it once. Other records still print."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(lambda record: not (record.levelno >= logging.ERROR
                                          and record.module == "error_reports"))
    logger.addHandler(handler)
    logger.propagate = False


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this process when the parent dies (``PR_SET_PDEATHSIG``), so a parent
    killed without a chance to clean up leaves no check running; elsewhere, nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
