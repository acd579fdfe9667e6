"""The ``@tensorrt.plugin.aot_impl`` function of a ``pp.Plugin`` with an ``aot_launch`` hook: its
kernel as PTX, its launch as symbolic expressions of the input shapes.

``aot_impl(inp..., *attrs, outputs, tactic)`` (TensorRT 10.9+) runs for each type/format
combination and tactic the builder tries. It takes the plugin for the attributes (set to the
tactic's name, as V3's ``set_tactic`` does), hands its ``aot_launch`` the tensors as
:class:`pyplugins.runtime.aot.AotTensor` (symbolic dims over the adapter of
:mod:`pyplugins.runtime.qdp_shapes`), compiles the returned kernel with
:func:`pyplugins.runtime.kernel_ptx.compile_ptx` (the program the GPU path compiles, with its
options, optimized; for the current GPU's architecture when one is usable, else ``compute_80``),
checks that the PTX entry takes one parameter per input, extra argument and output, and returns
``(lowered kernel name, PTX, KernelLaunchParams, SymIntExprs)``: grid, block and shared memory,
and each extra argument as a ``SymInt32`` (dims as their ``ShapeExpr``, ints as constants).

Example::

    import pyplugins as pp
    from pyplugins.ops.leaky_relu import LeakyReLU

    pp.register(LeakyReLU, interface="qdp", replace=True)   # register, autotune, impl, aot_impl
    # an ONNX node op="LReLU_TRT", plugin_namespace="pyplugins", aot=1 now builds without Python
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

from pyplugins.errors import PluginDefinitionError
from pyplugins.runtime import shapes
from pyplugins.runtime.aot import AotLaunch, AotTensor
from pyplugins.runtime.device import import_cupy, usable_device
from pyplugins.runtime.kernel_ptx import ARCH, compile_ptx
from pyplugins.runtime.ptx_text import entry_params
from pyplugins.runtime.qdp_functions import QdpDefinition, named
from pyplugins.runtime.qdp_shapes import QdpExpr, QdpExprBuilder
from pyplugins.runtime.tactics import tactic_name

__all__ = ["aot_impl_function", "build_launch", "ptx_arch"]


def ptx_arch() -> str:
    """The architecture AOT PTX targets: the usable GPU's (``"90"`` on an H100), else
    :data:`~pyplugins.runtime.kernel_ptx.ARCH` (``"80"``, the oldest the project supports).
    TensorRT engines are specific to their GPU anyway; building for it gives the code the GPU
    path's CuPy compiles."""
    device: Optional[int] = usable_device()
    if device is None:
        return ARCH
    return str(import_cupy().cuda.Device(device).compute_capability)


def _sym(trtp: Any, value: Any) -> Any:
    """A launch value as ``tensorrt.plugin``'s ``SymInt32`` (a dim's ``ShapeExpr`` is one)."""
    if isinstance(value, shapes.Dim):
        value = value.expr
    if isinstance(value, QdpExpr):
        return value.sym
    return trtp.SymInt32(int(value))


def build_launch(d: QdpDefinition, plugin: Any, inputs: Any,
                 outputs: Any) -> Tuple[str, str, Any, Any]:
    """``aot_impl``'s result for ``plugin`` (configured with the tactic) and the QDP
    descriptors of ``aot_impl``.

    Raises:
        PluginDefinitionError: ``aot_launch`` returned no :class:`AotLaunch`, or the kernel's
            PTX entry takes another number of parameters than inputs + args + outputs.
        KernelCompileError: the kernel does not compile.
    """
    builder = QdpExprBuilder(d.trtp)
    ins = [AotTensor.from_desc(x, builder) for x in inputs]
    outs = [AotTensor.from_desc(x, builder) for x in outputs]
    launch = plugin.aot_launch(ins, outs)
    if not isinstance(launch, AotLaunch):
        msg = (f"{d.where}: aot_launch returned {launch!r}; return a "
               "pyplugins.runtime.aot.AotLaunch")
        raise PluginDefinitionError(msg)
    ptx = compile_ptx(launch.kernel.program(launch.ctype), arch=ptx_arch())
    params = entry_params(ptx.text, ptx.name)
    expected = len(ins) + len(launch.args) + len(outs)
    if params is None or len(params) != expected:
        got = "no such entry" if params is None else f"{len(params)} parameters ({params})"
        msg = (f"{d.where}: kernel {ptx.expression} ({ptx.name}) has {got}, but TensorRT "
               f"passes {expected}: {len(ins)} input pointer(s), the {len(launch.args)} "
               f"argument(s) of aot_launch, {len(outs)} output pointer(s), in that order")
        raise PluginDefinitionError(msg)
    lp = d.trtp.KernelLaunchParams()
    for prefix in ("grid", "block"):
        for axis, value in zip("xyz", launch.dims3(prefix)):
            setattr(lp, f"{prefix}_{axis}", _sym(d.trtp, value))
    lp.shared_mem = _sym(d.trtp, launch.shared_mem)
    extra = d.trtp.SymIntExprs.from_tuple([_sym(d.trtp, a) for a in launch.args])
    return ptx.name, ptx.text, lp, extra


def aot_impl_function(lookup: Callable[[], QdpDefinition]) -> Callable:
    """The ``@tensorrt.plugin.aot_impl`` function (see the module docstring); ``lookup()``
    gives the current definition."""
    definition = lookup()

    def aot_impl(*args: Any) -> Tuple[str, str, Any, Any]:
        d = lookup()
        n_in, n_attr = d.num_inputs, len(d.fields)
        inputs, attrs = args[:n_in], args[n_in:n_in + n_attr]
        outputs, tactic = args[n_in + n_attr], args[n_in + n_attr + 1]
        plugin = d.plugin(attrs).clone()
        plugin.tactic = tactic_name(d.cls, tactic or 0)
        return build_launch(d, plugin, inputs, outputs)

    return named(aot_impl, definition, "aot_impl")
