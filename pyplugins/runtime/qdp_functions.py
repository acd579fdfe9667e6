"""The functions ``tensorrt.plugin`` registers for a ``pp.Plugin`` class (``register``,
``autotune``, ``impl``), and the per-class state they share.

QDP validates a decorated function by ``inspect.signature`` (protocol §8.2) and calls it with the
tensors, then the attributes, in register order. The functions here are generic closures whose
``__signature__`` is the real, annotated signature built for the class (:func:`signature`):
tensors ``inp0``, ``inp1``... annotated ``TensorDesc``, then one parameter per field annotated as
:mod:`pyplugins.runtime.qdp_attrs` says, without defaults (QDP has none). A function generated
with ``exec`` would do the same; ``__signature__`` keeps the bodies ordinary Python.

- ``register(inp..., **attrs)``: a plugin built from the attributes (cached per value), then for
  each output ``get_output_datatype`` and ``get_output_dimensions`` on the adapter of
  :mod:`pyplugins.runtime.qdp_shapes`, as ``tensorrt.plugin.from_shape_expr`` descriptors. A
  missing attribute is an error naming it (QDP re-creates every attribute from the node).
- ``autotune(inp..., *attrs, outputs)``: :func:`pyplugins.runtime.qdp_autotune.combinations` as
  ``AutoTuneCombination``s with the class's tactic ids.
- ``impl(inp..., *attrs, outputs, stream, tactic)`` (JIT): a clone configured once per
  attributes, tactic, shapes, types and formats (``configure_plugin`` with concrete
  descriptors, so ``plan`` builds the launch; the first call for a shape compiles, as V2's first
  configure does), then the plugin's ``enqueue`` on TensorRT's stream. QDP has no workspace: a
  plugin asking for one is refused.

Example:
    >>> from pyplugins.ops.seq_repeat import SeqRepeat
    >>> import pyplugins.emulator.plugin as trtp
    >>> print(signature(QdpDefinition(SeqRepeat, trtp, 1), "register"))
    (inp0: ...TensorDesc, factor: numpy.ndarray[...int64]]) -> ...TensorDesc
    >>> print(signature(QdpDefinition(SeqRepeat, trtp, 1), "impl"))
    (inp0, factor, outputs, stream, tactic)
"""

from __future__ import annotations

import inspect
import threading
import typing
from collections import OrderedDict
from types import ModuleType
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

import pyplugins.trt as trt
from pyplugins.errors import FieldError, FormatError, PluginDefinitionError
from pyplugins.runtime import qdp_attrs, qdp_autotune
from pyplugins.runtime.plugin_v3 import ConcreteDesc
from pyplugins.runtime.qdp_shapes import QdpExprBuilder, dims_of, shape_exprs
from pyplugins.runtime.tactics import declared, tactic_name

__all__ = ["CACHE", "QdpDefinition", "autotune_function", "impl_function", "named",
           "register_function", "signature"]

#: Plugins (and configured launches) kept per class, most recently used first.
CACHE = 64

_POSITIONAL = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _key(values: Sequence[Any]) -> tuple:
    """A hashable key of attribute values (arrays by dtype, shape and bytes)."""
    return tuple((v.dtype.str, v.shape, v.tobytes()) if isinstance(v, np.ndarray) else v
                 for v in values)


def _io_key(tensors: Sequence[Any]) -> tuple:
    return tuple((t.dtype, tuple(int(d) for d in t.shape), t.format) for t in tensors)


def _contiguous(shape: Sequence[int]) -> Tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(strides))


def _plugin_desc(tensor: Any) -> Any:
    desc = trt.PluginTensorDesc()
    desc.dims = trt.Dims(tuple(int(d) for d in tensor.shape))
    desc.type, desc.format, desc.scale = tensor.dtype, tensor.format, tensor.scale
    return desc


class _Run:
    """A plugin configured for one set of concrete tensors, and what its ``enqueue`` needs."""

    __slots__ = ("plugin", "in_descs", "out_descs", "strides")

    def __init__(self, plugin: Any, in_descs: List[Any], out_descs: List[Any]) -> None:
        self.plugin, self.in_descs, self.out_descs = plugin, in_descs, out_descs
        self.strides = tuple(_contiguous(tuple(d.dims)) for d in (*in_descs, *out_descs))


