"""The plugin objects a QDP creator makes: a JIT plugin (``impl`` runs at every ``enqueue``) or an
AOT one (``aot_impl`` gives a PTX kernel and symbolic launch parameters, 10.9+), as TensorRT's
``_plugin_class.py`` builds them (§8).

Both are ``trt.IPluginV3`` with the Quick capabilities and answer what TensorRT calls:
``get_num_outputs()``, ``get_output_data_types(input_types, ranks)`` (the register function on
fake shapes), ``get_output_shapes(inputs, shape_inputs, expr_builder)`` (on symbolic shapes),
``get_supported_format_combinations(in_out, num_inputs)`` (autotune's combinations, flattened),
``configure_plugin(in, out)``, ``get_valid_tactics()``, ``get_aliased_input(i)``,
``set_tactic(t)``, ``clone()``; the JIT plugin ``enqueue(input_desc, output_desc, inputs, outputs,
in_strides, out_strides, stream)`` and ``get_fields_to_serialize()``; the AOT plugin
``get_launch_params(input_exprs, in_out, num_inputs, launch_params, extra_args, expr_builder)``,
``get_kernel(input_desc, output_desc)`` and ``get_timing_cache_id()``.

TensorRT's own behaviour is kept where a plugin can see it: autotune and aot_impl receive the
descriptors ``get_output_shapes`` built (so that call must come first, and its expressions must
still be valid); ``aot_impl`` gets *every* attribute positionally in the order of the creator's
fields, whatever its signature names (``_plugin_class.py:374-375``); a non-aliased output's
``Tensor.get_aliased()`` is the last input (the -1 of ``aliased_map``, ``:291-293``).

Example:
    >>> from pyplugins.emulator.enums import DataType
    >>> from pyplugins.checker.size_tensors import SizeTensorBuilder, evaluate
    >>> def register_fn(inp0, k):  # what @register recorded (annotations checked there)
    ...     out = inp0.like()
    ...     out.shape_expr[0] = inp0.shape_expr[0] * k
    ...     return out
    >>> plugin = TemplateJITPlugin("tile", "demo", 1)
    >>> plugin.init(register_fn, {"k": 3}, [], None, None, None, False)
    >>> plugin.get_output_data_types([DataType.HALF], [2])
    [<DataType.HALF: 1>]
    >>> eb = SizeTensorBuilder()
    >>> (out,) = plugin.get_output_shapes([eb._input(0, (-1, 8))], [], eb)
    >>> evaluate(out, {0: (5, 8)})
    (15, 8)
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

from pyplugins.emulator.bases_quick import (IPluginV3QuickAOTBuild, IPluginV3QuickBuild,
                                            IPluginV3QuickCore, IPluginV3QuickRuntime)
from pyplugins.emulator.bases_v3 import IPluginV3
from pyplugins.emulator.descs import PluginTensorDesc
from pyplugins.emulator.dims import DimsExprs
from pyplugins.emulator.enums import TensorFormat
from pyplugins.emulator.plugin.attributes import fields_from_attrs
from pyplugins.emulator.plugin.combinations import TypeFormatCombination
from pyplugins.emulator.plugin.descriptors import Shape, TensorDesc
from pyplugins.emulator.plugin.sym_exprs import ShapeExpr, SymInt32, set_expr_builder
from pyplugins.emulator.plugin.sym_lists import ShapeExprs, SymExprs
from pyplugins.emulator.plugin.tensor import KernelLaunchParams, Tensor
from pyplugins.emulator.plugin_field import PluginFieldCollection
from pyplugins.emulator.version import emulated_version
from pyplugins.errors import QDPAssertionError, QDPTypeError

__all__ = ["TemplateAOTPlugin", "TemplateJITPlugin", "TemplatePluginBase"]


def _leave_shape_context() -> None:
    """TensorRT forgets the callback's builder when it returns, from 10.15 (before, it stays)."""
    if emulated_version() >= (10, 15):
        set_expr_builder(None)


def _describe(desc: TensorDesc, tensor_desc: Any) -> None:
    """Give an immutable descriptor the concrete shape, format and scale of ``tensor_desc``."""
    desc._immutable = False
    desc.shape = Shape(tensor_desc)
    desc.format = tensor_desc.desc.format
    desc.scale = tensor_desc.desc.scale
    desc._immutable = True


