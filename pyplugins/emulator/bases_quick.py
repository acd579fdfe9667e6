"""The binding classes ``tensorrt.plugin`` (QDP) builds on: the Quick plugin and creator bases,
``ISymExpr``, ``ISymExprs`` and ``KernelLaunchParams``.

TensorRT binds them in ``python/src/infer/pyPlugin.cpp`` (protocol §8): the Quick interfaces
from 10.6, ``IPluginV3QuickAOTBuild``, ``ISymExpr``, ``ISymExprs`` and ``KernelLaunchParams``
from 10.9 (:data:`pyplugins.emulator.surface_table.PLUGIN_SINCE`). As with the V3 bases, identity
lives outside ``__dict__`` and each base's ``__init__`` must run. Which methods a Quick plugin
defines (``get_output_shapes``, ``enqueue``, ``get_launch_params`` ...) is the driver's business;
the bases define none.

``ISymExprs`` and ``KernelLaunchParams`` are objects TensorRT owns and passes to
``get_launch_params``: Python cannot construct them; the emulator makes them with ``_make()`` and
reads what the plugin wrote with ``_evaluate(shapes)`` (each expression evaluated at concrete
input shapes, :meth:`pyplugins.emulator.dims.IDimensionExpr._evaluate`).

Example:
    >>> from pyplugins.emulator.dims import IExprBuilder
    >>> eb = IExprBuilder()
    >>> x = eb._input(0, (-1, 8))
    >>> class Sym(ISymExpr):
    ...     def __init__(self, expr):
    ...         ISymExpr.__init__(self)
    ...         self.expr = expr
    >>> params, args = KernelLaunchParams._make(), ISymExprs._make()
    >>> params.grid_x = Sym(x[0])
    >>> args.nbSymExprs = 1
    >>> args[0] = Sym(x[1])
    >>> params._evaluate({0: (5, 8)})["grid_x"], args._evaluate({0: (5, 8)})
    (5, [8])
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from pyplugins.emulator.bases import IPluginCreatorInterface, str_property, to_int
from pyplugins.emulator.bases_v3 import IPluginCapability, IPluginCreatorV3One
from pyplugins.emulator.dims import IDimensionExpr

__all__ = ["EMULATED", "IPluginCreatorV3Quick", "IPluginV3QuickAOTBuild", "IPluginV3QuickBuild",
           "IPluginV3QuickCore", "IPluginV3QuickRuntime", "ISymExpr", "ISymExprs",
           "KernelLaunchParams", "extra_arg_exprs", "launch_exprs"]


class IPluginV3QuickCore(IPluginCapability):
    """``trt.IPluginV3QuickCore``: set ``plugin_name``, ``plugin_version``, ``plugin_namespace``
    (read back unset: None and a printed error, as the V3 core)."""

    __slots__ = ()

    def __init__(self, other: Optional["IPluginV3QuickCore"] = None) -> None:
        self._pp_mark(IPluginV3QuickCore)

    plugin_name = str_property("_pp_name", "plugin_name", "The plugin's name.", print_unset=True)
    plugin_version = str_property("_pp_version", "plugin_version", "The plugin's version.",
                                  print_unset=True)
    plugin_namespace = str_property("_pp_namespace", "plugin_namespace",
                                    "The plugin's namespace.", print_unset=True)


class IPluginV3QuickBuild(IPluginCapability):
    """``trt.IPluginV3QuickBuild``: the build capability of a Quick plugin.

    Since 10.7 it has no properties: TensorRT asks ``get_num_outputs()``, ``get_output_data_types(
    input_types, ranks)``, ``get_output_shapes``, ``get_supported_format_combinations(in_out,
    num_inputs)``, ``configure_plugin``, ``get_valid_tactics`` and ``get_aliased_input``
    (``pyPlugin.cpp:1534-1950``). 10.6 kept ``num_outputs`` as a property; QDP sets it as a plain
    attribute either way.
    """

    __slots__ = ()

    def __init__(self, other: Optional["IPluginV3QuickBuild"] = None) -> None:
        self._pp_mark(IPluginV3QuickBuild)


class IPluginV3QuickAOTBuild(IPluginV3QuickBuild):
    """``trt.IPluginV3QuickAOTBuild`` (10.9+): adds ``get_launch_params(input_exprs, in_out,
    num_inputs, launch_params, extra_args, expr_builder)``, ``get_kernel(input_desc,
    output_desc)`` and ``set_tactic`` (``pyPlugin.cpp:1966-2094``)."""

    __slots__ = ()

    def __init__(self, other: Optional["IPluginV3QuickAOTBuild"] = None) -> None:
        IPluginV3QuickBuild.__init__(self)
        self._pp_mark(IPluginV3QuickAOTBuild)


class IPluginV3QuickRuntime(IPluginCapability):
    """``trt.IPluginV3QuickRuntime``: ``enqueue(input_desc, output_desc, inputs, outputs,
    in_strides, out_strides, stream)`` (no workspace), ``set_tactic`` and
    ``get_fields_to_serialize`` (``pyPlugin.cpp:2096-2229``)."""

    __slots__ = ()

    def __init__(self, other: Optional["IPluginV3QuickRuntime"] = None) -> None:
        self._pp_mark(IPluginV3QuickRuntime)


class IPluginCreatorV3Quick(IPluginCreatorInterface):
    """``trt.IPluginCreatorV3Quick``: the creator QDP registers for each plugin (§5).

    The same four properties as ``IPluginCreatorV3One`` (it is not one); ``create_plugin(name,
    namespace, fc, phase)`` gains a fifth argument, a ``QuickPluginCreationRequest``, in 10.9
    (``pyPlugin.cpp:2662-2785``).
    """

    def __init__(self) -> None:
        IPluginCreatorInterface.__init__(self)

    # The same bindings as IPluginCreatorV3One's four properties.
    name = IPluginCreatorV3One.name
    plugin_version = IPluginCreatorV3One.plugin_version
    plugin_namespace = IPluginCreatorV3One.plugin_namespace
    field_names = IPluginCreatorV3One.field_names


class ISymExpr:
    """``trt.ISymExpr`` (10.9+): a scalar kernel argument, subclassed by QDP's ``SymExprImpl``.

    ``type``, ``dtype`` and ``expr`` can be set and not read (TensorRT binds setters only);
    ``expr`` holds an ``IDimensionExpr``.
    """

    __slots__ = ("_pp_type", "_pp_dtype", "_pp_expr", "__dict__")

    def __init__(self) -> None:
        self._pp_type = self._pp_dtype = self._pp_expr = None

    def _set_type(self, value: Any) -> None:
        self._pp_type = value

    def _set_dtype(self, value: Any) -> None:
        self._pp_dtype = value

    def _set_expr(self, value: Any) -> None:
        self._pp_expr = value

    type = property(None, _set_type, doc="The argument's PluginArgType (write-only).")
    dtype = property(None, _set_dtype, doc="The argument's PluginArgDataType (write-only).")
    expr = property(None, _set_expr, doc="The argument's IDimensionExpr (write-only).")

    def _evaluate(self, shapes: Mapping[Any, Any]) -> int:
        """Emulator-side: the expression's value at concrete input shapes."""
        expr = getattr(self, "_pp_expr", None)
        if not isinstance(expr, IDimensionExpr):
            msg = (f"ISymExpr holds {expr!r}, not an IDimensionExpr: TensorRT would read a "
                   "dangling or null expression (was the SymInt32 built outside a shape context?)")
            raise TypeError(msg)
        return expr._evaluate(shapes)

    def _parts(self) -> tuple:
        """Emulator-side: ``(type, dtype, expr)`` as the plugin set them."""
        return (getattr(self, "_pp_type", None), getattr(self, "_pp_dtype", None),
                getattr(self, "_pp_expr", None))


