"""The C++ side of the IPluginV3 bindings: every call TensorRT makes into a V3 plugin goes through here.

Each function mirrors one virtual of ``pyPlugin.cpp``'s ``PyIPluginV3Impl``,
``PyIPluginV3OneBuildBaseImpl``, ``PyIPluginV3OneRuntimeImpl`` and ``IPluginCreatorV3OneImpl``
(protocol doc §7): it looks the override up, calls it through :func:`trampoline.invoke` (same
``[ERROR]`` lines, listeners, watch and ``At:`` frames as V2), and returns TensorRT's fallback on
failure. V3's C++ methods return ``int32_t`` status codes: a raising ``configure_plugin``,
``on_shape_change``, ``set_tactic``, ``get_output_*`` or ``enqueue`` returns -1 (a failed build
or inference), unlike V2's void ``configure_plugin``. Counts cached in the C++ trampoline (the
input/output counts ``on_shape_change`` saw, the ``get_valid_tactics`` list) are kept on the
capability object that received the call, as C++ keeps them.

Example:
    >>> from pyplugins import emulator as trt
    >>> from pyplugins.emulator import trampoline_v3
    >>> class R(trt.IPluginV3OneRuntime):
    ...     def __init__(self):
    ...         trt.IPluginV3OneRuntime.__init__(self)
    ...     def set_tactic(self, tactic):
    ...         raise ValueError(f"no tactic {tactic}")   # C++ prints [ERROR] ... to fd 2
    >>> trampoline_v3.set_tactic(R(), 1), trampoline_v3.get_valid_tactics(R())
    (-1, [])
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from pyplugins.emulator.bases import cpp_stderr
from pyplugins.emulator.bases_v3 import (IPluginV3, IPluginV3OneBuild, IPluginV3OneBuildV2,
                                         IPluginV3OneCore, IPluginV3OneRuntime,
                                         IPluginResourceContext)
from pyplugins.emulator.descs import DynamicPluginTensorDesc, PluginTensorDesc
from pyplugins.emulator.dims import DimsExprs, IExprBuilder
from pyplugins.emulator.enums import DataType, PluginCapabilityType, TensorRTPhase, fresh
from pyplugins.emulator.plugin_field import (PluginField, PluginFieldCollection,
                                             PluginFieldCollection_)
from pyplugins.emulator.version import emulated_version
from pyplugins.emulator.trampoline import (FAILED, as_bool, as_int32, as_size_t, held, invoke,
                                          list_of, pointer_to, status_of)


_CAPABILITY = {
    PluginCapabilityType.CORE: (IPluginV3OneCore, " a valid core capability interface"),
    PluginCapabilityType.BUILD: (IPluginV3OneBuild, " a valid build capability interface"),
    PluginCapabilityType.RUNTIME: (IPluginV3OneRuntime, " a valid runtime capability interface"),
}


def crossing(value: Any) -> Any:
    """What Python receives when TensorRT hands it ``value`` (an enum member, a descriptor).

    The one place V3 applies pybind's conversions to callback arguments (§12): descriptors are
    copies (their enums fresh on every read), enum values fresh objects (``is`` fails, as in
    TensorRT).
    """
    if isinstance(value, (PluginTensorDesc, DynamicPluginTensorDesc)):
        return value._copy()
    return fresh(value)


def one_per_output(result: Any, n_out: int, method: str) -> Optional[list]:
    """A list callback's result as TensorRT takes it: None (-1) when the call failed or the list
    is not ``num_outputs`` long, the latter with the binding's ``[ERROR]`` line."""
    if result is FAILED:
        return None
    if len(result) != n_out:
        cpp_stderr(f"[ERROR] Exception thrown from {method}() RuntimeError: {method}() returned "
                   "a list with a different length than num_outputs")
        return None
    return result


def _as_fields(value: Any) -> PluginFieldCollection:
    """``PluginFieldCollection`` or any sequence of ``PluginField`` (bind_vector converts)."""
    if isinstance(value, PluginFieldCollection):
        return value
    return PluginFieldCollection(list_of(PluginField)(value))


# -- IPluginV3 -----------------------------------------------------------------------------------

def get_capability_interface(plugin: Any, kind: PluginCapabilityType) -> Optional[Any]:
    """C++ ``getCapabilityInterface(type)``: the capability object, or None (nullptr) when the
    call raised or returned an object that is not of the capability's class."""
    klass, as_type = _CAPABILITY[kind]
    return invoke(plugin, "get_capability_interface", (crossing(kind),), required=True,
                  default=None, fallback=None, interpret=pointer_to(klass), as_type=as_type)


