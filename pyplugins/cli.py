"""The ``pyplugins`` command line: ``pyplugins check`` drives a plugin through TensorRT's
lifecycle in the emulator and reports protocol violations.

``check`` ends only with its report: exit 0 (clean), 1 (defects, a plugin that crashed, ended or
hung its process or ran past ``--timeout`` or ``--memory-limit``, or ``--require-gpu`` without an
enqueue run), 2 (usage or environment) or 130 (Ctrl-C); with ``--json`` stdout is one JSON object
in every case. The check runs in a supervised child process (:mod:`pyplugins.checker.check_runner`,
:mod:`pyplugins.checker.isolate`). This module parses the command line and dispatches.

Example:
    >>> main(["check", "--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from typing import Any, Callable, List, Optional, Sequence

from pyplugins.checker.command import EXIT_USAGE, EnvironmentFailure, UsageError, write
from pyplugins.checker.check_runner import ABANDONED, run_check

__all__ = ["EXIT_INTERRUPTED", "build_parser", "main"]

#: The exit status after Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


def _fill(text: str) -> str:
    return textwrap.fill(text, width=78)


# -- the check command -------------------------------------------------------------------------------

def _add_check(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "check",
        help="drive a plugin through TensorRT's build and runtime lifecycle (emulated) and "
             "report protocol violations",
        description=_fill(
            "Import MODULE_OR_FILE with pyplugins' TensorRT emulator standing in for `import "
            "tensorrt` (a module written for real TensorRT runs unmodified), then drive the "
            "registered plugin through the calls TensorRT makes when it imports an ONNX node, "
            "builds an engine and runs it: create_plugin, clone, shape and type queries, the "
            "format search, configure_plugin, enqueue (on the GPU when CuPy sees one), "
            "serialize and deserialize. Reports what TensorRT would silently swallow."),
        epilog="\n\n".join([
            "examples:\n"
            "  pyplugins check my_plugins/circ_pad.py --plugin CircPad \\\n"
            "      --input 1x3x8x8:float32 --attr pads=1,1,2,2\n"
            "  pyplugins check my_pkg.circ_pad --input 1-2-4x3x8x8:float16 --trace\n"
            "  pyplugins check qdp_defs.py --call enable_single_tactic_circ_pad \\\n"
            "      --plugin sample::circ_pad_plugin --input 10x3x32x32:float32 \\\n"
            "      --attr pads=1,1,1,1 --qdp both",
            _fill("SHAPE is dims joined by 'x'. A dynamic dim is min-opt-max: 1-2-4x3x8x8 is a "
                  "tensor whose first dim is -1 in the network, with an optimization profile "
                  "of min 1, opt 2 and max 4 (enqueue runs at opt)."),
            _fill("VALUE of --attr becomes an ONNX attribute: 3 -> INT, 0.5 -> FLOAT, 1,2 -> "
                  "INTS, 0.5,1 -> FLOATS, anything else (or 'quoted') -> STRING. The plugin "
                  "receives it as TensorRT's ONNX parser passes it (INT32, FLOAT32, "
                  "NUL-terminated CHAR), and only if the creator lists it in field_names."),
            _fill("The check runs in a child process this command supervises: a plugin that "
                  "crashes it (SIGSEGV, abort), ends it (os._exit), hangs, or grows its memory "
                  "past --memory-limit is reported as a defect naming the callback. What the "
                  "plugin prints goes to stderr. --in-process runs the check in this process "
                  "instead, for a debugger (pdb, breakpoint()); a crash then ends the command."),
            _fill("exit status: 0 no violation; 1 violations found, the plugin crashed, ended or "
                  "hung the check's process, a step ran past --timeout or --memory-limit, or "
                  "--require-gpu and enqueue did not run; 2 usage or environment error (an "
                  "--attr or --input the plugin refuses included); 130 interrupted (Ctrl-C). "
                  "With --json, stdout is one JSON object in every case.")]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="MODULE_OR_FILE",
                   help="dotted module name or path to a .py file that registers the creator; "
                        "or MODEL.onnx to check every plugin node of a model "
                        "(--input NAME=SHAPE:DTYPE then names the model's inputs)")
    p.add_argument("--plugins", dest="plugin_modules", action="append", default=[],
                   metavar="MODULE", help="with MODEL.onnx: a plugin module to import first "
                                          "(the shipped ops always are); repeatable")
    p.add_argument("--plugin", metavar="NAME[:VERSION[:NAMESPACE]]",
                   help="the registered creator to check (default: the only one the module "
                        "registers); VERSION defaults to 1, NAMESPACE to ''; NAMESPACE::NAME "
                        "for a tensorrt.plugin (QDP) plugin")
    p.add_argument("--input", dest="inputs", action="append", default=[], metavar="SHAPE:DTYPE",
                   help="one plugin input, in order; repeat for each input. "
                        "SHAPE like 2x3x8x8; dynamic dim as min-opt-max, e.g. 1-2-4x3x8x8; "
                        "DTYPE a numpy name: float32, float16, int8, int32, int64, bool, uint8")
    p.add_argument("--attr", dest="attrs", action="append", default=[], metavar="NAME=VALUE",
                   help="a node attribute (plugin field), e.g. pads=1,1,2,2; repeatable")
    p.add_argument("--shape-input", dest="shape_inputs", action="append", default=[],
                   type=_ints, metavar="V1,V2,...",
                   help="IPluginV3: the values of one shape input (get_output_shapes' "
                        "shape_inputs), in order; repeatable")
    p.add_argument("--aliased-io", action="store_true",
                   help="IPluginV3: build with PreviewFeature.ALIASED_PLUGIN_IO_10_03, so "
                        "get_aliased_input is honoured")
    p.add_argument("--qdp", choices=("jit", "aot", "both"), default=None,
                   help="tensorrt.plugin (QDP): build with PREFER_JIT_PYTHON_PLUGINS (jit), "
                        "PREFER_AOT_PYTHON_PLUGINS (aot), or both and compare their outputs; "
                        "default: as TensorRT without a flag (a plugin with both is checked "
                        "both ways). --attr aot=1|0 is the ONNX node's `aot` attribute; with "
                        "MODEL.onnx, the flag for QDP nodes without an `aot` attribute")
    p.add_argument("--call", dest="calls", action="append", default=[], metavar="FUNC",
                   help="after importing the module, call its function FUNC() (repeatable): "
                        "for modules whose own script defines impl/autotune/aot_impl inside "
                        "set-up functions, as NVIDIA's QDP samples do (enable_*)")
    p.add_argument("--fresh-process", action="store_true",
                   help="also deserialize the engine's plugin in a fresh Python process, as "
                        "loading a saved engine does")
    p.add_argument("--trace", action="store_true",
                   help="print the timeline of every callback TensorRT made")
    p.add_argument("--trace-html", metavar="FILE", default=None,
                   help="also write the timeline as a self-contained web page (one lane per "
                        "object, phases, violations marked; opens offline in any browser)")
    p.add_argument("--json", action="store_true",
                   help="print the report (and trace) as JSON on stdout")
    p.add_argument("--device", choices=("auto", "cpu"), default="auto",
                   help="auto: run enqueue on the GPU when CuPy sees one; cpu: never touch it")
    p.add_argument("--require-gpu", action="store_true",
                   help="fail (exit 1) when enqueue could not run (no GPU, --device cpu, ...): "
                        "for CI that must check the kernels, not only the host side")
    p.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS",
                   help="the most seconds the module import and each plugin callback may take "
                        "(default: PYPLUGINS_CHECK_TIMEOUT or 60); a step past it is a defect "
                        "naming the method, and the report is still written")
    p.add_argument("--memory-limit", type=_mebibytes, default=None, metavar="MIB",
                   help="the most MiB the check's process may grow by after its start-up "
                        "(default: 1024 plus 16 times the inputs' size; with MODEL.onnx, no "
                        "limit unless given); past it, the process is killed and the callback "
                        "running is reported as a defect")
    p.add_argument("--in-process", action="store_true",
                   help="run the check in this process, not in a supervised child: for "
                        "debuggers; a plugin that crashes or ends the process ends the command")
    p.set_defaults(run=_run_check)


def _run_check(args: argparse.Namespace) -> int:
    """``check``'s dispatch: a MODEL.onnx to the model check, anything else to the plugin check."""
    if args.target.endswith(".onnx"):
        from pyplugins.models.commands import run_check_model  # noqa: PLC0415

        return run_check_model(args, isolated=args.isolated and not args.in_process)
    return run_check(args, isolated=args.isolated and not args.in_process)


