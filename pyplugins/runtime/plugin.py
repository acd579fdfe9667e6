"""``pp.Plugin``: a TensorRT ``IPluginV2DynamicExt`` with the boilerplate and the classic mistakes
handled once: identity, typed fields, clone, serialization, format rules and error reports.

A complete plugin (register it with :func:`pyplugins.register`; the kernel is
``kernels_cu/leaky_relu.cu``)::

    import numpy as np
    import pyplugins as pp
    import pyplugins.trt as trt
    from pyplugins.runtime import shapes
    from pyplugins.dtypes import ctype_from_trt
    from pyplugins.runtime.launch import POINTER, Launch

    @pp.register
    class LeakyReLU(pp.Plugin):
        name = "LeakyReLU"                        # plugin_type; version "1", namespace ""
        negative_slope = pp.Field.float(default=0.01, min=0.0)   # ONNX attribute + state
        kernel = pp.Kernel("leaky_relu.cu", "leaky_relu<{T}>")
        dtypes = (trt.DataType.FLOAT, trt.DataType.HALF)         # all tensors one of these

        def get_output_dimensions(self, output_index, inputs, expr_builder):
            return inputs[0]                      # or a list of shapes.Dim / ints

        def plan(self, inputs, outputs, device):  # concrete dims and a GPU: compile, pack
            n = shapes.volume(inputs[0].dims)
            fn = self.kernel.function(ctype_from_trt(inputs[0].type), device)
            return Launch(fn, grid=min(shapes.cdiv(n, 1024), 65535), block=256, device=device,
                          args=(POINTER, POINTER, np.int64(n), np.float32(self.negative_slope)))
        # enqueue is inherited: launch(stream, *inputs, *outputs), capture-safe

What the base class does for you:

- **Identity** is declared once on the class: ``name`` (required), ``version`` (default
  ``"1"``), ``namespace`` (default ``""``), ``outputs`` (default 1). ``__init__`` sets TensorRT's
  C++-backed ``plugin_type``, ``plugin_version``, ``plugin_namespace`` and ``num_outputs`` from
  them. Class attributes named like those properties would shadow them in Python while C++ never
  sees the value, so they are refused when the class is defined, as are V3 method names
  (``get_output_shapes``, ``get_output_data_types``, ...) that a V2 plugin never receives.
- **Either interface**: the class is an ``IPluginV2DynamicExt``; ``@pp.register(interface="v3")``
  serves the same methods as an ``IPluginV3`` through a generated adapter
  (:mod:`pyplugins.runtime.plugin_v3`, ``docs/v3.md``), which adds ``tactics`` TensorRT times
  (``self.tactic``) and the V3-only ``shape_inputs``, ``size_tensors`` and ``aliases``.
- **Fields** (:mod:`pyplugins.runtime.fields`) are the plugin's attributes, ONNX attributes and
  serialized state. ``__init__(**fields)`` converts and validates them, then calls
  :meth:`Plugin.setup`, the hook for derived host state and cross-field checks.
- **clone()** builds the clone through ``__init__`` (so the C++-side identity is set again; an
  overridden ``__init__`` must accept ``**fields`` and call ``super().__init__(**fields)``), then
  copies the other instance state, so a configured source gives a configured clone. Fields and
  plain Python/NumPy state are deep-copied; kernels, compiled CuPy functions, launch objects (a
  :class:`~pyplugins.runtime.launch.Launch` is copied if its type defines ``__deepcopy__``, else shared)
  and attributes named in the class's ``shared`` tuple are shared; **device buffers** (CuPy
  arrays, device memory) are never shared or copied: the clone gets ``None``. Allocate device
  state in ``configure_plugin`` (TensorRT configures every clone before its ``enqueue``), e.g.
  ``if self.buf is None: self.buf = cupy.empty(n)``, or ask for ``get_workspace_size`` bytes.
- Defaults: ``get_output_datatype`` -> the first input's type (networks are strongly typed);
  ``supports_format_combination`` -> :func:`pyplugins.runtime.formats.check` with the class's ``dtypes``
  (default FLOAT and HALF) and ``same_as`` (default 0: every tensor has input 0's type), LINEAR
  only; ``serialize``/deserialize -> :mod:`pyplugins.runtime.serialize` of the fields;
  ``get_workspace_size`` -> 0; ``initialize``, ``terminate``, ``destroy`` -> nothing.
- **Launch scaffold**: ``configure_plugin`` resets ``self.launch``, skips build-phase ``-1``
  dims, records when no GPU is usable, and otherwise stores what the ``plan`` hook returns;
  ``enqueue`` calls it with the input then the output pointers (:meth:`Plugin.configure_plugin`,
  :meth:`Plugin.enqueue`). While that is one ``Launch``, TensorRT is handed the Launch's own
  ``enqueue`` (:attr:`Plugin.launch`): the hot path is one Python call. ``get_output_dimensions``
  and ``plan`` (or your own ``enqueue``) are yours to write.
- **Errors**: TensorRT swallows a callback's exception into a stderr line without naming the
  plugin. Every protocol method is wrapped (:mod:`pyplugins.runtime.error_reports`) so an exception is
  first reported, with the plugin's name, layer, method and a summary of the arguments, on
  ``logging.getLogger("pyplugins")`` (or TensorRT's ``Logger`` under real TensorRT when logging
  is not configured), then re-raised.
  The wrappers also accept a list of dims from ``get_output_dimensions`` and a NumPy dtype from
  ``get_output_datatype``. ``enqueue``'s wrapper is a bare try/except (the default
  ``enqueue`` has its own); a Launch handed to TensorRT as ``enqueue`` names the plugin in its
  errors instead.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Dict, List, Optional, Sequence, Tuple

import pyplugins.trt as trt
from pyplugins.runtime import fields as _fields
from pyplugins.runtime import formats as _formats
from pyplugins.runtime import serialize as _serialize
from pyplugins.runtime import shapes as _shapes
from pyplugins.runtime.class_checks import PROTOCOL_METHODS, check_class, check_field_names
from pyplugins.runtime.device import usable_device
from pyplugins.runtime.error_reports import describe, report, reports_itself, wrap_methods
from pyplugins.errors import PluginDefinitionError
from pyplugins.runtime.launch import Launch, Unlaunchable
from pyplugins.runtime.numba_launch import NumbaLaunch

#: The protocol methods a plugin class must define (see missing_methods).
_REQUIRED = ("get_output_dimensions", "enqueue")


class Plugin(trt.IPluginV2DynamicExt):
    """Base class of pyplugins plugins; see the module docstring for a complete example.

    Class attributes:
        name: the plugin type (ONNX op type); required.
        version: the plugin version string (ONNX ``plugin_version``), default ``"1"``.
        namespace: the plugin namespace (ONNX ``plugin_namespace``), default ``""``.
        outputs: the number of outputs, default 1.
        inputs: the number of input tensors, or None (default) when the network decides
            (V2, V3); ``tensorrt.plugin`` (QDP) needs it (:mod:`pyplugins.runtime.qdp`).
        dtypes: allowed data types for the default ``supports_format_combination``: a tuple
            for every tensor, or ``{tensor index: tuple}``; default FLOAT and HALF.
        same_as: tensor whose type every tensor shares (default 0), ``{i: k}`` pairs, or None.
        shared: names of instance attributes clones share instead of deep-copying.
        creator: the registered ``IPluginCreator`` (set by :func:`pyplugins.register`).
        plan: None, or a method ``plan(self, inputs, outputs, device)`` returning the
            :class:`~pyplugins.runtime.launch.Launch` (or a sequence of them) that ``enqueue`` runs;
            see :meth:`configure_plugin` for when it is called and :meth:`enqueue` for the
            pointer order.
        check_configure: None, or a method ``check_configure(self, inp, out)`` that raises for
            what ``configure_plugin``'s arguments already show is wrong (every call, build phase
            included: profile ``min``/``max``, partly known dims).
        check_shapes: None, or a method ``check_shapes(self, inputs, outputs)`` that raises
            (e.g. :class:`~pyplugins.errors.ShapeError`) for concrete shapes the op cannot take;
            called with every dim concrete, GPU or not, before ``plan``.
        reference: None, or a method ``reference(self, *inputs) -> tuple of np.ndarray``: the
            op's semantics in NumPy, one array per output, computed from the plugin's own field
            values. Callers check ``ref = getattr(plugin, "reference", None)`` and use it only
            ``if callable(ref)``; compare with :func:`pyplugins.testing.assert_close`.
        tactics: launch variants TensorRT times when registered as IPluginV3: a tuple of
            names (ids 1, 2, ...) or ``{id: name}``; ``plan`` reads ``self.tactic`` (the name, or
            None for the default, always None as V2). See :mod:`pyplugins.runtime.tactics`.
        aot_launch: None, or a method ``aot_launch(self, inputs, outputs)`` returning the
            :class:`~pyplugins.runtime.aot.AotLaunch` (kernel, symbolic grid, block, shared
            memory and extra int32 arguments) TensorRT runs without Python when the class is
            registered as QDP with an ahead-of-time kernel (:mod:`pyplugins.runtime.aot`).
        shape_inputs, size_tensors, aliases: IPluginV3-only capabilities (shape-tensor input
            count; 0-D size-tensor output indices; ``{output: input}`` written in place); see
            :mod:`pyplugins.runtime.plugin_v3`.

    Example:
        >>> import pyplugins as pp
        >>> class Scale(pp.Plugin):
        ...     name = "ScaleDoc"
        ...     alpha = pp.Field.float(default=1.0)
        >>> p = Scale(alpha=2)
        >>> p.alpha, p.plugin_type, p.num_outputs
        (2.0, 'ScaleDoc', 1)
    """

    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    namespace: ClassVar[str] = ""
    outputs: ClassVar[int] = 1
    inputs: ClassVar[Optional[int]] = None
    dtypes: ClassVar[Any] = (trt.DataType.FLOAT, trt.DataType.HALF)
    same_as: ClassVar[Any] = 0
    shared: ClassVar[Tuple[str, ...]] = ()
    creator: ClassVar[Any] = None
    #: The op's NumPy semantics, ``reference(self, *inputs) -> Tuple[np.ndarray, ...]``, or None.
    reference: ClassVar[Any] = None
    #: Opt-in hooks of the default ``configure_plugin`` / ``enqueue`` (None: not used).
    plan: ClassVar[Any] = None
    check_configure: ClassVar[Any] = None
    check_shapes: ClassVar[Any] = None
    #: The QDP ahead-of-time launch hook (None: the class registers as QDP with impl only).
    aot_launch: ClassVar[Any] = None
    #: IPluginV3 only (see :mod:`pyplugins.runtime.plugin_v3`, :mod:`pyplugins.runtime.tactics`): named launch
    #: variants TensorRT times, shape-tensor input count, 0-D size-tensor outputs, in-place
    #: outputs ``{output: input}``.
    tactics: ClassVar[Any] = ()
    shape_inputs: ClassVar[int] = 0
    size_tensors: ClassVar[Tuple[int, ...]] = ()
    aliases: ClassVar[Dict[int, int]] = {}
    #: The tactic chosen for this instance's next launch: a name of ``tactics``, or None for the
    #: plugin's default (always None as IPluginV2DynamicExt).
    tactic: Any = None
    __pp_fields__: ClassVar[Dict[str, _fields.Field]] = {}
    __pp_formats__: ClassVar[_formats.Formats]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_class(cls)
        cls.__pp_fields__ = _fields.collect(cls)
        check_field_names(cls, cls.__pp_fields__)
        cls.__pp_formats__ = _formats.Formats(dtypes=cls.dtypes, same_as=cls.same_as)
        cls.creator = None  # a subclass of a registered plugin is not registered itself
        wrap_methods(cls, PROTOCOL_METHODS, _POST)

    def __init__(self, **fields: Any) -> None:
        trt.IPluginV2DynamicExt.__init__(self)
        cls = type(self)
        if not cls.name:
            msg = (f"{cls.__name__} has no plugin name: set name = '...' on the class (it is "
                   "TensorRT's plugin_type and the ONNX op type).")
            raise PluginDefinitionError(msg)
        self.num_outputs = cls.outputs
        self.plugin_type = cls.name
        self.plugin_version = cls.version
        self.plugin_namespace = cls.namespace
        self.__dict__.update(_fields.values_from_python(cls.__pp_fields__, fields, cls.name))
        self.__dict__.setdefault("layer_name", "")
        if cls.plan is not None:
            self.launch = Unlaunchable.unconfigured(cls.name, "no configure_plugin yet")
        self.setup()

    def setup(self) -> None:
        """Hook run at the end of ``__init__`` (construction, creator, deserialization, clone):
        check fields against each other and derive host-side state from them."""

    def field_values(self) -> Dict[str, Any]:
        """Deep copies of the field values, by name, in declaration order."""
        return {n: copy.deepcopy(self.__dict__[n]) for n in type(self).__pp_fields__}

    @classmethod
    def advertised_fields(cls) -> List[Any]:
        """The ``trt.PluginField`` entries of the creator's ``field_names`` (the ONNX parser
        passes only attributes named there): one per declared field. A plugin that also
        accepts other names in :meth:`from_fields` lists them by extending this."""
        return [spec.plugin_field() for spec in cls.__pp_fields__.values()]

    @classmethod
    def missing_field_note(cls, name: str, given: Sequence[str]) -> Optional[str]:
        """Why an ONNX node may leave out ``name`` of the creator's ``field_names`` (``given``:
        the names it carries), for the line pyplugins adds under TensorRT's "Attribute ... not
        found in plugin node!" warning; None when it may not. Default: a field with a default.
        A plugin that accepts other names in :meth:`from_fields` explains them by extending this.

        Example:
            >>> from pyplugins.ops.rope import RoPE
            >>> RoPE.missing_field_note("theta", []), RoPE.missing_field_note("nope", [])
            ("theta's default 10000.0 applies", None)
        """
        spec = cls.__pp_fields__.get(name)
        if spec is None or spec.default is _fields.MISSING:
            return None
        return f"{name}'s default {spec.default!r} applies"

    @classmethod
    def from_fields(cls, fc: Any, layer_name: str = "") -> "Plugin":
        """A plugin from the ``PluginFieldCollection_`` given to ``create_plugin``."""
        obj = cls(**_fields.values_from_fc(cls.__pp_fields__, fc, cls.name))
        obj.layer_name = layer_name
        return obj

    @classmethod
    def from_bytes(cls, data: bytes, layer_name: str = "") -> "Plugin":
        """A plugin from what :meth:`serialize` returned (raises ``SerializationError``)."""
        values = _serialize.loads_fields(cls.name, cls.version, cls.__pp_fields__, data)
        obj = cls(**values)
        obj.layer_name = layer_name
        return obj

    # -- TensorRT protocol defaults ---------------------------------------------------------------

    def get_output_datatype(self, index: int, input_types: Any) -> Any:
        """Output ``index`` has the first input's type."""
        return input_types[0]

    def supports_format_combination(self, pos: int, in_out: Any, num_inputs: int) -> bool:
        """The class's ``dtypes`` and ``same_as`` rules, LINEAR only (:mod:`pyplugins.runtime.formats`)."""
        return type(self).__pp_formats__(pos, in_out, num_inputs)

    def configure_plugin(self, inp: Any, out: Any) -> None:
        """Run the ``check_configure``, ``check_shapes`` and ``plan`` hooks the class defines.

        With a ``plan``, ``self.launch`` first becomes an
        :class:`~pyplugins.runtime.launch.Unlaunchable` saying no launch was built (so a failed call
        leaves none behind). ``check_configure(inp, out)`` then runs on every call with
        TensorRT's ``DynamicPluginTensorDesc`` lists (``.desc``, ``.min``, ``.opt``, ``.max``):
        the place for checks of what the build phase knows. Unless every input and output dim
        is concrete (the build phase has ``-1`` for runtime dims; a class with ``size_tensors``
        needs only concrete inputs) nothing else happens. Then ``check_shapes(inputs, outputs)``
        runs, GPU or not; then, if :func:`~pyplugins.runtime.device.usable_device` finds no GPU,
        ``self.launch`` records that ``enqueue`` cannot run (``Unlaunchable.no_device``) and
        nothing is compiled; otherwise ``self.launch = self.plan(inputs, outputs, device)``.
        ``inputs`` and ``outputs`` are the ``PluginTensorDesc`` of each tensor (``.dims``,
        ``.type``, ``.format``, ``.scale``).
        """
        cls = type(self)
        if cls.plan is not None:
            self.launch = Unlaunchable.unconfigured(
                cls.name, "the last configure_plugin saw -1 dims or raised")
        if cls.check_configure is not None:
            self.check_configure(inp, out)
        if cls.plan is None and cls.check_shapes is None:
            return
        inputs: List[Any] = [t.desc for t in inp]
        outputs: List[Any] = [t.desc for t in out]
        # Build phase: runtime dims are -1, nothing to size yet. Outputs sized by a size
        # tensor (``size_tensors``, IPluginV3) keep -1 until enqueue has run: inputs decide.
        sized = (*inputs, *outputs) if not cls.size_tensors else inputs
        if not all(_shapes.is_concrete(t.dims) for t in sized):
            return
        if cls.check_shapes is not None:
            self.check_shapes(inputs, outputs)
        if cls.plan is None:
            return
        device = self.launch_device()
        if device is None:
            self.launch = Unlaunchable.no_device(cls.name)
            return
        planned = self.plan(inputs, outputs, device)
        self.launch = tuple(planned) if isinstance(planned, (list, tuple)) else planned

    @property
    def launch(self) -> Any:
        """What the default ``enqueue`` runs: what ``plan`` returned (a
        :class:`~pyplugins.runtime.launch.Launch`, a sequence of them, a ``NumbaLaunch``...),
        or an :class:`~pyplugins.runtime.launch.Unlaunchable` saying why there is none.

        Setting it to a Launch (or a ``NumbaLaunch`` with a prepacked one) while the class keeps
        the default ``enqueue`` also stores that Launch's bound ``enqueue`` as this object's
        ``enqueue`` attribute, which TensorRT's lookup by name finds before the class's
        (pybind11's ``get_override`` is a ``getattr``, protocol §1, §3 [infer: plain
        attribute lookup]): the hot path is one Python call, with no frame of the plugin's.
        Setting anything else removes it. The Launch's errors then name the plugin (its
        ``label``).
        """
        try:
            return self.__dict__["launch"]
        except KeyError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute 'launch'"
                                 ) from None

    @launch.setter
    def launch(self, value: Any) -> None:
        self.__dict__["launch"] = value
        fast = value if type(value) is Launch else (
            value.prepacked if type(value) is NumbaLaunch else None)
        if fast is not None and type(self).enqueue is _DEFAULT_ENQUEUE:
            fast.label = f"plugin {describe(self)}"
            self.__dict__["enqueue"] = fast.enqueue
        else:
            self.__dict__.pop("enqueue", None)

    def launch_device(self) -> Optional[int]:
        """The device ``plan`` builds launches for, or None when no kernel can run in this
        process (then ``enqueue`` cannot run). Default: :func:`~pyplugins.runtime.device.usable_device`.
        A plugin whose kernels also run without a GPU (numba's CUDA simulator) overrides it.
        """
        return usable_device()

    @reports_itself  # its own try/except: no wrapper layer on the hot path
    def enqueue(self, input_desc: Any, output_desc: Any, inputs: Sequence[int],
                outputs: Sequence[int], workspace: int, stream: int) -> None:
        """Run the planned launch(es) on ``stream`` with the pointers: every input in order,
        then every output in order (``launch(stream, *inputs, *outputs)``); so a ``plan``'s
        kernel takes its :data:`~pyplugins.runtime.launch.POINTER` arguments in that order. A plugin
        whose kernel wants another order (or a null pointer for a missing input) writes its
        own ``enqueue``. Capture-safe: no allocation, copy, synchronization or compilation.

        While ``self.launch`` is one :class:`~pyplugins.runtime.launch.Launch` (or a
        :class:`~pyplugins.runtime.numba_launch.NumbaLaunch` with a prepacked one), TensorRT
        does not reach this method: the ``launch`` property hands it the Launch's own
        ``enqueue`` instead, whose errors name the plugin themselves.
        """
        try:
            launch = self.launch
            if type(launch) is Launch:  # reached via super() from a subclass's own enqueue
                launch.enqueue(input_desc, output_desc, inputs, outputs, workspace, stream)
            elif type(launch) is tuple:
                for each in launch:
                    each(stream, *inputs, *outputs)
            else:  # NumbaLaunch, Unlaunchable, or another launch object of the plan hook's
                launch(stream, *inputs, *outputs)
        except Exception as err:
            report(self, "enqueue", (input_desc, output_desc, inputs, outputs, workspace, stream),
                   err)
            raise

    def get_workspace_size(self, input_desc: Any, output_desc: Any) -> int:
        """No scratch memory by default."""
        return 0

    def initialize(self) -> None:
        """Nothing by default (allocate device state in ``configure_plugin`` instead)."""

    def terminate(self) -> None:
        """Nothing by default."""

    def destroy(self) -> None:
        """Nothing by default."""

    def serialize(self) -> bytes:
        """The fields, encoded by :mod:`pyplugins.runtime.serialize` (deterministic)."""
        cls = type(self)
        return _serialize.dumps_fields(cls.name, cls.version, cls.__pp_fields__, self.__dict__)

    def clone(self) -> "Plugin":
        """A new, independent plugin in the same (configured) state; see the module docstring."""
        cls = type(self)
        new = cls(**self.field_values())
        for key, value in self.__dict__.items():
            if key in cls.__pp_fields__ or key.startswith("__pp_") or (
                    key == "enqueue" and "launch" in self.__dict__):
                continue  # enqueue: the launch's, set again with the clone's own launch
            if key == "launch":
                new.launch = _copy_state(cls, key, value)
            else:
                new.__dict__[key] = _copy_state(cls, key, value)
        return new


