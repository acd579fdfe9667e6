"""``@pp.register(interface="qdp")``: a ``pp.Plugin`` class as a ``tensorrt.plugin`` (QDP) plugin
``namespace::name``, registered through the active TensorRT's own ``tensorrt.plugin``.

:func:`define` registers, with ``tensorrt.plugin.register``, ``autotune`` and ``impl`` (and, from
TensorRT 10.9, ``aot_impl`` for a class with an ``aot_launch`` hook), the functions of
:mod:`pyplugins.runtime.qdp_functions` (and :mod:`pyplugins.runtime.qdp_aot`). TensorRT (or the
emulator, which is the same module to the plugin) then registers the plugin's
``IPluginCreatorV3Quick`` itself. A plugin with both implementations is created JIT or AOT as
TensorRT asks: ``aot=1`` on an ONNX node, ``network.add_plugin(..., aot=True)``, or the network
flag ``PREFER_AOT_PYTHON_PLUGINS`` (without one of them TensorRT refuses to choose). What differs
from V2 and V3:

- **Identity**: the QDP id is ``namespace::name``: the class's ``name`` and its ``namespace``, or
  :data:`DEFAULT_NAMESPACE` (``"pyplugins"``) when that is empty, because QDP refuses the empty
  namespace (and ``trt``, ``tensorrt``, ``std``; protocol §8.2). An ONNX node names it with
  ``plugin_namespace``. QDP plugins are always version ``"1"``: a class with another ``version``
  is refused. The V2/V3 creator of the class (namespace ``""``) and the QDP one
  (``"pyplugins"``) can be registered side by side; in a non-empty namespace they would collide.
- **Inputs**: QDP declares a fixed number of input tensors: the class says how many with
  ``inputs = N``.
- **Attributes**: the fields, typed as :mod:`pyplugins.runtime.qdp_attrs` says, all required.
- **Not served**: ``shape_inputs`` (QDP has none), ``size_tensors`` and ``aliases`` (not mapped
  yet), and a workspace (QDP gives none).
- **AOT**: :func:`aot_support` says whether the class can give TensorRT a kernel to launch
  itself, and if not, why; :func:`require_aot` raises that as :class:`AotUnsupportedError`.

TensorRT cannot forget a QDP plugin (the emulator can: :func:`forget`). Registering the same
class again, or another class with ``replace=True`` and the same attributes, swaps the class the
registered functions serve; anything else under a taken id is a ``RegistrationError``.

Example:
    >>> import pyplugins as pp
    >>> class Twice(pp.Plugin):
    ...     name = "TwiceQdpDoc"
    ...     inputs = 1
    ...     def get_output_dimensions(self, i, inputs, eb):
    ...         return inputs[0]
    ...     def enqueue(self, *args): pass
    >>> plugin_id(Twice)
    'pyplugins::TwiceQdpDoc'
    >>> creator = define(Twice)
    >>> creator.name, creator.plugin_namespace, creator.plugin_version
    ('TwiceQdpDoc', 'pyplugins', '1')
    >>> aot_support(Twice)  # doctest: +ELLIPSIS
    "plugin 'TwiceQdpDoc' (Twice) defines no aot_launch hook: ..."
    >>> forget(Twice)
    True
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType
from typing import Any, Dict, Optional

import pyplugins.trt as trt
from pyplugins.errors import AotUnsupportedError, PluginDefinitionError, RegistrationError
from pyplugins.runtime import qdp_attrs
from pyplugins.runtime.plugin import Plugin
from pyplugins.runtime.qdp_aot import aot_impl_function
from pyplugins.runtime.qdp_functions import (QdpDefinition, autotune_function, impl_function,
                                             register_function)

__all__ = ["DEFAULT_NAMESPACE", "aot_support", "check_qdp", "define", "definition", "forget",
           "input_count", "namespace_of", "plugin_id", "plugin_module", "require_aot"]

#: The QDP namespace of a class whose ``namespace`` is empty (QDP refuses an empty one).
DEFAULT_NAMESPACE = "pyplugins"
_RESERVED_NAMESPACES = ("", "trt", "tensorrt", "std")
_RESERVED_ATTRS = ("outputs", "stream", "tactic")

_lock = threading.RLock()
#: plugin id -> the definition its registered functions serve now.
_definitions: Dict[str, QdpDefinition] = {}
#: plugin id -> the schema (inputs, outputs, attributes, aot) registered with tensorrt.plugin.
_registered: Dict[str, tuple] = {}


def plugin_module() -> ModuleType:
    """``tensorrt.plugin`` of the active TensorRT API (the emulator's, or TensorRT's own).

    Raises:
        PluginDefinitionError: the active TensorRT has no ``tensorrt.plugin`` (before 10.6).
    """
    try:
        return importlib.import_module(f"{trt.__name__}.plugin")
    except ModuleNotFoundError as err:
        msg = (f"registering a pp.Plugin as tensorrt.plugin (QDP) needs TensorRT 10.6 or later "
               f"({err}); use interface='v2' or 'v3'.")
        raise PluginDefinitionError(msg) from None


def namespace_of(cls: Any) -> str:
    """The QDP namespace of ``cls``: its ``namespace``, or :data:`DEFAULT_NAMESPACE`."""
    return cls.namespace or DEFAULT_NAMESPACE


def plugin_id(cls: Any) -> str:
    """``"namespace::name"``, the id ``tensorrt.plugin`` knows the class by."""
    return f"{namespace_of(cls)}::{cls.name}"


def input_count(cls: Any) -> int:
    """The number of input tensors the class declares (``inputs = N``).

    Raises:
        PluginDefinitionError: the class does not say.
    """
    n = cls.inputs
    if n is None:
        msg = (f"plugin {cls.name!r} ({cls.__name__}) does not say how many input tensors it "
               "takes; tensorrt.plugin (QDP) declares a fixed number: set inputs = N on the "
               "class.")
        raise PluginDefinitionError(msg)
    return int(n)


def check_qdp(cls: Any) -> None:
    """Refuse a class that cannot be a QDP plugin, naming the reason.

    Raises:
        PluginDefinitionError: no input count, no inputs, a version other than "1", a namespace
            or name QDP refuses, a field named ``outputs``/``stream``/``tactic``/``inpN``, or
            ``shape_inputs``, ``size_tensors`` or ``aliases``.
    """
    where = f"plugin {cls.name!r} ({cls.__name__}) as tensorrt.plugin (QDP)"
    n_in = input_count(cls)
    if n_in < 1:
        msg = f"{where}: QDP plugins take at least one input tensor (inputs = {n_in})."
        raise PluginDefinitionError(msg)
    if cls.version != "1":
        msg = (f"{where}: QDP plugins are always version '1' (got version {cls.version!r}); "
               "register another version with interface='v2' or 'v3', or give it another name.")
        raise PluginDefinitionError(msg)
    ns = namespace_of(cls)
    for what, text in (("namespace", ns), ("name", cls.name)):
        if "." in text or "::" in text:
            msg = f"{where}: the {what} {text!r} must not contain '.' or '::'."
            raise PluginDefinitionError(msg)
    if ns in _RESERVED_NAMESPACES:
        msg = f"{where}: namespace {ns!r} is reserved by TensorRT; use your project's name."
        raise PluginDefinitionError(msg)
    for name in cls.__pp_fields__:
        if name in _RESERVED_ATTRS or (name.startswith("inp") and name[3:].isdigit()):
            msg = (f"{where}: field {name!r} clashes with a parameter name of the QDP functions "
                   f"({', '.join(_RESERVED_ATTRS)}, inp0, inp1, ...); rename the field.")
            raise PluginDefinitionError(msg)
    unsupported = [attr for attr, why in (("shape_inputs", "QDP has no shape inputs"),
                                          ("size_tensors", "not mapped onto QDP yet"),
                                          ("aliases", "not mapped onto QDP yet"))
                   if getattr(cls, attr)]
    if unsupported:
        msg = (f"{where}: {', '.join(unsupported)} cannot be served through tensorrt.plugin; "
               "register it with interface='v3'.")
        raise PluginDefinitionError(msg)


def aot_support(cls: Any) -> Optional[str]:
    """None when ``cls`` registers an ``aot_impl`` (TensorRT launches its kernel without
    Python), else the reason it cannot."""
    if getattr(cls, "aot_launch", None) is None:
        return (f"plugin {cls.name!r} ({cls.__name__}) defines no aot_launch hook: its launch is "
                "built by plan in Python at run time, so TensorRT has no kernel of it to launch "
                "by itself; it registers with impl (JIT) only")
    if getattr(cls, "get_workspace_size", None) is not Plugin.get_workspace_size:
        return (f"plugin {cls.name!r} ({cls.__name__}) overrides get_workspace_size: an AOT "
                "kernel gets only its tensors and int32 arguments from TensorRT, no workspace; "
                "it registers with impl (JIT) only")
    if not hasattr(plugin_module(), "aot_impl"):
        return (f"plugin {cls.name!r}: the active TensorRT has no tensorrt.plugin.aot_impl (it "
                "came in TensorRT 10.9); it registers with impl (JIT) only")
    return None


def require_aot(cls: Any) -> None:
    """Raise :class:`AotUnsupportedError` with :func:`aot_support`'s reason, if any."""
    reason = aot_support(cls)
    if reason is not None:
        raise AotUnsupportedError(f"{reason}.")


