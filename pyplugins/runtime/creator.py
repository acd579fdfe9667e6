"""``@pp.register``: the ``IPluginCreator`` for a :class:`pyplugins.Plugin`, registered with
TensorRT's plugin registry, with the references TensorRT needs kept alive.

The generated creator advertises the plugin's fields in ``field_names`` (so the ONNX parser
passes the node's attributes of those names), builds plugins in ``create_plugin(name, fc)`` and
``deserialize_plugin(name, data)``, and reports a failure (with the plugin and layer names)
before TensorRT swallows it. Creators and the registry object are held in this module for the
life of the process (docs/trt-protocol.md §5.4, §10.1: before TensorRT 10.6 the registry could be
collected while TensorRT still held the creator's pointer).

Example:
    >>> import pyplugins as pp
    >>> @pp.register(replace=True)
    ... class Identity(pp.Plugin):
    ...     name = "IdentityDoc"
    ...     def get_output_dimensions(self, output_index, inputs, expr_builder):
    ...         return inputs[0]
    ...     def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
    ...         pass
    >>> Identity.creator.name, Identity.creator.plugin_version
    ('IdentityDoc', '1')

Registering the same (name, version, namespace) twice raises
:class:`~pyplugins.errors.RegistrationError`; pass ``replace=True`` to swap the old creator out
(handy when re-running a notebook cell). Registration holds a module lock, so threads registering
at once see one winner each time; a key another caller (not ``pp.register``) takes in between is
reported as that, never blamed on TensorRT.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar, Union, overload

import pyplugins.trt as trt
from pyplugins._config import knobs
from pyplugins.runtime import plugin_v3, qdp
from pyplugins.runtime.error_reports import report
from pyplugins.errors import PluginDefinitionError, RegistrationError
from pyplugins.runtime.plugin import Plugin, missing_methods

P = TypeVar("P", bound=type)
logger = logging.getLogger("pyplugins")

#: The registry object creators were registered with (kept alive, §5.4).
_registry: Any = None
#: (name, version, namespace) -> the registered creator (kept alive, §10.1).
_creators: Dict[Tuple[str, str, str], Any] = {}
#: Held while a registration or deregistration is under way (check, deregister, register again).
_lock = threading.RLock()


#: The interfaces :func:`register` can give a plugin class.
INTERFACES = ("v2", "v3", "qdp")


def default_interface(cls: Any = None) -> str:
    """The interface :func:`register` gives a class that names none.

    ``PYPLUGINS_INTERFACE=v2|v3|qdp`` decides when set; with ``qdp``, a class that cannot be a
    QDP plugin (:func:`pyplugins.runtime.qdp.check_qdp`: no ``inputs`` count, say) takes the
    ``auto`` rule instead, with a warning on the ``pyplugins`` logger naming the reason, so that
    a process can register every QDP-able op as QDP (``import pyplugins.ops``). Otherwise
    (``auto``): ``"v3"`` for a class that uses what only ``IPluginV3`` serves
    (``shape_inputs``, ``size_tensors``, ``aliases``) or when the active TensorRT no longer
    binds ``IPluginV2DynamicExt``; else ``"v2"``.

    Why V2 stays the default while TensorRT binds it (10.x and 11.x up to 11.1, protocol §1.1):
    an engine records the interface its plugin was built with (a V2 layer is rebuilt
    by the creator's ``deserialize_plugin``, a V3 one by ``create_plugin(phase=RUNTIME)``), so
    a default that changed under a user would leave engines their deployment cannot load;
    V2 behaves the same on every supported TensorRT, while V3's binding changed within 10.x
    (reference handling until 10.4, the serialized-fields pointer until 10.6). Choose V3 with
    ``interface="v3"`` for tactics, or when deprecation warnings matter (``docs/v3.md``).

    Example:
        >>> default_interface() in INTERFACES
        True
    """
    chosen = knobs.interface
    if chosen == "qdp" and cls is not None:
        try:
            qdp.check_qdp(cls)
            qdp.plugin_module()
        except PluginDefinitionError as err:
            logger.warning("PYPLUGINS_INTERFACE=qdp: %s; it registers by the auto rule instead",
                           err)
            chosen = "auto"
    if chosen != "auto":
        return chosen
    needs_v3 = cls is not None and bool(plugin_v3.v3_only(cls))
    v2_gone = not hasattr(trt, "IPluginV2DynamicExt")
    return "v3" if (needs_v3 or v2_gone) and plugin_v3.v3_available() else "v2"


def make_creator(cls: Any, interface: Optional[str] = None) -> Any:
    """A new, unregistered creator of plugin class ``cls`` for ``interface`` (``"v2"``: an
    ``IPluginCreator``; ``"v3"``: an ``IPluginCreatorV3One``; None: :func:`default_interface`).
    :func:`register` registers one; checks and tests drive one directly.

    Raises:
        PluginDefinitionError: what :func:`register` raises for a bad class or interface, and
            for ``"qdp"``: ``tensorrt.plugin`` makes and registers a QDP creator itself, so
            there is no unregistered one (:func:`pyplugins.runtime.qdp.define` registers).

    Example:
        >>> from pyplugins.ops.circ_pad import CircPad
        >>> type(make_creator(CircPad, "v3")).__name__, make_creator(CircPad, "v2").interface
        ('CircPadCreatorV3', 'v2')
    """
    _check_registrable(cls)
    chosen = _interface(cls, interface)
    if chosen == "qdp":
        msg = (f"plugin {cls.name!r}: tensorrt.plugin makes and registers a QDP creator itself; "
               "use register(cls, interface='qdp') or pyplugins.runtime.qdp.define(cls).")
        raise PluginDefinitionError(msg)
    if chosen == "v3":
        return _creator_v3_class(cls, plugin_v3.adapter_class(cls))()
    plugin_v3.check_v3_attributes(cls)
    only = plugin_v3.v3_only(cls)
    if only:
        msg = (f"plugin {cls.name!r} uses {', '.join(only)}, which IPluginV2DynamicExt cannot "
               "serve; register it with interface='v3'.")
        raise PluginDefinitionError(msg)
    return _creator_class(cls)()


def _interface(cls: Any, interface: Optional[str]) -> str:
    chosen = default_interface(cls) if interface is None else interface
    if chosen not in INTERFACES:
        msg = f"interface must be one of {', '.join(map(repr, INTERFACES))} (got {interface!r})."
        raise PluginDefinitionError(msg)
    return chosen


def _creator_v3_class(cls: Any, adapter: type) -> type:
    """A ``trt.IPluginCreatorV3One`` subclass making ``adapter`` (IPluginV3) plugins."""
    class CreatorV3(trt.IPluginCreatorV3One):
        plugin_class = cls
        interface = "v3"

        def __init__(self) -> None:
            trt.IPluginCreatorV3One.__init__(self)
            self.name = cls.name
            self.plugin_version = cls.version
            self.plugin_namespace = cls.namespace
            self._field_names = trt.PluginFieldCollection(cls.advertised_fields())  # kept
            self.field_names = self._field_names

        def create_plugin(self, name: str, field_collection: Any, phase: Any) -> Any:
            try:
                if phase == trt.TensorRTPhase.RUNTIME:  # fields get_fields_to_serialize wrote
                    plugin = plugin_v3.plugin_from_runtime_fields(cls, field_collection, name)
                    return adapter(plugin)
                return adapter(cls.from_fields(field_collection, name))
            except Exception as err:
                report(cls, "create_plugin", (name, _FieldSummary(field_collection), phase),
                       err, layer=name)
                raise

    CreatorV3.__name__ = f"{cls.__name__}CreatorV3"
    CreatorV3.__qualname__ = f"{cls.__qualname__}CreatorV3"
    CreatorV3.__module__ = cls.__module__
    CreatorV3.__doc__ = f"TensorRT IPluginCreatorV3One of plugin {cls.name!r} (pp.register)."
    return CreatorV3


def _creator_class(cls: Any) -> type:
    """A ``trt.IPluginCreator`` subclass making ``cls`` instances."""

    class Creator(trt.IPluginCreator):
        plugin_class = cls
        interface = "v2"

        def __init__(self) -> None:
            trt.IPluginCreator.__init__(self)
            self.name = cls.name
            self.plugin_version = cls.version
            self.plugin_namespace = cls.namespace
            self._field_names = trt.PluginFieldCollection(cls.advertised_fields())  # kept
            self.field_names = self._field_names

        # Parameter names are TensorRT's (scripts call create_plugin(name=..., field_collection=...)).
        def create_plugin(self, name: str, field_collection: Any) -> Any:
            try:
                return cls.from_fields(field_collection, name)
            except Exception as err:
                report(cls, "create_plugin", (name, _FieldSummary(field_collection)), err,
                       layer=name)
                raise

        def deserialize_plugin(self, name: str, serialized_plugin: bytes) -> Any:
            try:
                return cls.from_bytes(serialized_plugin, name)
            except Exception as err:
                report(cls, "deserialize_plugin", (name, _Bytes(serialized_plugin)), err,
                       layer=name)
                raise

    Creator.__name__ = f"{cls.__name__}Creator"
    Creator.__qualname__ = f"{cls.__qualname__}Creator"
    Creator.__module__ = cls.__module__
    Creator.__doc__ = f"TensorRT creator of plugin {cls.name!r} (made by pp.register)."
    return Creator


class _Bytes:
    def __init__(self, data: Any) -> None:
        self.n = len(data) if hasattr(data, "__len__") else -1

    def __repr__(self) -> str:
        return f"<{self.n} bytes>"


class _FieldSummary:
    def __init__(self, fc: Any) -> None:
        self.fc = fc

    def __repr__(self) -> str:
        try:
            parts = []
            for i in range(len(self.fc)):
                f = self.fc[i]
                parts.append(f"{f.name}:{f.type.name}[{f.size}]")
            return "fc{" + ", ".join(parts) + "}"
        except Exception:  # noqa: BLE001 - a repr must never raise
            return "fc"


def _check_registrable(cls: Any) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Plugin)) or cls is Plugin:
        msg = (f"@pp.register decorates a subclass of pp.Plugin (got {cls!r}); write "
               "'class MyOp(pp.Plugin): ...'.")
        raise PluginDefinitionError(msg)
    if not cls.name:
        msg = f"{cls.__name__} has no plugin name: set name = '...' on the class."
        raise PluginDefinitionError(msg)
    missing = missing_methods(cls)
    if missing:
        hints = {"get_output_dimensions": "get_output_dimensions(self, output_index, inputs, "
                                          "expr_builder)",
                 "enqueue": "enqueue(self, input_desc, output_desc, inputs, outputs, workspace, "
                            "stream)"}
        need = "; ".join(hints[m] for m in missing)
        msg = f"plugin {cls.name!r} ({cls.__name__}) must define {need}."
        raise PluginDefinitionError(msg)


def _register(cls: Any, replace: bool, interface: Optional[str] = None) -> Any:
    _check_registrable(cls)
    if _interface(cls, interface) == "qdp":
        with _lock:
            creator = qdp.define(cls, replace=replace)
            _creators[(cls.name, "1", qdp.namespace_of(cls))] = creator
            cls.creator = creator
            return cls
    creator = make_creator(cls, interface)
    with _lock:
        return _register_locked(cls, creator, replace)


def _register_locked(cls: Any, creator: Any, replace: bool) -> Any:
    global _registry
    key = (cls.name, cls.version, cls.namespace)
    registry = trt.get_plugin_registry()
    _registry = registry
    if not registry.register_creator(creator, cls.namespace):
        if not replace:
            msg = (f"a plugin creator for {key[0]!r} version {key[1]!r} namespace {key[2]!r} is "
                   "already registered; use @pp.register(replace=True) to replace it, or give "
                   "this plugin another version or namespace.")
            raise RegistrationError(msg)
        old = _creators.get(key)
        found = registry.get_creator(*key) if hasattr(registry, "get_creator") else None
        for candidate in (found, old):
            if candidate is not None:
                registry.deregister_creator(candidate)
        if not registry.register_creator(creator, cls.namespace):
            holder = registry.get_creator(*key) if hasattr(registry, "get_creator") else None
            msg = (f"could not replace the plugin creator for {key[0]!r} version {key[1]!r} "
                   f"namespace {key[2]!r}: after the old creator was deregistered, "
                   f"{_who(holder)} registered the key first (a concurrent registration outside "
                   "pp.register); register from one thread, or deregister that creator first.")
            raise RegistrationError(msg)
        old_cls = getattr(old, "plugin_class", None)
        if old_cls is not None and old_cls is not cls and old_cls.creator is old:
            old_cls.creator = None
    _creators[key] = creator
    cls.creator = creator
    return cls


def _who(holder: Any) -> str:
    if holder is None:
        return "another caller"
    return f"another caller's creator {type(holder).__name__}"


@overload
def register(cls: P) -> P: ...


@overload
def register(cls: None = None, *, replace: bool = False,
             interface: Optional[str] = None) -> Callable[[P], P]: ...


def register(cls: Optional[P] = None, *, replace: bool = False,
             interface: Optional[str] = None) -> Union[P, Callable[[P], P]]:
    """Build, register and attach the creator of a :class:`pyplugins.Plugin` class.

    Use as ``@pp.register``, ``@pp.register(replace=True)`` or
    ``@pp.register(interface="v3")``. Sets ``cls.creator``. The same class serves each
    interface: ``"v2"`` registers an ``IPluginCreator`` whose plugins are ``cls`` instances
    (``IPluginV2DynamicExt``); ``"v3"`` an ``IPluginCreatorV3One`` whose plugins are
    ``IPluginV3`` adapters around ``cls`` instances (:mod:`pyplugins.runtime.plugin_v3`);
    ``"qdp"`` a ``tensorrt.plugin`` plugin ``namespace::name`` (namespace ``"pyplugins"`` when
    the class's is empty) whose creator ``tensorrt.plugin`` registers, with an ahead-of-time
    kernel when the class has an ``aot_launch`` hook (:mod:`pyplugins.runtime.qdp`).

    Args:
        cls: the plugin class (when used without parentheses).
        replace: deregister a creator already registered under the same name, version and
            namespace instead of failing.
        interface: ``"v2"``, ``"v3"``, ``"qdp"``, or None for :func:`default_interface`.

    Returns:
        The class itself.

    Raises:
        PluginDefinitionError: not a Plugin subclass, no ``name``, a required method
            (``get_output_dimensions``, ``enqueue``) missing, an unknown interface, V3-only
            attributes (``shape_inputs``, ``size_tensors``, ``aliases``) with ``"v2"``, or
            ``"v3"`` where TensorRT has no ``IPluginV3``, and what
            :func:`pyplugins.runtime.qdp.check_qdp` refuses with ``"qdp"``.
        RegistrationError: the key is taken and ``replace`` is False.
    """
    if cls is None:
        return lambda c: _register(c, replace, interface)
    return _register(cls, replace, interface)


def unregister(cls: type) -> bool:
    """Deregister a class's creator (tests, notebooks); False if it was not registered."""
    creator = getattr(cls, "creator", None)
    if creator is None:
        return False
    with _lock:
        if qdp.definition(qdp.plugin_id(cls)) is not None and isinstance(
                creator, getattr(trt, "IPluginCreatorV3Quick", ())):
            key = (cls.name, "1", qdp.namespace_of(cls))
            if _creators.get(key) is creator:
                del _creators[key]
            cls.creator = None
            return qdp.forget(cls)
    key = (cls.name, cls.version, cls.namespace)
    with _lock:
        registry = _registry if _registry is not None else trt.get_plugin_registry()
        ok = bool(registry.deregister_creator(creator))
        if _creators.get(key) is creator:
            del _creators[key]
        cls.creator = None
    return ok


def registered() -> Dict[Tuple[str, str, str], Any]:
    """The creators this module registered, by (name, version, namespace)."""
    with _lock:
        return dict(_creators)


__all__ = ["INTERFACES", "default_interface", "make_creator", "register", "registered",
           "unregister"]