def missing_methods(cls: type) -> Tuple[str, ...]:
    """The required protocol methods ``cls`` does not define (below :class:`Plugin`); a class
    with a ``plan`` hook uses the default ``enqueue``."""
    mro = cls.__mro__[:cls.__mro__.index(Plugin)]
    required = _REQUIRED if getattr(cls, "plan", None) is None else ("get_output_dimensions",)
    return tuple(m for m in required if not any(m in vars(k) for k in mro))


# -- clone ------------------------------------------------------------------------------------------

_SHARED_MODULES = ("pyplugins.runtime.launch", "pyplugins.runtime.kernels")


def _copy_state(cls: type, key: str, value: Any) -> Any:
    """What a clone gets for one non-field instance attribute."""
    if key in cls.shared:
        return value
    kind = type(value)
    if getattr(kind, "__pp_shared__", False):
        return value
    module = kind.__module__ or ""
    if module.startswith(_SHARED_MODULES):
        # Launch / Kernel, built in configure_plugin: a type that knows how to copy itself (a
        # Launch with its own parameter buffer) is copied, otherwise shared.
        copier = getattr(kind, "__deepcopy__", None) or getattr(kind, "__copy__", None)
        return value if copier is None else copy.deepcopy(value)
    if module == "cupy" or module.startswith("cupy."):
        if kind.__name__ == "ndarray" or module.startswith("cupy.cuda.memory"):
            return None  # device buffer: never shared; rebuild it in configure_plugin
        return value  # compiled kernels, modules, streams: immutable handles
    try:
        return copy.deepcopy(value)
    except Exception as err:
        msg = (f"clone() of plugin {cls.name!r} cannot copy attribute {key!r} (a "
               f"{kind.__name__}): {err}. If it is immutable, list it in the class's "
               f"shared = ({key!r},); if it is device state, rebuild it in configure_plugin.")
        raise PluginDefinitionError(msg) from err