def _schema(d: QdpDefinition, aot: bool) -> tuple:
    attrs = tuple((name, repr(qdp_attrs.annotation(f))) for name, f in d.fields)
    return d.num_inputs, d.cls.outputs, attrs, aot


def definition(pid: str) -> Optional[QdpDefinition]:
    """The definition registered functions of plugin id ``pid`` serve, or None."""
    with _lock:
        return _definitions.get(pid)


def _lookup(pid: str) -> Any:
    def lookup() -> QdpDefinition:
        d = _definitions.get(pid)
        if d is None:
            msg = (f"tensorrt.plugin plugin {pid!r} was forgotten by pyplugins "
                   "(pyplugins.runtime.qdp.forget); register its class again")
            raise RegistrationError(msg)
        return d

    return lookup


def define(cls: Any, *, replace: bool = False) -> Any:
    """Register ``cls`` with ``tensorrt.plugin`` and return the creator TensorRT registered.

    Unlike :func:`pyplugins.register`, this does not set ``cls.creator``.

    Raises:
        PluginDefinitionError: what :func:`check_qdp` refuses, or no ``tensorrt.plugin``.
        RegistrationError: the id serves another class (without ``replace``), was registered
            with other attributes (TensorRT cannot forget it), or another creator holds
            ``(name, "1", namespace)``.
    """
    check_qdp(cls)
    trtp = plugin_module()
    pid = plugin_id(cls)
    ns, name = namespace_of(cls), cls.name
    new = QdpDefinition(cls, trtp, input_count(cls))
    aot = aot_support(cls) is None
    registry = trt.get_plugin_registry()
    with _lock:
        current = _definitions.get(pid)
        if current is not None and current.cls is not cls and not replace:
            msg = (f"tensorrt.plugin plugin {pid!r} already serves class "
                   f"{current.cls.__qualname__}; pass replace=True to serve "
                   f"{cls.__qualname__} instead, or give this class another name or namespace.")
            raise RegistrationError(msg)
        if pid in _registered:
            if _registered[pid] != _schema(new, aot):
                msg = (f"tensorrt.plugin plugin {pid!r} was registered with other inputs, "
                       "outputs, attributes or AOT support, and TensorRT cannot forget a QDP "
                       "plugin; restart the process, or give the class another name.")
                raise RegistrationError(msg)
            _definitions[pid] = new
            return registry.get_creator(name, "1", ns)
        holder = registry.get_creator(name, "1", ns)
        if holder is not None:
            msg = (f"a plugin creator for {name!r} version '1' namespace {ns!r} is already "
                   f"registered ({type(holder).__name__}); a V2/V3 registration of the class in "
                   "that namespace and its QDP one cannot coexist: give the class another "
                   "namespace or register only one interface.")
            raise RegistrationError(msg)
        _definitions[pid] = new
        lookup = _lookup(pid)
        try:
            trtp.register(pid)(register_function(lookup))
            trtp.autotune(pid)(autotune_function(lookup))
            trtp.impl(pid)(impl_function(lookup))
            if aot:
                trtp.aot_impl(pid)(aot_impl_function(lookup))
        except Exception:
            _definitions.pop(pid, None)
            raise
        _registered[pid] = _schema(new, aot)
    return registry.get_creator(name, "1", ns)


def forget(cls: Any) -> bool:
    """Stop serving ``cls`` (False if it was not defined). Under the emulator the plugin id is
    unregistered from ``tensorrt.plugin`` too (tests, notebooks); TensorRT itself cannot forget
    one, so there its functions stay registered and raise until the class is defined again."""
    from pyplugins.emulator.real import is_emulator  # noqa: PLC0415

    pid = plugin_id(cls)
    with _lock:
        current = _definitions.get(pid)
        if current is None or current.cls is not cls:
            return False
        del _definitions[pid]
        if is_emulator(trt):
            from pyplugins.emulator.plugin.definitions import unregister  # noqa: PLC0415

            unregister(pid)
            _registered.pop(pid, None)
    return True
