"""``run(PluginClass, *arrays, **fields)``: call a plugin on arrays, through the execution path.

The call sets one plugin up from the fields and runs it on your arrays, as a built engine would
(:class:`pyplugins.runtime.execute.Execution`: ``create_plugin``, output types and shapes, one
LINEAR format combination, configure, then ``enqueue`` on the GPU). Without a GPU the plugin's
NumPy ``reference(*inputs)`` gives the outputs, checked against the shapes and types the plugin
declared; a plugin without one raises :class:`EagerRunError`. A callback that fails raises
:class:`EagerRunError` naming the method, never a silently wrong result.

This is the lean path. ``pp.run(..., check=True)`` (:func:`pyplugins.checker.checked_run.run`)
first drives the plugin through the whole check lifecycle (clones, every format combination,
CUDA-graph capture, the serialize round trip).

NumPy inputs give NumPy outputs; CuPy inputs stay on the device and give CuPy outputs. Shapes
are static (the arrays' shapes).

Example (needs a GPU)::

    import numpy as np
    from pyplugins.ops.leaky_relu import LeakyReLU
    from pyplugins.runtime.eager import run
    y = run(LeakyReLU, np.random.randn(2, 3).astype(np.float32), neg_slope=0.1)
"""

from __future__ import annotations

from typing import Any, List, Sequence, Union

from pyplugins.errors import ExecutionError, PluginDefinitionError, PyPluginsError
from pyplugins.runtime import fields as _fields
from pyplugins.runtime.execute import Execution

__all__ = ["EagerRunError", "plugin_creator", "run"]


class EagerRunError(PyPluginsError, RuntimeError):
    """``pp.run`` could not produce outputs: a callback failed, there is no GPU and no
    reference, or (``check=True``) the check lifecycle reported errors or violations.
    ``report`` holds the lifecycle's report when there is one."""

    def __init__(self, message: str, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


def plugin_creator(plugin_class: Any, arrays: Sequence[Any], fields: dict) -> Any:
    """The creator of a registered ``pp.Plugin`` class, after checking ``arrays`` and ``fields``.

    Raises:
        PluginDefinitionError: the class is not a registered plugin.
        FieldError: an unknown field name, a missing required field or a bad value.
        TypeError: an input that is not a NumPy or CuPy array.

    Example:
        >>> from pyplugins.ops.leaky_relu import LeakyReLU
        >>> plugin_creator(LeakyReLU, [], {"neg_slope": 0.2}).name
        'LReLU_TRT'
    """
    creator = getattr(plugin_class, "creator", None)
    schema = getattr(plugin_class, "__pp_fields__", None)
    label = getattr(plugin_class, "__name__", repr(plugin_class))
    if creator is None or schema is None:
        msg = (f"pp.run({label}): not a registered pp.Plugin class; decorate it with "
               "@pp.register (which creates and registers its IPluginCreator).")
        raise PluginDefinitionError(msg)
    # Check the fields here so a typo raises a FieldError naming it; the ONNX parser's
    # conversion would drop an unknown name with only a warning.
    _fields.values_from_python(schema, fields, plugin_class.name)
    for index, array in enumerate(arrays):
        if not hasattr(array, "shape") or not hasattr(array, "dtype"):
            msg = (f"pp.run({label}): input {index} must be a NumPy or CuPy array (got a "
                   f"{type(array).__name__}); wrap it with np.asarray(...).")
            raise TypeError(msg)
    return creator


def run(plugin_class: Any, *arrays: Any, device: Union[str, int] = "auto", **fields: Any) -> Any:
    """Run a registered plugin once on ``arrays`` with ``fields`` as its attributes.

    Args:
        plugin_class: a :class:`pyplugins.Plugin` subclass decorated with ``@pp.register``.
        *arrays: the inputs, NumPy or CuPy arrays (static shapes).
        device: where ``enqueue`` runs, in :mod:`pyplugins.runtime.device_choice`'s grammar:
            ``"auto"``, ``"cpu"``, ``"gpu"``, ``"gpu:N"`` or ``N``; a reserved keyword, never
            a field. Threads naming different ordinals run on different GPUs.
        **fields: field values, as Python values (``pads=[1, 1]``, ``mode="max"``).

    Returns:
        The output array, or a tuple of arrays when the plugin has several outputs.

    Raises:
        PluginDefinitionError: the class is not a registered plugin.
        FieldError: an unknown field name, a missing required field or a bad value.
        EagerRunError: a callback failed, or there is no GPU and no NumPy reference.
        DeviceChoiceError (a ValueError): a ``device`` outside the grammar or past the last GPU.
    """
    creator = plugin_creator(plugin_class, arrays, fields)
    label = getattr(plugin_class, "__name__", repr(plugin_class))
    try:
        with Execution(creator, dict(fields), node_name=f"pp.run({label})",
                       device=device) as node:
            outputs: List[Any] = node(*arrays)
    except ExecutionError as err:
        raise EagerRunError(str(err)) from err
    return outputs[0] if len(outputs) == 1 else tuple(outputs)
