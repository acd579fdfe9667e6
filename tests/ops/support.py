"""What the op tests share: tensor descriptors, output dims through the trampoline, input data
clear of the emulator's output poison, and the CLI and demo checks every op has."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins import cli
from pyplugins.runtime.creator import register
from pyplugins.emulator import trampoline

REPO = Path(__file__).resolve().parents[2]


class Junk:
    """An ``in_out`` entry after ``pos``: TensorRT's are garbage, so reading one is a bug."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"supports_format_combination read .{name} of an entry after pos")


def dyn(dims: Sequence[int], data_type: Any = trt.DataType.FLOAT,
        lo: Optional[Sequence[int]] = None,
        hi: Optional[Sequence[int]] = None) -> Any:
    """A LINEAR DynamicPluginTensorDesc; the profile's ``lo``/``hi`` default to ``dims``."""
    desc = trt.PluginTensorDesc(list(dims), data_type, trt.TensorFormat.LINEAR)
    return trt.DynamicPluginTensorDesc(desc, lo or dims, dims, hi or dims)


def output_dims(plugin: Any, *shapes: Sequence[int], index: int = 0,
                at: Optional[Dict[int, Sequence[int]]] = None
                ) -> Tuple[List[Optional[int]], List[bool]]:
    """Output ``index``'s dims for network-time input ``shapes`` (-1 = dynamic), asked as
    TensorRT asks: ``(values, is_constant)``. Symbolic dims are evaluated with ``at`` (input
    index -> concrete shape), and are None without it."""
    eb = trt.IExprBuilder()
    exprs = trampoline.get_output_dimensions(plugin, index,
                                             [eb._input(k, s) for k, s in enumerate(shapes)], eb)
    values = [e._evaluate(at or {}) if at or e.is_constant() else None for e in exprs]
    constant = [e.is_constant() for e in exprs]
    eb._expire()
    return values, constant


def random_array(shape: Sequence[int], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    """Random values over the type's range, minus the emulator's integer poison.

    The lifecycle fills outputs with 0xA5 bytes before ``enqueue`` and reports elements that
    still hold them as unwritten; for INT8 that byte is the legal value -91 (for INT32,
    0xA5A5A5A5), so a correct copy of it would be reported. Those values are bumped by one.
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    poison = np.frombuffer(bytes([0xA5]) * dtype.itemsize, dtype)[0]
    values[values == poison] += 1
    return values


def check_cli(capsys: Any, module: str, plugin: str, *inputs: str,
              attrs: Sequence[str] = ()) -> str:
    """``pyplugins check MODULE --plugin PLUGIN --input ... --attr ...`` must pass (status 0);
    returns what it printed."""
    argv = ["check", module, "--plugin", plugin]
    for spec in inputs:
        argv += ["--input", spec]
    for attr in attrs:
        argv += ["--attr", attr]
    status = cli.main(argv)
    out = capsys.readouterr()
    assert status == 0, out.out + out.err
    return out.out


def run_demo(script: str, *args: str) -> str:
    """Run ``demos/<script>`` in a fresh interpreter; it must exit 0. Returns its stdout."""
    result = subprocess.run([sys.executable, str(REPO / "demos" / script), *args], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def keep_registered(cls: Any) -> Any:
    """An autouse fixture for a test module: other test modules empty the registry, so make
    sure ``cls``'s creator is the registered one before each test."""

    @pytest.fixture(autouse=True)
    def registered() -> None:
        if trt.get_plugin_registry().get_creator(cls.name, cls.version,
                                                 cls.namespace) is not cls.creator:
            register(cls, replace=True)

    return registered
