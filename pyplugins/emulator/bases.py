"""The base classes plugin code subclasses: ``IPluginV2DynamicExt``, ``IPluginCreator``, ``Logger``.

As in TensorRT's bindings, the identity properties live outside the instance ``__dict__`` (there
they are C++ members of the trampoline), so ``clone.__dict__.update(self.__dict__)`` does not copy
them, and a subclass whose ``__init__`` does not call the base ``__init__`` cannot be created.

Example:
    >>> from pyplugins import emulator as trt
    >>> class P(trt.IPluginV2DynamicExt):
    ...     def __init__(self):
    ...         trt.IPluginV2DynamicExt.__init__(self)
    ...         self.num_outputs = 1
    >>> p = P()
    >>> p.num_outputs, "num_outputs" in p.__dict__, p.plugin_type
    (1, False, None)
"""

from __future__ import annotations

import enum
import os
import sys
from typing import Any, Callable, Optional

from pyplugins.emulator import idioms
from pyplugins.emulator.enums import PluginVersion
from pyplugins.emulator.plugin_field import PluginFieldCollection, PluginFieldCollection_
from pyplugins.emulator.version import emulated_version

#: C++ ``getSerializationSize`` (:func:`pyplugins.emulator.trampoline.get_serialization_size`),
#: which the trampoline hands over when it loads, so this module need not import it back.
_size_path: Optional[Callable[[Any], int]] = None


def set_size_path(size_path: Callable[[Any], int]) -> None:
    """Install the binding's size path behind ``IPluginV2.serialization_size``.

    Called once by :mod:`pyplugins.emulator.trampoline` as it loads.
    """
    global _size_path
    _size_path = size_path