def _check_sym(value: Any, what: str) -> Any:
    if value is not None and not isinstance(value, ISymExpr):
        msg = f"{what} must be a tensorrt.ISymExpr (got {value!r})"
        raise TypeError(msg)
    return value


class ISymExprs:
    """``trt.ISymExprs`` (10.9+): the extra kernel arguments ``get_launch_params`` fills.

    Set ``nbSymExprs`` first; ``[i]`` out of range reads None and ignores a write (TensorRT's
    setter returns False, which the binding drops).
    """

    __slots__ = ("_items",)

    def __init__(self) -> None:
        msg = "tensorrt.ISymExprs: No constructor defined!"
        raise TypeError(msg)

    @classmethod
    def _make(cls) -> "ISymExprs":
        """Emulator-side: an empty list, as TensorRT hands one to ``get_launch_params``."""
        self = object.__new__(cls)
        self._items: List[Optional[ISymExpr]] = []
        return self

    @property
    def nbSymExprs(self) -> int:  # noqa: N802 - TensorRT's name
        """How many expressions the list holds."""
        return len(self._items)

    @nbSymExprs.setter
    def nbSymExprs(self, count: int) -> None:  # noqa: N802 - TensorRT's name
        count = to_int(count, "nbSymExprs")
        self._items = (self._items + [None] * count)[:count]

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> Optional[ISymExpr]:
        index = to_int(index, "index")
        return self._items[index] if 0 <= index < len(self._items) else None

    def __setitem__(self, index: int, value: ISymExpr) -> None:
        index = to_int(index, "index")
        if 0 <= index < len(self._items):
            self._items[index] = _check_sym(value, f"ISymExprs[{index}]")

    def _evaluate(self, shapes: Mapping[Any, Any]) -> List[int]:
        """Emulator-side: every expression's value at concrete input shapes."""
        return [item._evaluate(shapes) if item is not None else None for item in self._items]


