"""The ``pybind`` checks: plugin code that works on plain Python objects but not through pybind11 (§12).

TensorRT hands plugins pybind11 objects: every enum value a new object, ``Dims`` comparable only
with a list or tuple and unhashable, plugins and creators that cannot be copied or pickled, and
V2 plugins never see BOOL or UINT8 tensors (``NvInferRuntimePlugin.h:76``). The emulator
reproduces all of that, so such a plugin fails here as it would in TensorRT; these checks say
*why*, as ``pybind`` violations naming what TensorRT does and how to write it instead:

- :func:`enum_identity_violations` and :func:`output_type_identity_violations` ask the plugin a
  second time with the enum class attributes themselves (what ``is`` needs) and report where its
  answer changes: the plugin compares enums with ``is``;
- :func:`idiom_violations` reports the refused idioms the stand-ins noted
  (:mod:`pyplugins.emulator.idioms`);
- :func:`v2_types` and :func:`v2_type_violations` keep BOOL and UINT8 away from V2 plugins.

Example:
    >>> from pyplugins.emulator.enums import DataType
    >>> [t.name for t in v2_types([DataType.FLOAT, DataType.BOOL, DataType.UINT8])]
    ['FLOAT']
    >>> [v.check for v in v2_type_violations([DataType.BOOL, DataType.FLOAT], 1)]
    ['pybind']
"""

from __future__ import annotations

from typing import Any, List, Sequence

from pyplugins.emulator import enums, trampoline
from pyplugins.checker.checks import Violation
from pyplugins.emulator import idioms
from pyplugins.checker.checks.beyond_pos import PoisonedDesc, PoisonProbe
from pyplugins.emulator.enums import DataType

__all__ = ["CHECK", "enum_identity_violations", "idiom_violations",
           "output_type_identity_violations", "v2_type_violations", "v2_types"]

#: The check name of every violation made here.
CHECK = "pybind"

#: Tensor types a V2 plugin may not have (NvInferRuntimePlugin.h:76).
V2_REFUSED = (DataType.BOOL, DataType.UINT8)

_USE_EQ = ("Every enum value pybind11 hands to Python is a new object, so `x is "
           "trt.DataType.HALF` / `desc.format is trt.TensorFormat.LINEAR` is always False in "
           "TensorRT. Compare enums with == (or `in` a tuple), never with `is`")


def _ask(method: Any, *args: Any) -> Any:
    try:
        return method(*args)
    except Exception as err:  # noqa: BLE001 - the main run reported it; only the answer matters
        return err


def enum_identity_violations(plugin: Any, tensors: Any, tried: Sequence[tuple],
                             n_in: int) -> List[Violation]:
    """Re-ask ``supports_format_combination`` the calls of a format search with enum singletons.

    Args:
        plugin: the plugin the search asked (called directly: no trampoline, no listeners).
        tensors: the search's :class:`~pyplugins.emulator.tensors.PluginTensors`.
        tried: the search's calls, ``(pos, prefix, candidate, answer)``.
        n_in: the number of inputs.

    Returns:
        One violation for the first call whose answer changes, else none.
    """
    method = trampoline.overridden(plugin, "supports_format_combination")
    if method is None:
        return []
    n = len(tensors.specs) + len(tensors.out_dims["net"])
    probe = PoisonProbe()  # never armed: reads beyond pos are the authoritative run's business
    for pos, prefix, cand, answer in tried:
        in_out = ([tensors.desc(k, prefix[k], tensors.net_dims(k)) for k in range(pos)]
                  + [tensors.desc(pos, cand, tensors.net_dims(pos))]
                  + [PoisonedDesc(j, probe) for j in range(pos + 1, n)])
        with enums.singletons():
            again = _ask(method, pos, in_out, n_in)
        if isinstance(again, BaseException) or bool(again) == bool(answer):
            continue
        said = "accepted" if answer else "refused"
        would = "refuses" if answer else "accepts"
        chosen = ", ".join(f"{t.name}/{f.name}" for t, f in prefix) or "nothing yet"
        msg = (f"supports_format_combination(pos={pos}, ...) {said} in_out[{pos}] = "
               f"{cand[0].name}/{cand[1].name} (after {chosen}) in TensorRT, but {would} it when "
               f"the enum values are the class attributes themselves: the plugin compares enums "
               f"with `is`. {_USE_EQ}.")
        return [Violation(CHECK, msg, "supports_format_combination")]
    return []


def output_type_identity_violations(plugin: Any, in_types: Sequence[DataType],
                                    out_types: Sequence[DataType]) -> List[Violation]:
    """Re-ask ``get_output_datatype`` with enum singletons; report an answer that changes.

    Args:
        plugin: the plugin asked (called directly).
        in_types: the input types it was given.
        out_types: what TensorRT got (after its fallbacks).
    """
    method = trampoline.overridden(plugin, "get_output_datatype")
    if method is None:
        return []
    for i, got in enumerate(out_types):
        with enums.singletons():
            again = _ask(method, i, list(in_types))
        if isinstance(again, BaseException) or not isinstance(again, DataType) or again == got:
            continue
        msg = (f"get_output_datatype({i}, {[t.name for t in in_types]}) gives {got.name} in "
               f"TensorRT but {again.name} when the enum values are the class attributes "
               f"themselves: the plugin compares enums with `is`. {_USE_EQ}.")
        return [Violation(CHECK, msg, "get_output_datatype")]
    return []


def idiom_violations() -> List[Violation]:
    """The refused idioms noted since the last call (see :mod:`pyplugins.emulator.idioms`),
    one violation each, and forget them."""
    found = []
    for idiom in idioms.take():
        what, instead = idioms.IDIOMS[idiom]
        found.append(Violation(CHECK, f"{what}. Instead: {instead}."))
    return found


def v2_types(types: Sequence[DataType]) -> List[DataType]:
    """``types`` without BOOL and UINT8: the builder never offers those to a V2 plugin."""
    return [t for t in types if t not in V2_REFUSED]


def v2_type_violations(declared: Sequence[DataType], n_in: int) -> List[Violation]:
    """A violation when the network gives a V2 plugin a BOOL or UINT8 tensor.

    Args:
        declared: the tensors' types, inputs then outputs (get_output_datatype's for outputs).
        n_in: how many are inputs.
    """
    bad = [(k, t) for k, t in enumerate(declared) if t in V2_REFUSED]
    if not bad:
        return []
    where = ", ".join(f"{'input' if k < n_in else 'output'} {k if k < n_in else k - n_in} is "
                      f"{t.name}" for k, t in bad)
    msg = (f"{where}: IPluginV2DynamicExt plugins cannot have BOOL or UINT8 tensors "
           f"(NvInferRuntimePlugin.h, PluginTensorDesc::type: 'kBOOL and kUINT8 are not "
           f"supported'), so the builder cannot place the plugin on them. Cast to INT8/INT32 "
           f"around the plugin, or write an IPluginV3 plugin.")
    return [Violation(CHECK, msg, "supports_format_combination")]
