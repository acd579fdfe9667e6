"""``pp.Plugin`` as a TensorRT ``IPluginV3``: a generated adapter around the same user class.

A :class:`pyplugins.Plugin` subclass is written once, with the V2-shaped methods
(``get_output_datatype``, ``get_output_dimensions``, ``supports_format_combination``,
``configure_plugin`` or the ``plan`` hook, ``enqueue``). ``@pp.register(interface="v3")``
(:mod:`pyplugins.runtime.creator`) registers an ``IPluginCreatorV3One`` whose plugins are instances of
:func:`adapter_class`: a class deriving from ``IPluginV3``, ``IPluginV3OneCore``,
``IPluginV3OneBuildV2`` (``IPluginV3OneBuild`` before TensorRT 10.3) and
``IPluginV3OneRuntime``, calling each base ``__init__`` and returning itself from
``get_capability_interface`` (protocol §7). It holds one instance of the user's class
(``adapter.plugin``) and maps TensorRT's V3 calls onto it:

================================  =============================================================
V3 callback                        what the user's plugin gets
================================  =============================================================
``get_output_data_types(types)``   ``get_output_datatype(i, types)`` for each output
``get_output_shapes(in, shape_in,  ``get_output_dimensions(i, in, eb)`` for each output (plus
eb)``                              ``shape_in`` as a 4th argument when the class declares
                                   ``shape_inputs``); ``size_tensors`` outputs are 0-D
``supports_format_combination``    the same, with each ``in_out[k]`` read as its ``.desc``
                                   (lazily: entries after ``pos`` are never touched)
``configure_plugin(in, out)``      the same (build phase: ``-1`` dims, profile min/opt/max)
``get_valid_tactics()``            the ids of the class's ``tactics`` (:mod:`pyplugins.runtime.tactics`)
``set_tactic(t)``                  ``plugin.tactic`` = the tactic's name (None for 0)
``on_shape_change(in, out)``       ``configure_plugin`` with concrete dims (``.desc`` = the
                                   ``PluginTensorDesc``, ``.min``/``.opt``/``.max`` = its dims):
                                   so the ``plan`` hook builds the launch for the chosen tactic
``enqueue(...)``                   ``enqueue(...)``, unchanged
``get_workspace_size(in, out)``    ``get_workspace_size`` with descriptors at the profile's max
``get_aliased_input(i)``           ``aliases.get(i, -1)``
``get_fields_to_serialize()``      the fields (:mod:`pyplugins.runtime.v3_fields`)
``attach_to_context(ctx)`` /       an independent clone (``plugin.clone()`` wrapped anew)
``clone()``
================================  =============================================================

V3-only class attributes (a class using any of them cannot be registered as V2):

- ``shape_inputs = n``: the plugin takes ``n`` shape-tensor inputs
  (``add_plugin_v3(inputs, shape_inputs, plugin)``, ONNX ``tensorrt_plugin_shape_input_indices``);
  ``get_output_dimensions(i, inputs, expr_builder, shape_inputs)`` receives their **values** as
  ``DimsExprs`` (``shapes.dims(shape_inputs[0], expr_builder)``).
- ``size_tensors = (k, ...)``: outputs that are 0-D size tensors (their type comes from
  ``get_output_datatype``; INT32 or INT64); another output's shape uses
  :func:`pyplugins.runtime.shapes.size_tensor` and ``enqueue`` writes the real extent into them.
- ``aliases = {output: input}``: outputs written in place into an input
  (``IPluginV3OneBuildV2.get_aliased_input``); TensorRT honours it only with
  ``PreviewFeature.ALIASED_PLUGIN_IO_10_03``, so the kernel must also be right when the two
  pointers differ (an elementwise ``y[i] = f(x[i])`` is).

Example:
    >>> import pyplugins as pp
    >>> import pyplugins.trt as trt
    >>> from pyplugins.runtime.plugin_v3 import v3_only
    >>> class Tee(pp.Plugin):
    ...     name = "TeeV3Doc"
    ...     aliases = {0: 0}
    >>> v3_only(Tee)
    ['aliases (in-place outputs)']
"""

