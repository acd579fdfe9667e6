"""The C++ side of the bindings: every call TensorRT makes into plugin code goes through here.

Each function mirrors one C++ virtual of TensorRT's trampoline (``pyPlugin.cpp``, §1.3-§1.4): it
looks the Python override up, calls it, and on an exception or an uninterpretable return value
writes ``[ERROR] ...`` to file descriptor 2 and returns TensorRT's fallback value. Nothing is ever
raised back to the caller: like pybind11, the trampoline catches every ``BaseException``
(``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit`` included, §12) and prints pybind's
``what()``: ``Type: message`` and the ``At:`` frames, deepest first. Observers (the lifecycle
driver, the trace) subscribe to :data:`listeners` to see every call, its result and any swallowed
error. :data:`listeners` is per thread (a context variable), so runs in different threads never
see each other's calls; a :class:`Watch` installed with :func:`watching` shows another thread
which callback is running and since when (the CLI's time limit reads it).

Example:
    >>> from pyplugins import emulator as trt
    >>> from pyplugins.emulator import trampoline
    >>> class Bad(trt.IPluginV2DynamicExt):
    ...     def __init__(self):
    ...         trt.IPluginV2DynamicExt.__init__(self)
    ...     def get_output_datatype(self, index, input_types):
    ...         raise ValueError("boom")
    >>> trampoline.get_output_data_type(Bad(), 0, [trt.DataType.HALF]).name  # doctest: +SKIP
    'FLOAT'
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from pyplugins.emulator.bases import IPluginCreator, IPluginCreatorInterface, IPluginV2DynamicExt
from pyplugins.emulator.bases import cpp_stderr, set_size_path
from pyplugins.emulator.descs import DynamicPluginTensorDesc, PluginTensorDesc
from pyplugins.emulator.dims import DimsExprs, IExprBuilder
from pyplugins.emulator.enums import DataType, fresh
from pyplugins.emulator.plugin_field import PluginFieldCollection_
from pyplugins.errors import PyPluginsError

#: Frames from files here are the emulator's stand-ins for TensorRT's C++ (left out of ``At:``).
_EMULATOR_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

_EMULATOR_BASES = (IPluginV2DynamicExt, IPluginCreator, IPluginCreatorInterface, object)


@dataclass
class CallEvent:
    """One call from TensorRT into plugin code.

    Attributes:
        obj: the plugin or creator called.
        method: the Python method name (``"enqueue"``).
        args: the positional arguments passed.
        result: what the C++ side got back (after fallbacks).
        error: the message printed when the call failed, else None.
        seconds: wall time of the Python call.
        extra: notes on the call: ``default`` (no override, the default used),
            ``returned_none`` (the override returned None where the binding expects a value).
    """

    obj: Any
    method: str
    args: tuple
    result: Any = None
    error: Optional[str] = None
    seconds: float = 0.0
    extra: Dict[str, Any] = field(default_factory=dict)


class _ContextListeners:
    """A list of listeners per context (per thread): ``append``/``insert``/``remove`` change the
    current context's list only, so concurrent lifecycle runs never record each other's calls."""

    def __init__(self) -> None:
        self._var: contextvars.ContextVar[List[Callable[[CallEvent], None]]] = (
            contextvars.ContextVar("pyplugins_trampoline_listeners"))

    def _list(self) -> List[Callable[[CallEvent], None]]:
        try:
            return self._var.get()
        except LookupError:
            own: List[Callable[[CallEvent], None]] = []
            self._var.set(own)
            return own

    def append(self, listener: Callable[[CallEvent], None]) -> None:
        self._list().append(listener)

    def insert(self, index: int, listener: Callable[[CallEvent], None]) -> None:
        self._list().insert(index, listener)

    def remove(self, listener: Callable[[CallEvent], None]) -> None:
        self._list().remove(listener)

    def __iter__(self) -> Iterator[Callable[[CallEvent], None]]:
        return iter(list(self._list()))

    def __contains__(self, listener: object) -> bool:
        return listener in self._list()

    def __len__(self) -> int:
        return len(self._list())


#: Callables receiving each :class:`CallEvent` after the call returns, per thread.
listeners = _ContextListeners()


class Watch:
    """What the watched thread is doing, readable from any thread.

    Attributes:
        current: ``(method, started)`` of the callback running now (``time.monotonic()``), or
            None between callbacks. Set by the trampoline in the thread that installed the watch
            with :func:`watching`; anyone may set it around other slow steps (the CLI does for
            the module import).
    """

    def __init__(self) -> None:
        self.current: Optional[tuple] = None
        self._lock = threading.Lock()

    def begin(self, method: str) -> Optional[tuple]:
        with self._lock:
            saved, self.current = self.current, (method, time.monotonic())
        return saved

    def end(self, saved: Optional[tuple]) -> None:
        with self._lock:
            self.current = saved

    def running(self) -> Optional[tuple]:
        """``(method, seconds running)`` of the current callback, or None."""
        with self._lock:
            current = self.current
        return None if current is None else (current[0], time.monotonic() - current[1])


_watch: contextvars.ContextVar[Optional[Watch]] = contextvars.ContextVar(
    "pyplugins_trampoline_watch", default=None)


@contextlib.contextmanager
def watching(watch: Watch) -> Iterator[Watch]:
    """Report this thread's callbacks to ``watch`` inside the block.

    Example:
        >>> w = Watch()
        >>> with watching(w):
        ...     w.running() is None
        True
    """
    token = _watch.set(watch)
    try:
        yield watch
    finally:
        _watch.reset(token)

#: Objects handed to TensorRT by create_plugin/deserialize_plugin/clone, held until destroy (§2.2).
held: Dict[int, Any] = {}


def overridden(obj: Any, name: str) -> Optional[Callable[..., Any]]:
    """The bound method ``name`` if a Python subclass defines it, else None (pybind get_override)."""
    for klass in type(obj).__mro__:
        if klass in _EMULATOR_BASES:
            return None
        if name in vars(klass):
            return getattr(obj, name)
    return None


class _Missing(PyPluginsError):
    pass


def _safe_text(text: Any) -> str:
    """``text`` as pybind's UTF-8 encoding with backslashreplace leaves it."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def what(err: BaseException) -> str:
    """pybind11's ``error_already_set::what()`` for ``err``: ``Type: message``, then
    ``\\n\\nAt:\\n`` and one ``  file(line): function`` line per frame, deepest first (§12).

    A ``__str__`` that raises gives ``<MESSAGE UNAVAILABLE DUE TO ANOTHER EXCEPTION>`` and an
    empty message ``<EMPTY MESSAGE>``, as pybind11 2.11+ writes them.

    Example:
        >>> what(ValueError("boom"))
        'ValueError: boom'
    """
    unavailable = ""
    try:
        message = _safe_text(str(err))
    except BaseException as inner:  # noqa: BLE001 - pybind11 survives any __str__
        message = "<MESSAGE UNAVAILABLE DUE TO ANOTHER EXCEPTION>"
        unavailable = f"{type(inner).__name__}"
    if not message:
        message = "<EMPTY MESSAGE>"
    text = f"{type(err).__name__}: {message}"
    frames = []
    tb = err.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith(_EMULATOR_DIR):  # TensorRT's side is C++: no frames
            frames.append(f"  {_safe_text(code.co_filename)}({tb.tb_lineno}): {code.co_name}\n")
        tb = tb.tb_next
    if frames:
        # pybind walks f_back from the deepest frame; past the callback those are the caller's
        # frames (the script that called build), which the emulator's driver is not: left out.
        text += "\n\nAt:\n" + "".join(reversed(frames))
    if unavailable:
        text += ("" if frames else "\n") + f"\nMESSAGE UNAVAILABLE DUE TO EXCEPTION: {unavailable}"
    return text


