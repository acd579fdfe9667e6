"""Error reports for plugin callbacks: name the plugin, layer, method and arguments of an exception
before TensorRT swallows it into an anonymous stderr line.

:class:`pyplugins.Plugin` wraps every protocol method with :func:`wrap_methods`;
:mod:`pyplugins.runtime.creator` calls :func:`report` from ``create_plugin`` and ``deserialize_plugin``.
A report is one ERROR line on ``logging.getLogger("pyplugins")`` (or TensorRT's ``Logger`` under
real TensorRT when logging is not configured), once per exception, with the traceback only when
that logger is enabled for DEBUG; the exception is re-raised unchanged.

Example:
    >>> from pyplugins.runtime.error_reports import describe, summarize
    >>> class Pad:
    ...     name, version, namespace = "CircPadDoc", "2", ""
    >>> describe(Pad, layer="pad_1")
    "'CircPadDoc' version '2' (layer 'pad_1')"
    >>> summarize((0, [1, 2], "x" * 80))
    "0, [1, 2], 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."
"""

from __future__ import annotations

import functools
import logging
import traceback
from typing import Any, Callable, Iterable, Mapping, Optional

import pyplugins.trt as trt
from pyplugins.emulator.real import is_emulator
from pyplugins.errors import PyPluginsError

logger = logging.getLogger("pyplugins")

#: Instance attribute holding configure_plugin's last error (C++ ignores it; enqueue's report
#: mentions it).
_CONFIG_ERROR = "__pp_configure_error__"

#: ``post(plugin, result, args)``: checks or converts a method's return value (may raise).
PostCheck = Callable[[Any, Any, tuple], Any]


def wrap_methods(cls: type, methods: Iterable[str], post: Mapping[str, PostCheck]) -> None:
    """Wrap the ``methods`` that ``cls`` itself defines so their exceptions are reported.

    A method already wrapped (inherited through ``super()``) is left alone, and an exception is
    reported once however many wrappers it passes. ``post[method]``, when present, checks or
    converts the return value inside the wrapper, so its errors are reported too. ``enqueue``'s
    wrapper is a bare try/except that passes TensorRT's six arguments positionally (the hot
    path; TensorRT's binding calls ``enqueue`` with six positional arguments, protocol §3).

    Args:
        cls: the plugin class.
        methods: the protocol method names to wrap.
        post: return-value checks by method name.

    Example:
        >>> class Op:
        ...     name = "OpDoc"
        ...     def initialize(self):
        ...         raise ValueError("no device")
        >>> wrap_methods(Op, ("initialize",), {})
        >>> Op().initialize()   # reported on the "pyplugins" logger, then re-raised
        Traceback (most recent call last):
        ...
        ValueError: no device
    """
    for method in methods:
        fn = vars(cls).get(method)
        if callable(fn) and not getattr(fn, "__pp_wrapped__", False):
            setattr(cls, method, _wrap(method, fn, post.get(method)))


def reports_itself(fn: Any) -> Any:
    """Mark ``fn``, a protocol method that calls :func:`report` itself, so that
    :func:`wrap_methods` leaves it unwrapped (a hot path spared a layer); returns ``fn``.

    Example:
        >>> @reports_itself
        ... def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        ...     pass
        >>> class Op:
        ...     enqueue = enqueue
        >>> wrap_methods(Op, ("enqueue",), {})
        >>> Op.enqueue is enqueue
        True
    """
    fn.__pp_wrapped__ = True
    return fn


def _wrap(method: str, fn: Any, post: Optional[PostCheck]) -> Any:
    if method == "enqueue":  # the hot path: TensorRT's six positional arguments and the try
        def wrapper(self: Any, input_desc: Any, output_desc: Any, inputs: Any, outputs: Any,
                    workspace: Any, stream: Any) -> Any:
            try:
                return fn(self, input_desc, output_desc, inputs, outputs, workspace, stream)
            except Exception as err:
                report(self, method, (input_desc, output_desc, inputs, outputs, workspace,
                                      stream), err)
                raise
    else:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                result = fn(self, *args, **kwargs)
                result = result if post is None else post(self, result, args)
            except Exception as err:
                if method == "configure_plugin":  # C++ ignores it: remember for enqueue's report
                    self.__dict__[_CONFIG_ERROR] = f"{type(err).__name__}: {err}"
                report(self, method, args, err)
                raise
            if method == "configure_plugin":
                self.__dict__.pop(_CONFIG_ERROR, None)
            return result
    functools.update_wrapper(wrapper, fn)
    wrapper.__pp_wrapped__ = True  # type: ignore[attr-defined]
    return wrapper


