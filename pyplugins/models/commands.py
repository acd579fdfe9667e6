"""The model commands of the ``pyplugins`` CLI: ``check MODEL.onnx`` and ``patterns-dir``.

``pyplugins check`` hands a target ending in ``.onnx`` to :func:`run_check_model`: exit 0 when
every plugin node passes, 1 for a plugin node's problem (or a step past ``--timeout``), 2 for a
bad command line or a model file that is malformed or unsupported (one line naming the file, node
or tensor; with ``--json`` a JSON object on stdout in every case);
``pyplugins patterns-dir`` prints the Polygraphy plugin directory of the shipped patterns, for
``polygraphy plugin match|replace MODEL --plugin-dir "$(pyplugins patterns-dir)"``.

Example:
    >>> parse_named_input("x=1-2-4x16:float16")["opt"]
    (2, 16)
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
from typing import Any, Dict

from pyplugins._config import knobs, override
from pyplugins.checker.check_runner import ABANDONED
from pyplugins.checker.command import EnvironmentFailure, UsageError, parse_input
from pyplugins.checker.supervise import supervise
from pyplugins.emulator import trampoline
from pyplugins.models.check_report import ModelCheckReport
from pyplugins.models.polygraphy_plugins import directory

__all__ = ["add_patterns_dir", "parse_named_input", "run_check_model"]


def parse_named_input(text: str) -> Dict[str, Any]:
    """``NAME=SHAPE:DTYPE`` -> ``pyplugins.checker.command.parse_input``'s dict plus ``name``.

    Raises:
        pyplugins.checker.command.UsageError: no ``NAME=`` or a malformed shape or dtype.
    """
    name, sep, spec = text.partition("=")
    if not sep or not name:
        msg = (f"--input {text!r}: with a MODEL.onnx, each input is NAME=SHAPE:DTYPE, e.g. "
               "hidden_states=1-2-8x16x64:float16")
        raise UsageError(msg)
    parsed = parse_input(spec)
    parsed["name"] = name
    return parsed


def run_check_model(args: Any, *, isolated: bool = False) -> int:
    """``pyplugins check MODEL.onnx [--plugins MODULE] [--input NAME=SHAPE:DTYPE] [--json]
    [--timeout SECONDS] [--memory-limit MIB]``; returns 0 (every plugin node fine) or 1
    (problems, a plugin that crashed, ended or hung the check's process, or a step past
    ``--timeout``), or raises UsageError (exit 2: a bad command line, or a model file that is
    malformed or uses what pyplugins does not support) or EnvironmentFailure (exit 2).

    ``isolated`` (the command's default) runs the check in a supervised child process
    (:mod:`pyplugins.models.isolated_check`). Otherwise it runs here under
    :func:`pyplugins.checker.supervise.supervise`, as a plugin module's in-process check does: a
    plugin callback, or a step of the model's own (loading, validation, shape inference), that
    runs past the limit stops the check with a report of the nodes checked so far.
    """
    from pyplugins.models.check import check_model  # noqa: PLC0415 - kept off the CLI's start-up
    from pyplugins.models.runner import ModelRunError  # noqa: PLC0415 - kept off the CLI's start-up

    for flag in ("plugin", "attrs"):
        if getattr(args, flag, None):
            msg = (f"--{flag.rstrip('s')} applies to a plugin module; with a MODEL.onnx the "
                   "node's attributes and op type are used")
            raise UsageError(msg)
    inputs = {spec.pop("name"): spec for spec in map(parse_named_input, args.inputs)}
    try:
        timeout = args.timeout if getattr(args, "timeout", None) is not None else (
            knobs.check_timeout)
    except ValueError as err:
        raise EnvironmentFailure(str(err)) from err
    if isolated:
        from pyplugins.models.isolated_check import run_isolated  # noqa: PLC0415

        return run_isolated(args, timeout)
    redirect = (contextlib.redirect_stdout(sys.stderr) if args.json
                else contextlib.nullcontext())  # --json: stdout holds the JSON only
    report = ModelCheckReport()
    with override(trt="emulator"), redirect:
        outcome = supervise(
            lambda watch: check_model(args.target, inputs, args.plugin_modules,
                                      device=args.device, report=report, watch=watch,
                                      qdp=getattr(args, "qdp", None)),
            trampoline.Watch(), timeout)
    if outcome.timed_out is not None:
        ABANDONED.set()  # pyplugins.cli.main ends the process once the report is written
        report = report.stopped(*outcome.timed_out, timeout)
    elif isinstance(outcome.error, (ModelRunError, ValueError, UsageError)):
        raise UsageError(str(outcome.error)) from outcome.error
    elif isinstance(outcome.error, ImportError):  # onnx missing: the message says what to install
        raise EnvironmentFailure(str(outcome.error)) from outcome.error
    elif outcome.error is not None:
        err = outcome.error
        if not isinstance(err, Exception):  # KeyboardInterrupt, SystemExit
            raise err
        text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        msg = (f"the check of {args.target} failed inside pyplugins (please report it): "
               f"{type(err).__name__}: {err}\n{text}")
        raise EnvironmentFailure(msg) from err
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        print(report.format())
    return 0 if report.ok else 1


def add_patterns_dir(subparsers: Any) -> None:
    """Add ``pyplugins patterns-dir``."""
    p = subparsers.add_parser(
        "patterns-dir",
        help="print the Polygraphy plugin directory of the shipped patterns (RMSNorm, RoPE, "
             "CircPad, LReLU_TRT) for polygraphy plugin match|replace --plugin-dir")
    p.set_defaults(run=_print_patterns_dir)


def _print_patterns_dir(args: Any) -> int:
    print(directory(), file=sys.stdout)
    return 0