def _ints(text: str) -> List[int]:
    try:
        return [int(v) for v in text.split(",")]
    except ValueError:
        msg = f"expected comma-separated integers such as 2,3 (got {text!r})"
        raise argparse.ArgumentTypeError(msg) from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        msg = f"expected a positive number of seconds (got {text!r})"
        raise argparse.ArgumentTypeError(msg)
    return value


def _mebibytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        msg = f"expected a positive whole number of MiB (got {text!r})"
        raise argparse.ArgumentTypeError(msg)
    return value


def _fail(command: str, message: str, as_json: bool, code: int = EXIT_USAGE) -> int:
    """Report an error that has no report: stderr, and a JSON object on stdout for --json."""
    write(sys.stderr, f"pyplugins {command}: error: {message}")
    if as_json:
        write(sys.stdout, json.dumps({"ok": False, "exit_status": code, "error": message,
                                       "violations": [], "errors": []}, indent=2))
    return code


# -- entry point -------------------------------------------------------------------------------------

#: Subcommands: (adds its parser). Further commands (``demo``) register here the same way.
def _add_patterns_dir(subparsers: Any) -> None:
    from pyplugins.models.commands import add_patterns_dir  # noqa: PLC0415

    add_patterns_dir(subparsers)


COMMANDS: List[Callable[[Any], None]] = [_add_check, _add_patterns_dir]