from __future__ import annotations

from typing import Any, List, Sequence

import pyplugins.trt as trt
from pyplugins.runtime import shapes as _shapes
from pyplugins.runtime import tactics as _tactics
from pyplugins.runtime import v3_fields
from pyplugins.runtime.error_reports import wrap_methods
from pyplugins.errors import PluginDefinitionError

__all__ = ["V3_METHODS", "ConcreteDesc", "MaxDesc", "adapter_class", "check_v3_attributes",
           "plugin_from_runtime_fields", "v3_available", "v3_only"]

#: Every method TensorRT calls on a V3 plugin (all but enqueue wrapped for error reports).
V3_METHODS = ("get_capability_interface", "clone", "destroy", "get_output_data_types",
              "get_output_shapes", "supports_format_combination", "configure_plugin",
              "get_workspace_size", "get_valid_tactics", "get_aliased_input", "set_tactic",
              "on_shape_change", "enqueue", "attach_to_context", "get_fields_to_serialize")
_BASES = ("IPluginV3", "IPluginV3OneCore", "IPluginV3OneRuntime", "IPluginCreatorV3One")


def v3_available() -> bool:
    """Whether the active TensorRT API (real or emulated) has the ``IPluginV3`` classes."""
    return all(hasattr(trt, name) for name in _BASES) and (
        hasattr(trt, "IPluginV3OneBuildV2") or hasattr(trt, "IPluginV3OneBuild"))


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_v3_attributes(cls: Any) -> None:
    """Check ``tactics``, ``shape_inputs``, ``size_tensors`` and ``aliases`` of ``cls``.

    Raises:
        PluginDefinitionError: naming the attribute, the value and what is expected.
    """
    _tactics.declared(cls)
    n_out = cls.outputs
    if not _is_index(cls.shape_inputs):
        msg = f"plugin {cls.name!r}: shape_inputs must be an int >= 0 (got {cls.shape_inputs!r})."
        raise PluginDefinitionError(msg)
    size = cls.size_tensors
    if not isinstance(size, (tuple, list)) or not all(_is_index(k) and k < n_out for k in size) \
            or len(set(size)) != len(size):
        msg = (f"plugin {cls.name!r}: size_tensors must be a tuple of distinct output indices "
               f"below outputs={n_out} (got {size!r}), e.g. size_tensors = (1,).")
        raise PluginDefinitionError(msg)
    aliases = cls.aliases
    if not isinstance(aliases, dict) or not all(
            _is_index(o) and o < n_out and _is_index(i) for o, i in aliases.items()):
        msg = (f"plugin {cls.name!r}: aliases must be a dict {{output index: input index}} with "
               f"outputs below outputs={n_out} (got {aliases!r}), e.g. aliases = {{0: 0}}.")
        raise PluginDefinitionError(msg)
    if len(set(aliases.values())) != len(aliases):
        msg = f"plugin {cls.name!r}: aliases gives one input to several outputs ({aliases!r})."
        raise PluginDefinitionError(msg)
    if set(aliases) & set(size):
        msg = f"plugin {cls.name!r}: a size tensor output cannot also be aliased ({aliases!r})."
        raise PluginDefinitionError(msg)


def v3_only(cls: Any) -> List[str]:
    """What in ``cls`` only ``IPluginV3`` can serve (empty: it also works as V2)."""
    out = []
    if cls.shape_inputs:
        out.append("shape_inputs (shape-tensor inputs)")
    if cls.size_tensors:
        out.append("size_tensors (data-dependent output shapes)")
    if cls.aliases:
        out.append("aliases (in-place outputs)")
    return out


class _DescView:
    """``in_out`` of a V3 ``supports_format_combination`` seen as V2's: ``view[k]`` is
    ``in_out[k].desc``, read only when asked (entries after ``pos`` stay untouched)."""

    __slots__ = ("_items",)

    def __init__(self, items: Sequence[Any]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, k: int) -> Any:
        return self._items[k].desc