_LAUNCH_FIELDS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem")


def _launch_property(field: str) -> property:
    def getter(self: "KernelLaunchParams") -> Optional[ISymExpr]:
        return self._values.get(field)

    def setter(self: "KernelLaunchParams", value: ISymExpr) -> None:
        self._values[field] = _check_sym(value, f"KernelLaunchParams.{field}")

    return property(getter, setter, doc=f"``{field}`` as an ISymExpr (None until set).")


class KernelLaunchParams:
    """``trt.KernelLaunchParams`` (C++ ``IKernelLaunchParams``, 10.9+): grid, block and shared
    memory of an AOT kernel, each an ``ISymExpr`` (not ``tensorrt.plugin.KernelLaunchParams``,
    the QDP class a plugin's ``aot_impl`` returns)."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        msg = "tensorrt.KernelLaunchParams: No constructor defined!"
        raise TypeError(msg)

    @classmethod
    def _make(cls) -> "KernelLaunchParams":
        """Emulator-side: the empty parameters TensorRT hands to ``get_launch_params``."""
        self = object.__new__(cls)
        self._values: Dict[str, Optional[ISymExpr]] = {}
        return self

    grid_x = _launch_property("grid_x")
    grid_y = _launch_property("grid_y")
    grid_z = _launch_property("grid_z")
    block_x = _launch_property("block_x")
    block_y = _launch_property("block_y")
    block_z = _launch_property("block_z")
    shared_mem = _launch_property("shared_mem")

    def _evaluate(self, shapes: Mapping[Any, Any]) -> Dict[str, Optional[int]]:
        """Emulator-side: each parameter's value at concrete input shapes (None when unset)."""
        return {f: (self._values[f]._evaluate(shapes) if self._values.get(f) is not None
                    else None) for f in _LAUNCH_FIELDS}


def launch_exprs(params: KernelLaunchParams) -> Dict[str, Optional[IDimensionExpr]]:
    """Emulator-side: what ``get_launch_params`` wrote into TensorRT's launch parameters, one
    ``IDimensionExpr`` (None when unset) per field: ``grid_x`` ... ``block_z``, ``shared_mem``.

    Raises:
        TypeError: a field holds an ``ISymExpr`` without an ``IDimensionExpr``.

    Example:
        >>> launch_exprs(KernelLaunchParams._make())["grid_x"] is None
        True
    """
    out: Dict[str, Optional[IDimensionExpr]] = {}
    for name in _LAUNCH_FIELDS:
        sym = params._values.get(name)
        out[name] = None if sym is None else _expr_of(sym, f"KernelLaunchParams.{name}")
    return out


def extra_arg_exprs(args: ISymExprs) -> List[Tuple[Any, Any, Optional[IDimensionExpr]]]:
    """Emulator-side: each extra kernel argument ``get_launch_params`` wrote, as
    ``(PluginArgType, PluginArgDataType, IDimensionExpr)``; an entry left unset is
    ``(None, None, None)``.

    Example:
        >>> args = ISymExprs._make()
        >>> args.nbSymExprs = 1
        >>> extra_arg_exprs(args)
        [(None, None, None)]
    """
    out = []
    for i, sym in enumerate(args._items):
        if sym is None:
            out.append((None, None, None))
            continue
        kind, dtype, _ = sym._parts()
        out.append((kind, dtype, _expr_of(sym, f"extra argument {i}")))
    return out


def _expr_of(sym: ISymExpr, what: str) -> IDimensionExpr:
    expr = getattr(sym, "_pp_expr", None)
    if not isinstance(expr, IDimensionExpr):
        msg = (f"{what} holds {expr!r}, not an IDimensionExpr: TensorRT would read a dangling or "
               "null expression (was the SymInt32 built outside a shape context?)")
        raise TypeError(msg)
    return expr


#: The ``tensorrt`` names this module emulates (served by ``pyplugins.emulator.__getattr__``).
EMULATED = frozenset({"IPluginCreatorV3Quick", "IPluginV3QuickAOTBuild", "IPluginV3QuickBuild",
                      "IPluginV3QuickCore", "IPluginV3QuickRuntime", "ISymExpr", "ISymExprs",
                      "KernelLaunchParams"})
