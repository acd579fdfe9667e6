"""A pattern's answer for one candidate subgraph: a :class:`Match` to replace, or a refusal.

Example:
    >>> Match(["x"], ["y"], {"neg_slope": 0.2}).to_polygraphy()
    {'inputs': ['x'], 'outputs': ['y'], 'attributes': {'neg_slope': 0.2}}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from pyplugins.models.graph import Refusal

__all__ = ["Found", "Match", "check_float", "dtype_of"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float16))


@dataclass
class Match:
    """One subgraph to replace by a plugin node.

    Attributes:
        inputs: names of the subgraph's input tensors, in the plugin's input order.
        outputs: names of its output tensors.
        attributes: the plugin node's attributes (plain Python values, YAML-safe).
        where: the node the match was found at, for messages.
    """

    inputs: List[str]
    outputs: List[str]
    attributes: Dict[str, Any] = field(default_factory=dict)
    where: str = ""

    def to_polygraphy(self) -> Dict[str, Any]:
        """The dict ``get_matching_subgraphs`` returns per instance."""
        return {"inputs": list(self.inputs), "outputs": list(self.outputs),
                "attributes": dict(self.attributes)}


Found = Tuple[List[Match], List[str]]


def dtype_of(tensor: Any) -> Optional[np.dtype]:
    """The declared NumPy dtype of a graph tensor, or None when it has none or no NumPy one."""
    dtype = getattr(tensor, "dtype", None)
    try:
        return None if dtype is None else np.dtype(dtype)
    except TypeError:
        return None


def check_float(tensor: Any, plugin: str) -> None:
    """Refuse a tensor declared with a type other than float32/float16."""
    dtype = dtype_of(tensor)
    if dtype is not None and dtype not in _FLOATS:
        msg = f"{plugin} takes float32 or float16, and {tensor.name!r} is {dtype}"
        raise Refusal(msg)