def clone(plugin: Any) -> Optional[IPluginV3]:
    """C++ ``IPluginV3::clone``: the new plugin (held until destroyed), or None."""
    result = invoke(plugin, "clone", (), required=True, default=None, fallback=None,
                    interpret=pointer_to(IPluginV3), as_type="nvinfer1::IPluginV3")
    if result is not None:
        held[id(result)] = result
    return result


def destroy(plugin: Any) -> None:
    """``~PyIPluginV3Impl``: calls ``destroy()`` if defined, then drops the binding's reference."""
    invoke(plugin, "destroy", (), required=False, default=None, fallback=None)
    held.pop(id(plugin), None)


# -- IPluginV3OneCore ------------------------------------------------------------------------------

def identity(core: Any) -> tuple:
    """C++ ``getPluginName``/``getPluginVersion``/``getPluginNamespace`` (None where unset),
    read past any subclass attribute that shadows the properties."""
    base = IPluginV3OneCore
    return (base.plugin_name.fget(core), base.plugin_version.fget(core),
            base.plugin_namespace.fget(core))


# -- IPluginV3OneBuild ---------------------------------------------------------------------------

def get_nb_outputs(build: Any) -> int:
    """C++ ``getNbOutputs``: the C++-side ``num_outputs`` (-1 with a printed error when unset)."""
    return IPluginV3OneBuild.num_outputs.fget(build)


def format_combination_limit(build: Any) -> int:
    """C++ ``getFormatCombinationLimit`` (100 unless set)."""
    return IPluginV3OneBuild.format_combination_limit.fget(build)


def timing_cache_id(build: Any) -> Optional[str]:
    """C++ ``getTimingCacheID`` (None, i.e. NULL, unless set)."""
    return IPluginV3OneBuild.timing_cache_id.fget(build)


def get_output_data_types(build: Any, input_types: Sequence[DataType]) -> Optional[List[DataType]]:
    """C++ ``getOutputDataTypes``: the list (length ``num_outputs``), or None (-1)."""
    n_out = get_nb_outputs(build)
    result = invoke(build, "get_output_data_types", ([crossing(t) for t in input_types],),
                    required=True, default=None, fallback=FAILED, interpret=list_of(DataType),
                    as_type="std::vector<nvinfer1::DataType>", thrown=True)
    return one_per_output(result, n_out, "get_output_data_types")


def get_output_shapes(build: Any, inputs: Sequence[DimsExprs], shape_inputs: Sequence[DimsExprs],
                      expr_builder: IExprBuilder) -> Optional[List[DimsExprs]]:
    """C++ ``getOutputShapes``: one ``DimsExprs`` per output, or None (-1)."""
    n_out = get_nb_outputs(build)
    result = invoke(build, "get_output_shapes", (list(inputs), list(shape_inputs), expr_builder),
                    required=True, default=None, fallback=FAILED,
                    interpret=list_of(DimsExprs), as_type="std::vector<nvinfer1::DimsExprs>",
                    thrown=True)
    return one_per_output(result, n_out, "get_output_shapes")


def supports_format_combination(build: Any, pos: int, in_out: Sequence[DynamicPluginTensorDesc],
                                num_inputs: int) -> bool:
    """C++ ``supportsFormatCombination`` with ``DynamicPluginTensorDesc`` entries; False on failure."""
    # The driver builds new descriptors for every call, so no copy (a copy would read the
    # poisoned entries after pos, which the format search watches).
    return invoke(build, "supports_format_combination", (pos, list(in_out), num_inputs),
                  required=True,
                  default=False, fallback=False, interpret=as_bool, as_type="bool")


def configure_plugin(build: Any, inputs: Sequence[DynamicPluginTensorDesc],
                     outputs: Sequence[DynamicPluginTensorDesc]) -> int:
    """C++ ``configurePlugin``: 0, or -1 when the Python call raised (V3 fails the build)."""
    return status_of(invoke(build, "configure_plugin", ([crossing(d) for d in inputs],
                                                      [crossing(d) for d in outputs]),
                          required=True, default=None, fallback=FAILED, thrown=True))


def get_workspace_size(build: Any, inputs: Sequence[DynamicPluginTensorDesc],
                       outputs: Sequence[DynamicPluginTensorDesc]) -> int:
    """C++ ``getWorkspaceSize``; 0 by default and on failure."""
    return invoke(build, "get_workspace_size", ([crossing(d) for d in inputs],
                                                [crossing(d) for d in outputs]),
                  required=False, default=0, fallback=0, interpret=as_size_t, as_type="size_t")