def invoke(obj: Any, method: str, args: tuple, *, required: bool, default: Any,
            fallback: Any, interpret: Optional[Callable[[Any], Any]] = None,
            as_type: str = "", thrown: bool = False) -> Any:
    """Call ``obj.method(*args)`` the way the trampoline does; never raises."""
    event = CallEvent(obj, method, args)
    fn = overridden(obj, method)
    watch = _watch.get()
    saved = watch.begin(method) if watch is not None else None
    start = time.perf_counter()
    if fn is None and not required:
        event.result = default
        event.extra["default"] = True
    else:
        try:
            if fn is None:
                cpp_stderr(f"Method: {method} was not overriden. Please provide an "
                            "implementation for this method.")
                raise _Missing(f"no implementation provided for {method}()")
            raw = fn(*args)
        except BaseException as err:  # noqa: BLE001 - pybind wraps every Python exception (§12)
            # A missing override is a RuntimeError thrown outside the call's inner try, so the
            # binding reports it as "caught in" even where a raising override is "thrown from".
            text = f"RuntimeError: {err}" if isinstance(err, _Missing) else what(err)
            inner = thrown and not isinstance(err, _Missing)
            where = f"thrown from {method}()" if inner else f"caught in {method}():"
            event.error = f"[ERROR] Exception {where} {text}"
            event.result = fallback
        else:
            event.result = raw
            if raw is None and interpret is not None:
                event.extra["returned_none"] = True  # pybind11 may read None as a value (§12)
            if interpret is not None:
                try:
                    event.result = interpret(raw)
                except BaseException:  # noqa: BLE001 - an __index__/__bool__ may raise anything
                    event.error = (f"[ERROR] Return value of {method}() could not be "
                                   f"interpreted as {as_type}")
                    event.result = fallback
        if event.error is not None:
            cpp_stderr(event.error)
    event.seconds = time.perf_counter() - start
    if watch is not None:
        watch.end(saved)
    for listener in list(listeners):
        listener(event)
    return event.result


