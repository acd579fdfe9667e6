"""What every plugin demo does alike: its command line, importing its ONNX node as TensorRT's
parser does, running the emulated lifecycle, and reporting what was (or was not) checked.

Importing this module selects pyplugins' emulator as the TensorRT API (``PYPLUGINS_TRT``): the
demos drive the emulator's lifecycle, so their plugins must subclass the emulator's base
classes, also where TensorRT is installed (``demos/onnx_demo.py`` builds a real engine there).
Import it before anything from ``pyplugins``.

Example (what a demo's ``main`` does with these helpers)::

    args = _common.parser(__doc__, dtypes=("float32", "float16")).parse_args(argv)
    imported = _common.import_node(make_node())
    report = _common.run(imported, specs, device=args.device, trace=args.trace)
    if not report.ok:
        return 1
    if not report.enqueue_ran:
        return _common.kernels_not_run(report.skipped)
    return 0 if _common.matches("y", report.outputs[0], expected, np.float32) else 1
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Optional, Sequence

import numpy as np

os.environ["PYPLUGINS_TRT"] = "emulator"

from demos._interface import InterfaceParser  # after the emulator is selected


def parser(doc: str, dtypes: Sequence[str] = ("float32", "float16"),
           trace_help: str = "print the callback timeline") -> argparse.ArgumentParser:
    """The options every demo has: ``--device``, ``--dtype`` (the first of ``dtypes`` by
    default), ``--trace`` and ``--interface`` (``v3``: the same plugin class registered as
    ``IPluginV3``, see :func:`demos._interface.use_interface`); the description is the first
    paragraph of ``doc``.

    Example:
        >>> parser("Demo.", ("float32", "int8")).parse_args(["--dtype", "int8"]).dtype
        'int8'
    """
    result = InterfaceParser(description=doc.split("\n\n")[0])
    result.add_argument("--device", choices=("auto", "cpu"), default="auto",
                        help="cpu: never touch the GPU (the run stops before enqueue)")
    result.add_argument("--dtype", choices=tuple(dtypes), default=dtypes[0])
    result.add_argument("--trace", action="store_true", help=trace_help)
    return result


def import_node(node: Any) -> Any:
    """Import one ONNX plugin node as TensorRT's parser does and print what the parser passes,
    its warnings, and why a missing-attribute warning is harmless where it is.

    Args:
        node: an ``onnx.NodeProto`` (``onnx.helper.make_node``).

    Returns:
        The :class:`pyplugins.emulator.onnx_import.ImportedNode` (creator, name, fields).
    """
    from pyplugins.checker.parser_notes import missing_attribute_note
    from pyplugins.emulator import onnx_import

    imported = onnx_import.import_node(node)
    fields = ", ".join(f"{f.name}: {f.type.name} {_shown(f)}" for f in imported.fc)
    print(f"ONNX node {imported.name!r} ({node.op_type}, {len(node.input)} input(s)) -> creator "
          f"{':'.join(imported.key)}; the parser passes {fields or 'no fields'}")
    for warning in imported.warnings:
        print(f"  parser warning: {warning}")
    note = missing_attribute_note(imported.creator, imported.warnings,
                                  [f.name for f in imported.fc])
    if note:
        print(f"  pyplugins: {note}")
    return imported


def _shown(field: Any) -> str:
    data = np.asarray(field.data)
    if field.type.name == "CHAR":  # a string, NUL-terminated by the parser
        return repr(data.astype(np.int8).tobytes())
    return str(data.tolist())


def run(imported: Any, specs: Sequence[Any], *, device: str, trace: bool) -> Any:
    """Drive the imported node through TensorRT's build and run in the emulator; print the
    callback timeline (``trace``) and the lifecycle's report.

    Returns:
        The :class:`pyplugins.checker.lifecycle_report.LifecycleReport`; ``report.ok`` is False (and
        ``FAILED`` printed) when the lifecycle found a problem.
    """
    from pyplugins.checker import lifecycle

    report = lifecycle.run(imported.creator, specs, imported.fc, node_name=imported.name,
                           device=device, trace=trace)
    if report.trace is not None:
        print(report.trace.format_timeline())
    print(report.format())
    if not report.ok:
        print("FAILED: the lifecycle reported problems (above).")
    return report


def kernels_not_run(why: str) -> int:
    """Say that nothing numeric was checked, and why; returns the exit status, 0."""
    print(f"The kernels were not run ({why}). The whole plugin lifecycle ran (ONNX import, "
          "shape inference, format search, build- and execution-phase configure, serialize, "
          "deserialize, the context's clone), but without a GPU there is no numeric result to "
          "check.")
    return 0


def matches(what: str, got: np.ndarray, want: np.ndarray, dtype: Optional[Any] = None) -> bool:
    """Whether the plugin's output ``got`` matches NumPy's ``want``; prints ``WRONG`` if not.

    Args:
        what: names the output in the message.
        dtype: compare within :data:`pyplugins.testing.TOLERANCES` of this dtype; None
            compares bit for bit (ops that only move elements).

    Example:
        >>> matches("y", np.float32([1, 2]), np.float32([1, 2]))
        True
        >>> matches("y", np.float32([1, 2]), np.float32([1, 3]))
        WRONG: y (2,) float32 is not NumPy's (2,) float32 bit for bit (1 element(s) differ)
        False
    """
    if dtype is None:
        same = (got.shape == want.shape and got.dtype == want.dtype
                and np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes())
        if not same:
            differ = (f" ({int(np.count_nonzero(got != want))} element(s) differ)"
                      if got.shape == want.shape else "")
            print(f"WRONG: {what} {got.shape} {got.dtype} is not NumPy's {want.shape} "
                  f"{want.dtype} bit for bit{differ}")
        return same
    from pyplugins.testing import assert_close

    try:
        assert_close(got, want, dtype, what=what)
    except AssertionError as err:
        print(f"WRONG: {err}")
        return False
    return True
