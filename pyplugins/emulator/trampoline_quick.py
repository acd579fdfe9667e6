"""The C++ side of the Quick (``tensorrt.plugin``, QDP) bindings: every call TensorRT makes into a
QDP plugin goes through here.

Each function mirrors one virtual of ``pyPlugin.cpp``'s ``PyIPluginV3QuickBuildBaseImpl``,
``PyIPluginV3QuickAOTBuildImpl``, ``PyIPluginV3QuickRuntimeImpl`` and
``IPluginCreatorV3QuickImpl`` (protocol §8.4; ``python/src/infer/pyPlugin.cpp:1534-2229,
2662-2785`` of release/11.1): it calls the Python override through :func:`trampoline.invoke`
(the same ``[ERROR]`` lines, listeners and watch as V2 and V3) and returns TensorRT's fallback
on failure, -1 for the ``int32_t`` status methods. What the binding keeps between two calls is
kept on the object that received them, as C++ keeps it: the tactics ``get_valid_tactics`` gave,
and the combinations of the *first* of the two ``get_supported_format_combinations`` calls each
query makes (the second call runs ``autotune`` again and its result is dropped; ``:1691-1776``).

Example:
    >>> from pyplugins import emulator as trt
    >>> from pyplugins.emulator import trampoline_quick as tq
    >>> class Build(trt.IPluginV3QuickBuild):
    ...     def __init__(self):
    ...         trt.IPluginV3QuickBuild.__init__(self)
    ...     def get_num_outputs(self):
    ...         return 2
    ...     def configure_plugin(self, inputs, outputs):
    ...         raise ValueError("no")         # C++ prints [ERROR] ... and returns -1
    >>> tq.get_nb_outputs(Build()), tq.configure_plugin(Build(), [], [])
    (2, -1)
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from pyplugins.emulator import surface
from pyplugins.emulator.bases import cpp_stderr
from pyplugins.emulator.bases_quick import (IPluginV3QuickAOTBuild, IPluginV3QuickBuild,
                                            IPluginV3QuickCore, IPluginV3QuickRuntime,
                                            ISymExprs, KernelLaunchParams)
from pyplugins.emulator.bases_v3 import IPluginV3
from pyplugins.emulator.descs import DynamicPluginTensorDesc, PluginTensorDesc
from pyplugins.emulator.dims import Dims, DimsExprs, IExprBuilder
from pyplugins.emulator.enums import DataType, PluginCapabilityType, TensorRTPhase
from pyplugins.emulator.plugin_field import (PluginField, PluginFieldCollection,
                                             PluginFieldCollection_)
from pyplugins.emulator.trampoline import (FAILED, as_int32, held, invoke, list_of, pointer_to,
                                          status_of)
from pyplugins.emulator.trampoline_v3 import crossing, one_per_output
from pyplugins.emulator.version import emulated_version

__all__ = ["configure_plugin", "create_plugin", "enqueue", "get_aliased_input",
           "get_capability_interface", "get_fields_to_serialize", "get_kernel",
           "get_launch_params", "get_nb_outputs", "get_output_data_types", "get_output_shapes",
           "get_supported_format_combinations", "get_timing_cache_id", "get_valid_tactics",
           "identity", "set_tactic"]


#: Per capability: the classes the binding tries to cast the result to, in its order
#: (``pyPlugin.cpp:768-850``; the V3One classes come first there and are not Quick plugins').
_CAPABILITY = {
    PluginCapabilityType.CORE: ((IPluginV3QuickCore,), " a valid core capability interface"),
    PluginCapabilityType.BUILD: ((IPluginV3QuickAOTBuild, IPluginV3QuickBuild),
                                 " a valid build capability interface"),
    PluginCapabilityType.RUNTIME: ((IPluginV3QuickRuntime,),
                                   " a valid runtime capability interface"),
}


def _kernel(value: Any) -> Tuple[str, bytes]:
    """``std::tuple<std::string, py::bytes>``: a 2-sequence of (str or bytes, bytes)."""
    name, image = value
    if isinstance(name, (bytes, bytearray)):
        name = bytes(name).decode("utf-8", "surrogateescape")
    if not isinstance(name, str) or not isinstance(image, (bytes, bytearray)):
        raise TypeError(value)
    return name, bytes(image)


# -- IPluginV3 and the core capability -------------------------------------------------------------

def get_capability_interface(plugin: Any, kind: PluginCapabilityType) -> Optional[Any]:
    """C++ ``getCapabilityInterface(type)``: the Quick capability object, or None (nullptr) when
    the call raised or returned an object of none of the capability's Quick classes."""
    classes, as_type = _CAPABILITY[kind]
    return invoke(plugin, "get_capability_interface", (crossing(kind),), required=True,
                  default=None, fallback=None, interpret=pointer_to(classes), as_type=as_type)


def identity(core: Any) -> tuple:
    """C++ ``getPluginName``/``getPluginVersion``/``getPluginNamespace`` of a Quick core."""
    base = IPluginV3QuickCore
    return (base.plugin_name.fget(core), base.plugin_version.fget(core),
            base.plugin_namespace.fget(core))