def _as(kind: type) -> Callable[[Any], Any]:
    def interpret(value: Any) -> Any:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TypeError(value)
        return value
    return interpret


class Failed:
    """The fallback of a call whose Python side raised: C++ returns -1 (or nullptr).

    Example:
        >>> FAILED, status_of(FAILED), status_of([1])
        (-1, -1, 0)
    """

    def __repr__(self) -> str:
        return "-1"


#: The one :class:`Failed`: the V3 and Quick trampolines pass it as ``invoke``'s ``fallback``.
FAILED = Failed()


def status_of(result: Any) -> int:
    """The C++ status of a call: -1 when it fell back to :data:`FAILED`, else 0."""
    return -1 if result is FAILED else 0


def as_int32(value: Any) -> int:
    """pybind11's ``int32_t`` caster: ints and ``__index__`` types in range; not floats, str or
    bytes.

    Example:
        >>> as_int32(7)
        7
    """
    if isinstance(value, (float, str, bytes)):
        raise TypeError(value)
    result = int(value.__index__())
    if not -2**31 <= result < 2**31:
        raise OverflowError(value)
    return result


def list_of(kind: Any, item: Optional[Callable[[Any], Any]] = None) -> Callable[[Any], list]:
    """pybind11's ``std::vector<T>`` caster: any sequence (not str/bytes) whose items are
    ``kind`` instances, or, given ``item``, whose items ``item`` casts.

    Example:
        >>> list_of(int)((1, 2))
        [1, 2]
    """
    def interpret(value: Any) -> list:
        if isinstance(value, (str, bytes, bytearray)) or not hasattr(value, "__len__"):
            raise TypeError(value)
        items = list(value)
        if item is not None:
            return [item(v) for v in items]
        for v in items:
            if not isinstance(v, kind):
                raise TypeError(v)
        return items
    return interpret