class QdpDefinition:
    """What the QDP functions of one ``pp.Plugin`` class share: the class, the
    ``tensorrt.plugin`` module, and caches of plugins by attribute values.

    Args:
        cls: the ``pp.Plugin`` subclass.
        trtp: the active ``tensorrt.plugin`` module.
        num_inputs: the number of input tensors the plugin takes.
    """

    def __init__(self, cls: Any, trtp: ModuleType, num_inputs: int) -> None:
        self.cls, self.trtp, self.num_inputs = cls, trtp, int(num_inputs)
        self.fields = list(cls.__pp_fields__.items())
        self.tactics = list(declared(cls))
        self._lock = threading.Lock()
        self._plugins: "OrderedDict[tuple, Any]" = OrderedDict()
        self._runs: "OrderedDict[tuple, _Run]" = OrderedDict()
        self._combos: "OrderedDict[tuple, list]" = OrderedDict()

    @property
    def where(self) -> str:
        """``plugin 'Name' (QDP)`` for messages."""
        return f"plugin {self.cls.name!r} (tensorrt.plugin)"

    def _cached(self, table: "OrderedDict[tuple, Any]", key: tuple, make: Callable[[], Any]) -> Any:
        with self._lock:
            hit = table.get(key)
            if hit is not None:
                table.move_to_end(key)
                return hit
        made = make()  # outside the lock: configure may compile
        with self._lock:
            table[key] = made
            while len(table) > CACHE:
                table.popitem(last=False)
        return made

    def plugin(self, attrs: Sequence[Any]) -> Any:
        """The plugin for these attribute values (in field order), built once per value.

        Raises:
            FieldError: a value the plugin's fields refuse (their own message).
        """
        def make() -> Any:
            values = {name: qdp_attrs.raw_value(field, value)
                      for (name, field), value in zip(self.fields, attrs)}
            return self.cls(**values)

        return self._cached(self._plugins, _key(attrs), make)

    def attrs_from_keywords(self, kwargs: Dict[str, Any]) -> List[Any]:
        """The attribute values of a register call, in field order.

        Raises:
            FieldError: an attribute is missing.
        """
        missing = [name for name, _ in self.fields if name not in kwargs]
        if missing:
            msg = (f"{self.where} got no attribute {', '.join(map(repr, missing))}: QDP "
                   "attributes have no defaults, so the node must carry every attribute "
                   f"({', '.join(n for n, _ in self.fields)}); "
                   "pyplugins.models.qdp_node.qdp_node writes them all.")
            raise FieldError(msg)
        return [kwargs[name] for name, _ in self.fields]

    def outputs(self, plugin: Any, inputs: Sequence[Any]) -> Any:
        """The output descriptors of ``plugin`` for QDP input descriptors ``inputs``."""
        builder = QdpExprBuilder(self.trtp)
        dims = [dims_of(x) for x in inputs]
        types = [x.dtype for x in inputs]
        outs = []
        for i in range(self.cls.outputs):
            dtype = plugin.get_output_datatype(i, types)
            shape = plugin.get_output_dimensions(i, dims, builder)
            outs.append(self.trtp.from_shape_expr(shape_exprs(shape, self.cls.name, i), dtype))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def combinations(self, attrs: Sequence[Any], descs: Sequence[Any]) -> list:
        """The ``AutoTuneCombination``s of ``descs`` (inputs then outputs, concrete dims).

        Raises:
            FormatError: the plugin accepts no combination for these tensors.
        """
        dims = [tuple(int(d) for d in x.shape) for x in descs]
        plugin = self.plugin(attrs)

        def make() -> list:
            found = qdp_autotune.combinations(plugin, dims, self.num_inputs)
            if not found:
                msg = (f"{self.where} accepts no type/format combination for tensors of dims "
                       f"{dims} (its supports_format_combination refused every candidate)")
                raise FormatError(msg)
            return found

        found = self._cached(self._combos, (_key(attrs), tuple(dims)), make)
        tactics = list(self.tactics) or None
        return [self.trtp.AutoTuneCombination(*qdp_autotune.spec_strings(c), tactics)
                for c in found]

    def run(self, attrs: Sequence[Any], tactic: int, inputs: Sequence[Any],
            outputs: Sequence[Any]) -> _Run:
        """The plugin configured for these tensors (``trtp.Tensor``s) and tactic."""
        def make() -> _Run:
            plugin = self.plugin(attrs).clone()
            plugin.tactic = tactic_name(self.cls, tactic)
            in_descs = [_plugin_desc(t) for t in inputs]
            out_descs = [_plugin_desc(t) for t in outputs]
            size = plugin.get_workspace_size(in_descs, out_descs)
            if size:
                msg = (f"{self.where} asks for {size} bytes of workspace, which tensorrt.plugin "
                       "does not provide; register it with interface='v2' or 'v3'")
                raise PluginDefinitionError(msg)
            plugin.configure_plugin([ConcreteDesc(d) for d in in_descs],
                                    [ConcreteDesc(d) for d in out_descs])
            return _Run(plugin, in_descs, out_descs)

        key = (_key(attrs), int(tactic), _io_key(inputs), _io_key(outputs))
        return self._cached(self._runs, key, make)


