"""``pp.run(PluginClass, *arrays, **fields)``: call a plugin on arrays, for quick experiments.

There is no side path: the call drives the plugin through the emulator's lifecycle
(:func:`pyplugins.checker.lifecycle.run`) exactly as the checks and the ``pyplugins check``
command do: ``create_plugin`` from the fields, shape and type inference, format negotiation,
configure, clone, serialize / deserialize, and finally ``enqueue`` on the GPU with your arrays
as the inputs. Anything the lifecycle finds wrong (a swallowed callback error, a clone that
shares state, a non-deterministic ``serialize()`` ...) is raised as :class:`EagerRunError` with
the full report, instead of a silently wrong result.

NumPy inputs give NumPy outputs; CuPy inputs stay on the device and give CuPy outputs. Shapes
are static (the arrays' shapes); for dynamic-shape profiles call the lifecycle directly.

Example (needs a GPU)::

    import numpy as np, pyplugins as pp
    from pyplugins.ops.leaky_relu import LeakyReLU
    y = pp.run(LeakyReLU, np.random.randn(2, 3).astype(np.float32), neg_slope=0.1)
"""

from __future__ import annotations

from typing import Any, List

from pyplugins.runtime import fields as _fields
from pyplugins.errors import PluginDefinitionError, PyPluginsError


class EagerRunError(PyPluginsError, RuntimeError):
    """``pp.run`` could not produce outputs: the lifecycle reported errors or violations, or
    ``enqueue`` could not run (no GPU). ``report`` holds the lifecycle's report."""

    def __init__(self, message: str, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


def _is_cupy(array: Any) -> bool:
    module = type(array).__module__ or ""
    return module == "cupy" or module.startswith("cupy.")


def _spec(index: int, array: Any, tensor_spec: Any, plugin: str) -> Any:
    if not hasattr(array, "shape") or not hasattr(array, "dtype"):
        msg = (f"pp.run({plugin}): input {index} must be a NumPy or CuPy array (got a "
               f"{type(array).__name__}); wrap it with np.asarray(...).")
        raise TypeError(msg)
    return tensor_spec(tuple(int(d) for d in array.shape), array.dtype, data=array)


def run(plugin_class: Any, *arrays: Any, **fields: Any) -> Any:
    """Run a registered plugin once on ``arrays`` with ``fields`` as its attributes.

    Args:
        plugin_class: a :class:`pyplugins.Plugin` subclass decorated with ``@pp.register``.
        *arrays: the inputs, NumPy or CuPy arrays (static shapes).
        **fields: field values, as Python values (``pads=[1, 1]``, ``mode="max"``).

    Returns:
        The output array, or a tuple of arrays when the plugin has several outputs.

    Raises:
        PluginDefinitionError: the class is not a registered plugin.
        FieldError: an unknown field name, a missing required field or a bad value.
        EagerRunError: the lifecycle reported errors or violations, or ``enqueue`` could not
            run (for instance on a machine without a GPU).
    """
    creator = getattr(plugin_class, "creator", None)
    schema = getattr(plugin_class, "__pp_fields__", None)
    label = getattr(plugin_class, "__name__", repr(plugin_class))
    if creator is None or schema is None:
        msg = (f"pp.run({label}): not a registered pp.Plugin class; decorate it with "
               "@pp.register (which creates and registers its IPluginCreator).")
        raise PluginDefinitionError(msg)
    # Check the fields here so a typo raises a FieldError naming it; the lifecycle's conversion
    # (the ONNX parser's) would drop an unknown name with only a warning.
    _fields.values_from_python(schema, fields, plugin_class.name)

    from pyplugins.checker import lifecycle  # noqa: PLC0415 - heavy, and only needed here
    from pyplugins.emulator.specs import TensorSpec  # noqa: PLC0415

    specs = [_spec(i, a, TensorSpec, label) for i, a in enumerate(arrays)]
    on_device = any(_is_cupy(a) for a in arrays)
    report = lifecycle.run(creator, specs, dict(fields), keep_on_device=on_device)
    if not report.ok:
        msg = (f"pp.run({label}) failed: the lifecycle reported "
               f"{_count(report.errors, 'error')} and {_count(report.violations, 'violation')}:"
               f"\n{report.format()}")
        raise EagerRunError(msg, report)
    if not report.enqueue_ran or report.outputs is None:
        why = report.skipped or "the lifecycle did not reach enqueue"
        msg = (f"pp.run({label}): enqueue could not run ({why}), so there are no outputs. "
               "pp.run needs a CUDA GPU visible to CuPy; to check the plugin protocol without "
               "one use pyplugins.checker.lifecycle.run(..., device='cpu') or "
               "'pyplugins check'.")
        raise EagerRunError(msg, report)
    outputs: List[Any] = list(report.outputs)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _count(items: Any, word: str) -> str:
    n = len(items or ())
    return f"{n} {word}{'' if n == 1 else 's'}"


__all__ = ["EagerRunError", "run"]
