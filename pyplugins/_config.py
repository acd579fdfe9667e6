"""Every ``PYPLUGINS_*`` environment variable, typed and documented, with a scoped override.

Read a knob through :data:`knobs` (``knobs.trt``), never through ``os.environ`` elsewhere.
Tests change knobs with :func:`override`, which restores the environment afterwards.

Example:
    >>> from pyplugins._config import knobs, override
    >>> with override(trt="emulator"):
    ...     knobs.trt
    'emulator'
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator, Sequence

_TRT_CHOICES = ("auto", "tensorrt", "emulator")
_COMPILERS = ("auto", "nvrtc", "nvcc", "off")


class _Knobs:
    """Typed views of the environment; each property re-reads it, so changes apply at once."""

    @property
    def trt(self) -> str:
        """``PYPLUGINS_TRT``: ``auto`` (default: real TensorRT if importable, else the emulator),
        ``tensorrt`` (real one or an ImportError) or ``emulator`` (always the emulator)."""
        return _choice("PYPLUGINS_TRT", _TRT_CHOICES)

    @property
    def trt_version(self) -> str:
        """``PYPLUGINS_TRT_VERSION``: the TensorRT version the emulator imitates, ``11.1``
        (default) or a 10.x such as ``10.16`` (which restores the names 11.0 removed)."""
        return os.environ.get("PYPLUGINS_TRT_VERSION", "11.1").strip() or "11.1"

    @property
    def interface(self) -> str:
        """``PYPLUGINS_INTERFACE``: the plugin interface ``pp.register`` gives a class that names
        none: ``auto`` (default: :func:`pyplugins.runtime.creator.default_interface`'s rule), ``v2``
        (``IPluginV2DynamicExt``), ``v3`` (``IPluginV3``) or ``qdp`` (``tensorrt.plugin``, with
        an ahead-of-time kernel where the class has one: :mod:`pyplugins.runtime.qdp`)."""
        return _choice("PYPLUGINS_INTERFACE", ("auto", "v2", "v3", "qdp"))

    @property
    def device(self) -> str:
        """``PYPLUGINS_DEVICE``: ``auto`` (default: run kernels when CuPy sees a GPU) or ``cpu``
        (never touch the GPU; the lifecycle stops before ``enqueue``)."""
        return _choice("PYPLUGINS_DEVICE", ("auto", "cpu"))


    @property
    def max_tensor_bytes(self) -> int:
        """``PYPLUGINS_MAX_TENSOR_BYTES``: the largest tensor (at the profile's max) a lifecycle
        run accepts, in bytes; default 4 GiB. Larger inputs are refused, larger outputs a defect."""
        return _positive_int("PYPLUGINS_MAX_TENSOR_BYTES", 4 << 30)

    @property
    def max_outputs(self) -> int:
        """``PYPLUGINS_MAX_OUTPUTS``: the most outputs (``num_outputs``) a lifecycle run drives;
        default 1024. A plugin declaring more is a defect."""
        return _positive_int("PYPLUGINS_MAX_OUTPUTS", 1024)

    @property
    def check_timeout(self) -> float:
        """``PYPLUGINS_CHECK_TIMEOUT``: ``pyplugins check``'s default ``--timeout`` in seconds for
        the module import and each callback; default 60."""
        text = os.environ.get("PYPLUGINS_CHECK_TIMEOUT", "").strip() or "60"
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not value > 0 or value == float("inf"):
            msg = f"PYPLUGINS_CHECK_TIMEOUT={text!r} is not a positive number of seconds."
            raise ValueError(msg)
        return value

    @property
    def cache_dir(self) -> Path:
        """``PYPLUGINS_CACHE_DIR``: where pyplugins keeps what it can compute again (the kernel
        check's compile results); default ``$XDG_CACHE_HOME/pyplugins``, else
        ``~/.cache/pyplugins``. Deleting it is always safe."""
        text = os.environ.get("PYPLUGINS_CACHE_DIR", "").strip()
        if text:
            return Path(text).expanduser()
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "pyplugins"

    @property
    def kernel_compiler(self) -> str:
        """``PYPLUGINS_KERNEL_COMPILER``: what the kernel check (a run without a GPU) compiles
        each ``pp.Kernel`` with: ``auto`` (default: NVRTC when its library loads, else
        ``nvcc``), ``nvrtc``, ``nvcc``, or ``off`` (no kernel check)."""
        return _choice("PYPLUGINS_KERNEL_COMPILER", _COMPILERS)

    @property
    def max_field_elements(self) -> int:
        """``PYPLUGINS_MAX_FIELD_ELEMENTS``: the most elements one list field (INTS, FLOATS)
        may hold when read from serialized bytes; default 1048576. A longer one is refused
        before it is read, so a corrupt or hostile engine cannot exhaust memory."""
        return _positive_int("PYPLUGINS_MAX_FIELD_ELEMENTS", 1 << 20)


def _choice(env: str, choices: Sequence[str]) -> str:
    """The lower-cased value of ``env``, one of ``choices``; unset or empty gives ``choices[0]``.

    Raises:
        ValueError: any other value, named with what is expected.
    """
    value = os.environ.get(env, "").strip().lower() or choices[0]
    if value not in choices:
        listed = f"{', '.join(choices[:-1])} or {choices[-1]}"
        msg = f"{env}={value!r} is not understood; expected {listed}."
        raise ValueError(msg)
    return value


def _positive_int(env: str, default: int) -> int:
    text = os.environ.get(env, "").strip() or str(default)
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        msg = f"{env}={text!r} is not a positive integer."
        raise ValueError(msg)
    return value


knobs = _Knobs()

_ENV_NAMES = {"trt": "PYPLUGINS_TRT", "trt_version": "PYPLUGINS_TRT_VERSION",
              "device": "PYPLUGINS_DEVICE", "max_tensor_bytes": "PYPLUGINS_MAX_TENSOR_BYTES",
              "max_outputs": "PYPLUGINS_MAX_OUTPUTS", "check_timeout": "PYPLUGINS_CHECK_TIMEOUT",
              "interface": "PYPLUGINS_INTERFACE", "cache_dir": "PYPLUGINS_CACHE_DIR",
              "kernel_compiler": "PYPLUGINS_KERNEL_COMPILER",
              "max_field_elements": "PYPLUGINS_MAX_FIELD_ELEMENTS"}


@contextlib.contextmanager
def override(**values: str | None) -> Iterator[None]:
    """Set knobs for the duration of a ``with`` block (``None`` unsets one).

    Example:
        >>> with override(trt_version="10.16"):
        ...     knobs.trt_version
        '10.16'
    """
    unknown = set(values) - set(_ENV_NAMES)
    if unknown:
        msg = f"unknown knob(s) {sorted(unknown)}; known: {sorted(_ENV_NAMES)}"
        raise KeyError(msg)
    saved = {name: os.environ.get(_ENV_NAMES[name]) for name in values}
    try:
        for name, value in values.items():
            _set(_ENV_NAMES[name], value)
        yield
    finally:
        for name, value in saved.items():
            _set(_ENV_NAMES[name], value)


def _set(env: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(env, None)
    else:
        os.environ[env] = str(value)