def pointer_to(kind: Any) -> Callable[[Any], Any]:
    """pybind11's cast to ``T*`` (convert mode): an instance of ``kind`` (a class or a tuple of
    them), or None -> nullptr without an error line (``type_caster_generic`` accepts None)."""
    def interpret(value: Any) -> Any:
        if value is not None and not isinstance(value, kind):
            raise TypeError(value)
        return value
    return interpret


def as_size_t(value: Any) -> int:
    """pybind11's ``size_t`` caster: ints and ``__index__`` types, not floats, never negative."""
    if isinstance(value, float):
        raise TypeError(value)
    result = int(value.__index__())
    if result < 0:
        raise OverflowError(value)
    return result


def as_bool(value: Any) -> bool:
    """pybind11's ``bool`` caster with conversion: None is False, and any type with ``nb_bool``
    (bool, int, float, NumPy scalars, classes defining ``__bool__``) converts; str/list do not."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if hasattr(type(value), "__bool__"):
        return bool(value)
    raise TypeError(value)


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray)):  # pybind's std::string caster takes both (§12)
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(value)


# -- IPluginV2DynamicExt -------------------------------------------------------------------------

def get_nb_outputs(plugin: IPluginV2DynamicExt) -> int:
    """C++ ``getNbOutputs``: the C++-side ``num_outputs`` (-1 when unset).

    Read through the base property, as C++ reads its own member: a subclass attribute that
    shadows ``num_outputs`` never reaches TensorRT.
    """
    return IPluginV2DynamicExt.num_outputs.fget(plugin)


def identity(plugin: IPluginV2DynamicExt) -> tuple:
    """C++ ``getPluginType``/``getPluginVersion``/``getPluginNamespace`` (None where unset),
    read past any subclass attribute that shadows the properties."""
    base = IPluginV2DynamicExt
    return (base.plugin_type.fget(plugin), base.plugin_version.fget(plugin),
            base.plugin_namespace.fget(plugin))


def get_output_data_type(plugin: Any, index: int, input_types: Sequence[DataType]) -> DataType:
    """C++ ``getOutputDataType`` → ``get_output_datatype``; FLOAT on failure (silently wrong)."""
    return invoke(plugin, "get_output_datatype", (index, [fresh(t) for t in input_types]),
                  required=True, default=None, fallback=DataType.FLOAT,
                  interpret=_as(DataType),
                   as_type="nvinfer1::DataType")


def get_output_dimensions(plugin: Any, index: int, inputs: Sequence[DimsExprs],
                          builder: IExprBuilder) -> DimsExprs:
    """C++ ``getOutputDimensions``; an empty ``DimsExprs`` on failure."""
    return invoke(plugin, "get_output_dimensions", (index, list(inputs), builder), required=True,
                   default=None, fallback=DimsExprs(), interpret=_as(DimsExprs),
                   as_type="nvinfer1::DimsExprs")


def supports_format_combination(plugin: Any, pos: int, in_out: Sequence[PluginTensorDesc],
                                num_inputs: int) -> bool:
    """C++ ``supportsFormatCombination``; False on failure."""
    return invoke(plugin, "supports_format_combination", (pos, list(in_out), num_inputs),
                   required=True, default=False, fallback=False, interpret=as_bool,
                   as_type="bool")


def configure_plugin(plugin: Any, inputs: Sequence[DynamicPluginTensorDesc],
                     outputs: Sequence[DynamicPluginTensorDesc]) -> None:
    """C++ ``configurePlugin`` (void): caches the input count first; a failure is only printed."""
    object.__setattr__(plugin, "_pp_nb_inputs", len(inputs))
    invoke(plugin, "configure_plugin", ([d._copy() for d in inputs],
                                         [d._copy() for d in outputs]),
            required=True, default=None, fallback=None)


def get_workspace_size(plugin: Any, inputs: Sequence[PluginTensorDesc],
                       outputs: Sequence[PluginTensorDesc]) -> int:
    """C++ ``getWorkspaceSize``; 0 by default and on failure."""
    return invoke(plugin, "get_workspace_size", ([d._copy() for d in inputs],
                                                  [d._copy() for d in outputs]),
                   required=False, default=0, fallback=0, interpret=as_size_t, as_type="size_t")


def enqueue(plugin: Any, input_desc: Sequence[PluginTensorDesc],
            output_desc: Sequence[PluginTensorDesc], inputs: Sequence[int],
            outputs: Sequence[int], workspace: int, stream: int) -> int:
    """C++ ``enqueue``: lists sized by the cached input count and ``num_outputs``; 0 or -1."""
    n_in = getattr(plugin, "_pp_nb_inputs", 0)
    n_out = max(get_nb_outputs(plugin), 0)
    args = ([d._copy() for d in list(input_desc)[:n_in]],
            [d._copy() for d in list(output_desc)[:n_out]],
            [int(p) for p in list(inputs)[:n_in]], [int(p) for p in list(outputs)[:n_out]],
            int(workspace), int(stream))
    failed = object()
    result = invoke(plugin, "enqueue", args, required=True, default=None, fallback=failed,
                     thrown=True)
    return -1 if result is failed else 0


def initialize(plugin: Any) -> int:
    """C++ ``initialize``; 0, or -1 when the Python call raised."""
    failed = object()
    result = invoke(plugin, "initialize", (), required=False, default=None, fallback=failed,
                     thrown=True)
    return -1 if result is failed else 0


def terminate(plugin: Any) -> None:
    """C++ ``terminate``; a failure is only printed."""
    invoke(plugin, "terminate", (), required=False, default=None, fallback=None)


def serialize(plugin: Any) -> Optional[bytes]:
    """C++ ``serialize``: the bytes written into TensorRT's buffer, or None (buffer unwritten)."""
    return invoke(plugin, "serialize", (), required=True, default=None, fallback=None,
                   interpret=_as_bytes, as_type="std::string")