def describe(plugin: Any, layer: Optional[str] = None) -> str:
    """``'CircPad' (layer 'pad_1')``, with version and namespace when not the defaults.

    ``plugin`` is a plugin instance or class; ``layer`` defaults to the instance's layer name.
    """
    cls = plugin if isinstance(plugin, type) else type(plugin)
    text = repr(getattr(cls, "name", "") or cls.__name__)
    if getattr(cls, "version", "1") != "1":
        text += f" version {cls.version!r}"
    if getattr(cls, "namespace", ""):
        text += f" namespace {cls.namespace!r}"
    if layer is None and not isinstance(plugin, type):
        layer = getattr(plugin, "__dict__", {}).get("layer_name")
    return text + (f" (layer {layer!r})" if layer else "")


def report(plugin: Any, method: str, args: tuple, err: BaseException,
           layer: Optional[str] = None) -> None:
    """Report an exception raised by a plugin (or creator) callback, once per exception.

    ``plugin`` is the instance, or the plugin class for creator callbacks (then give ``layer``).
    """
    if getattr(err, "__pp_reported__", False):
        return
    try:
        err.__pp_reported__ = True  # type: ignore[attr-defined]
    except AttributeError:
        pass
    msg = (f"plugin {describe(plugin, layer)}: {method}({summarize(args)}) raised "
           f"{type(err).__name__}: {err}")
    earlier = getattr(plugin, "__dict__", {}).get(_CONFIG_ERROR)
    if earlier and method == "enqueue":
        msg += f" [configure_plugin had failed before: {earlier}]"
    # One line names what TensorRT's own "[ERROR] Exception caught in X()" line does not; the
    # traceback is for debugging (DEBUG level), and pyplugins' own errors explain themselves.
    debug = not isinstance(err, PyPluginsError) and logger.isEnabledFor(logging.DEBUG)
    if is_emulator(trt) or logger.hasHandlers():
        logger.error(msg)
        if debug:
            logger.debug("traceback of the error above:", exc_info=err)
    else:
        tb = "\n" + "".join(traceback.format_exception(type(err), err, err.__traceback__)) \
            if debug else ""
        _trt_logger().log(trt.Logger.ERROR, f"[pyplugins] {msg}{tb}")


@functools.lru_cache(maxsize=1)
def _trt_logger() -> Any:
    return trt.Logger(trt.Logger.ERROR)


def summarize(args: Any, limit: int = 300) -> str:
    """A short, readable rendering of callback arguments (descriptors as ``HALF[2, 3]``)."""
    text = ", ".join(_one(a) for a in args)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _one(value: Any, depth: int = 0) -> str:
    try:
        if hasattr(value, "desc") and hasattr(value, "max"):  # DynamicPluginTensorDesc
            return (f"{_one(value.desc)} min={list(value.min)} max={list(value.max)}")
        if hasattr(value, "dims") and hasattr(value, "format"):  # PluginTensorDesc
            fmt = "" if value.format == trt.TensorFormat.LINEAR else f"/{value.format.name}"
            return f"{value.type.name}{list(value.dims)}{fmt}"
        if isinstance(value, trt.DimsExprs):
            return "DimsExprs[" + ", ".join(_expr(e) for e in value) + "]"
        if isinstance(value, trt.IExprBuilder):
            return "expr_builder"
        if isinstance(value, (list, tuple)) and depth < 2:
            inner = [_one(v, depth + 1) for v in list(value)[:8]]
            return "[" + ", ".join(inner) + (", ..." if len(value) > 8 else "") + "]"
        if hasattr(value, "name") and type(value).__name__ in ("DataType", "TensorFormat"):
            return value.name
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."
    except Exception:  # noqa: BLE001 - a summary must never fail the report
        return f"<{type(value).__name__}>"


def _expr(e: Any) -> str:
    if e is None:
        return "None"
    return str(e.get_constant_value()) if e.is_constant() else "?"


__all__ = ["describe", "logger", "report", "reports_itself", "summarize", "wrap_methods"]
