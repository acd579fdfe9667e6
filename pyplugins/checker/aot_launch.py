"""The run time of an engine holding a QDP AOT kernel, without Python plugin code: evaluate the
artifact for the concrete shapes and launch its kernel through the CUDA driver.

``python -m pyplugins.checker.aot_launch DIR`` is the child process of the QDP checker's AOT
run. It reads only ``DIR/artifact.bin`` (:class:`~pyplugins.checker.aot_artifact.AOTArtifact`),
``DIR/request.json`` (input shapes, output dtypes, whether to launch) and ``DIR/inputs.npz``;
it never imports ``tensorrt``, the emulator, ``tensorrt.plugin`` or the plugin's module, and
says so in ``DIR/result.json`` (``modules``: which of those ended up in ``sys.modules``). It
evaluates the launch parameters, extra arguments and output shapes as TensorRT does at run
time, and on a GPU loads the kernel (``cuModuleLoadData``), allocates the inputs and poisoned,
guarded outputs, launches it (``cuLaunchKernel``: input pointers, extra arguments, output
pointers) on a non-default stream and writes the raw output buffers to ``DIR/outputs.npz``.
:func:`launch` is the same launch in-process (the build's timing of AOT candidates), and
:class:`LoadedKernel` keeps one artifact's kernel loaded and its parameter layout checked, for the
model runner's execution path (:class:`pyplugins.models.qdp_exec.QDPExecution`), which launches it
once per inference; neither imports the plugin's module either.

What TensorRT passes is one parameter per input, extra argument and output (§8.4).
Triton 3.3+ kernels declare more: trailing pointer parameters for their scratch buffers
(``global_scratch``, then from 3.5 ``profile_scratch``), so NVIDIA's own AOT sample (Triton
3.5.0, pinned since TensorRT 10.16) hands over a PTX entry of 17 parameters for 15 arguments.
That sample runs on TensorRT, so TensorRT fills them [infer: its launcher is closed source;
null pointers are what Triton's and PyTorch's launchers pass when a kernel uses no scratch];
:func:`launch_arguments` does the same, null pointers for trailing 8-byte parameters of a PTX
entry, and refuses, before any launch, an entry that takes fewer or other parameters
(:class:`~pyplugins.errors.AOTArtifactError`: a ``void**`` too short makes the driver read
past it, which gave CUDA_ERROR_INVALID_VALUE).

Example:
    >>> kernel_params([4096, 7, 8192], ["ptr", "INT32", "ptr"])[1]
    [4096, 7, 8192]
"""

from __future__ import annotations

import ctypes
import json
import sys
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins.checker.aot_artifact import AOTArtifact
from pyplugins.checker.checks.aot import ptx_entries, signature_problems
from pyplugins.checker.checks.outputs import GUARD_BYTES, poison_pattern
from pyplugins.errors import AOTArtifactError

__all__ = ["LoadedKernel", "kernel_params", "launch", "launch_arguments", "load_function", "main",
           "trailing_pointers"]

_CTYPES = {"ptr": ctypes.c_uint64, "INT32": ctypes.c_int32, "INT16": ctypes.c_int16,
           "INT8": ctypes.c_int8}
#: Modules whose presence in the child would mean the plugin's Python ran.
WATCHED = ("tensorrt", "tensorrt.plugin", "pyplugins.emulator", "pyplugins.emulator.plugin")
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_SHARED_DEFAULT = 48 * 1024
_functions: Dict[Tuple[int, bytes, str], Any] = {}


def kernel_params(values: Sequence[int], kinds: Sequence[str]) -> Tuple[Any, List[int]]:
    """The ``void**`` array ``cuLaunchKernel`` takes: one ctypes value per argument (``"ptr"``
    or an extra argument's dtype) and the array of their addresses. Returns ``(array, values)``
    (the values are kept alive by the array's owner)."""
    holders = [_CTYPES[k](int(v)) for v, k in zip(values, kinds)]
    array = (ctypes.c_void_p * max(len(holders), 1))(*[ctypes.addressof(h) for h in holders])
    array._holders = holders  # type: ignore[attr-defined]
    return array, [int(h.value) for h in holders]


