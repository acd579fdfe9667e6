"""The ``pyplugins`` command line: ``pyplugins check`` drives a plugin through TensorRT's
lifecycle in the emulator and reports protocol violations.

``check`` ends only with its report: exit 0 (clean), 1 (defects, a step past ``--timeout``, or
``--require-gpu`` without an enqueue run) or 2 (usage or environment); with ``--json`` stdout is
one JSON object in every case. The time limit is :mod:`pyplugins.supervise`'s.

Example:
    >>> main(["check", "--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import textwrap
import threading
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins import verdicts

__all__ = ["UsageError", "build_parser", "main", "parse_input", "parse_plugin"]

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2

_INPUT_FORM = ("SHAPE:DTYPE, e.g. 2x3x8x8:float32, or with a dynamic dim given as "
               "min-opt-max, e.g. 1-2-4x3x8x8:float16")
_PLUGIN_FORM = "NAME[:VERSION[:NAMESPACE]], e.g. CircPad or CircPad:1 or CircPad:1:my_ns"
_DTYPE_ALIASES = {"fp32": "float32", "fp16": "float16", "half": "float16", "float": "float32",
                  "i8": "int8", "i32": "int32", "i64": "int64", "u8": "uint8"}


class UsageError(Exception):
    """A command-line argument is malformed or names something that does not exist (exit 2)."""


# -- argument parsing --------------------------------------------------------------------------------

def parse_plugin(text: str) -> Tuple[str, str, str]:
    """``NAME[:VERSION[:NAMESPACE]]`` -> (name, version, namespace); version defaults to "1".

    Example:
        >>> parse_plugin("CircPad"), parse_plugin("CircPad:2:ns")
        (('CircPad', '1', ''), ('CircPad', '2', 'ns'))
    """
    parts = text.split(":")
    if not parts[0] or len(parts) > 3:
        msg = f"--plugin {text!r}: expected {_PLUGIN_FORM}"
        raise UsageError(msg)
    name = parts[0]
    version = parts[1] if len(parts) > 1 and parts[1] else "1"
    namespace = parts[2] if len(parts) > 2 else ""
    return name, version, namespace


def _dtype(text: str, spec: str) -> Any:
    """NumPy's dtype where NumPy has one, else the emulator's ``DataType`` (``bfloat16``)."""
    from pyplugins import dtypes  # noqa: PLC0415
    from pyplugins.emulator.specs import datatype_from_text  # noqa: PLC0415

    try:
        datatype = datatype_from_text(_DTYPE_ALIASES.get(text.lower(), text))
    except ValueError as err:
        raise UsageError(f"--input {spec!r}: {err}") from err
    row = dtypes.info(datatype)
    return row.numpy if row.numpy is not None else datatype


def parse_input(text: str) -> Dict[str, Any]:
    """``SHAPE:DTYPE`` -> ``dict(shape, dtype, min, opt, max)`` for ``lifecycle.TensorSpec``.

    A static dim is an int; a dynamic dim is ``min-opt-max`` and becomes -1 in ``shape`` with the
    profile in ``min``/``opt``/``max`` (which are None when every dim is static).

    Example:
        >>> spec = parse_input("1-2-4x3:float16")
        >>> spec["shape"], spec["min"], spec["opt"], spec["max"], spec["dtype"].name
        ((-1, 3), (1, 3), (2, 3), (4, 3), 'float16')
    """
    shape_text, sep, dtype_text = text.rpartition(":")
    if not sep or not shape_text or not dtype_text:
        msg = f"--input {text!r}: expected {_INPUT_FORM}"
        raise UsageError(msg)
    dtype = _dtype(dtype_text, text)
    shape, lo, opt, hi = [], [], [], []
    dynamic = False
    for dim in shape_text.lower().split("x"):
        if re.fullmatch(r"\d+", dim):
            value = int(dim)
            shape.append(value)
            lo.append(value)
            opt.append(value)
            hi.append(value)
            continue
        match = re.fullmatch(r"(\d+)-(\d+)-(\d+)", dim)
        if not match:
            hint = (" (a dynamic dim is written min-opt-max, not -1)" if dim in ("-1", "?")
                    else "")
            msg = f"--input {text!r}: bad dimension {dim!r}{hint}; expected {_INPUT_FORM}"
            raise UsageError(msg)
        a, b, c = (int(g) for g in match.groups())
        if not a <= b <= c:
            msg = (f"--input {text!r}: dynamic dim {dim!r} must satisfy min <= opt <= max "
                   f"(got {a}, {b}, {c})")
            raise UsageError(msg)
        dynamic = True
        shape.append(-1)
        lo.append(a)
        opt.append(b)
        hi.append(c)
    if len(shape) > 8:
        msg = f"--input {text!r}: TensorRT tensors have at most 8 dimensions (got {len(shape)})"
        raise UsageError(msg)
    if not dynamic:
        return {"shape": tuple(shape), "dtype": dtype, "min": None, "opt": None, "max": None}
    return {"shape": tuple(shape), "dtype": dtype, "min": tuple(lo), "opt": tuple(opt),
            "max": tuple(hi)}


def _parse_attrs(items: Sequence[str]) -> Dict[str, Any]:
    from pyplugins.emulator.onnx_import import value_from_cli  # noqa: PLC0415

    attrs: Dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            msg = (f"--attr {item!r}: expected NAME=VALUE, e.g. pads=1,1,2,2 or mode=wrap or "
                   "scale=0.5")
            raise UsageError(msg)
        if name in attrs:
            msg = f"--attr {item!r}: attribute {name!r} is given twice"
            raise UsageError(msg)
        try:
            item.encode("utf-8")
        except UnicodeEncodeError as err:
            msg = (f"--attr {_printable(item)}: not valid UTF-8 (the command line held a byte "
                   "sequence that is not text); ONNX attribute names and strings are UTF-8")
            raise UsageError(msg) from err
        attrs[name] = value_from_cli(value)
    return attrs


def _printable(text: str) -> str:
    """``repr(text)`` with lone surrogates escaped, safe to print on any stream."""
    return repr(text).encode("utf-8", "backslashreplace").decode("utf-8")


# -- module loading ----------------------------------------------------------------------------------

def _use_emulator() -> Any:
    """Make ``import tensorrt`` give the emulator, even where real TensorRT is installed."""
    from pyplugins import emulator  # noqa: PLC0415

    active = emulator.install()
    if active is not emulator:
        sys.modules["tensorrt"] = emulator
    return emulator


def _import_plugin_module(target: str) -> Tuple[Any, str]:
    """Import a dotted module name or a ``.py`` file; returns (module, what to re-import).

    Files are loaded by the lifecycle driver's loader (once per process, under a name derived
    from the path), so ``lifecycle.run(plugin_module=...)`` finds the same module again.
    """
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        if not path.is_file():
            msg = f"MODULE_OR_FILE {target!r}: no such file"
            raise UsageError(msg)
        path = path.resolve()
        directory = str(path.parent)
        if directory not in sys.path:
            sys.path.insert(0, directory)  # so the file can import its neighbours, as `python f.py`
        ref = str(path)
    else:
        if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", target):
            msg = (f"MODULE_OR_FILE {target!r}: expected a dotted module name (my_pkg.my_plugin) "
                   "or a path to a .py file")
            raise UsageError(msg)
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())  # as `python -m` does
        ref = target
    from pyplugins.emulator._fresh import import_module  # noqa: PLC0415

    try:
        module = import_module(ref)
    except BaseException as err:
        raise _import_failure(target, err) from err
    return module, ref


def _import_failure(target: str, err: BaseException) -> UsageError:
    if isinstance(err, KeyboardInterrupt):
        raise err
    tb = [fr for fr in traceback.extract_tb(err.__traceback__)
          if not fr.filename.startswith("<frozen") and fr.filename != __file__
          and f"{os.sep}importlib{os.sep}" not in fr.filename]
    frames = "Traceback (most recent call last):\n" + "".join(traceback.format_list(tb[-6:]))
    msg = (f"MODULE_OR_FILE {target!r} failed to import: {type(err).__name__}: {err}\n"
           f"{frames.rstrip()}" if tb else
           f"MODULE_OR_FILE {target!r} failed to import: {type(err).__name__}: {err}")
    return UsageError(msg)


def _describe(creator: Any) -> str:
    return f"{creator.name}:{creator.plugin_version}:{creator.plugin_namespace}"


def _module_creators(registry: Any, module: Any) -> List[Any]:
    """Registered creators matching creator objects the module holds (for a re-import, where
    registering again returned False and the first creator stays registered)."""
    from pyplugins.emulator.bases import IPluginCreatorInterface  # noqa: PLC0415

    found = []
    for value in list(vars(module).values()):
        if isinstance(value, IPluginCreatorInterface):
            creator = registry.get_creator(value.name, value.plugin_version,
                                           value.plugin_namespace or "")
            if creator is not None and creator not in found:
                found.append(creator)
    return found


def _find_creator(registry: Any, wanted: Optional[str], new: List[Any]) -> Any:
    known = sorted(_describe(c) for c in registry.all_creators)
    if wanted is None:
        if len(new) == 1:
            return new[0]
        if not new:
            msg = ("the module registered no plugin creator; register one with "
                   "trt.get_plugin_registry().register_creator(...) or name it with --plugin "
                   f"{_PLUGIN_FORM} (registered: {', '.join(known) or 'none'})")
        else:
            msg = ("the module registered several plugin creators; pick one with --plugin "
                   f"NAME[:VERSION[:NAMESPACE]] from: {', '.join(sorted(map(_describe, new)))}")
        raise UsageError(msg)
    name, version, namespace = parse_plugin(wanted)
    creator = registry.get_creator(name, version, namespace)
    if creator is None:
        msg = (f"--plugin {wanted!r}: no creator is registered as (name={name!r}, "
               f"version={version!r}, namespace={namespace!r}); registered "
               f"(NAME:VERSION:NAMESPACE): {', '.join(known) or 'none'}")
        raise UsageError(msg)
    return creator


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
            "  pyplugins check my_pkg.circ_pad --input 1-2-4x3x8x8:float16 --trace",
            _fill("SHAPE is dims joined by 'x'. A dynamic dim is min-opt-max: 1-2-4x3x8x8 is a "
                  "tensor whose first dim is -1 in the network, with an optimization profile "
                  "of min 1, opt 2 and max 4 (enqueue runs at opt)."),
            _fill("VALUE of --attr becomes an ONNX attribute: 3 -> INT, 0.5 -> FLOAT, 1,2 -> "
                  "INTS, 0.5,1 -> FLOATS, anything else (or 'quoted') -> STRING. The plugin "
                  "receives it as TensorRT's ONNX parser passes it (INT32, FLOAT32, "
                  "NUL-terminated CHAR), and only if the creator lists it in field_names."),
            _fill("exit status: 0 no violation; 1 violations found, a plugin step ran past "
                  "--timeout, or --require-gpu and enqueue did not run; 2 usage or environment "
                  "error. With --json, stdout is one JSON object in every case.")]),
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
                        "registers); VERSION defaults to 1, NAMESPACE to ''")
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
    p.add_argument("--fresh-process", action="store_true",
                   help="also deserialize the engine's plugin in a fresh Python process, as "
                        "loading a saved engine does")
    p.add_argument("--trace", action="store_true",
                   help="print the timeline of every callback TensorRT made")
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
    p.set_defaults(run=_run_check)


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


def _run_check(args: argparse.Namespace) -> int:
    from pyplugins._config import knobs, override  # noqa: PLC0415
    from pyplugins.emulator import trampoline  # noqa: PLC0415
    from pyplugins.supervise import supervise  # noqa: PLC0415

    if args.target.endswith(".onnx"):
        from pyplugins.models.commands import run_check_model  # noqa: PLC0415

        return run_check_model(args)
    if not args.inputs:
        msg = (f"give each plugin input with --input {_INPUT_FORM} (repeat it per input, in "
               "order); a check needs the shapes TensorRT would give the plugin")
        raise UsageError(msg)
    specs = [parse_input(text) for text in args.inputs]
    attrs = _parse_attrs(args.attrs)
    if args.plugin is not None:
        parse_plugin(args.plugin)
    try:
        timeout = args.timeout if args.timeout is not None else knobs.check_timeout
    except ValueError as err:
        raise EnvironmentFailure(str(err)) from err
    redirect = (contextlib.redirect_stdout(sys.stderr) if args.json
                else contextlib.nullcontext())
    saved_trt = sys.modules.get("tensorrt")
    try:
        with override(trt="emulator"), redirect:
            outcome = supervise(lambda watch: _check(args, specs, attrs, watch),
                                trampoline.Watch(), timeout)
    finally:  # in-process callers get their `import tensorrt` back
        if saved_trt is None:
            sys.modules.pop("tensorrt", None)
        else:
            sys.modules["tensorrt"] = saved_trt
    name = args.plugin or _printable(args.target).strip("'")
    if outcome.timed_out is not None:
        _ABANDONED.set()
        report = verdicts.timeout_report(name, outcome.timed_out, timeout)
    elif outcome.error is not None:
        report = _escaped(name, outcome.error)
    else:
        report = outcome.value
    if args.require_gpu:
        verdicts.require_gpu(report)
    _print_report(report, as_json=args.json, with_trace=args.trace)
    return EXIT_OK if report.ok else EXIT_VIOLATION


def _escaped(name: str, err: BaseException) -> Any:
    """An error that left the check: the user's (re-raised), the plugin's (a defect), or ours."""
    if isinstance(err, (UsageError, EnvironmentFailure)):
        raise err
    report = verdicts.escaped_error_report(name, err)
    if report is None:
        from pyplugins.emulator.trampoline import what  # noqa: PLC0415

        text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        msg = f"the check failed inside pyplugins (please report it): {what(err)}\n{text}"
        raise EnvironmentFailure(msg) from err
    return report


class EnvironmentFailure(Exception):
    """The machine or the environment cannot run the check (exit 2)."""


#: Set when a step ran past --timeout and its thread was left running (see main()).
_ABANDONED = threading.Event()


def _check(args: argparse.Namespace, specs: List[Dict[str, Any]], attrs: Dict[str, Any],
           watch: Any) -> Any:
    """Import the module with the emulator in place, find the creator, run the lifecycle."""
    from pyplugins.errors import FieldError  # noqa: PLC0415

    _use_emulator()
    from pyplugins.emulator.registry import get_plugin_registry  # noqa: PLC0415

    registry = get_plugin_registry()
    before = {id(c) for c in registry.all_creators}
    from pyplugins.numba_launch import prefer_simulator  # noqa: PLC0415

    prefer_simulator()  # before the module imports numba: no GPU -> numba's CUDA simulator
    saved = watch.begin("import of the plugin module")
    try:
        module, module_ref = _import_plugin_module(args.target)
    finally:
        watch.end(saved)
    new = ([c for c in registry.all_creators if id(c) not in before]
           or _module_creators(registry, module))
    creator = _find_creator(registry, args.plugin, new)
    _warn_unknown_attrs(creator, attrs)
    from pyplugins.emulator import lifecycle  # noqa: PLC0415

    inputs = [lifecycle.TensorSpec(**spec) for spec in specs]
    try:
        report = lifecycle.run(creator, inputs, attrs or None, device=args.device,
                               fresh_process=args.fresh_process, plugin_module=module_ref,
                               trace=args.trace, shape_inputs=args.shape_inputs,
                               aliased_io=args.aliased_io)
    except FieldError as err:  # an --attr value ONNX/TensorRT cannot carry
        raise UsageError(f"--attr: {err}") from err
    except ValueError as err:
        if "PYPLUGINS_MAX_TENSOR_BYTES" in str(err):  # an --input over the size limit
            raise UsageError(f"--input: {err}") from err
        raise
    return report


def _warn_unknown_attrs(creator: Any, attrs: Dict[str, Any]) -> None:
    names = [getattr(f, "name", f) for f in (creator.field_names or [])]
    for name in attrs:
        if name not in names:
            print(f"pyplugins check: warning: --attr {name}: not in the creator's field_names "
                  f"({', '.join(names) or 'none'}); TensorRT's ONNX parser would not pass it to "
                  "create_plugin", file=sys.stderr)


def _print_report(report: Any, *, as_json: bool, with_trace: bool) -> None:
    trace = getattr(report, "trace", None)
    if as_json:
        data = report.to_dict()
        if with_trace:
            data["trace"] = trace.to_json() if trace is not None else []
        data.setdefault("exit_status", EXIT_OK if report.ok else EXIT_VIOLATION)
        _write(sys.stdout, json.dumps(data, indent=2, default=_json_default))
        return
    _write(sys.stdout, report.format())
    if with_trace and trace is not None:
        _write(sys.stdout, "\nCallback timeline:\n" + trace.format_timeline())


def _write(stream: Any, text: str) -> None:
    """Print ``text``; characters the stream cannot encode (lone surrogates) are escaped."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write(text.encode(encoding, "backslashreplace").decode(encoding) + "\n")
    stream.flush()


