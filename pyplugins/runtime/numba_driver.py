"""A compiled numba CUDA kernel as a prepacked :class:`pyplugins.runtime.launch.Launch`.

numba's own launch (``_Kernel.launch``) rebuilds every argument per call: a device array per
pointer, then numba's flattened form of each array and a ctypes object per scalar. The kernel
it launches is an ordinary ``CUfunction`` whose parameters are that flattened form, so the same
launch can be packed once, at build time, and made per call by the one ``cuLaunchKernel`` that
:class:`~pyplugins.runtime.launch.Launch` makes for CUDA C++ kernels. :func:`driver_launch`
does that packing from numba-cuda's compiled kernel, or says why it cannot.

The flattened form (numba-cuda 0.30, ``numba/cuda/dispatcher.py``, ``_Kernel._prepare_args``):
an array argument of ``ndim`` dimensions becomes ``5 + 2 * ndim`` parameters, each 8 bytes:
``meminfo`` (0), ``parent`` (0), ``nitems``, ``itemsize``, ``data`` (the pointer), ``shape[ndim]``,
``strides[ndim]`` (bytes); an integer or float scalar becomes one parameter of its own C type.

Example:
    >>> import numpy as np
    >>> from pyplugins.runtime.numba_launch import ArraySlot
    >>> args = flat_arguments((ArraySlot((2, 3), np.float32), np.float32(0.5)))
    >>> [a if a is POINTER else a.item() for a in args]  # meminfo, parent, nitems, itemsize, ...
    [0, 0, 6, 4, POINTER, 2, 3, 12, 4, 0.5]
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from pyplugins.runtime.launch import POINTER, Launch

__all__ = ["driver_launch", "flat_arguments", "function_handle"]


def flat_arguments(spec: Sequence[Any]) -> Tuple[Any, ...]:
    """The kernel parameters numba passes for ``spec`` (NumPy scalars, and C-contiguous arrays
    given by ``.shape`` and ``.dtype``: :class:`pyplugins.runtime.numba_launch.ArraySlot`), as
    :class:`Launch` arguments: ``np.int64`` for the array fields, :data:`POINTER` for each
    array's data, the scalars unchanged.

    Raises:
        TypeError: an argument whose flattened form is not packed here (a bool or complex
            scalar, anything else but an array slot or an integer / float NumPy scalar).
    """
    out: list = []
    for index, arg in enumerate(spec):
        if not isinstance(arg, np.generic) and hasattr(arg, "shape") and hasattr(arg, "dtype"):
            itemsize = arg.dtype.itemsize
            strides, step = [], itemsize
            for extent in reversed(arg.shape):  # C order
                strides.insert(0, step)
                step *= extent
            out += [np.int64(0), np.int64(0), np.int64(int(np.prod(arg.shape))),
                    np.int64(itemsize), POINTER]
            out += [np.int64(s) for s in arg.shape] + [np.int64(s) for s in strides]
        elif isinstance(arg, (np.integer, np.floating)) and not isinstance(arg, np.bool_):
            out.append(arg)
        else:
            msg = (f"argument {index} ({type(arg).__name__}) has no packed form here; only "
                   "arrays and integer or float scalars")
            raise TypeError(msg)
    return tuple(out)


def function_handle(cuda: Any, compiled: Any, device: int) -> int:
    """The ``CUfunction`` of numba-cuda's compiled kernel on ``device``, as an int (``cuda``:
    the ``numba.cuda`` module).

    numba-cuda loads the module through cuda.core, whose kernel handle may be a ``CUkernel``
    (a library's kernel, not yet a context's function); that one is turned into the current
    context's ``CUfunction`` with ``cuKernelGetFunction`` (CUDA driver API).

    Raises:
        AttributeError, TypeError, RuntimeError: numba-cuda exposes no usable handle.
    """
    with cuda.gpus[int(device)]:
        handle = compiled._codelibrary.get_cufunc().handle  # numba-cuda's CudaPythonFunction
        if type(handle).__name__ == "CUkernel":
            from cuda.bindings import driver  # noqa: PLC0415 - comes with numba-cuda

            err, handle = driver.cuKernelGetFunction(handle)
            if int(err) != 0:
                msg = f"cuKernelGetFunction failed ({err})"
                raise RuntimeError(msg)
    value = getattr(handle, "value", handle)  # a ctypes c_void_p under numba's ctypes binding
    return int(value)


def driver_launch(cuda: Any, compiled: Any, spec: Sequence[Any], grid: Tuple[int, int, int],
                  block: Tuple[int, int, int], device: int, name: str
                  ) -> Tuple[Optional[Launch], Optional[str]]:
    """(a :class:`Launch` of numba's compiled kernel for ``spec``, None), or (None, why not).

    ``cuda`` is the ``numba.cuda`` module; ``compiled`` what ``NumbaKernel.compiled`` returned
    (numba-cuda's ``_Kernel``). Kernels that numba launches differently are left to numba: a
    debug kernel (it checks an error flag after each launch), a cooperative one, one with
    argument extensions, or one whose argument count is not ``spec``'s.
    """
    reasons = [why for flag, why in ((getattr(compiled, "debug", False), "a debug kernel"),
                                     (getattr(compiled, "cooperative", False),
                                      "a cooperative kernel"),
                                     (getattr(compiled, "extensions", None), "argument "
                                      "extensions")) if flag]
    if reasons:
        return None, f"numba launches {reasons[0]} itself"
    try:
        args = flat_arguments(spec)
        types = tuple(getattr(compiled, "argument_types", ()))
        if len(types) != len(spec):
            msg = f"the kernel takes {len(types)} argument(s), the launch has {len(spec)}"
            raise TypeError(msg)
        handle = function_handle(cuda, compiled, device)
    except Exception as err:  # noqa: BLE001 - whatever numba-cuda lacks, numba's launch remains
        return None, f"{type(err).__name__}: {err}"
    return Launch(handle, grid=grid, block=block, args=args, device=device, name=name), None
