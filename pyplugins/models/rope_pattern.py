"""The rotate-half RoPE subgraph ``x * cos + concat(-x2, x1) * sin`` -> a ``RoPE`` node, with
``theta`` and ``position_offset`` recovered from the constant cos/sin tables and checked.

The pattern, for ``x`` of shape ``[batch, seq, heads, head_dim]`` (the plugin's layout):
``x1, x2`` = the halves of the last axis (two Slices or one Split), ``rot = Concat(Neg(x2), x1,
axis=-1)``, ``out = Add(Mul(x, cos), Mul(rot, sin))`` (either operand order). ``cos`` and
``sin`` must be constants broadcasting as ``[1, seq, 1, head_dim]`` with both halves equal to
``cos/sin((position_offset + s) * theta ** (-2 i / head_dim))``. The two values are read from
rows 0 and 1 and then every entry is compared; tables laid out for ``[batch, heads, seq, dim]``,
partial rotary, or other frequencies are refused with the reason.

Example:
    >>> import numpy as np
    >>> cos, sin = tables(seq=4, dim=8, theta=500.0, offset=3)
    >>> solve(cos, sin)
    (500.0, 3)
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from pyplugins.models.graph import (Refusal, axis_index, constant, ints, only_consumer,
                                    other_input, producer, rank)
from pyplugins.models.match import Found, Match, check_float

__all__ = ["find_rope", "solve", "tables"]


def tables(seq: int, dim: int, theta: float = 10000.0, offset: int = 0,
           dtype: Any = np.float32) -> Tuple[np.ndarray, np.ndarray]:
    """The rotate-half cos/sin tables ``[seq, dim]`` a model exports for positions
    ``offset .. offset + seq - 1``."""
    inv_freq = float(theta) ** (-(2.0 * np.arange(dim // 2)) / dim)
    ang = (offset + np.arange(seq, dtype=np.float64))[:, None] * inv_freq
    ang = np.concatenate([ang, ang], axis=-1)
    return np.cos(ang).astype(dtype), np.sin(ang).astype(dtype)


def solve(cos: np.ndarray, sin: np.ndarray) -> Tuple[float, int]:
    """``(theta, position_offset)`` of rotate-half tables ``[seq, dim]``, checked entry by entry.

    Raises:
        Refusal: fewer than 2 rows, halves that differ, or tables no (theta, offset) explains.
    """
    seq, dim = cos.shape
    half = dim // 2
    if seq < 2 or dim < 2 or dim % 2:
        raise Refusal(f"the cos/sin tables are {cos.shape}; need >= 2 positions and an even dim")
    c, s = cos.astype(np.float64), sin.astype(np.float64)
    if not (np.allclose(c[:, :half], c[:, half:], atol=1e-6)
            and np.allclose(s[:, :half], s[:, half:], atol=1e-6)):
        raise Refusal("the two halves of the cos/sin tables differ (not the rotate-half form)")
    ang0, ang1 = np.arctan2(s[0, :half], c[0, :half]), np.arctan2(s[1, :half], c[1, :half])
    inv_freq = np.mod(ang1 - ang0, 2 * np.pi)
    if not abs(inv_freq[0] - 1.0) < 1e-4 or np.any(inv_freq <= 0):
        msg = (f"the first frequency is {inv_freq[0]:.6g}, not 1: the tables are not "
               "theta ** (-2 i / dim) frequencies")
        raise Refusal(msg)
    theta = 10000.0
    if half > 1:
        i = np.arange(1, half)
        theta = float(np.exp(np.median(-np.log(inv_freq[1:]) * dim / (2.0 * i))))
        if abs(theta - round(theta)) < 1e-3 * theta:
            theta = float(round(theta))
    slow = float(theta) ** (-(2.0 * (half - 1)) / dim)
    offset = int(round(np.mod(ang0[-1], 2 * np.pi) / slow)) if half > 1 else 0
    want_c, want_s = tables(seq, dim, theta, offset, np.float64)
    max_angle = (offset + seq) * 1.0
    atol = 1e-5 + 4e-7 * max_angle
    if not (np.allclose(c, want_c, rtol=0, atol=atol) and np.allclose(s, want_s, rtol=0,
                                                                        atol=atol)):
        msg = (f"the cos/sin tables differ from theta={theta:g}, position_offset={offset} by "
               f"more than {atol:.2g}: not the frequencies RoPE computes")
        raise Refusal(msg)
    return theta, offset


def _half(node: Any, x: Any, dim: int, which: int) -> bool:
    """Whether ``node`` (a Slice) takes half ``which`` (0 = first) of x's last axis."""
    if node is None or node.op != "Slice" or node.inputs[0] is not x:
        return False
    starts, ends = ints(node.inputs[1], "Slice starts"), ints(node.inputs[2], "Slice ends")
    axes = ints(node.inputs[3], "Slice axes") if len(node.inputs) > 3 else [0]
    steps = ints(node.inputs[4], "Slice steps") if len(node.inputs) > 4 else [1]
    if len(axes) != 1 or axis_index(axes[0], 4) != 3 or steps != [1]:
        return False
    want = [(0, dim // 2), (dim // 2, dim)][which]
    end = min(ends[0], dim) if ends[0] >= 0 else ends[0] + dim
    return (starts[0], end) == want


def _halves(rot: Any) -> Optional[Tuple[Any, Any, Any]]:
    """(x, neg_node, other) when Concat(Neg(x2), x1) rotates x's halves, else None."""
    if len(rot.inputs) != 2:
        return None
    neg = producer(rot.inputs[0])
    if neg is None or neg.op != "Neg":
        return None
    upper, lower = producer(neg.inputs[0]), producer(rot.inputs[1])
    if upper is None or lower is None:
        return None
    if upper.op == "Split" and upper is lower:
        x = upper.inputs[0]
        if (list(upper.outputs) != [rot.inputs[1], neg.inputs[0]]
                or axis_index(int(upper.attrs.get("axis", 0)), rank(x)) != 3):
            return None
        if len(upper.inputs) > 1 and upper.inputs[1].name:
            sizes = ints(upper.inputs[1], "Split sizes")
            if len(set(sizes)) != 1:
                return None
        return x, upper, lower
    x = upper.inputs[0] if upper.op == "Slice" else None
    dim = _dim(x)
    if x is None or dim is None or not (_half(lower, x, dim, 0) and _half(upper, x, dim, 1)):
        return None
    return x, upper, lower


def _dim(x: Any) -> Optional[int]:
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) != 4 or not isinstance(shape[3], (int, np.integer)):
        return None
    return int(shape[3])


def _table(tensor: Any, what: str, x: Any) -> np.ndarray:
    value = constant(tensor)
    if value is None:
        raise Refusal(f"the {what} table {tensor.name!r} is not a constant")
    dim, seq_dim = _dim(x), x.shape[1]
    shape = (1,) * (4 - value.ndim) + tuple(value.shape)
    if value.ndim > 4 or shape[0] != 1 or shape[2] != 1 or shape[3] != dim:
        msg = (f"the {what} table has shape {value.shape}; RoPE takes x as [batch, seq, heads, "
               f"head_dim] and needs the table as [1, seq, 1, {dim}] (a [seq, dim] table "
               "broadcasts over the heads axis of a [batch, heads, seq, dim] layout)")
        raise Refusal(msg)
    if isinstance(seq_dim, (int, np.integer)) and shape[1] not in (1, seq_dim):
        raise Refusal(f"the {what} table has {shape[1]} positions but x has seq {seq_dim}")
    return value.reshape(shape[1], dim)


def _rope_at(graph: Any, concat: Any) -> Optional[Match]:
    found = _halves(concat)
    if found is None:
        return None
    x = found[0]
    if rank(x) != 4 or _dim(x) is None:
        raise Refusal(f"x {x.name!r} is not declared as rank 4 [batch, seq, heads, head_dim]")
    if axis_index(int(concat.attrs.get("axis", 0)), 4) != 3:
        raise Refusal("the Concat is not on the last axis")
    check_float(x, "RoPE")
    mul_sin = only_consumer(concat.outputs[0], graph, "rotate_half(x)")
    sin_t = other_input(mul_sin, concat.outputs[0]) if mul_sin.op == "Mul" else None
    if sin_t is None:
        raise Refusal(f"rotate_half(x) feeds {mul_sin.op} {mul_sin.name!r}, not Mul(., sin)")
    add = only_consumer(mul_sin.outputs[0], graph, "rotate_half(x) * sin")
    other = other_input(add, mul_sin.outputs[0]) if add.op == "Add" else None
    mul_cos = producer(other) if other is not None else None
    cos_t = other_input(mul_cos, x) if mul_cos is not None and mul_cos.op == "Mul" else None
    if cos_t is None:
        raise Refusal(f"rotate_half(x) * sin is not added to x * cos of the same {x.name!r}")
    only_consumer(other, graph, "x * cos")
    theta, offset = solve(_table(cos_t, "cos", x), _table(sin_t, "sin", x))
    attrs = {"rotary_dim": _dim(x), "theta": theta, "layout": "neox",
             "position_offset": offset}
    return Match([x.name], [add.outputs[0].name], attrs, concat.name)


def find_rope(graph: Any) -> Found:
    """Rotate-half RoPE subgraphs (see the module docstring)."""
    matches: List[Match] = []
    refusals: List[str] = []
    for node in list(graph.nodes):
        if node.op != "Concat":
            continue
        try:
            found = _rope_at(graph, node)
        except Refusal as why:
            refusals.append(f"RoPE: not replacing at Concat {node.name!r}: {why}")
            continue
        if found is not None:
            matches.append(found)
    return matches, refusals
