"""The check of ``pyplugins check``, in the process that runs the plugin: parse the inputs,
import the plugin module under the emulator, find the creator and run the lifecycle.

:mod:`pyplugins.checker.check_runner` runs this in a child process (:mod:`pyplugins.checker.check_child`) or,
with ``--in-process``, in its own. Exit statuses: :data:`EXIT_OK` (clean), :data:`EXIT_VIOLATION`
(defects) and :data:`EXIT_USAGE` (a :class:`UsageError` or :class:`EnvironmentFailure`).

Example:
    >>> parse_plugin("CircPad:2")
    ('CircPad', '2', '')
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from pyplugins.errors import PyPluginsError

__all__ = ["EXIT_OK", "EXIT_USAGE", "EXIT_VIOLATION", "EnvironmentFailure", "UsageError",
           "interface_of", "load_creator", "parse_attrs", "parse_input", "parse_plugin",
           "printable", "report_for_error", "run_lifecycle", "write"]

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2

_PLUGIN_FORM = ("NAME[:VERSION[:NAMESPACE]], e.g. CircPad or CircPad:1 or CircPad:1:my_ns, or "
                "NAMESPACE::NAME for a tensorrt.plugin (QDP) plugin")


class UsageError(PyPluginsError, ValueError):
    """A command-line argument is malformed, names something that does not exist, or is refused
    by the plugin (a ``FieldError`` for an ``--attr``, a ``ShapeError`` for the ``--input``
    shapes): exit 2."""


class EnvironmentFailure(PyPluginsError, RuntimeError):
    """The machine or the environment cannot run the check (exit 2)."""


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


def parse_input(text: str) -> Dict[str, Any]:
    """``--input SHAPE:DTYPE`` -> ``dict(shape, dtype, min, opt, max)`` for ``TensorSpec``, through
    the one grammar of :meth:`pyplugins.emulator.specs.TensorSpec.parse` (the dtype is required
    on the command line).

    A static dim is an int; a dynamic dim is ``min-opt-max`` and becomes -1 in ``shape`` with the
    profile in ``min``/``opt``/``max`` (which are None when every dim is static). ``dtype`` is
    NumPy's dtype where NumPy has one, else the ``DataType`` (``bfloat16``).

    Raises:
        UsageError: the text is malformed; the message names the ``--input``.

    Example:
        >>> spec = parse_input("1-2-4x3:float16")
        >>> spec["shape"], spec["min"], spec["opt"], spec["max"], spec["dtype"].name
        ((-1, 3), (1, 3), (2, 3), (4, 3), 'float16')
    """
    from pyplugins.emulator.specs import TensorSpec  # noqa: PLC0415

    try:
        spec = TensorSpec.parse(text, what="--input", dtype_required=True)
    except ValueError as err:
        raise UsageError(str(err)) from None
    dynamic = any(d < 0 for d in spec.shape)
    return {"shape": spec.shape, "dtype": spec.dtype, "min": spec.min if dynamic else None,
            "opt": spec.opt if dynamic else None, "max": spec.max if dynamic else None}


def parse_attrs(items: Sequence[str]) -> Dict[str, Any]:
    """``NAME=VALUE`` items -> ``{name: value}``, each value as an ONNX attribute would carry it.

    Example:
        >>> parse_attrs(["pads=1,1,2,2", "mode=wrap"])
        {'pads': [1, 1, 2, 2], 'mode': 'wrap'}
    """
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
            msg = (f"--attr {printable(item)}: not valid UTF-8 (the command line held a byte "
                   "sequence that is not text); ONNX attribute names and strings are UTF-8")
            raise UsageError(msg) from err
        attrs[name] = value_from_cli(value)
    return attrs


def printable(text: str) -> str:
    """``repr(text)`` with lone surrogates escaped, safe to print on any stream.

    Example:
        >>> print(printable("a" + chr(0xDCFF)))
        'a\\udcff'
    """
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

    found = []
    if "pyplugins.emulator.plugin" in sys.modules:  # the module may define QDP plugins
        from pyplugins.checker.lifecycle_qdp import module_creators  # noqa: PLC0415

        found = module_creators(module)
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

def interface_of(creator: Any) -> str:
    """The plugin interface a creator's plugins are driven as: ``"IPluginV3"`` for an
    ``IPluginCreatorV3One``, else ``"IPluginV2DynamicExt"`` (what ``lifecycle.run`` does).

    Example:
        >>> interface_of(object())
        'IPluginV2DynamicExt'
    """
    from pyplugins.emulator.bases_v3 import IPluginCreatorV3One  # noqa: PLC0415

    return "IPluginV3" if isinstance(creator, IPluginCreatorV3One) else "IPluginV2DynamicExt"


def load_creator(args: argparse.Namespace, attrs: Dict[str, Any], watch: Any) -> Tuple[Any, str]:
    """Import ``args.target`` with the emulator as ``tensorrt`` and find the creator to check.

    The import is a step on ``watch`` (``"import of the plugin module"``), so a time limit and a
    crash report can name it. Returns ``(creator, module_ref)``, ``module_ref`` being what
    ``lifecycle.run(plugin_module=...)`` and the fresh process re-import.

    Raises:
        UsageError: the module cannot be imported, or registers no such creator.
    """
    _use_emulator()
    from pyplugins.emulator.registry import get_plugin_registry  # noqa: PLC0415
    from pyplugins.runtime.numba_launch import prefer_simulator  # noqa: PLC0415

    registry = get_plugin_registry()
    before = {id(c) for c in registry.all_creators}
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
    return creator, module_ref


def run_lifecycle(args: argparse.Namespace, creator: Any, module_ref: str,
                  specs: List[Dict[str, Any]], attrs: Dict[str, Any]) -> Any:
    """``lifecycle.run`` for the command's arguments; the plugin refusing them is a usage error.

    Raises:
        UsageError: as many ``--input`` as the plugin's ``reference()`` does not take, an
            ``--attr`` the ONNX parser or the plugin refuses (a ``FieldError``), or ``--input``
            shapes the plugin refuses (a ``ShapeError``); see :mod:`pyplugins.checker.input_refusals`.
    """
    from pyplugins.checker import input_refusals  # noqa: PLC0415
    from pyplugins.checker import lifecycle  # noqa: PLC0415
    from pyplugins.emulator import trampoline  # noqa: PLC0415
    from pyplugins.emulator.specs import TensorSpec  # noqa: PLC0415
    from pyplugins.errors import FieldError  # noqa: PLC0415

    wrong_count = input_refusals.input_count_error(creator, len(specs))
    if wrong_count is not None:
        raise UsageError(wrong_count)
    refusals = input_refusals.Refusals(bool(attrs))
    trampoline.listeners.append(refusals)
    try:
        report = lifecycle.run(creator, [TensorSpec(**spec) for spec in specs], attrs or None,
                               device=args.device, fresh_process=args.fresh_process,
                               plugin_module=module_ref,
                               trace=args.trace or bool(getattr(args, "trace_html", None)),
                               shape_inputs=args.shape_inputs, aliased_io=args.aliased_io,
                               qdp=getattr(args, "qdp", None))
    except FieldError as err:  # an --attr value ONNX/TensorRT cannot carry
        raise UsageError(f"--attr: {err}") from err
    except ValueError as err:
        if "PYPLUGINS_MAX_TENSOR_BYTES" in str(err):  # an --input over the size limit
            raise UsageError(f"--input: {err}") from err
        raise
    finally:
        trampoline.listeners.remove(refusals)
    if refusals.message is not None:
        raise UsageError(refusals.message)
    if getattr(args, "trace_html", None):
        from pyplugins.checker.trace_html import write_page  # noqa: PLC0415

        try:
            write_page(args.trace_html, getattr(report, "trace", None), report)
        except OSError as err:
            raise UsageError(f"--trace-html {args.trace_html!r}: cannot write it: {err}") from err
    return report


def report_for_error(name: str, err: BaseException) -> Any:
    """The report of an error that left the check: the user's and the environment's are
    re-raised, plugin code's becomes a defect report, and pyplugins' own an
    :class:`EnvironmentFailure` asking for a bug report.

    Example:
        >>> report_for_error("X", UsageError("--input: bad"))
        Traceback (most recent call last):
        ...
        pyplugins.checker.command.UsageError: --input: bad
    """
    from pyplugins.checker import verdicts  # noqa: PLC0415 - the emulator, only when needed

    if isinstance(err, (UsageError, EnvironmentFailure)):
        raise err
    report = verdicts.escaped_error_report(name, err)
    if report is None:
        from pyplugins.emulator.trampoline import what  # noqa: PLC0415

        text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        msg = f"the check failed inside pyplugins (please report it): {what(err)}\n{text}"
        raise EnvironmentFailure(msg) from err
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


def write(stream: Any, text: str) -> None:
    """Print ``text`` and flush; characters the stream cannot encode (lone surrogates) are
    escaped.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> write(out, "done")
        >>> out.getvalue()
        'done\\n'
    """
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write(text.encode(encoding, "backslashreplace").decode(encoding) + "\n")
    stream.flush()