def get_valid_tactics(build: Any) -> Optional[List[int]]:
    """C++ ``getNbTactics`` + ``getValidTactics``: the plugin's tactics ([] when it defines no
    ``get_valid_tactics``), or None (-1) on failure. 10.0's binding called the Python method
    for both queries; from 10.1 it is called once and the list cached on the build object."""
    calls = 2 if emulated_version() == (10, 0) else 1
    result: Any = None
    for _ in range(calls):
        result = invoke(build, "get_valid_tactics", (), required=False, default=[],
                        fallback=FAILED, interpret=list_of(int, as_int32), as_type="std::vector<int32_t>",
                        thrown=True)
        if result is FAILED:
            return None
    object.__setattr__(build, "_pp_tactics", list(result))
    return list(result)


def get_aliased_input(build: Any, output_index: int) -> int:
    """C++ ``IPluginV3OneBuildV2::getAliasedInput``: the input index ``output_index`` aliases, or
    -1 (no aliasing, also for a plain ``IPluginV3OneBuild`` and on failure)."""
    if not isinstance(build, IPluginV3OneBuildV2):
        return -1
    return invoke(build, "get_aliased_input", (output_index,), required=False, default=-1,
                  fallback=-1, interpret=as_int32, as_type="int32_t")


# -- IPluginV3OneRuntime -------------------------------------------------------------------------

def set_tactic(runtime: Any, tactic: int) -> int:
    """C++ ``setTactic``: 0, or -1 (also when ``set_tactic`` is not defined: no default)."""
    return status_of(invoke(runtime, "set_tactic", (int(tactic),), required=True, default=None,
                          fallback=FAILED, thrown=True))


def on_shape_change(runtime: Any, inputs: Sequence[PluginTensorDesc],
                    outputs: Sequence[PluginTensorDesc]) -> int:
    """C++ ``onShapeChange``: caches the counts ``enqueue`` uses on this object first; 0 or -1."""
    object.__setattr__(runtime, "_pp_nb_inputs", len(inputs))
    object.__setattr__(runtime, "_pp_nb_outputs", len(outputs))
    return status_of(invoke(runtime, "on_shape_change", ([crossing(d) for d in inputs],
                                                       [crossing(d) for d in outputs]),
                          required=True, default=None, fallback=FAILED, thrown=True))


def enqueue(runtime: Any, input_desc: Sequence[PluginTensorDesc],
            output_desc: Sequence[PluginTensorDesc], inputs: Sequence[int],
            outputs: Sequence[int], workspace: int, stream: int) -> int:
    """C++ ``enqueue``: lists sized by the counts of the last ``on_shape_change`` on this same
    object (empty if it never ran); 0, or -1 when the call raised."""
    n_in = getattr(runtime, "_pp_nb_inputs", 0)
    n_out = getattr(runtime, "_pp_nb_outputs", 0)
    args = ([crossing(d) for d in list(input_desc)[:n_in]],
            [crossing(d) for d in list(output_desc)[:n_out]],
            [int(p) for p in list(inputs)[:n_in]], [int(p) for p in list(outputs)[:n_out]],
            int(workspace), int(stream))
    return status_of(invoke(runtime, "enqueue", args, required=True, default=None,
                          fallback=FAILED, thrown=True))


def attach_to_context(runtime: Any, context: IPluginResourceContext) -> Optional[IPluginV3]:
    """C++ ``attachToContext``: the plugin for that context (held until destroyed), or None."""
    result = invoke(runtime, "attach_to_context", (context,), required=True, default=None,
                    fallback=None, interpret=pointer_to(IPluginV3), as_type="nvinfer1::IPluginV3")
    if result is not None:
        held[id(result)] = result
    return result


def get_fields_to_serialize(runtime: Any) -> Optional[PluginFieldCollection]:
    """C++ ``getFieldsToSerialize``: the collection, or None (nullptr)."""
    return invoke(runtime, "get_fields_to_serialize", (), required=True, default=None,
                  fallback=None, interpret=_as_fields,
                  as_type="nvinfer1::PluginFieldCollection")


# -- IPluginCreatorV3One -------------------------------------------------------------------------

def create_plugin(creator: Any, name: str, fields: Sequence[PluginField],
                  phase: TensorRTPhase) -> Optional[IPluginV3]:
    """C++ ``createPlugin(name, fc, phase)``: the plugin (held until destroyed), or None."""
    fc = PluginFieldCollection_(fields)
    result = invoke(creator, "create_plugin", (name, fc, crossing(phase)), required=True,
                    default=None, fallback=None, interpret=pointer_to(IPluginV3),
                    as_type="IPluginV3*")
    if result is not None:
        held[id(result)] = result
    return result
