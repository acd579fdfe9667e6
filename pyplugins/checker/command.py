"""The work of ``pyplugins check``: parse its inputs, import the plugin module under the emulator,
find the creator, run the lifecycle under the supervisor and print the report.

Exit statuses: :data:`EXIT_OK` (clean), :data:`EXIT_VIOLATION` (defects, a step past
``--timeout``, or ``--require-gpu`` without an enqueue run) and :data:`EXIT_USAGE` (a
:class:`UsageError` or :class:`EnvironmentFailure`). ``pyplugins.cli`` parses the command line and
calls :func:`run_check`.

Example:
    >>> parse_plugin("CircPad:2")
    ('CircPad', '2', '')
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins.checker import verdicts

__all__ = ["ABANDONED", "EXIT_OK", "EXIT_USAGE", "EXIT_VIOLATION", "EnvironmentFailure",
           "UsageError", "parse_input", "parse_plugin", "run_check", "write"]

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2

_INPUT_FORM = ("SHAPE:DTYPE, e.g. 2x3x8x8:float32, or with a dynamic dim given as "
               "min-opt-max, e.g. 1-2-4x3x8x8:float16")
_PLUGIN_FORM = ("NAME[:VERSION[:NAMESPACE]], e.g. CircPad or CircPad:1 or CircPad:1:my_ns, or "
                "NAMESPACE::NAME for a tensorrt.plugin (QDP) plugin")
class UsageError(Exception):
    """A command-line argument is malformed or names something that does not exist (exit 2)."""


class EnvironmentFailure(Exception):
    """The machine or the environment cannot run the check (exit 2)."""


#: Set when a step ran past --timeout and its thread was left running (``pyplugins.cli.main``
#: then ends the process).
ABANDONED = threading.Event()


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
        datatype = datatype_from_text(text)
    except ValueError as err:
        raise UsageError(f"--input {spec!r}: {err}") from err
    row = dtypes.info(datatype)
    return row.numpy if row.numpy is not None else datatype


def parse_input(text: str) -> Dict[str, Any]:
    """``SHAPE:DTYPE`` -> ``dict(shape, dtype, min, opt, max)`` for ``TensorSpec``.

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
    from pyplugins.checker._fresh import import_module  # noqa: PLC0415

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

    from pyplugins.checker.lifecycle_qdp import module_creators  # noqa: PLC0415

    found = module_creators(module)  # tensorrt.plugin (QDP) plugins it defines
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
    qdp_ns, sep, qdp_name = wanted.partition("::")
    if creator is None and sep and qdp_name and ":" not in qdp_name:
        creator = registry.get_creator(qdp_name, "1", qdp_ns)  # a QDP id, NAMESPACE::NAME
    if creator is None:
        msg = (f"--plugin {wanted!r}: no creator is registered as (name={name!r}, "
               f"version={version!r}, namespace={namespace!r}); registered "
               f"(NAME:VERSION:NAMESPACE): {', '.join(known) or 'none'}")
        raise UsageError(msg)
    return creator


# -- the check ---------------------------------------------------------------------------------------

def run_check(args: argparse.Namespace) -> int:
    """``pyplugins check MODULE_OR_FILE ...`` for the parsed ``args``: the report is printed and
    the exit status returned (:data:`EXIT_OK` or :data:`EXIT_VIOLATION`).

    Raises:
        UsageError: a malformed ``--input``/``--attr``/``--plugin``, or a module that cannot be
            imported or names no such creator (exit 2).
        EnvironmentFailure: the environment cannot run the check (exit 2).
    """
    from pyplugins._config import knobs, override  # noqa: PLC0415
    from pyplugins.emulator import trampoline  # noqa: PLC0415
    from pyplugins.checker.supervise import supervise  # noqa: PLC0415

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
        ABANDONED.set()
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


def _check(args: argparse.Namespace, specs: List[Dict[str, Any]], attrs: Dict[str, Any],
           watch: Any) -> Any:
    """Import the module with the emulator in place, find the creator, run the lifecycle."""
    from pyplugins.errors import FieldError  # noqa: PLC0415

    _use_emulator()
    from pyplugins.emulator.registry import get_plugin_registry  # noqa: PLC0415

    registry = get_plugin_registry()
    before = {id(c) for c in registry.all_creators}
    from pyplugins.runtime.numba_launch import prefer_simulator  # noqa: PLC0415

    prefer_simulator()  # before the module imports numba: no GPU -> numba's CUDA simulator
    saved = watch.begin("import of the plugin module")
    try:
        module, module_ref = _import_plugin_module(args.target)
    finally:
        watch.end(saved)
    for name in getattr(args, "calls", None) or []:  # --call: the module's own set-up functions
        _call_setup(module, name, args.target)
    new = ([c for c in registry.all_creators if id(c) not in before]
           or _module_creators(registry, module))
    creator = _find_creator(registry, args.plugin, new)
    qdp = getattr(args, "qdp", None)
    if qdp is not None and not _is_quick(creator):
        msg = f"--qdp {qdp}: {_describe(creator)} is not a tensorrt.plugin (QDP) plugin"
        raise UsageError(msg)
    _warn_unknown_attrs(creator, {k: v for k, v in attrs.items() if not _is_quick(creator)
                                  or k not in ("aot", "plugin_namespace")})
    from pyplugins.checker import lifecycle  # noqa: PLC0415
    from pyplugins.emulator.specs import TensorSpec  # noqa: PLC0415

    inputs = [TensorSpec(**spec) for spec in specs]
    try:
        report = lifecycle.run(creator, inputs, attrs or None, device=args.device,
                               fresh_process=args.fresh_process, plugin_module=module_ref,
                               trace=args.trace, shape_inputs=args.shape_inputs,
                               aliased_io=args.aliased_io, qdp=qdp)
    except FieldError as err:  # an --attr value ONNX/TensorRT cannot carry
        raise UsageError(f"--attr: {err}") from err
    except ValueError as err:
        if "PYPLUGINS_MAX_TENSOR_BYTES" in str(err):  # an --input over the size limit
            raise UsageError(f"--input: {err}") from err
        raise
    return report


def _is_quick(creator: Any) -> bool:
    from pyplugins.emulator.bases_quick import IPluginCreatorV3Quick  # noqa: PLC0415

    return isinstance(creator, IPluginCreatorV3Quick)


def _call_setup(module: Any, name: str, target: str) -> None:
    """``--call NAME``: run ``module.NAME()``, as the module's own script would (NVIDIA's QDP
    samples define ``impl``/``autotune`` inside ``enable_*()`` helpers)."""
    func = getattr(module, name, None)
    if not callable(func):
        names = sorted(n for n, v in vars(module).items()
                       if callable(v) and not n.startswith("_") and not isinstance(v, type))
        msg = (f"--call {name!r}: {target!r} has no function of that name (functions: "
               f"{', '.join(names) or 'none'})")
        raise UsageError(msg)
    try:
        func()
    except Exception as err:
        msg = (f"--call {name!r} raised {type(err).__name__}: {err} (it runs with no "
               "arguments, after the module is imported)")
        raise UsageError(msg) from err


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
        write(sys.stdout, json.dumps(data, indent=2, default=_json_default))
        return
    write(sys.stdout, report.format())
    if with_trace and trace is not None:
        write(sys.stdout, "\nCallback timeline:\n" + trace.format_timeline())


def write(stream: Any, text: str) -> None:
    """Print ``text``; characters the stream cannot encode (lone surrogates) are escaped."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write(text.encode(encoding, "backslashreplace").decode(encoding) + "\n")
    stream.flush()


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