def cpp_stderr(line: str) -> None:
    """Write a line the way TensorRT's C++ does: straight to file descriptor 2.

    A closed or broken descriptor 2 (a plugin called ``os.close(2)``) loses the line and nothing
    else, as a failed ``std::cerr`` write does in C++ (it sets an error flag; it does not
    throw). The bindings print with ``std::cerr`` (§1.4); that a failed write is silent is the
    C++ streams' default, inferred, not read in the binding source.
    """
    try:
        sys.stderr.flush()
    except (OSError, ValueError):  # Python's own stream over the same closed descriptor
        pass
    try:
        os.write(2, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


class _BindingMeta(type):
    """pybind11's rule: a Python subclass must call the base ``__init__``."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = super().__call__(*args, **kwargs)
        if not getattr(obj, "_pp_base_initialized", False):
            msg = f"{cls.__name__}.__init__() must be called when overriding __init__"
            raise TypeError(msg)
        return obj


def to_int(value: Any, what: str) -> int:
    """pybind11's int caster: an int, a bool or anything with ``__index__`` (NumPy ints); not a
    float or a str."""
    if isinstance(value, (float, str, bytes)) or not hasattr(type(value), "__index__"):
        msg = f"{what} must be an int (got {value!r})"
        raise TypeError(msg)
    return int(value.__index__())


def to_str(value: Any, what: str) -> str:
    """pybind11's ``std::string`` caster: a str, or bytes/bytearray (taken as UTF-8 here)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "surrogateescape")
    if not isinstance(value, str):
        msg = f"{what} must be a str (got {value!r})"
        raise TypeError(msg)
    return value


class Unpicklable:
    """pybind11 instances: ``copy.copy``, ``copy.deepcopy`` and ``pickle`` raise TypeError (§12)."""

    __slots__ = ()

    def __reduce_ex__(self, protocol: Any) -> Any:
        for klass in type(self).__mro__:
            if klass is Unpicklable or klass.__module__ == __name__:
                break
            if "__reduce__" in vars(klass) or "__reduce_ex__" in vars(klass):
                return object.__reduce_ex__(self, protocol)  # the subclass pickles itself
        idioms.refuse("copy", TypeError(f"cannot pickle '{type(self).__name__}' object"))


def str_property(slot: str, public: str, doc: str, *, print_unset: bool = False) -> property:
    def getter(self: Any) -> Optional[str]:
        value = getattr(self, slot, None)
        if value is None and print_unset:
            cpp_stderr(f"[ERROR] Exception caught in {public}(): AttributeError: "
                        f"{public} not initialized")
        return value

    def setter(self: Any, value: str) -> None:
        object.__setattr__(self, slot, to_str(value, public))

    return property(getter, setter, doc=doc)


class IPluginV2(Unpicklable, metaclass=_BindingMeta):
    """``trt.IPluginV2``: the C++ base class (no Python constructor; subclass
    :class:`IPluginV2DynamicExt`)."""

    __slots__ = ()

    def __init__(self, *args: Any) -> None:
        msg = f"tensorrt.{type(self).__name__}: No constructor defined!"
        raise TypeError(msg)


class IPluginV2Ext(IPluginV2):
    """``trt.IPluginV2Ext`` (no Python constructor)."""

    __slots__ = ()


class IPluginV2DynamicExtBase(IPluginV2Ext):
    """``trt.IPluginV2DynamicExtBase``: the plain C++ base of :class:`IPluginV2DynamicExt`."""

    __slots__ = ()


class IPluginV2DynamicExt(IPluginV2DynamicExtBase):
    """``trt.IPluginV2DynamicExt``, the base of a Python V2 plugin (§1).

    Call ``IPluginV2DynamicExt.__init__(self)`` first, then set ``num_outputs``, ``plugin_type``,
    ``plugin_version`` and ``plugin_namespace``. The constructor's copy overload
    ``IPluginV2DynamicExt(other)`` copies nothing, as in TensorRT.
    """

    __slots__ = ("_pp_base_initialized", "_pp_num_outputs", "_pp_type", "_pp_version",
                 "_pp_namespace", "_pp_nb_inputs", "__weakref__", "__dict__")

    FORMAT_COMBINATION_LIMIT = 100

    def __init__(self, other: Optional["IPluginV2DynamicExt"] = None) -> None:
        object.__setattr__(self, "_pp_base_initialized", True)
        object.__setattr__(self, "_pp_nb_inputs", 0)

    @property
    def num_outputs(self) -> int:
        """Number of outputs (C++ ``getNbOutputs``); -1 with a printed error when unset."""
        value = getattr(self, "_pp_num_outputs", None)
        if value is None:  # the binding throws AttributeError into PLUGIN_API_CATCH
            cpp_stderr("[ERROR] Exception caught in num_outputs(): AttributeError: "
                        "num_outputs not initialized")
            return -1
        return value

    @num_outputs.setter
    def num_outputs(self, value: int) -> None:
        object.__setattr__(self, "_pp_num_outputs", to_int(value, "num_outputs"))

    plugin_type = str_property("_pp_type", "plugin_type",
                                "The plugin's type name (C++ getPluginType).", print_unset=True)
    plugin_version = str_property("_pp_version", "plugin_version",
                                   "The plugin's version string.", print_unset=True)
    plugin_namespace = str_property("_pp_namespace", "plugin_namespace",
                                     "The plugin's namespace.", print_unset=True)

    @property
    def tensorrt_version(self) -> int:
        """What C++ ``getTensorRTVersion`` reports for a Python plugin (read-only): the plugin
        version ``V2_DYNAMICEXT_PYTHON`` in the top byte, ``NV_TENSORRT_VERSION`` below it."""
        major, minor = emulated_version()
        nv_version = major * 10000 + minor * 100
        return (PluginVersion.V2_DYNAMICEXT_PYTHON.value << 24) | (nv_version & 0xFFFFFF)

    @property
    def serialization_size(self) -> int:
        """Bytes ``serialize()`` produces, through the binding's size path (read-only)."""
        if _size_path is None:  # pragma: no cover - pyplugins.emulator imports the trampoline
            msg = "the emulator's trampoline is not loaded; import pyplugins.emulator first"
            raise RuntimeError(msg)
        return _size_path(self)


class IPluginCreatorInterface(Unpicklable, metaclass=_BindingMeta):
    """``trt.IPluginCreatorInterface``: the common base of creator classes (10.0+)."""

    __slots__ = ("_pp_base_initialized", "_pp_name", "_pp_version", "_pp_namespace",
                 "_pp_field_names", "__weakref__", "__dict__")

    def __init__(self) -> None:
        object.__setattr__(self, "_pp_base_initialized", True)


class IPluginCreator(IPluginCreatorInterface):
    """``trt.IPluginCreator``: makes V2 plugins from fields or serialized bytes (§5.1).

    Set ``name`` (equal to the plugin's ``plugin_type``), ``plugin_version``,
    ``plugin_namespace`` and ``field_names``; define ``create_plugin(name, fc)`` and
    ``deserialize_plugin(name, data)``.
    """

    def __init__(self) -> None:
        IPluginCreatorInterface.__init__(self)

    name = str_property("_pp_name", "name", "The plugin type this creator makes.",
                         print_unset=True)
    plugin_version = str_property("_pp_version", "plugin_version",
                                   "The plugin version this creator makes.", print_unset=True)
    plugin_namespace = str_property("_pp_namespace", "plugin_namespace",
                                     "The creator's namespace.", print_unset=True)

    @property
    def field_names(self) -> PluginFieldCollection_:
        """The fields the creator accepts (only names matter to the ONNX parser), read back as
        TensorRT's getter gives them: a ``PluginFieldCollection_`` (``len`` and ``[i]``), empty
        with a printed error when unset (never None)."""
        value = getattr(self, "_pp_field_names", None)
        if value is None:
            cpp_stderr("[ERROR] Exception caught in field_names(): AttributeError: "
                        "field_names not initialized")
            return PluginFieldCollection_()
        return PluginFieldCollection_(value)

    @field_names.setter
    def field_names(self, value: PluginFieldCollection) -> None:
        if not isinstance(value, PluginFieldCollection):
            if isinstance(value, (list, tuple)):
                value = PluginFieldCollection(value)
            else:
                msg = f"field_names must be a PluginFieldCollection (got {value!r})"
                raise TypeError(msg)
        object.__setattr__(self, "_pp_field_names", value)


class ILogger:
    """``trt.ILogger``: subclass and define ``log(severity, msg)``."""

    class Severity(enum.IntEnum):
        """Log severities, most severe first."""

        INTERNAL_ERROR = 0
        ERROR = 1
        WARNING = 2
        INFO = 3
        VERBOSE = 4

    INTERNAL_ERROR = Severity.INTERNAL_ERROR
    ERROR = Severity.ERROR
    WARNING = Severity.WARNING
    INFO = Severity.INFO
    VERBOSE = Severity.VERBOSE

    def log(self, severity: "ILogger.Severity", msg: str) -> None:
        """Receive one message."""
        raise NotImplementedError


class Logger(ILogger):
    """``trt.Logger(min_severity=Logger.WARNING)``: prints messages at or above a severity.

    Example:
        >>> from pyplugins.emulator import Logger
        >>> Logger(Logger.ERROR).min_severity.name
        'ERROR'
    """

    _LETTERS = "FEWIV"

    def __init__(self, min_severity: "ILogger.Severity" = ILogger.WARNING) -> None:
        self.min_severity = ILogger.Severity(min_severity)

    def log(self, severity: "ILogger.Severity", msg: str) -> None:
        """Print ``msg`` to stderr when ``severity`` is at least ``min_severity``."""
        severity = ILogger.Severity(severity)
        if severity <= self.min_severity:
            print(f"[TRT] [{self._LETTERS[severity]}] {msg}", file=sys.stderr)