class TemplatePluginBase(IPluginV3, IPluginV3QuickCore, IPluginV3QuickBuild):
    """What JIT and AOT plugins share: identity, output types and shapes, formats, tactics."""

    register_function: Callable
    autotune_function: Optional[Callable]
    attrs: Dict[str, Any]
    autotune_attr_names: Optional[List[str]]

    def __init__(self, name: str, namespace: str, num_outputs: int) -> None:
        IPluginV3.__init__(self)
        IPluginV3QuickCore.__init__(self)
        IPluginV3QuickBuild.__init__(self)
        self.plugin_version = "1"
        self.input_types: list = []
        self.aliased_map: Dict[int, int] = {}  # output index -> input index (-1: none)
        self.plugin_namespace = namespace
        self.plugin_name = name
        self.num_outputs = num_outputs
        self.autotune_combs: list = []
        self.supported_combs: Dict[TypeFormatCombination, set] = {}
        self.curr_comb: Optional[TypeFormatCombination] = None

    def get_num_outputs(self) -> int:
        """The number of outputs the register function declares."""
        return self.num_outputs

    def _outputs_of(self, input_descs: Sequence[TensorDesc]) -> tuple:
        out = self.register_function(*input_descs, **self.attrs)
        return out if isinstance(out, tuple) else (out,)

    def get_output_data_types(self, input_types: Sequence[Any], ranks: Sequence[int]) -> list:
        """Output types: the register function run on fake shapes of the given ranks."""
        self.input_types = input_types
        input_descs = []
        index_of: Dict[int, int] = {}
        for i, (dtype, rank) in enumerate(zip(input_types, ranks)):
            desc = TensorDesc()
            desc.dtype = dtype
            desc.shape_expr = ShapeExprs(rank, _is_dummy=True)
            desc._immutable = True
            input_descs.append(desc)
            index_of[id(desc)] = i
        output_descs = self._outputs_of(input_descs)
        self.output_types = []
        for i, desc in enumerate(output_descs):
            self.output_types.append(desc.dtype)
            source = desc.get_aliased()
            self.aliased_map[i] = index_of[id(source)] if source is not None else -1
        return self.output_types

    def get_fields_to_serialize(self) -> PluginFieldCollection:
        """The attributes ``impl`` uses, as fields (the engine keeps only these)."""
        return fields_from_attrs({k: v for k, v in self.attrs.items()
                                  if k in self.impl_attr_names})

    def get_output_shapes(self, inputs: Sequence[DimsExprs], shape_inputs: Sequence[Any],
                          exprBuilder: Any) -> List[DimsExprs]:  # noqa: N803 - TensorRT's name
        """Output shapes: the register function run on the inputs' symbolic shapes."""
        if len(shape_inputs) != 0:
            msg = (f"QDP plugin '{self.plugin_namespace}::{self.plugin_name}' got shape inputs; "
                   "tensorrt.plugin does not support them")
            raise QDPAssertionError(msg)
        set_expr_builder(exprBuilder)
        self.input_descs = []
        for i, dims in enumerate(inputs):
            desc = TensorDesc()
            desc.dtype = self.input_types[i]
            desc.shape_expr = ShapeExprs(len(dims))
            for j in range(len(dims)):
                desc.shape_expr[j] = ShapeExpr(dims[j])
            desc._immutable = True
            self.input_descs.append(desc)
        self.output_descs = self._outputs_of(self.input_descs)
        for idx, desc in enumerate(self.output_descs):
            if desc.is_size_tensor:
                desc._set_index(idx)
        output_exprs = []
        for desc in self.output_descs:
            exprs = DimsExprs(len(desc.shape_expr))
            for j in range(len(exprs)):
                exprs[j] = desc.shape_expr[j]._expr
            output_exprs.append(exprs)
        _leave_shape_context()
        return output_exprs

    def configure_plugin(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """Remember the chosen types and formats (for ``get_valid_tactics``)."""
        self.curr_comb = TypeFormatCombination()
        self.curr_comb.types = [d.desc.type for d in inputs] + [d.desc.type for d in outputs]
        self.curr_comb.layouts = [d.desc.format for d in inputs] + [d.desc.format for d in outputs]

    def get_supported_format_combinations(self, in_out: Sequence[Any], num_inputs: int) -> list:
        """Every supported combination, flattened: ``len(in_out)`` PluginTensorDescs each.

        Without autotune: the input types given, the registered output types, LINEAR.
        """
        if self.autotune_function is not None:
            val = [self.attrs[k] for k in self.autotune_attr_names] if self.autotune_attr_names \
                else ()
            for i, desc in enumerate(in_out):
                target = self.input_descs[i] if i < num_inputs else \
                    self.output_descs[i - num_inputs]
                _describe(target, desc)
            self.autotune_combs = self.autotune_function(*self.input_descs, *val,
                                                         self.output_descs)
        if len(self.autotune_combs) == 0:
            default = []
            comb = TypeFormatCombination(len(in_out))
            for j in range(len(in_out)):
                desc = PluginTensorDesc()
                desc.type = (self.input_types[j] if j < num_inputs
                             else self.output_descs[j - num_inputs].dtype)
                desc.format = TensorFormat.LINEAR
                comb.types[j], comb.layouts[j] = desc.type, desc.format
                default.append(desc)
            self.supported_combs[comb] = set()
            return default
        every = [c for autotune in self.autotune_combs for c in autotune._get_combinations()]
        flat = []
        self.supported_combs = {}
        for comb in every:
            tactics = set(comb.tactics) if comb.tactics is not None else set()
            if comb in self.supported_combs:
                self.supported_combs[comb].update(tactics)
                continue
            self.supported_combs[comb] = tactics
            for j in range(len(in_out)):
                desc = PluginTensorDesc()
                desc.type = comb.types[j]
                desc.format = comb.layouts[j]
                flat.append(desc)
        return flat

    def get_aliased_input(self, output_index: int) -> int:
        """The input an output aliases, or -1."""
        return self.aliased_map[output_index]

    def get_valid_tactics(self) -> List[int]:
        """The tactics offered for the combination of the last ``configure_plugin``."""
        tactics = self.supported_combs.get(self.curr_comb)
        if tactics is None:
            msg = (f"QDP plugin '{self.plugin_namespace}::{self.plugin_name}' was configured with "
                   f"{self.curr_comb}, which no autotune combination offered")
            raise QDPAssertionError(msg)
        return list(tactics)

    def set_tactic(self, tactic: int) -> None:
        """Remember the tactic for the next ``enqueue`` or ``get_launch_params``."""
        self._tactic = tactic


class TemplateJITPlugin(TemplatePluginBase, IPluginV3QuickRuntime):
    """A QDP plugin whose ``impl`` runs in Python at every ``enqueue``."""

    def __init__(self, name: str, namespace: str, num_outputs: int) -> None:
        super().__init__(name, namespace, num_outputs)
        IPluginV3QuickRuntime.__init__(self)
        self.expects_tactic = False

    def init(self, register_function: Callable, attrs: Dict[str, Any],
             impl_attr_names: List[str], impl_function: Callable,
             autotune_attr_names: Optional[List[str]], autotune_function: Optional[Callable],
             expects_tactic: bool) -> None:
        """Attach the plugin's definition and attribute values."""
        self.register_function = register_function
        self.impl_function = impl_function
        self.attrs = attrs
        self.impl_attr_names = impl_attr_names
        self.autotune_attr_names = autotune_attr_names
        self.autotune_function = autotune_function
        self.expects_tactic = expects_tactic

    def get_capability_interface(self, type: Any) -> "TemplateJITPlugin":  # noqa: A002
        """Itself, for every capability."""
        return self

    def _tensors(self, descs: Sequence[Any], ptrs: Sequence[int], strides: Sequence[Any],
                 stream: int, read_only: Callable[[int], bool]) -> List[Tensor]:
        tensors = []
        for i, desc in enumerate(descs):
            t = Tensor()
            t.dtype, t.shape, t.format, t.scale = desc.type, Shape(desc), desc.format, desc.scale
            t.data_ptr, t._stream, t._read_only, t.strides = ptrs[i], stream, read_only(i), \
                strides[i]
            tensors.append(t)
        return tensors

    def enqueue(self, input_desc: Sequence[Any], output_desc: Sequence[Any],
                inputs: Sequence[int], outputs: Sequence[int], in_strides: Sequence[Any],
                out_strides: Sequence[Any], stream: int) -> None:
        """Run ``impl`` on :class:`Tensor` views of the buffers."""
        aliased_inputs = list(self.aliased_map.values())
        input_tensors = self._tensors(input_desc, inputs, in_strides, stream,
                                      lambda i: i not in aliased_inputs)
        output_tensors = self._tensors(output_desc, outputs, out_strides, stream, lambda i: False)
        for i, j in self.aliased_map.items():  # j == -1 (no alias) links the last input
            output_tensors[i]._aliased_to = input_tensors[j]
            input_tensors[j]._aliased_to = output_tensors[i]
        for t in input_tensors + output_tensors:
            t._immutable = True
        val = [self.attrs[k] for k in self.impl_attr_names] if self.impl_attr_names else ()
        if self.expects_tactic:
            self.impl_function(*input_tensors, *val, output_tensors, stream, self._tactic)
        else:
            self.impl_function(*input_tensors, *val, output_tensors, stream=stream)

    def clone(self) -> "TemplateJITPlugin":
        """A new plugin with this one's state (``__dict__`` shared shallowly, as TensorRT)."""
        cloned = TemplateJITPlugin(self.plugin_name, self.plugin_namespace, self.num_outputs)
        cloned.__dict__.update(self.__dict__)
        return cloned


class TemplateAOTPlugin(TemplatePluginBase, IPluginV3QuickAOTBuild):
    """A QDP plugin built ahead of time: ``aot_impl`` gives TensorRT a PTX kernel (10.9+)."""

    def __init__(self, name: str, namespace: str, num_outputs: int) -> None:
        TemplatePluginBase.__init__(self, name, namespace, num_outputs)
        IPluginV3QuickAOTBuild.__init__(self)
        self.kernel_map: Dict[tuple, tuple] = {}

    def init(self, register_function: Callable, attrs: Dict[str, Any],
             aot_impl_attr_names: List[str], aot_impl_function: Callable,
             autotune_attr_names: Optional[List[str]],
             autotune_function: Optional[Callable]) -> None:
        """Attach the plugin's definition and attribute values."""
        self.register_function = register_function
        self.aot_impl_function = aot_impl_function
        self.attrs = attrs
        self.aot_impl_attr_names = aot_impl_attr_names
        self.autotune_attr_names = autotune_attr_names
        self.autotune_function = autotune_function

    def get_capability_interface(self, type: Any) -> "TemplateAOTPlugin":  # noqa: A002
        """Itself, for every capability."""
        return self

    def get_kernel(self, inputDesc: Sequence[Any], outputDesc: Sequence[Any]) -> tuple:  # noqa: N803
        """``(kernel name, PTX bytes)`` that ``get_launch_params`` compiled for these types,
        formats and the current tactic."""
        descs = list(inputDesc) + list(outputDesc)
        key = (tuple(d.type for d in descs), tuple(d.format for d in descs), self._tactic)
        if key not in self.kernel_map:
            msg = (f"QDP plugin '{self.plugin_namespace}::{self.plugin_name}': no kernel for "
                   f"{key}; get_launch_params must run first for that combination and tactic")
            raise QDPAssertionError(msg)
        name, ptx = self.kernel_map[key]
        return name, ptx.encode() if isinstance(ptx, str) else ptx

    def get_launch_params(self, inDimsExprs: Sequence[Any], in_out: Sequence[Any],  # noqa: N803
                          num_inputs: int, launchParams: Any, symExprSetter: Any,  # noqa: N803
                          exprBuilder: Any) -> None:  # noqa: N803
        """Run ``aot_impl`` and hand its kernel, launch parameters and extra arguments over."""
        set_expr_builder(exprBuilder)
        val = tuple(self.attrs.values())  # every attribute, in field order (see module doc)
        types, formats = [], []
        for i, desc in enumerate(in_out):
            target = self.input_descs[i] if i < num_inputs else self.output_descs[i - num_inputs]
            _describe(target, desc)
            target._immutable = False
            target.dtype = desc.desc.type
            target._immutable = True
            types.append(desc.desc.type)
            formats.append(desc.desc.format)
        name, ptx, params, extra = self.aot_impl_function(*self.input_descs, *val,
                                                          self.output_descs, self._tactic)
        where = f"aot_impl of QDP plugin '{self.plugin_namespace}::{self.plugin_name}'"
        for what, value in (("kernel name", name), ("PTX", ptx)):
            if not isinstance(value, (str, bytes)):
                msg = f"{where} returned a {type(value).__name__} {what}; return str or bytes"
                raise QDPTypeError(msg)
        if not isinstance(params, KernelLaunchParams):
            msg = f"{where} returned {type(params).__name__} launch parameters; return a " \
                  "tensorrt.plugin.KernelLaunchParams"
            raise QDPTypeError(msg)
        if not isinstance(extra, SymExprs):
            msg = f"{where} returned {type(extra).__name__} extra arguments; return SymIntExprs"
            raise QDPTypeError(msg)
        for field in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
                      "shared_mem"):
            setattr(launchParams, field, getattr(params, field)())
        self.kernel_map[(tuple(types), tuple(formats), self._tactic)] = (name, ptx)
        symExprSetter.nbSymExprs = len(extra)
        for i, arg in enumerate(extra):
            if not isinstance(arg, SymInt32):
                msg = (f"{where}: extra argument {i} is a {type(arg).__name__}; wrap it in "
                       "tensorrt.plugin.SymInt32")
                raise QDPTypeError(msg)
            symExprSetter[i] = arg()
        _leave_shape_context()

    def get_timing_cache_id(self) -> str:
        """The empty string (no timing-cache suffix)."""
        return ""

    def clone(self) -> "TemplateAOTPlugin":
        """A new plugin with this one's state (``__dict__`` shared shallowly, as TensorRT)."""
        cloned = TemplateAOTPlugin(self.plugin_name, self.plugin_namespace, self.num_outputs)
        cloned.__dict__.update(self.__dict__)
        return cloned