class ConcreteDesc:
    """What ``configure_plugin`` gets from ``on_shape_change``: ``.desc`` is TensorRT's
    ``PluginTensorDesc``; ``.min``, ``.opt`` and ``.max`` are its (concrete) dims."""

    __slots__ = ("desc", "min", "opt", "max")

    def __init__(self, desc: Any) -> None:
        self.desc = desc
        self.min = self.opt = self.max = desc.dims

    def __repr__(self) -> str:
        return f"ConcreteDesc({self.desc!r})"


class MaxDesc:
    """A ``PluginTensorDesc``-like view of a ``DynamicPluginTensorDesc`` at the profile's max
    (what ``get_workspace_size`` must cover): ``.dims``, ``.type``, ``.format``, ``.scale``."""

    __slots__ = ("dims", "type", "format", "scale")

    def __init__(self, dyn: Any) -> None:
        desc = dyn.desc
        concrete = _shapes.is_concrete(desc.dims)
        self.dims = desc.dims if concrete else dyn.max
        self.type, self.format, self.scale = desc.type, desc.format, desc.scale


def _build_base() -> Any:
    return getattr(trt, "IPluginV3OneBuildV2", None) or trt.IPluginV3OneBuild


def adapter_class(cls: Any) -> type:
    """The ``IPluginV3`` class serving pyplugins plugin class ``cls`` (made once per class).

    Raises:
        PluginDefinitionError: the active TensorRT has no ``IPluginV3`` (before 10.0), or the
            class declares ``aliases`` and TensorRT has no ``IPluginV3OneBuildV2`` (before
            10.3), or a V3 attribute is malformed.

    Example:
        >>> from pyplugins.ops.circ_pad import CircPad
        >>> p = adapter_class(CircPad)(CircPad(pads=[1, 1]))
        >>> p.plugin_name, p.get_valid_tactics(), p.get_capability_interface(None) is p
        ('CircPad', [1, 2], True)
    """
    made = vars(cls).get("__pp_v3_adapter__")
    if made is not None:
        return made
    if not v3_available():
        msg = (f"plugin {cls.name!r}: the active TensorRT API has no IPluginV3 (it came in "
               "TensorRT 10.0); register it with interface='v2'.")
        raise PluginDefinitionError(msg)
    check_v3_attributes(cls)
    build = _build_base()
    if cls.aliases and not hasattr(trt, "IPluginV3OneBuildV2"):
        msg = (f"plugin {cls.name!r} declares aliases, which needs IPluginV3OneBuildV2 "
               "(TensorRT 10.3+).")
        raise PluginDefinitionError(msg)
    adapter = _make(cls, build)
    # enqueue (the hot path) is not wrapped again: the plugin's own enqueue reports its errors.
    wrap_methods(adapter, tuple(m for m in V3_METHODS if m != "enqueue"), {})
    cls.__pp_v3_adapter__ = adapter
    return adapter


