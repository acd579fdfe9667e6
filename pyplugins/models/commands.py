"""The model commands of the ``pyplugins`` CLI: ``check MODEL.onnx`` and ``patterns-dir``.

``pyplugins check`` hands a target ending in ``.onnx`` to :func:`run_check_model`;
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
from typing import Any, Dict

__all__ = ["add_patterns_dir", "parse_named_input", "run_check_model"]


def parse_named_input(text: str) -> Dict[str, Any]:
    """``NAME=SHAPE:DTYPE`` -> ``pyplugins.checker.command.parse_input``'s dict plus ``name``.

    Raises:
        pyplugins.checker.command.UsageError: no ``NAME=`` or a malformed shape or dtype.
    """
    from pyplugins.checker.command import UsageError, parse_input  # noqa: PLC0415

    name, sep, spec = text.partition("=")
    if not sep or not name:
        msg = (f"--input {text!r}: with a MODEL.onnx, each input is NAME=SHAPE:DTYPE, e.g. "
               "hidden_states=1-2-8x16x64:float16")
        raise UsageError(msg)
    parsed = parse_input(spec)
    parsed["name"] = name
    return parsed


def run_check_model(args: Any) -> int:
    """``pyplugins check MODEL.onnx [--plugins MODULE] [--input NAME=SHAPE:DTYPE] [--json]``;
    returns 0 (every plugin node fine), 1 (problems) or raises UsageError (exit 2)."""
    from pyplugins._config import override  # noqa: PLC0415
    from pyplugins.checker.command import UsageError  # noqa: PLC0415
    from pyplugins.models.check import check_model  # noqa: PLC0415
    from pyplugins.models.runner import ModelRunError  # noqa: PLC0415

    for flag in ("plugin", "attrs"):
        if getattr(args, flag, None):
            msg = (f"--{flag.rstrip('s')} applies to a plugin module; with a MODEL.onnx the "
                   "node's attributes and op type are used")
            raise UsageError(msg)
    inputs = {spec.pop("name"): spec for spec in map(parse_named_input, args.inputs)}
    redirect = (contextlib.redirect_stdout(sys.stderr) if args.json
                else contextlib.nullcontext())  # --json: stdout holds the JSON only
    try:
        with override(trt="emulator"), redirect:
            report = check_model(args.target, inputs, args.plugin_modules, device=args.device)
    except (ModelRunError, ValueError, FileNotFoundError) as err:
        raise UsageError(str(err)) from err
    if args.json:
        print(json.dumps({"ok": report.ok, "nodes": [
            {"node": n.node, "op": n.op, "ok": n.ok, "problem": n.problem,
             "mismatches": n.mismatches,
             "report": n.report.to_dict() if n.report is not None else None}
            for n in report.nodes]}, indent=2, default=str))
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
    from pyplugins.models.polygraphy_plugins import directory  # noqa: PLC0415

    print(directory(), file=sys.stdout)
    return 0
