"""Section 1b: pyplugins' own host cost per ``enqueue``, for every shipped op, as V2 and as V3.

The restated host target (issue 23, docs/benchmarks.md item 1b): per op, in one run, these
paths timed side by side batch by batch (:func:`benchmarks.timing.host_loops`, which keeps each
turn's batch here):

- ``plugin_enqueue`` / ``plugin_enqueue_v3``: the configured plugin's ``enqueue`` as TensorRT
  calls it (:class:`benchmarks.launch_paths.CppTrtCall`, the binding's trampoline mirrored in
  C++), as an ``IPluginV2DynamicExt`` and as the ``IPluginV3`` adapter of the same class;
- ``python_call``: an empty Python ``enqueue`` through the same trampoline (the binding's cost);
- ``driver_cupy`` / ``driver_cuda_bindings``: the prepacked Cython ``cuLaunchKernel`` of the op's
  own kernel, grid, block and argument bytes, in a tight loop (the cheaper one per round: the
  Cython floor);
- ``launch_only``: a Python ``enqueue`` whose body is that CuPy call alone, through the same
  trampoline: the least any Python ``enqueue`` of this kernel can cost.

*Ours* is ``enqueue - launch_only``, per round the median over turns of the two batches of the
same turn; claims take the worst round (:func:`benchmarks.claims.own_cost`). The report also
gives the additive estimate ``enqueue - empty enqueue - Cython floor``
(:func:`benchmarks.claims.own_additive`) and the part of it that runs no pyplugins code, the
launch made inside the trampoline rather than from a tight loop (``launch_only - empty enqueue -
Cython floor``, :func:`benchmarks.claims.launch_in_trampoline`). Every path's output is checked
byte for byte against the V2 ``enqueue``'s, which is checked against the op's NumPy
``reference``.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from benchmarks import driver, launch_paths
from benchmarks.cases import select

#: Op -> the benchmark case whose fields and input rule it uses (float32, :data:`IN_BYTES`).
OPS = {"LeakyReLU": "LeakyReLU", "CircPad": "CircPad", "Pool": "Pool-max", "RoPE": "RoPE",
       "RMSNorm": "RMSNorm", "SeqRepeat": "SeqRepeat", "Bar": "BarPlugin"}
#: The main input's bytes: a kernel of a few microseconds, so launches never queue up.
IN_BYTES = 16 << 10
#: The paths of one op, in table order.
PATHS = ("plugin_enqueue", "plugin_enqueue_v3", "python_call", "driver_cupy",
         "driver_cuda_bindings", "launch_only")


class EmptyEnqueue:
    """An ``enqueue`` that does nothing: through the trampoline, the binding's own cost."""

    def enqueue(self, input_desc: Any, output_desc: Any, inputs: Any, outputs: Any,
                workspace: int, stream: int) -> None:
        return None


class LaunchOnly:
    """An ``enqueue`` (an instance attribute, a plain function, as pyplugins hands TensorRT its
    Launch's) that makes the prepacked launch ``launch`` and nothing else."""

    def __init__(self, launch: Callable[[], Any]) -> None:
        def enqueue(input_desc: Any, output_desc: Any, inputs: Any, outputs: Any,
                    workspace: int, stream: int) -> None:
            launch()

        self.enqueue = enqueue


@dataclass
class OwnCase:
    """One op configured for the measurement: its paths and what their outputs must be."""

    name: str
    problem: str
    paths: Dict[str, Callable[[], Any]]
    outputs: List[Any]
    expected: List[Any]  # the V2 enqueue's output bytes


def packed_params(launch: Any) -> Tuple[Any, int]:
    """A ``void**`` kernelParams array of ``launch``'s current parameter bytes (pointers
    included), kept alive by the returned holder: (holder, address)."""
    buffers = [ctypes.create_string_buffer(launch.param_bytes(i), size)
               for i, (_offset, size) in enumerate(launch.layout)]
    array = (ctypes.c_void_p * max(1, len(buffers)))(*[ctypes.addressof(b) for b in buffers])
    return (buffers, array), ctypes.addressof(array)


def _cython_paths(launch: Any, stream: int, notes: List[str], name: str
                  ) -> Dict[str, Callable[[], Any]]:
    """The prepacked ``cuLaunchKernel`` of ``launch`` (after a call wrote its pointers) through
    CuPy's and cuda-python's Cython bindings (a binding not installed is a note)."""
    holder, address = packed_params(launch)
    dims = (*launch.grid, *launch.block, launch.shared_mem)
    out: Dict[str, Callable[[], Any]] = {}
    try:
        from cupy_backends.cuda.api import driver as cupy_driver

        fn = functools.partial(cupy_driver.launchKernel, launch.function_ptr, *dims, stream,
                               address, 0)
        fn.keep = holder  # type: ignore[attr-defined]
        out["driver_cupy"] = fn
    except ImportError as err:
        notes.append(f"own cost {name} driver_cupy: not measured ({err})")
    try:
        from cuda.bindings import driver as cuda_driver

        fn = functools.partial(cuda_driver.cuLaunchKernel, cuda_driver.CUfunction(
            launch.function_ptr), *dims, cuda_driver.CUstream(stream), address, 0)
        fn.keep = holder  # type: ignore[attr-defined]
        out["driver_cuda_bindings"] = fn
    except ImportError as err:
        notes.append(f"own cost {name} driver_cuda_bindings: not measured ({err})")
    return out