# -- the build capability (JIT and AOT) ------------------------------------------------------------

def get_nb_outputs(build: Any) -> int:
    """C++ ``getNbOutputs``: ``get_num_outputs()`` from 10.7 (0 when not defined, -1 when it
    raised); before, the ``num_outputs`` attribute (``release/10.6 pyPlugin.cpp:3462``)."""
    if emulated_version() < (10, 7):
        value = getattr(build, "num_outputs", -1)
        return value if isinstance(value, int) else -1
    return invoke(build, "get_num_outputs", (), required=False, default=0, fallback=-1,
                  interpret=as_int32, as_type="int32_t", thrown=True)


def get_output_data_types(build: Any, input_types: Sequence[DataType],
                          ranks: Sequence[int]) -> Optional[List[DataType]]:
    """C++ ``getOutputDataTypes(types, ranks)``: one type per output, or None (-1)."""
    n_out = get_nb_outputs(build)
    result = invoke(build, "get_output_data_types", ([crossing(t) for t in input_types],
                                                     [int(r) for r in ranks]),
                    required=True, default=None, fallback=FAILED, interpret=list_of(DataType),
                    as_type="std::vector<nvinfer1::DataType>", thrown=True)
    return one_per_output(result, n_out, "get_output_data_types")


def get_output_shapes(build: Any, inputs: Sequence[DimsExprs], shape_inputs: Sequence[DimsExprs],
                      expr_builder: IExprBuilder) -> Optional[List[DimsExprs]]:
    """C++ ``getOutputShapes``: one ``DimsExprs`` per output, or None (-1)."""
    n_out = get_nb_outputs(build)
    result = invoke(build, "get_output_shapes", (list(inputs), list(shape_inputs), expr_builder),
                    required=True, default=None, fallback=FAILED, interpret=list_of(DimsExprs),
                    as_type="std::vector<nvinfer1::DimsExprs>", thrown=True)
    return one_per_output(result, n_out, "get_output_shapes")


def get_supported_format_combinations(build: Any, in_out: Sequence[DynamicPluginTensorDesc],
                                      num_inputs: int) -> Optional[List[List[PluginTensorDesc]]]:
    """C++ ``getNbSupportedFormatCombinations`` then ``getSupportedFormatCombinations``: the
    Python method runs twice; the combinations of the first call are used, the second call's
    result is dropped (``pyPlugin.cpp:1691-1776``). None (-1) when a call raised or the first
    list's length is not a multiple of ``len(in_out)``.

    Returns:
        One list of ``len(in_out)`` descriptors per combination.
    """
    n_io = len(in_out)
    first = invoke(build, "get_supported_format_combinations",
                   ([crossing(d) for d in in_out], num_inputs), required=True, default=None,
                   fallback=FAILED, interpret=list_of(PluginTensorDesc),
                   as_type="std::vector<PluginTensorDesc>", thrown=True)
    if first is FAILED:
        return None
    if n_io == 0 or len(first) % n_io:
        cpp_stderr("[ERROR] Exception thrown from get_supported_format_combinations() "
                   "ValueError: Number of supported format combinations not a multiple of "
                   "number of IO.")
        return None
    second = invoke(build, "get_supported_format_combinations",
                    ([crossing(d) for d in in_out], num_inputs), required=True, default=None,
                    fallback=FAILED, thrown=True)
    if second is FAILED:
        return None
    return [[d._copy() for d in first[i:i + n_io]] for i in range(0, len(first), n_io)]


def configure_plugin(build: Any, inputs: Sequence[DynamicPluginTensorDesc],
                     outputs: Sequence[DynamicPluginTensorDesc]) -> int:
    """C++ ``configurePlugin``: 0, or -1 when the Python call raised."""
    return status_of(invoke(build, "configure_plugin", ([crossing(d) for d in inputs],
                                                      [crossing(d) for d in outputs]),
                          required=True, default=None, fallback=FAILED, thrown=True))


def get_valid_tactics(build: Any) -> Optional[List[int]]:
    """C++ ``getNbTactics`` + ``getValidTactics``: the tactics ([] when not defined: TensorRT
    then uses tactic 0), or None (-1) when the call raised; called once and cached."""
    result = invoke(build, "get_valid_tactics", (), required=False, default=[],
                    fallback=FAILED, interpret=list_of(int, as_int32),
                    as_type="std::vector<int32_t>", thrown=True)
    if result is FAILED:
        return None
    object.__setattr__(build, "_pp_tactics", list(result))
    return list(result)


def get_aliased_input(build: Any, output_index: int) -> int:
    """C++ ``getAliasedInput``: the input ``output_index`` aliases, or -1 (none, not defined or
    failed)."""
    return invoke(build, "get_aliased_input", (int(output_index),), required=False, default=-1,
                  fallback=-1, interpret=as_int32, as_type="int32_t")


