"""The IPluginV3 classes plugin code subclasses: ``IPluginV3``, its capability bases and ``IPluginCreatorV3One``.

As in TensorRT's bindings (protocol doc §7, ``pyPlugin.cpp`` ``PyIPluginV3*Impl``), each base is a
separate C++ object in a Python subclass: its ``__init__`` must be called (pybind11 refuses the
instance otherwise), and the identity properties (``plugin_name``, ``plugin_version``,
``plugin_namespace`` on the core; ``num_outputs``, ``format_combination_limit``,
``metadata_string``, ``timing_cache_id`` on the build capability) live in C++ members, outside
``__dict__``: a clone that copies ``__dict__`` does not copy them. The bases define no plugin
methods: which methods a plugin overrides is what :mod:`pyplugins.emulator.trampoline_v3` looks at.

Example:
    >>> from pyplugins import emulator as trt
    >>> class P(trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuild, trt.IPluginV3OneRuntime):
    ...     def __init__(self):
    ...         trt.IPluginV3.__init__(self)
    ...         trt.IPluginV3OneCore.__init__(self)
    ...         trt.IPluginV3OneBuild.__init__(self)
    ...         trt.IPluginV3OneRuntime.__init__(self)
    ...         self.num_outputs = 1
    ...         self.plugin_name = "P"
    >>> p = P()
    >>> p.num_outputs, p.plugin_name, "plugin_name" in p.__dict__, p.format_combination_limit
    (1, 'P', False, 100)
"""

from __future__ import annotations

from typing import Any, Optional

from pyplugins.emulator.bases import IPluginCreatorInterface, cpp_stderr, str_property
from pyplugins.emulator.plugin_field import PluginFieldCollection

#: C++ ``IPluginV3OneBuild::kDEFAULT_FORMAT_COMBINATION_LIMIT``.
DEFAULT_FORMAT_COMBINATION_LIMIT = 100


class _V3BindingMeta(type):
    """pybind11's rule for a Python class with several C++ bases: every base's ``__init__`` must
    have run, else ``TypeError: <Base>.__init__() must be called when overriding __init__``."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = super().__call__(*args, **kwargs)
        done = getattr(obj, "_pp_inited", frozenset())
        for klass in cls.__mro__:
            if klass in _CONSTRUCTIBLE and klass not in done:
                msg = f"{klass.__name__}.__init__() must be called when overriding __init__"
                raise TypeError(msg)
        return obj


class _V3Binding(metaclass=_V3BindingMeta):
    """Storage shared by the V3 bases: the C++ members of every trampoline the object carries.

    The pybind rules that apply to every V3 object (refusing ``copy``/``pickle``, §12) belong on
    this one class.
    """

    __slots__ = ("_pp_inited", "_pp_name", "_pp_version", "_pp_namespace", "_pp_num_outputs",
                 "_pp_fcl", "_pp_metadata", "_pp_timing_cache_id", "_pp_nb_inputs",
                 "_pp_nb_outputs", "_pp_tactics", "__weakref__", "__dict__")

    def _pp_mark(self, klass: type) -> None:
        done = getattr(self, "_pp_inited", None)
        if done is None:
            done = set()
            object.__setattr__(self, "_pp_inited", done)
        done.add(klass)


class IPluginV3(_V3Binding):
    """``trt.IPluginV3``: the plugin object; define ``get_capability_interface(type)``,
    ``clone()`` and optionally ``destroy()``.

    ``IPluginV3(other)`` (the copy overload) copies nothing, as in TensorRT.
    """

    __slots__ = ()

    def __init__(self, other: Optional["IPluginV3"] = None) -> None:
        self._pp_mark(IPluginV3)


class IPluginCapability(_V3Binding):
    """``trt.IPluginCapability``: base of the capability interfaces (no Python constructor)."""

    __slots__ = ()


class IPluginV3OneCore(IPluginCapability):
    """``trt.IPluginV3OneCore``: set ``plugin_name``, ``plugin_version``, ``plugin_namespace``."""

    __slots__ = ()

    def __init__(self, other: Optional["IPluginV3OneCore"] = None) -> None:
        self._pp_mark(IPluginV3OneCore)

    plugin_name = str_property("_pp_name", "plugin_name",
                               "The plugin's name (C++ getPluginName).", print_unset=True)
    plugin_version = str_property("_pp_version", "plugin_version",
                                  "The plugin's version string.", print_unset=True)
    plugin_namespace = str_property("_pp_namespace", "plugin_namespace",
                                    "The plugin's namespace.", print_unset=True)


def _opt_str_property(slot: str, public: str, doc: str) -> property:
    """A build-capability string: None when unset, without a printed error (C++ returns NULL)."""
    checked = str_property(slot, public, doc)
    return property(lambda self: getattr(self, slot, None), checked.fset, doc=doc)


def _int_setter(slot: str, public: str) -> Any:
    """pybind11's ``int32_t`` caster: ints and ``__index__`` types (NumPy ints), not floats."""
    def setter(self: Any, value: int) -> None:
        if isinstance(value, (float, str, bytes)) or not hasattr(type(value), "__index__"):
            msg = f"{public} must be an int (got {value!r})"
            raise TypeError(msg)
        object.__setattr__(self, slot, int(value.__index__()))
    return setter


