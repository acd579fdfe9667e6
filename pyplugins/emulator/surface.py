"""The rest of the ``tensorrt`` module: every public name the emulator does not implement (§12).

Plugin modules written for TensorRT touch the whole module at import time: ``trt.ICudaEngine`` in
an annotation, ``class R(trt.IPluginResource)``, ``trt.init_libnvinfer_plugins(...)``. So every
public name of TensorRT's module of the emulated major version (``PYPLUGINS_TRT_VERSION``;
:data:`pyplugins.emulator.surface_table.NAMES`, read from TensorRT's binding sources) resolves:
classes are subclassable stand-ins that raise :class:`NeedsTensorRT` when *instantiated*,
functions raise when *called*, enums have their members (in declaration order; only the
plugin-facing enums carry TensorRT's numeric values), and the dtype aliases are ``DataType``
members. Nothing raises at import or in an annotation.

Example:
    >>> from pyplugins import emulator as trt
    >>> trt.ICudaEngine.__name__, trt.float16 == trt.DataType.HALF, trt.volume((2, 3))
    ('ICudaEngine', True, 6)
    >>> trt.Builder(trt.Logger())
    Traceback (most recent call last):
    ...
    pyplugins.emulator.surface.NeedsTensorRT: Builder needs TensorRT: the emulator covers the plugin-facing API
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable

from pyplugins import dtypes
from pyplugins.emulator.dims import Dims
from pyplugins.emulator.enums import DataType, PybindEnum
from pyplugins.emulator.surface_table import ENUM_MEMBERS, NAMES
from pyplugins.errors import PyPluginsError

__all__ = ["V3_NAMES", "NeedsTensorRT", "common_enter", "common_exit", "init_libnvinfer_plugins",
           "names", "resolve", "volume"]


class NeedsTensorRT(PyPluginsError, RuntimeError):
    """Raised when code uses a part of TensorRT the emulator does not cover (a builder, engine,
    runtime, parser, layer ...)."""


def _needs(name: str) -> NeedsTensorRT:
    return NeedsTensorRT(f"{name} needs TensorRT: the emulator covers the plugin-facing API")


class _StandIn:
    """Base of the stand-in classes: subclassable, refuses to be instantiated."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _needs(type(self)._pp_public)


# -- plugin interfaces the emulator does not drive: names exist, use raises ------------------------
#: IPluginV3One* and IPluginCreatorV3One are emulated (bases_v3.py), and so are the Quick
#: interfaces ``tensorrt.plugin`` (QDP) builds on (bases_quick.py); ``IPluginResource`` is not.
V3_NAMES = frozenset({"IPluginResource"})


class _V3StandIn(_StandIn):
    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        name = type(self)._pp_public
        msg = (f"{name} is not emulated: the emulator drives IPluginV2DynamicExt, IPluginV3One "
               f"and tensorrt.plugin (QDP) plugins, not plugin resources; {name} needs TensorRT")
        raise NeedsTensorRT(msg)
# -- end of the V3 section ----------------------------------------------------------------------


def volume(iterable: Iterable[int]) -> int:
    """``trt.volume``: the product of the entries (1 for an empty shape).

    Example:
        >>> volume(Dims([2, 3, 4])), volume(())
        (24, 1)
    """
    vol = 1
    for elem in iterable:
        vol *= elem
    return vol


def init_libnvinfer_plugins(logger: Any, namespace: str) -> bool:
    """``trt.init_libnvinfer_plugins``: registers TensorRT's own C++ plugins there; the emulator
    has none of them, so this registers nothing and returns True (plugin modules call it at
    import).

    Example:
        >>> init_libnvinfer_plugins(None, "")
        True
    """
    return True


def common_enter(this: Any) -> Any:
    """``trt.common_enter``: the (deprecated) ``with`` support of TensorRT's objects."""
    return this


def common_exit(this: Any, exc_type: Any, exc_value: Any, traceback: Any) -> None:
    """``trt.common_exit``: does nothing, as in TensorRT."""


_DTYPE_ALIASES = {row.attr: row.trt_name for row in dtypes.rows()}  # trt.float32, ...
_FUNCTIONS: Dict[str, Callable[..., Any]] = {
    "volume": volume, "init_libnvinfer_plugins": init_libnvinfer_plugins,
    "common_enter": common_enter, "common_exit": common_exit,
}
_DIMS_CLASSES = {"Dims2": 2, "Dims3": 3, "Dims4": 4, "DimsHW": 2}
_cache: Dict[tuple, Any] = {}


def names(major: int) -> Dict[str, str]:
    """The public names of TensorRT ``major``'s module and their kinds (the nearest known major).

    Example:
        >>> names(10)["ICudaEngine"], "IAlgorithmSelector" in names(11)
        ('class', False)
    """
    known = sorted(NAMES)
    pick = max([m for m in known if m <= major] or known[:1])
    return {k: v for k, v in NAMES[pick].items() if not k.startswith("_")}


def _dims_class(name: str, rank: int) -> type:
    def __init__(self: Dims, *shape: int) -> None:  # noqa: N807 - TensorRT's constructors
        values = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        Dims.__init__(self, values if values else (0,) * rank)

    return type(name, (Dims,), {"__init__": __init__, "__module__": "tensorrt",
                                "__doc__": f"``trt.{name}``: a Dims of rank {rank}."})


def _function(name: str) -> Callable[..., Any]:
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        raise _needs(name)

    stand_in.__name__ = stand_in.__qualname__ = name
    stand_in.__doc__ = f"``trt.{name}`` (needs TensorRT; raises NeedsTensorRT when called)."
    return stand_in


def resolve(name: str, major: int) -> Any:
    """The object ``trt.<name>`` gives for a public name the emulator does not implement itself.

    Raises:
        AttributeError: ``name`` is not a public name of TensorRT ``major``'s module.
    """
    kind = names(major).get(name)
    if kind is None:
        msg = f"module 'tensorrt' (pyplugins emulator, TensorRT {major}.x) has no attribute {name!r}"
        raise AttributeError(msg)
    key = (name, major)
    if key not in _cache:
        _cache[key] = _make(name, kind)
    return _cache[key]


def _make(name: str, kind: str) -> Any:
    if name in _DTYPE_ALIASES:
        return DataType.__members__[_DTYPE_ALIASES[name]]
    if name in _FUNCTIONS:
        return _FUNCTIONS[name]
    if name in _DIMS_CLASSES:
        return _dims_class(name, _DIMS_CLASSES[name])
    if kind == "enum":
        members = {m: i for i, m in enumerate(ENUM_MEMBERS.get(name, []))}
        return type(PybindEnum)(name, (PybindEnum,), {
            "__slots__": (), "__module__": "tensorrt", **members,
            "__doc__": f"``trt.{name}`` (members in TensorRT's order; values are not TensorRT's)"})
    if kind in ("function", "python", "attr"):
        return _function(name)
    base = _V3StandIn if name in V3_NAMES else _StandIn
    doc = f"``trt.{name}``: a stand-in (instantiating it raises NeedsTensorRT)."
    return type(name, (base,), {"__slots__": (), "__module__": "tensorrt", "_pp_public": name,
                                "__doc__": doc})