def get_timing_cache_id(build: Any) -> Optional[str]:
    """C++ ``getTimingCacheID``: the string, or None (nullptr) when not defined or failed."""
    def as_str(value: Any) -> str:
        if isinstance(value, bytes):
            return value.decode("utf-8", "surrogateescape")
        if not isinstance(value, str):
            raise TypeError(value)
        return value
    return invoke(build, "get_timing_cache_id", (), required=False, default=None,
                  fallback=None, interpret=as_str, as_type="std::string")


def set_tactic(obj: Any, tactic: int) -> int:
    """C++ ``setTactic`` of the AOT build or the JIT runtime capability: 0, or -1."""
    return status_of(invoke(obj, "set_tactic", (int(tactic),), required=True, default=None,
                          fallback=FAILED, thrown=True))


# -- AOT: the kernel and its launch parameters -----------------------------------------------------

def get_launch_params(build: Any, input_exprs: Sequence[DimsExprs],
                      in_out: Sequence[DynamicPluginTensorDesc], num_inputs: int,
                      launch_params: KernelLaunchParams, extra_args: ISymExprs,
                      expr_builder: IExprBuilder) -> int:
    """C++ ``getLaunchParams``: the plugin fills ``launch_params`` and ``extra_args``; 0, or -1
    when the call raised (``pyPlugin.cpp:2033-2064``)."""
    return status_of(invoke(build, "get_launch_params",
                          (list(input_exprs), [crossing(d) for d in in_out], int(num_inputs),
                           launch_params, extra_args, expr_builder),
                          required=True, default=None, fallback=FAILED))


def get_kernel(build: Any, input_desc: Sequence[PluginTensorDesc],
               output_desc: Sequence[PluginTensorDesc]) -> Optional[Tuple[str, bytes]]:
    """C++ ``getKernel``: ``(kernel name, compiled kernel bytes)``, or None (-1)."""
    result = invoke(build, "get_kernel", ([crossing(d) for d in input_desc],
                                          [crossing(d) for d in output_desc]),
                    required=True, default=None, fallback=FAILED, interpret=_kernel,
                    as_type="std::tuple<std::string, std::bytes>", thrown=True)
    return None if result is FAILED else result


# -- the JIT runtime capability --------------------------------------------------------------------

def enqueue(runtime: Any, input_desc: Sequence[PluginTensorDesc],
            output_desc: Sequence[PluginTensorDesc], inputs: Sequence[int], outputs: Sequence[int],
            in_strides: Sequence[Sequence[int]], out_strides: Sequence[Sequence[int]],
            stream: int) -> int:
    """C++ ``IPluginV3QuickRuntime::enqueue``: descriptors, pointers, strides in elements
    (``Dims``) and the stream; no workspace. 0, or -1 when the call raised."""
    args = ([crossing(d) for d in input_desc], [crossing(d) for d in output_desc],
            [int(p) for p in inputs], [int(p) for p in outputs],
            [Dims(tuple(int(v) for v in s)) for s in in_strides],
            [Dims(tuple(int(v) for v in s)) for s in out_strides], int(stream))
    return status_of(invoke(runtime, "enqueue", args, required=True, default=None,
                          fallback=FAILED, thrown=True))


def get_fields_to_serialize(runtime: Any) -> Optional[PluginFieldCollection]:
    """C++ ``getFieldsToSerialize``: the collection, or None (nullptr)."""
    def as_fields(value: Any) -> PluginFieldCollection:
        if isinstance(value, PluginFieldCollection):
            return value
        return PluginFieldCollection(list_of(PluginField)(value))
    return invoke(runtime, "get_fields_to_serialize", (), required=True, default=None,
                  fallback=None, interpret=as_fields, as_type="nvinfer1::PluginFieldCollection")


# -- the creator ------------------------------------------------------------------------------------

def create_plugin(creator: Any, name: str, namespace: str, fields: Sequence[PluginField],
                  phase: TensorRTPhase, request: Any = None) -> Optional[IPluginV3]:
    """C++ ``IPluginCreatorV3Quick::createPlugin``: the plugin (held until destroyed), or None.

    From 10.9 the binding always passes a ``QuickPluginCreationRequest`` (``request``, UNKNOWN
    when None); before, it takes four arguments and ``request`` must be None.
    """
    fc = PluginFieldCollection_(fields)
    args: tuple = (name, namespace, fc, crossing(phase))
    if emulated_version() >= (10, 9):
        if request is None:
            request = surface.resolve("QuickPluginCreationRequest", emulated_version()[0]).UNKNOWN
        args += (crossing(request),)
    elif request is not None:
        msg = "QuickPluginCreationRequest exists from TensorRT 10.9; the emulated version is older"
        raise ValueError(msg)
    result = invoke(creator, "create_plugin", args, required=True, default=None, fallback=None,
                    interpret=pointer_to((IPluginV3,)), as_type="IPluginV3*")
    if result is not None:
        held[id(result)] = result
    return result