def signature(definition: QdpDefinition, role: str) -> inspect.Signature:
    """The signature ``tensorrt.plugin`` validates for ``role`` (``"register"``, ``"impl"``,
    ``"autotune"`` or ``"aot_impl"``)."""
    trtp = definition.trtp
    typed = role == "register"
    params = [inspect.Parameter(f"inp{i}", _POSITIONAL,
                                annotation=trtp.TensorDesc if typed else inspect.Parameter.empty)
              for i in range(definition.num_inputs)]
    params += [inspect.Parameter(name, _POSITIONAL, annotation=qdp_attrs.annotation(field)
                                 if typed else inspect.Parameter.empty)
               for name, field in definition.fields]
    tail = {"register": (), "impl": ("outputs", "stream", "tactic"), "autotune": ("outputs",),
            "aot_impl": ("outputs", "tactic")}[role]
    params += [inspect.Parameter(name, _POSITIONAL) for name in tail]
    n_out = definition.cls.outputs
    returns = {
        "register": trtp.TensorDesc if n_out == 1 else typing.Tuple[(trtp.TensorDesc,) * n_out],
        "impl": inspect.Signature.empty,
        "autotune": typing.List[trtp.AutoTuneCombination],
        "aot_impl": (typing.Tuple[typing.Union[str, bytes], typing.Union[str, bytes],
                                  getattr(trtp, "KernelLaunchParams", None),
                                  getattr(trtp, "SymExprs", None)]
                     if role == "aot_impl" else None),
    }[role]
    return inspect.Signature(params, return_annotation=returns)


def named(fn: Callable, definition: QdpDefinition, role: str) -> Callable:
    """``fn`` with the signature, name and docstring of ``role`` for the definition's class."""
    fn.__signature__ = signature(definition, role)  # type: ignore[attr-defined]
    fn.__name__ = fn.__qualname__ = f"{definition.cls.__name__}_{role}"
    fn.__module__ = definition.cls.__module__
    fn.__doc__ = f"tensorrt.plugin {role} of pp.Plugin {definition.cls.name!r}."
    return fn


def register_function(lookup: Callable[[], QdpDefinition]) -> Callable:
    """The ``@tensorrt.plugin.register`` function; ``lookup()`` gives the current definition
    (re-registering a class swaps it without touching TensorRT)."""
    definition = lookup()

    def register(*inputs: Any, **attrs: Any) -> Any:
        d = lookup()
        return d.outputs(d.plugin(d.attrs_from_keywords(attrs)), inputs)

    return named(register, definition, "register")


def autotune_function(lookup: Callable[[], QdpDefinition]) -> Callable:
    """The ``@tensorrt.plugin.autotune`` function (see the module docstring)."""
    definition = lookup()

    def autotune(*args: Any) -> List[Any]:
        d = lookup()
        n_in, n_attr = d.num_inputs, len(d.fields)
        inputs, attrs, outputs = args[:n_in], args[n_in:n_in + n_attr], args[n_in + n_attr]
        return d.combinations(attrs, (*inputs, *outputs))

    return named(autotune, definition, "autotune")


def impl_function(lookup: Callable[[], QdpDefinition]) -> Callable:
    """The ``@tensorrt.plugin.impl`` function (JIT; see the module docstring)."""
    definition = lookup()

    def impl(*args: Any, **kwargs: Any) -> None:
        d = lookup()
        n_in, n_attr = d.num_inputs, len(d.fields)
        inputs, attrs = args[:n_in], args[n_in:n_in + n_attr]
        rest = list(args[n_in + n_attr:])
        outputs = rest[0]
        stream = rest[1] if len(rest) > 1 else kwargs["stream"]
        tactic = rest[2] if len(rest) > 2 else kwargs.get("tactic", 0)
        run = d.run(attrs, tactic or 0, inputs, outputs)
        tensors = (*inputs, *outputs)
        for tensor, expected in zip(tensors, run.strides):
            if tuple(int(s) for s in tensor.strides) != expected:
                msg = (f"{d.where} needs contiguous (LINEAR) tensors; got strides "
                       f"{tuple(tensor.strides)} for shape {tuple(tensor.shape)}")
                raise FormatError(msg)
        run.plugin.enqueue(run.in_descs, run.out_descs, [t.data_ptr for t in inputs],
                           [t.data_ptr for t in outputs], 0, stream)

    return named(impl, definition, "impl")