def build(name: str, cp: Any, stream: Any, trt_call: Any, notes: List[str]) -> Optional[OwnCase]:
    """Configure op ``name`` (V2, and its V3 adapter through ``on_shape_change``) and build its
    paths; None, with a note, when it cannot run or a path's output is wrong."""
    from pyplugins.runtime.launch import Launch
    from pyplugins.runtime.plugin_v3 import adapter_class

    case = select([OPS[name]])[0]
    prob = case.problem(IN_BYTES, "float32")
    try:
        cls = case.plugin_class()
        cfg = driver.configure(cls, case.fields, prob.in_shapes, prob.in_dtypes, name="own")
        v3 = adapter_class(cls)(cfg.plugin.clone())
        v3.on_shape_change(cfg.in_desc, cfg.out_desc)
    except Exception as err:  # noqa: BLE001 - an op that cannot be set up is a note
        notes.append(f"own cost {name}: not measured ({type(err).__name__}: {err})")
        return None
    launch = cfg.plugin.launch
    if type(launch) is not Launch:
        notes.append(f"own cost {name}: its launch is a {type(launch).__name__}, not one "
                     "pyplugins.runtime.launch.Launch; not measured")
        return None
    rng = cp.random.default_rng(7)
    ins = [driver.random_array(s, d, rng) for s, d in zip(prob.in_shapes, prob.in_dtypes)]
    outs = [cp.empty(s, dtype=d) for s, d in zip(cfg.out_shapes, cfg.out_dtypes)]
    # The inputs were made on CuPy's current (legacy) stream and the measurement's stream does
    # not wait for it (non-blocking): without this, the first enqueue could read them unwritten.
    cp.cuda.runtime.deviceSynchronize()
    sp = int(stream.ptr)
    args = (cfg.in_desc, cfg.out_desc, [int(a.data.ptr) for a in ins],
            [int(o.data.ptr) for o in outs], 0, sp)
    cfg.plugin.enqueue(*args)  # writes the pointers the Cython paths copy
    stream.synchronize()
    expected = [o.view(cp.uint8).copy() for o in outs]
    bad = _against_reference(cls, cfg.plugin, ins, outs)
    if bad:
        notes.append(f"own cost {name}: the V2 enqueue's output {bad}; not measured")
        return None
    make = launch_paths.TrtCall if trt_call is None else functools.partial(
        launch_paths.CppTrtCall, trt_call)
    paths: Dict[str, Callable[[], Any]] = {"plugin_enqueue": make(cfg.plugin, *args),
                                           "plugin_enqueue_v3": make(v3, *args),
                                           "python_call": make(EmptyEnqueue(), *args)}
    paths.update(_cython_paths(launch, sp, notes, name))
    if "driver_cupy" in paths:
        paths["launch_only"] = make(LaunchOnly(paths["driver_cupy"]), *args)
    own = OwnCase(name, f"float32 {' + '.join(str(list(s)) for s in prob.in_shapes)}, grid "
                  f"{launch.grid[0]} x {launch.block[0]}", paths, outs, expected)
    for path in [p for p in own.paths if p != "python_call"]:
        wrong = check(own, path, cp, stream)
        if wrong:
            notes.append(f"own cost {name} {path}: {wrong}; left out")
            del own.paths[path]
    return own


def _against_reference(cls: Any, plugin: Any, ins: List[Any], outs: List[Any]) -> Optional[str]:
    """None when the outputs match the op's NumPy reference (or it has none), else why not."""
    from pyplugins.testing import assert_close

    reference = getattr(plugin, "reference", None)
    if not callable(reference):
        return None
    import cupy as cp

    try:
        for got, want in zip(outs, reference(*[cp.asnumpy(a) for a in ins])):
            assert_close(cp.asnumpy(got), want, np.float32)
    except AssertionError as err:
        return f"differs from {cls.__name__}.reference ({str(err).splitlines()[0]})"
    return None


def check(own: OwnCase, path: str, cp: Any, stream: Any) -> Optional[str]:
    """Poison the outputs, run ``path`` once: None when every output byte is the V2 enqueue's."""
    for out in own.outputs:
        out.view(cp.uint8).fill(0xFF)
    cp.cuda.runtime.deviceSynchronize()
    try:
        returned = own.paths[path]()
    except Exception as err:  # noqa: BLE001 - a path that cannot launch is a note
        return f"raised {type(err).__name__}: {err}"
    stream.synchronize()
    bad = launch_paths.launch_status(path, returned)
    if bad:
        return bad
    if not all(bool(cp.array_equal(o.view(cp.uint8), e))
               for o, e in zip(own.outputs, own.expected)):
        return "output differs from the V2 enqueue's"
    return None