def load_function(art: AOTArtifact) -> Any:
    """The kernel as a ``CUfunction`` (``cuModuleLoadData`` + ``cuModuleGetFunction``) on the
    calling thread's current device, cached per device, image and name in this process (a
    function belongs to one device's context)."""
    from cupy_backends.cuda.api import driver, runtime  # noqa: PLC0415 - GPU only

    device = runtime.getDevice()
    # A thread that has made no runtime call yet has no driver context current, even with its
    # device chosen (CuPy skips cudaSetDevice for the device it already reports): setDevice binds
    # the device's primary context, which the driver calls below need (CUDA_ERROR_INVALID_CONTEXT
    # otherwise, seen in a runner's second thread on a two-GPU machine).
    runtime.setDevice(device)
    key = (device, art.image, art.kernel_name)
    if key not in _functions:
        image = art.image if art.image_kind == "cubin" else art.image.rstrip(b"\0") + b"\0"
        module = driver.moduleLoadData(image)
        _functions[key] = (module, driver.moduleGetFunction(module, art.kernel_name))
    return _functions[key][1]


def trailing_pointers(art: AOTArtifact) -> int:
    """How many trailing 8-byte parameters the PTX entry takes beyond what TensorRT passes (the
    null pointers :func:`launch_arguments` appends; module docstring); 0 for a CUBIN, whose
    parameters are not read here.

    Raises:
        AOTArtifactError: the PTX has no such entry, or its parameters do not take what TensorRT
            passes (fewer, another size, or trailing ones that are not pointers).

    Example:
        >>> ptx = b".visible .entry k(.param .u64 a, .param .u64 b, .param .u64 scratch)"
        >>> trailing_pointers(AOTArtifact("k", ptx, "ptx", {}, [], [[]], ["FLOAT"], ["FLOAT"],
        ...                               ["LINEAR", "LINEAR"], 0, "ns::p"))
        1
    """
    if art.image_kind != "ptx":
        return 0
    params = ptx_entries(art.image.decode("utf-8", "replace")).get(art.kernel_name)
    who = f"AOT kernel {art.kernel_name!r} of QDP plugin '{art.plugin}'"
    if params is None:
        msg = f"{who}: its PTX has no .entry of that name; not launched"
        raise AOTArtifactError(msg)
    layout = art.argument_layout()
    problems, _ = signature_problems(params, layout)
    if problems:
        msg = (f"{who}: its PTX entry takes {len(params)} parameter(s) and TensorRT passes "
               f"{len(layout)}: {'; '.join(problems)}; not launched")
        raise AOTArtifactError(msg)
    return len(params) - len(layout)


def launch_arguments(art: AOTArtifact, plan: Dict[str, Any], in_ptrs: Sequence[int],
                     out_ptrs: Sequence[int], padding: Optional[int] = None
                     ) -> Tuple[List[int], List[str]]:
    """``(values, kinds)`` of the launch: the input pointers, the extra arguments, the output
    pointers, then a null pointer for each trailing 8-byte parameter of the PTX entry
    (``padding``, else :func:`trailing_pointers`, which reads the PTX).

    Raises:
        AOTArtifactError: as :func:`trailing_pointers`.

    Example:
        >>> ptx = (b".visible .entry k(.param .u64 a, .param .u32 n, .param .u64 b, "
        ...        b".param .u64 scratch)")
        >>> art = AOTArtifact("k", ptx, "ptx", {}, [{"dtype": "INT32", "expr": {}}], [[]],
        ...                   ["FLOAT"], ["FLOAT"], ["LINEAR", "LINEAR"], 0, "ns::p")
        >>> launch_arguments(art, {"extra": [8]}, [100], [200])
        ([100, 8, 200, 0], ['ptr', 'INT32', 'ptr', 'ptr'])
    """
    values = [*in_ptrs, *plan["extra"], *out_ptrs]
    kinds = (["ptr"] * len(in_ptrs) + [a.get("dtype", "INT32") for a in art.extra_args]
             + ["ptr"] * len(out_ptrs))
    extra = trailing_pointers(art) if padding is None else padding
    return values + [0] * extra, kinds + ["ptr"] * extra


