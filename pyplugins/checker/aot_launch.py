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
:func:`launch` is the same launch in-process (the build's timing of AOT candidates).

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
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from pyplugins.checker.aot_artifact import AOTArtifact
from pyplugins.checker.checks.outputs import GUARD_BYTES, poison_pattern

__all__ = ["launch", "load_function", "kernel_params", "main"]

_CTYPES = {"ptr": ctypes.c_uint64, "INT32": ctypes.c_int32, "INT16": ctypes.c_int16,
           "INT8": ctypes.c_int8}
#: Modules whose presence in the child would mean the plugin's Python ran.
WATCHED = ("tensorrt", "tensorrt.plugin", "pyplugins.emulator", "pyplugins.emulator.plugin")
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_SHARED_DEFAULT = 48 * 1024
_functions: Dict[Tuple[bytes, str], Any] = {}


def kernel_params(values: Sequence[int], kinds: Sequence[str]) -> Tuple[Any, List[int]]:
    """The ``void**`` array ``cuLaunchKernel`` takes: one ctypes value per argument (``"ptr"``
    or an extra argument's dtype) and the array of their addresses. Returns ``(array, values)``
    (the values are kept alive by the array's owner)."""
    holders = [_CTYPES[k](int(v)) for v, k in zip(values, kinds)]
    array = (ctypes.c_void_p * max(len(holders), 1))(*[ctypes.addressof(h) for h in holders])
    array._holders = holders  # type: ignore[attr-defined]
    return array, [int(h.value) for h in holders]


def load_function(art: AOTArtifact) -> Any:
    """The kernel as a ``CUfunction`` (``cuModuleLoadData`` + ``cuModuleGetFunction``), cached
    per image and name in this process."""
    from cupy_backends.cuda.api import driver  # noqa: PLC0415 - GPU only

    key = (art.image, art.kernel_name)
    if key not in _functions:
        image = art.image if art.image_kind == "cubin" else art.image.rstrip(b"\0") + b"\0"
        module = driver.moduleLoadData(image)
        _functions[key] = (module, driver.moduleGetFunction(module, art.kernel_name))
    return _functions[key][1]


def launch(art: AOTArtifact, plan: Dict[str, Any], in_ptrs: Sequence[int],
           out_ptrs: Sequence[int], stream: int) -> None:
    """Launch ``art``'s kernel with ``plan`` (:meth:`AOTArtifact.launch_plan`) on ``stream``:
    the input pointers, then the extra arguments, then the output pointers."""
    from cupy_backends.cuda.api import driver  # noqa: PLC0415 - GPU only

    func = load_function(art)
    if plan["shared_mem"] > _SHARED_DEFAULT:  # opt in, as any launcher of such a kernel must
        driver.funcSetAttribute(func, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                int(plan["shared_mem"]))
    kinds = (["ptr"] * len(in_ptrs) + [a.get("dtype", "INT32") for a in art.extra_args]
             + ["ptr"] * len(out_ptrs))
    array, _ = kernel_params([*in_ptrs, *plan["extra"], *out_ptrs], kinds)
    driver.launchKernel(func, *plan["grid"], *plan["block"], int(plan["shared_mem"]),
                        int(stream), ctypes.addressof(array), 0)


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
