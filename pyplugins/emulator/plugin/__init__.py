"""``tensorrt.plugin`` (QDP, "quickly deployable plugins") for the emulated TensorRT:
``import tensorrt.plugin as trtp`` after ``pyplugins.emulator.install()``.

A stand-in written from TensorRT's own Python package (``python/packaging/bindings_wheel/
tensorrt/plugin/``, 10.6 to 11.1; protocol §8): the same names, decorator checks, exceptions
(as subclasses of the same builtins) and the plugin and creator objects its ``register`` puts in
the plugin registry. It follows the emulated version (``PYPLUGINS_TRT_VERSION``): the module does
not exist before 10.6, ``aot_impl``, ``SymInt32``/``16``/``8``, ``SymExprs``, ``SymIntExprs`` and
``KernelLaunchParams`` exist from 10.9 (looked up when used, so tests can switch versions), and
importing it logs TensorRT's "experimental" warning. docs/qdp.md describes what it provides.

Example::

    import tensorrt.plugin as trtp

    @trtp.register("my_project::add_one")
    def add_one(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
        return inp0.like()
"""

from __future__ import annotations

from typing import Any, List

from pyplugins.emulator.bases import ILogger, Logger
from pyplugins.emulator.version import emulated_version

if emulated_version() < (10, 6):
    _major, _minor = emulated_version()
    raise ModuleNotFoundError(
        f"No module named 'tensorrt.plugin': TensorRT adds it in 10.6 and the emulator imitates "
        f"{_major}.{_minor} (PYPLUGINS_TRT_VERSION)", name="tensorrt.plugin")

from pyplugins.emulator.plugin import decorators, sym_exprs, sym_lists, tensor
from pyplugins.emulator.plugin.combinations import AutoTuneCombination
from pyplugins.emulator.plugin.decorators import autotune, impl, register
from pyplugins.emulator.plugin.definitions import op
from pyplugins.emulator.plugin.descriptors import Shape, SizeTensorDesc, TensorDesc
from pyplugins.emulator.plugin.sym_exprs import ShapeExpr, SizeTensorShapeExpr
from pyplugins.emulator.plugin.sym_lists import ShapeExprs
from pyplugins.emulator.plugin.tensor import Tensor
from pyplugins.emulator.plugin.top_level import (cdiv, from_shape_expr, max,
                                                 min, size_tensor)

#: The names of 10.6 to 10.8, then those 10.9 adds (the ``@public_api`` objects of TensorRT's
#: package; pyplugins.emulator.surface_table.PLUGIN_MODULE records each one's first version).
#: The 10.9 names are not module globals: ``__getattr__`` serves them by the emulated version.
_NAMES_10_6 = {"AutoTuneCombination": AutoTuneCombination, "Shape": Shape, "ShapeExpr": ShapeExpr,
               "ShapeExprs": ShapeExprs, "SizeTensorDesc": SizeTensorDesc,
               "SizeTensorShapeExpr": SizeTensorShapeExpr, "Tensor": Tensor,
               "TensorDesc": TensorDesc, "autotune": autotune, "cdiv": cdiv,
               "from_shape_expr": from_shape_expr, "impl": impl, "max": max, "min": min, "op": op,
               "register": register, "size_tensor": size_tensor}
_NAMES_10_9 = {"KernelLaunchParams": tensor.KernelLaunchParams, "SymExprs": sym_lists.SymExprs,
               "SymInt16": sym_exprs.SymInt16, "SymInt32": sym_exprs.SymInt32,
               "SymInt8": sym_exprs.SymInt8, "SymIntExprs": sym_lists.SymIntExprs,
               "aot_impl": decorators.aot_impl}

_EXPERIMENTAL = ("Functionality provided through tensorrt.plugin module is experimental in "
                 "TensorRT 10.6." if emulated_version() < (10, 7) else
                 "Functionality provided through tensorrt.plugin module is experimental.")
#: TensorRT logs the warning through a fresh ``trt.Logger()`` on import (``__init__.py:20-21``).
logger = Logger()
logger.log(ILogger.WARNING, _EXPERIMENTAL)


def _names() -> dict:
    if emulated_version() >= (10, 9):
        return {**_NAMES_10_6, **_NAMES_10_9}
    return dict(_NAMES_10_6)


def __getattr__(name: str) -> Any:
    if name == "__all__":  # version-dependent, as TensorRT's (public_api appends at import)
        return sorted(_names())
    if name in _NAMES_10_9 and emulated_version() >= (10, 9):
        return _NAMES_10_9[name]
    major, minor = emulated_version()
    msg = f"module 'tensorrt.plugin' (pyplugins emulator, TensorRT {major}.{minor}) has no " \
          f"attribute {name!r}"
    if name in _NAMES_10_9:
        msg += " (TensorRT adds it in 10.9)"
    raise AttributeError(msg)


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_names()))