def _fail(command: str, message: str, as_json: bool) -> int:
    """Report a usage or environment error: stderr, and a JSON object on stdout for --json."""
    _write(sys.stderr, f"pyplugins {command}: error: {message}")
    if as_json:
        _write(sys.stdout, json.dumps({"ok": False, "exit_status": EXIT_USAGE, "error": message,
                                       "violations": [], "errors": []}, indent=2))
    return EXIT_USAGE


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


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``pyplugins`` command; returns the exit status (0, 1 or 2).

    Args:
        argv: the arguments after the program name (default: ``sys.argv[1:]``). Without
            ``argv`` this is the process's command: after a ``--timeout`` it ends the process
            (``os._exit``) once the report is written, so the abandoned step cannot keep it
            alive; with ``argv`` the caller gets the status and the step runs on in a daemon
            thread.
    """
    parser = build_parser()
    argv = list(argv) if argv is not None else None
    wants_json = "--json" in (argv if argv is not None else sys.argv[1:])
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse: --help/--version (0) or a usage error (2)
        code = int(stop.code or 0) if not isinstance(stop.code, str) else EXIT_USAGE
        if code and wants_json:
            _write(sys.stdout, json.dumps({"ok": False, "exit_status": code, "violations": [],
                                           "errors": [], "error": "invalid command line (see "
                                           "stderr)"}, indent=2))
        return code
    if getattr(args, "run", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    as_json = bool(getattr(args, "json", False))
    try:
        code = args.run(args)
    except (UsageError, EnvironmentFailure) as err:
        code = _fail(args.command, str(err), as_json)
    if argv is None and _ABANDONED.is_set():
        # The process's own command and a plugin step is still running in an abandoned thread
        # (pyplugins.supervise): end now, with the report written, rather than wait on it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
