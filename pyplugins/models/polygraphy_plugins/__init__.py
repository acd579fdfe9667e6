"""A Polygraphy plugin directory for the shipped plugins: ``polygraphy plugin match|replace
MODEL --plugin-dir $(pyplugins patterns-dir)``.

Each sub-directory (``RMSNorm``, ``RoPE``, ``CircPad``, ``LReLU_TRT``: the directory name is the
plugin name Polygraphy writes to ``config.yaml`` and looks up again in ``replace``) holds a
``pattern.py`` exporting what Polygraphy's ``plugin`` tool calls: ``get_matching_subgraphs(graph)``,
``get_plugin_metadata()`` and ``replace_with_plugin(...)``. The matching itself is
:mod:`pyplugins.models.patterns`; subgraphs that look like an op but differ in something that
matters are logged as warnings and left alone. :func:`apply` does match and replace in-process.

Example:
    >>> import os
    >>> sorted(n for n in os.listdir(directory()) if not n.startswith("__"))  # not __pycache__
    ['CircPad', 'LReLU_TRT', 'RMSNorm', 'RoPE']
"""

from __future__ import annotations

import logging
import os
from typing import Any, Dict

from pyplugins.errors import require

__all__ = ["apply", "directory", "metadata", "replace", "subgraphs"]


def directory() -> str:
    """The absolute path of this plugin directory (what ``--plugin-dir`` takes)."""
    return os.path.dirname(os.path.abspath(__file__))


def metadata(plugin: str) -> dict:
    """``get_plugin_metadata()`` of one plugin: its directory name and the node's op type.

    Example:
        >>> metadata("LReLU_TRT")
        {'name': 'LReLU_TRT', 'op': 'LReLU_TRT'}
    """
    from pyplugins.models.patterns import FINDERS  # noqa: PLC0415 - kept off the CLI's start-up

    return {"name": plugin, "op": FINDERS[plugin][0]}


def subgraphs(plugin: str, graph: object) -> list:
    """``get_matching_subgraphs(graph)`` of one plugin; refusals go to Polygraphy's log as
    warnings (or to ``logging`` outside Polygraphy)."""
    from pyplugins.models.patterns import find  # noqa: PLC0415 - kept off the CLI's start-up

    matches, refusals = find(plugin, graph)
    _warn(refusals)
    return [m.to_polygraphy() for m in matches]


def replace(graph: Any, input_tensors: list, output_tensors: list, attrs: Any = None,
            op: Any = None) -> Any:
    """``replace_with_plugin``: one ``op`` node from ``input_tensors`` (in order) to
    ``output_tensors``, named ``<op>_<first output>`` (TensorRT's messages and ``create_plugin``
    get that name); the replaced nodes go with ``graph.cleanup()``. Returns the new node."""
    gs = require("onnx_graphsurgeon", "the pyplugins Polygraphy patterns")
    for tensor in output_tensors:
        tensor.inputs.clear()
    node = gs.Node(op, name=f"{op}_{output_tensors[0].name}", attrs=dict(attrs or {}),
                   inputs=list(input_tensors), outputs=list(output_tensors))
    graph.nodes.append(node)
    graph.cleanup().toposort()
    return node


def apply(graph: Any, plugins: Any = None) -> Dict[str, int]:
    """``polygraphy plugin match`` then ``replace`` in-process: every pattern of ``plugins``
    (default: all) replaced in ``graph``, which is modified. Returns ``{plugin: count}``;
    refusals are warned about as in :func:`subgraphs`."""
    from pyplugins.models.patterns import FINDERS  # noqa: PLC0415 - kept off the CLI's start-up

    counts = {}
    for plugin in plugins or FINDERS:
        instances = subgraphs(plugin, graph)
        tensors = graph.tensors()
        for inst in instances:
            replace(graph, [tensors[n] for n in inst["inputs"]],
                    [tensors[n] for n in inst["outputs"]], inst["attributes"],
                    metadata(plugin)["op"])
        counts[plugin] = len(instances)
    return counts


def _warn(lines: list) -> None:
    try:
        from polygraphy.logger import G_LOGGER  # noqa: PLC0415 - polygraphy is optional
    except ImportError:
        for line in lines:
            logging.getLogger("pyplugins").warning(line)
        return
    for line in lines:
        G_LOGGER.warning(line)