# -- return values (checked inside the wrappers of pyplugins.runtime.error_reports) ------------------------

def _datatype_result(plugin: Any, result: Any, args: tuple) -> Any:
    if isinstance(result, trt.DataType):
        return result
    try:
        return _formats.data_type(result)
    except PluginDefinitionError:
        msg = (f"get_output_datatype() must return a trt.DataType (got {result!r}); TensorRT "
               "would silently use FLOAT.")
        raise TypeError(msg) from None


def _dims_result(plugin: Any, result: Any, args: tuple) -> Any:
    if isinstance(result, trt.DimsExprs):
        return result
    if isinstance(result, (list, tuple)):
        return _shapes.output(result, args[2])
    msg = (f"get_output_dimensions() must return a trt.DimsExprs or a list of shapes.Dim / ints "
           f"(got {result!r})")
    raise TypeError(msg)


def _bool_result(plugin: Any, result: Any, args: tuple) -> bool:
    if result is None:  # TensorRT reads None as False, silently: a forgotten return
        msg = "supports_format_combination() must return True or False (got None)"
        raise TypeError(msg)
    return bool(result)  # as pybind's bool caster: 1, numpy bools, ... are accepted


_POST = {"get_output_datatype": _datatype_result, "get_output_dimensions": _dims_result,
         "supports_format_combination": _bool_result}


wrap_methods(Plugin, PROTOCOL_METHODS, _POST)
_DEFAULT_ENQUEUE = Plugin.enqueue
Plugin.__pp_formats__ = _formats.Formats(dtypes=Plugin.dtypes, same_as=Plugin.same_as)

__all__ = ["Plugin", "missing_methods"]