def build_parser() -> argparse.ArgumentParser:
    """The ``pyplugins`` argument parser with every subcommand."""
    from pyplugins import __version__  # noqa: PLC0415

    parser = argparse.ArgumentParser(
        prog="pyplugins",
        description="TensorRT plugins as small Python classes: tools to test and trace them.")
    parser.add_argument("--version", action="version", version=f"pyplugins {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in COMMANDS:
        add(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None, *, isolated: Optional[bool] = None) -> int:
    """Run the ``pyplugins`` command; returns the exit status (0, 1, 2 or 130).

    Args:
        argv: the arguments after the program name (default: ``sys.argv[1:]``).
        isolated: run ``check`` in a supervised child process. The default is the process's
            command (no ``argv``): isolated, unless ``--in-process`` is given; a caller passing
            ``argv`` gets the in-process check (its plugin code in the caller's process, where
            monkeypatches and debuggers apply). In process, after a ``--timeout`` the process's
            own command ends itself (``os._exit``) once the report is written, so the abandoned
            step cannot keep it alive; with ``argv`` the step runs on in a daemon thread.

    Ctrl-C kills the check's child process and returns :data:`EXIT_INTERRUPTED` with one line
    on stderr (and, with ``--json``, a JSON object on stdout).
    """
    parser = build_parser()
    argv = list(argv) if argv is not None else None
    wants_json = "--json" in (argv if argv is not None else sys.argv[1:])
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse: --help/--version (0) or a usage error (2)
        code = int(stop.code or 0) if not isinstance(stop.code, str) else EXIT_USAGE
        if code and wants_json:
            write(sys.stdout, json.dumps({"ok": False, "exit_status": code, "violations": [],
                                           "errors": [], "error": "invalid command line (see "
                                           "stderr)"}, indent=2))
        return code
    if getattr(args, "run", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    as_json = bool(getattr(args, "json", False))
    args.isolated = (argv is None) if isolated is None else isolated
    try:
        code = args.run(args)
    except (UsageError, EnvironmentFailure) as err:
        code = _fail(args.command, str(err), as_json)
    except KeyboardInterrupt:
        code = _fail(args.command, "interrupted (Ctrl-C); the check was stopped", as_json,
                     EXIT_INTERRUPTED)
    if argv is None and ABANDONED.is_set():
        # The process's own command and a plugin step is still running in an abandoned thread
        # (pyplugins.checker.supervise): end now, with the report written, rather than wait on it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
