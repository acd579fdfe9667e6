"""``pp.run(PluginClass, *arrays, check=False, **fields)``: run a plugin, optionally checked first.

``pp.run`` is this function. By default it is :func:`pyplugins.runtime.eager.run`, the lean
execution path (create, configure, ``enqueue`` or the NumPy reference). With ``check=True`` it
first drives the plugin through the whole check lifecycle on the same arrays
(:func:`pyplugins.checker.lifecycle.run`: clones, every format combination, CUDA-graph capture,
the serialize round trip; numba's CUDA simulator on a CPU machine) and raises
:class:`~pyplugins.runtime.eager.EagerRunError` with the report when it finds anything; then it
runs the execution path for the outputs.

The ``check=True`` entry lives here, in the checker, so that the runtime never imports the
checker above it (docs/lifecycle.md, "Execution path and check"). ``check`` and ``device`` are
therefore reserved keywords: they are never passed to the plugin as fields. With
``device="gpu:N"`` (or ``N``) the check and the run both happen on GPU N, so threads may each
check and run on their own GPU.

Example (needs a GPU, or a plugin with a NumPy reference)::

    import numpy as np, pyplugins as pp
    from pyplugins.ops.leaky_relu import LeakyReLU
    x = np.random.randn(2, 3).astype(np.float32)
    y = pp.run(LeakyReLU, x, neg_slope=0.1, check=True)
"""

from __future__ import annotations

from typing import Any, Union

from pyplugins.runtime import eager
from pyplugins.emulator.specs import TensorSpec

__all__ = ["run"]


def run(plugin_class: Any, *arrays: Any, check: bool = False, device: Union[str, int] = "auto",
        **fields: Any) -> Any:
    """Run a registered plugin once on ``arrays``; with ``check``, check it thoroughly first.

    Args:
        plugin_class: a :class:`pyplugins.Plugin` subclass decorated with ``@pp.register``.
        *arrays: the inputs, NumPy or CuPy arrays (static shapes).
        check: run the check lifecycle first and raise if it reports anything.
        device: ``"auto"``, ``"cpu"``, ``"gpu"``, ``"gpu:N"`` or ``N``
            (:mod:`pyplugins.runtime.device_choice`), for the check and the run alike.
        **fields: field values, as Python values (``pads=[1, 1]``, ``mode="max"``).

    Returns:
        The output array, or a tuple of arrays when the plugin has several outputs.

    Raises:
        PluginDefinitionError, FieldError, TypeError: as :func:`pyplugins.runtime.eager.run`.
        EagerRunError: the check lifecycle reported errors or violations (``report`` holds its
            report), a callback failed, or there is no GPU and no NumPy reference.
    """
    if check:
        from pyplugins.checker import lifecycle  # noqa: PLC0415 - heavy, and only needed here

        creator = eager.plugin_creator(plugin_class, arrays, fields)
        label = getattr(plugin_class, "__name__", repr(plugin_class))
        specs = [TensorSpec(tuple(int(d) for d in a.shape), a.dtype, data=a) for a in arrays]
        report = lifecycle.run(creator, specs, dict(fields), device=device)
        if not report.ok:
            n_err, n_vio = len(report.errors or ()), len(report.violations or ())
            msg = (f"pp.run({label}, check=True): the check lifecycle reported {n_err} "
                   f"error{'' if n_err == 1 else 's'} and {n_vio} violation"
                   f"{'' if n_vio == 1 else 's'}:\n{report.format()}")
            raise eager.EagerRunError(msg, report)
    return eager.run(plugin_class, *arrays, device=device, **fields)