class LoadedKernel:
    """One artifact's kernel, loaded in this process (``cuModuleLoadData``, cached per image:
    :func:`load_function`) with its parameter layout checked once; :meth:`launch` is then one
    ``cuLaunchKernel``, what an engine does per inference. GPU only.

    Raises:
        AOTArtifactError: as :func:`trailing_pointers`, before anything is loaded.

    Example::

        kernel = LoadedKernel(art)
        kernel.launch(art.launch_plan({0: (2, 8)}), [x_ptr], [y_ptr], stream_ptr)
    """

    def __init__(self, art: AOTArtifact) -> None:
        self.art = art
        self.padding = trailing_pointers(art)
        self.function = load_function(art)
        self._shared = _SHARED_DEFAULT

    def launch(self, plan: Dict[str, Any], in_ptrs: Sequence[int], out_ptrs: Sequence[int],
               stream: int) -> None:
        """Launch with ``plan`` (:meth:`AOTArtifact.launch_plan`) on ``stream``: the input
        pointers, then the extra arguments, then the output pointers."""
        from cupy_backends.cuda.api import driver  # noqa: PLC0415 - GPU only

        if plan["shared_mem"] > self._shared:  # opt in, as any launcher of such a kernel must
            driver.funcSetAttribute(self.function,
                                    _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    int(plan["shared_mem"]))
            self._shared = int(plan["shared_mem"])
        values, kinds = launch_arguments(self.art, plan, in_ptrs, out_ptrs, self.padding)
        array, _ = kernel_params(values, kinds)
        driver.launchKernel(self.function, *plan["grid"], *plan["block"],
                            int(plan["shared_mem"]), int(stream), ctypes.addressof(array), 0)


def launch(art: AOTArtifact, plan: Dict[str, Any], in_ptrs: Sequence[int],
           out_ptrs: Sequence[int], stream: int) -> None:
    """Launch ``art``'s kernel with ``plan`` (:meth:`AOTArtifact.launch_plan`) on ``stream``:
    the input pointers, then the extra arguments, then the output pointers (a
    :class:`LoadedKernel` made for this launch; the module stays loaded)."""
    LoadedKernel(art).launch(plan, in_ptrs, out_ptrs, stream)


def _run_on_gpu(art: AOTArtifact, plan: Dict[str, Any], inputs: List[np.ndarray],
                out_dtypes: List[np.dtype], alt: bool) -> List[np.ndarray]:
    import cupy as cp  # noqa: PLC0415 - GPU only

    stream = cp.cuda.Stream(non_blocking=True)  # never in step with the legacy default stream
    with stream:
        ins = [cp.asarray(np.ascontiguousarray(a)) for a in inputs]
        outs = []
        for shape, dt in zip(plan["outputs"], out_dtypes):
            count = int(np.prod(shape, dtype=np.int64)) + GUARD_BYTES // dt.itemsize
            outs.append(cp.asarray(np.frombuffer(poison_pattern(dt, count, alt), dtype=np.uint8)))
    stream.synchronize()
    launch(art, plan, [int(a.data.ptr) for a in ins], [int(o.data.ptr) for o in outs],
           int(stream.ptr))
    stream.synchronize()
    return [cp.asnumpy(o, stream=stream) for o in outs]


def main(argv: Sequence[str]) -> int:
    """Run the artifact in ``argv[0]`` (a directory); 0 when everything asked for ran."""
    work = Path(argv[0])
    result: Dict[str, Any] = {"ran": False, "error": None}
    try:
        request = json.loads((work / "request.json").read_text())
        art = AOTArtifact.from_bytes((work / "artifact.bin").read_bytes())
        shapes = {int(k): tuple(v) for k, v in request["input_shapes"].items()}
        plan = art.launch_plan(shapes)
        result["plan"] = {k: list(v) if isinstance(v, tuple) else v for k, v in plan.items()}
        if request.get("launch"):
            with np.load(work / "inputs.npz") as data:
                inputs = [data[f"in{k}"] for k in range(len(shapes))]
            outs = _run_on_gpu(art, plan, inputs, [np.dtype(d) for d in request["out_dtypes"]],
                               bool(request.get("alt")))
            np.savez(work / "outputs.npz", **{f"out{j}": o for j, o in enumerate(outs)})
            result["ran"] = True
    except Exception as err:  # noqa: BLE001 - reported to the parent, which names the check
        result["error"] = f"{type(err).__name__}: {err}"
        result["traceback"] = traceback.format_exc(limit=6)
    result["modules"] = {name: name in sys.modules for name in WATCHED}
    plugin_module = json.loads((work / "request.json").read_text()).get("plugin_module") \
        if (work / "request.json").is_file() else None
    if plugin_module:
        result["modules"][plugin_module] = plugin_module in sys.modules
    (work / "result.json").write_text(json.dumps(result))
    return 0 if result["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