class IPluginV3OneBuild(IPluginCapability):
    """``trt.IPluginV3OneBuild``: set ``num_outputs``; define ``get_output_data_types``,
    ``get_output_shapes``, ``supports_format_combination``, ``configure_plugin`` and optionally
    ``get_workspace_size`` and ``get_valid_tactics``."""

    __slots__ = ()

    DEFAULT_FORMAT_COMBINATION_LIMIT = DEFAULT_FORMAT_COMBINATION_LIMIT

    def __init__(self, other: Optional["IPluginV3OneBuild"] = None) -> None:
        self._pp_mark(IPluginV3OneBuild)

    def _num_outputs(self) -> int:
        value = getattr(self, "_pp_num_outputs", None)
        if value is None:  # the binding throws AttributeError into PLUGIN_API_CATCH
            cpp_stderr("[ERROR] Exception caught in num_outputs(): AttributeError: "
                       "num_outputs not initialized")
            return -1
        return value

    num_outputs = property(_num_outputs, _int_setter("_pp_num_outputs", "num_outputs"),
                           doc="Number of outputs (C++ getNbOutputs); -1 with a printed error "
                               "when unset.")
    format_combination_limit = property(
        lambda self: getattr(self, "_pp_fcl", DEFAULT_FORMAT_COMBINATION_LIMIT),
        _int_setter("_pp_fcl", "format_combination_limit"),
        doc="How many format combinations TensorRT asks for at most (default 100).")
    metadata_string = _opt_str_property("_pp_metadata", "metadata_string",
                                        "Free text shown in engine inspection (None when unset).")
    timing_cache_id = _opt_str_property("_pp_timing_cache_id", "timing_cache_id",
                                        "Key for TensorRT's timing cache; None disables caching.")


class IPluginV3OneBuildV2(IPluginV3OneBuild):
    """``trt.IPluginV3OneBuildV2`` (10.3+): adds the optional ``get_aliased_input(output_index)``."""

    __slots__ = ()

    def __init__(self, other: Optional["IPluginV3OneBuildV2"] = None) -> None:
        IPluginV3OneBuild.__init__(self)
        self._pp_mark(IPluginV3OneBuildV2)


class IPluginV3OneRuntime(IPluginCapability):
    """``trt.IPluginV3OneRuntime``: define ``set_tactic``, ``on_shape_change``, ``enqueue``,
    ``attach_to_context`` and ``get_fields_to_serialize`` (all required, §7)."""

    __slots__ = ()

    def __init__(self, other: Optional["IPluginV3OneRuntime"] = None) -> None:
        self._pp_mark(IPluginV3OneRuntime)


class IPluginResourceContext:
    """``trt.IPluginResourceContext``: what ``attach_to_context`` receives (read-only
    ``error_recorder`` and ``gpu_allocator``; the emulator has neither, so both are None)."""

    __slots__ = ("_index",)

    def __init__(self) -> None:
        msg = "tensorrt.IPluginResourceContext: No constructor defined!"
        raise TypeError(msg)

    @classmethod
    def _make(cls, index: int) -> "IPluginResourceContext":
        """Emulator-side: the context of execution context number ``index``."""
        self = object.__new__(cls)
        self._index = index
        return self

    error_recorder = property(lambda self: None, doc="The context's error recorder (None).")
    gpu_allocator = property(lambda self: None, doc="The context's GPU allocator (None).")

    def __repr__(self) -> str:
        return f"<IPluginResourceContext of execution context {self._index}>"


class IPluginCreatorV3One(IPluginCreatorInterface):
    """``trt.IPluginCreatorV3One``: makes V3 plugins (§5.2).

    Set ``name`` (equal to the plugin's ``plugin_name``), ``plugin_version``,
    ``plugin_namespace`` and ``field_names``; define ``create_plugin(name, fc, phase)``. There is
    no ``deserialize_plugin``: at runtime TensorRT calls ``create_plugin`` with the fields
    ``get_fields_to_serialize`` returned and ``TensorRTPhase.RUNTIME``.

    Example:
        >>> from pyplugins import emulator as trt
        >>> class C(trt.IPluginCreatorV3One):
        ...     def __init__(self):
        ...         trt.IPluginCreatorV3One.__init__(self)
        ...         self.name, self.plugin_version = "P", "1"
        ...         self.field_names = trt.PluginFieldCollection([])
        >>> reg = trt.get_plugin_registry()
        >>> c = C()
        >>> reg.register_creator(c, "demo"), reg.get_creator("P", "1", "demo") is c
        (True, True)
        >>> reg.deregister_creator(c)
        True
    """

    def __init__(self) -> None:
        IPluginCreatorInterface.__init__(self)

    name = str_property("_pp_name", "name", "The plugin name this creator makes.",
                        print_unset=True)
    plugin_version = str_property("_pp_version", "plugin_version",
                                  "The plugin version this creator makes.", print_unset=True)
    plugin_namespace = str_property("_pp_namespace", "plugin_namespace",
                                    "The creator's namespace.", print_unset=True)

    @property
    def field_names(self) -> Optional[PluginFieldCollection]:
        """The fields the creator accepts (only names matter to the ONNX parser)."""
        value = getattr(self, "_pp_field_names", None)
        if value is None:
            cpp_stderr("[ERROR] Exception caught in field_names(): AttributeError: "
                       "field_names not initialized")
            return PluginFieldCollection([])
        return value

    @field_names.setter
    def field_names(self, value: PluginFieldCollection) -> None:
        if not isinstance(value, PluginFieldCollection):
            if not isinstance(value, (list, tuple)):
                msg = f"field_names must be a PluginFieldCollection (got {value!r})"
                raise TypeError(msg)
            value = PluginFieldCollection(value)
        object.__setattr__(self, "_pp_field_names", value)


#: The bases whose ``__init__`` a subclass must call (pybind11 checks each holder).
_CONSTRUCTIBLE = frozenset({IPluginV3, IPluginV3OneCore, IPluginV3OneBuild, IPluginV3OneBuildV2,
                            IPluginV3OneRuntime})