def get_serialization_size(plugin: Any) -> int:
    """C++ ``getSerializationSize``: the override, else ``len(serialize())``; 0 on failure."""
    if overridden(plugin, "get_serialization_size") is not None:
        return invoke(plugin, "get_serialization_size", (), required=False, default=0,
                       fallback=0, interpret=as_size_t, as_type="size_t")
    data = serialize(plugin)
    return 0 if data is None else len(data)


def clone(plugin: Any) -> Optional[IPluginV2DynamicExt]:
    """C++ ``clone``: the new plugin (held until ``destroy``), or None on failure."""
    result = invoke(plugin, "clone", (), required=True, default=None, fallback=None,
                     interpret=_as(IPluginV2DynamicExt),
                     as_type="nvinfer1::IPluginV2DynamicExt")
    if result is not None:
        held[id(result)] = result
    return result


def destroy(plugin: Any) -> None:
    """C++ ``destroy``: calls the override, then drops the binding's reference."""
    invoke(plugin, "destroy", (), required=False, default=None, fallback=None)
    held.pop(id(plugin), None)


# -- IPluginCreator -------------------------------------------------------------------------------

def create_plugin(creator: Any, name: str, fc: PluginFieldCollection_) -> Optional[Any]:
    """C++ ``createPlugin(name, fc)``; the plugin (held until ``destroy``) or None."""
    result = invoke(creator, "create_plugin", (name, fc), required=True, default=None,
                     fallback=None, interpret=_as(IPluginV2DynamicExt),
                     as_type="IPluginV2*")
    if result is not None:
        held[id(result)] = result
    return result


def deserialize_plugin(creator: Any, name: str, data: bytes) -> Optional[Any]:
    """C++ ``deserializePlugin(name, data, length)`` with ``data`` as ``bytes``; plugin or None."""
    result = invoke(creator, "deserialize_plugin", (name, bytes(data)), required=True,
                     default=None, fallback=None, interpret=_as(IPluginV2DynamicExt),
                     as_type="IPluginV2*")
    if result is not None:
        held[id(result)] = result
    return result


set_size_path(get_serialization_size)
