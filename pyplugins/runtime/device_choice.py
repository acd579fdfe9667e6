"""The one grammar of a ``device=`` argument (``pp.run``, :class:`Execution`, the check lifecycle).

``"auto"`` (the GPU when CuPy sees one, else none), ``"cpu"`` (never touch the GPU), ``"gpu"``
or ``"cuda"`` (the calling thread's current GPU, required), ``"gpu:N"`` / ``"cuda:N"`` or the
int ``N`` (GPU ordinal N, required). CuPy's current device is per thread, so two threads that
name two ordinals run on two GPUs; :func:`on_device` is the context that makes an ordinal
current around a whole set-up or run.

Example:
    >>> parse_device("gpu:1"), parse_device(0).index, parse_device("auto").kind
    (DeviceChoice(kind='gpu', index=1), 0, 'auto')
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Tuple, Union

from pyplugins.errors import ExecutionError, PyPluginsError
from pyplugins.runtime.device import import_cupy, no_device_reason

__all__ = ["DeviceChoice", "DeviceChoiceError", "gpu_ordinal", "on_device", "parse_device",
           "pick_device"]

_ORDINAL = re.compile(r"(?:gpu|cuda):(\d+)")
_GRAMMAR = "'auto', 'cpu', 'gpu', 'gpu:N' (or 'cuda', 'cuda:N') or a GPU ordinal N >= 0"


class DeviceChoiceError(PyPluginsError, ValueError):
    """A ``device=`` value outside the grammar, or a GPU ordinal this machine does not have."""


@dataclass(frozen=True)
class DeviceChoice:
    """A parsed ``device=``.

    Attributes:
        kind: ``"auto"``, ``"cpu"`` or ``"gpu"`` (``"cuda"`` is the same).
        index: the GPU ordinal asked for, or None (the calling thread's current device).
    """

    kind: str
    index: Optional[int] = None


def parse_device(device: Union[str, int, DeviceChoice]) -> DeviceChoice:
    """``device`` as a :class:`DeviceChoice` (see the module docstring for the grammar).

    Raises:
        DeviceChoiceError: anything else, named with the grammar and an example.

    Example:
        >>> parse_device("cuda:2")
        DeviceChoice(kind='gpu', index=2)
        >>> parse_device("gpu1")
        Traceback (most recent call last):
        ...
        pyplugins.runtime.device_choice.DeviceChoiceError: device must be 'auto', 'cpu', 'gpu', \
'gpu:N' (or 'cuda', 'cuda:N') or a GPU ordinal N >= 0 (got 'gpu1'); e.g. device='gpu:1' or device=1
    """
    if isinstance(device, DeviceChoice):
        return device
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return DeviceChoice("gpu", int(device))
    if isinstance(device, str):
        if device in ("auto", "cpu"):
            return DeviceChoice(device)
        if device in ("gpu", "cuda"):
            return DeviceChoice("gpu")
        match = _ORDINAL.fullmatch(device)
        if match:
            return DeviceChoice("gpu", int(match.group(1)))
    msg = f"device must be {_GRAMMAR} (got {device!r}); e.g. device='gpu:1' or device=1"
    raise DeviceChoiceError(msg)


def gpu_ordinal(cupy: Any, choice: DeviceChoice) -> int:
    """The ordinal ``choice`` runs on: its index, checked against the devices CuPy sees, or the
    calling thread's current device.

    Raises:
        DeviceChoiceError: an index past the last device.
    """
    count = int(cupy.cuda.runtime.getDeviceCount())
    if choice.index is None:
        return int(cupy.cuda.runtime.getDevice())
    if choice.index >= count:
        msg = (f"device='gpu:{choice.index}' was asked for, but CuPy sees {count} GPU"
               f"{'' if count == 1 else 's'} (ordinals 0 to {count - 1}); pick one of those, "
               f"or check CUDA_VISIBLE_DEVICES")
        raise DeviceChoiceError(msg)
    return choice.index


@contextlib.contextmanager
def on_device(cupy: Any, ordinal: Optional[int]) -> Iterator[None]:
    """Make ``ordinal`` the calling thread's current CUDA device for the block (nothing for
    None, or without CuPy); the previous one is restored after it."""
    if cupy is None or ordinal is None:
        yield
        return
    with cupy.cuda.Device(int(ordinal)):
        yield


def pick_device(device: Union[str, int, DeviceChoice]) -> Tuple[Any, Optional[int], Optional[str]]:
    """``(cupy or None, GPU ordinal or None, why the reference runs instead of the kernel)``
    for an execution path's ``device`` (``Execution``, the model runner's QDP nodes).

    Raises:
        DeviceChoiceError: ``device`` outside the grammar, or an ordinal past the last GPU.
        ExecutionError: a GPU asked for (``gpu``, ``gpu:N``, ``N``) and none is usable.

    Example:
        >>> pick_device("cpu")
        (None, None, "device='cpu' was asked for")
    """
    choice = parse_device(device)
    if choice.kind == "cpu":
        return None, None, "device='cpu' was asked for"
    reason = no_device_reason()
    if reason is None:
        cp = import_cupy()
        return cp, gpu_ordinal(cp, choice), None
    if choice.kind != "auto":
        msg = f"device={device!r} was asked for, but there is {reason}"
        raise ExecutionError(msg)
    return None, None, reason