def _make(cls: Any, build: Any) -> type:  # one method per V3 callback
    tactic_ids = list(_tactics.declared(cls))
    n_out = cls.outputs

    class Adapter(trt.IPluginV3, trt.IPluginV3OneCore, build, trt.IPluginV3OneRuntime):
        plugin_class = cls
        name, version, namespace = cls.name, cls.version, cls.namespace  # for error reports

        def __init__(self, plugin: Any) -> None:
            trt.IPluginV3.__init__(self)
            trt.IPluginV3OneCore.__init__(self)
            build.__init__(self)
            trt.IPluginV3OneRuntime.__init__(self)
            self.plugin = plugin
            self.layer_name = plugin.layer_name
            self.plugin_name = cls.name
            self.plugin_version = cls.version
            self.plugin_namespace = cls.namespace
            self.num_outputs = n_out
            self._hand_over_enqueue()

        def _hand_over_enqueue(self) -> None:
            # The hot path without this adapter's forwarding frame: TensorRT's binding finds
            # enqueue by name on each call (pybind11's get_override: a getattr on the object,
            # protocol §1, §3), which finds an instance attribute before the class's method
            # [infer: plain Python attribute lookup]. So this object's enqueue is the plugin's
            # own (its Launch's, while it has one: Plugin.launch), taken again whenever the
            # plugin configures; the class's enqueue below stays for lookups through the class.
            self.__dict__["enqueue"] = self.plugin.enqueue

        def __repr__(self) -> str:
            return f"<IPluginV3 {cls.name!r} over {type(self.plugin).__name__}>"

        # -- core ----------------------------------------------------------------------------
        def get_capability_interface(self, type: Any) -> Any:  # noqa: A002 - TensorRT's name
            return self

        def clone(self) -> Any:
            return type(self)(self.plugin.clone())

        def destroy(self) -> None:
            self.plugin.destroy()

        # -- build ---------------------------------------------------------------------------
        def get_output_data_types(self, input_types: Any) -> List[Any]:
            return [self.plugin.get_output_datatype(i, input_types) for i in range(n_out)]

        def get_output_shapes(self, inputs: Any, shape_inputs: Any, expr_builder: Any) -> List[Any]:
            given = len(shape_inputs)
            if given != cls.shape_inputs:
                msg = (f"plugin {cls.name!r} declares shape_inputs = {cls.shape_inputs} but the "
                       f"network gives it {given} shape input(s); pass them as add_plugin_v3's "
                       "shape_inputs (ONNX: tensorrt_plugin_shape_input_indices).")
                raise ValueError(msg)
            extra = (shape_inputs,) if cls.shape_inputs else ()
            return [trt.DimsExprs(0) if i in cls.size_tensors else
                    self.plugin.get_output_dimensions(i, inputs, expr_builder, *extra)
                    for i in range(n_out)]

        def supports_format_combination(self, pos: int, in_out: Any, num_inputs: int) -> bool:
            return self.plugin.supports_format_combination(pos, _DescView(in_out), num_inputs)

        def configure_plugin(self, inp: Any, out: Any) -> None:
            try:
                self.plugin.configure_plugin(inp, out)
            finally:  # a failed configure leaves an Unlaunchable: its enqueue says why
                self._hand_over_enqueue()

        def get_workspace_size(self, inp: Any, out: Any) -> int:
            return self.plugin.get_workspace_size([MaxDesc(d) for d in inp],
                                                  [MaxDesc(d) for d in out])

        def get_valid_tactics(self) -> List[int]:
            return list(tactic_ids)

        def get_aliased_input(self, output_index: int) -> int:
            return cls.aliases.get(output_index, -1)

        # -- runtime -------------------------------------------------------------------------
        def set_tactic(self, tactic: int) -> None:
            self.plugin.tactic = _tactics.tactic_name(cls, tactic)

        def on_shape_change(self, inp: Any, out: Any) -> None:
            try:
                self.plugin.configure_plugin([ConcreteDesc(d) for d in inp],
                                             [ConcreteDesc(d) for d in out])
            finally:
                self._hand_over_enqueue()

        def enqueue(self, input_desc: Any, output_desc: Any, inputs: Any, outputs: Any,
                    workspace: int, stream: int) -> None:
            self.plugin.enqueue(input_desc, output_desc, inputs, outputs, workspace, stream)

        def attach_to_context(self, context: Any) -> Any:
            return self.clone()

        def get_fields_to_serialize(self) -> Any:
            # Kept on the object: TensorRT 10.0-10.5 keep a pointer into it (§4.2).
            self.__dict__["_serialized_fields"] = v3_fields.collection(self.plugin)
            return self.__dict__["_serialized_fields"]

    Adapter.__name__ = f"{cls.__name__}V3"
    Adapter.__qualname__ = f"{cls.__qualname__}V3"
    Adapter.__module__ = cls.__module__
    Adapter.__doc__ = (f"IPluginV3 of plugin {cls.name!r}: TensorRT's V3 callbacks mapped onto "
                       f"a {cls.__name__} instance (.plugin); made by pyplugins.runtime.plugin_v3.")
    return Adapter


def plugin_from_runtime_fields(cls: Any, fc: Any, layer_name: str) -> Any:
    """A ``cls`` instance from the fields :func:`v3_fields.collection` wrote (RUNTIME phase)."""
    obj = cls(**v3_fields.values(cls, fc))
    obj.layer_name = layer_name
    return obj
