"""Reading an onnx-graphsurgeon graph for the patterns: constants, producers, consumers, attributes.

Example:
    >>> import numpy as np
    >>> from pyplugins.errors import require
    >>> gs = require("onnx_graphsurgeon", "the example")
    >>> x = gs.Variable("x", np.float32, (2, 8))
    >>> two = gs.Constant("two", np.array(2.0, np.float32))
    >>> sq = gs.Variable("sq", np.float32, (2, 8))
    >>> graph = gs.Graph(nodes=[gs.Node("Pow", inputs=[x, two], outputs=[sq])],
    ...                  inputs=[x], outputs=[sq])
    >>> float(constant(two)), producer(sq).op, constant(x) is None
    (2.0, 'Pow', True)
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from pyplugins.errors import PyPluginsError

__all__ = ["Refusal", "axis_index", "constant", "ints", "only_consumer", "other_input",
           "producer", "rank", "scalar"]

class Refusal(PyPluginsError):
    """A subgraph looked like a plugin's pattern but differs in something that matters; the
    message says what, so the user sees why it was left alone."""


def producer(tensor: Any) -> Optional[Any]:
    """The node producing ``tensor``, or None (a graph input or constant)."""
    inputs = getattr(tensor, "inputs", [])
    return inputs[0] if len(inputs) == 1 else None


def constant(tensor: Any) -> Optional[np.ndarray]:
    """The value of a ``gs.Constant`` or of a ``Constant`` node's output, else None."""
    values = getattr(tensor, "values", None)
    if values is not None:
        return np.asarray(values)
    node = producer(tensor)
    if node is not None and node.op == "Constant":
        value = node.attrs.get("value")
        if value is not None and hasattr(value, "values"):
            return np.asarray(value.values)
        for key in ("value_float", "value_int"):
            if key in node.attrs:
                return np.asarray(node.attrs[key])
        for key in ("value_floats", "value_ints"):
            if key in node.attrs:
                return np.asarray(list(node.attrs[key]))
    return None


def scalar(tensor: Any, what: str) -> float:
    """A constant with exactly one element, as a float; else a :class:`Refusal` naming ``what``."""
    value = constant(tensor)
    if value is None:
        msg = f"{what} ({tensor.name!r}) is not a constant, so the plugin field cannot hold it"
        raise Refusal(msg)
    if value.size != 1:
        msg = f"{what} ({tensor.name!r}) has shape {value.shape}, not a single value"
        raise Refusal(msg)
    return float(value.reshape(()))


def ints(tensor: Any, what: str) -> List[int]:
    """A constant integer vector as a list; else a :class:`Refusal` naming ``what``."""
    value = constant(tensor)
    if value is None:
        msg = f"{what} ({getattr(tensor, 'name', '?')!r}) is not a constant"
        raise Refusal(msg)
    return [int(v) for v in value.reshape(-1)]


def rank(tensor: Any) -> Optional[int]:
    """The tensor's rank when the graph declares it."""
    shape = getattr(tensor, "shape", None)
    return None if shape is None else len(shape)


def axis_index(axis: int, tensor_rank: Optional[int]) -> Optional[int]:
    """A possibly negative axis as a non-negative index; None when the rank is unknown and the
    axis negative."""
    if axis >= 0:
        return axis
    return None if tensor_rank is None else axis + tensor_rank


def only_consumer(tensor: Any, graph: Any, what: str) -> Any:
    """The one node consuming an internal tensor of a pattern.

    Raises:
        Refusal: the tensor feeds several nodes or is a graph output, so removing the subgraph
            would take a value that something else needs.
    """
    users = list(getattr(tensor, "outputs", []))
    if len(users) != 1 or tensor in graph.outputs:
        output = ", and a graph output" if tensor in graph.outputs else ""
        msg = (f"{what} ({tensor.name!r}) is also used outside the pattern "
               f"({len(users)} consumer(s){output})")
        raise Refusal(msg)
    return users[0]


def other_input(node: Any, tensor: Any) -> Optional[Any]:
    """For a binary node with ``tensor`` as one input, the other input (either order)."""
    ins: Sequence[Any] = node.inputs
    if len(ins) != 2:
        return None
    if ins[0] is tensor:
        return ins[1]
    if ins[1] is tensor:
        return ins[0]
    return None

