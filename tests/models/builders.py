"""Small ONNX graphs for the model tests, built in code with onnx-graphsurgeon (no downloads).

Each builder returns a ``gs.Graph``; ``export(graph)`` makes the ModelProto. The defaults are
the forms the shipped patterns must replace; keyword arguments make the near-misses.
"""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from pyplugins.models.rope_pattern import tables

OPSET = 23
_ids = itertools.count()


def _v(graph, name, dtype=np.float32, shape=None):
    return gs.Variable(f"{name}_{next(_ids)}", dtype=dtype, shape=shape)


def _c(name, value):
    return gs.Constant(f"{name}_{next(_ids)}", np.asarray(value))


def _op(graph, op, inputs, attrs=None, shape=None, dtype=np.float32, name=None):
    out = _v(graph, op.lower(), dtype, shape)
    graph.nodes.append(gs.Node(op, name=name or f"{op}_{next(_ids)}", attrs=attrs or {},
                               inputs=list(inputs), outputs=[out]))
    return out


def rmsnorm(graph, x, weight, eps=1e-5, *, variant="div", axes=(-1,), keepdims=1,
            eps_tensor=None):
    """The decomposed RMSNorm: Pow/ReduceMean/Add/Sqrt then Div, or Reciprocal and Mul."""
    sq = _op(graph, "Pow", [x, _c("two", np.float32(2.0))], shape=x.shape)
    mean = _op(graph, "ReduceMean", [sq, _c("axes", np.int64(list(axes)))],
               {"keepdims": keepdims})
    eps_in = eps_tensor if eps_tensor is not None else _c("eps", np.float32(eps))
    rms = _op(graph, "Sqrt", [_op(graph, "Add", [mean, eps_in])])
    if variant == "div":
        normed = _op(graph, "Div", [x, rms], shape=x.shape)
    else:
        normed = _op(graph, "Mul", [_op(graph, "Reciprocal", [rms]), x], shape=x.shape)
    return _op(graph, "Mul", [weight, normed], shape=x.shape)


def rope(graph, x, *, theta=10000.0, offset=0, table_shape=None, dim=None):
    """Rotate-half RoPE on x [batch, seq, heads, dim] with constant cos/sin tables."""
    seq, d = x.shape[1], dim or x.shape[3]
    cos, sin = tables(seq, d, theta, offset)
    shape = table_shape or (1, seq, 1, d)
    half = d // 2
    x1 = _op(graph, "Slice", [x, _c("s", np.int64([0])), _c("e", np.int64([half])),
                               _c("a", np.int64([-1]))])
    x2 = _op(graph, "Slice", [x, _c("s", np.int64([half])), _c("e", np.int64([2**62])),
                               _c("a", np.int64([-1]))])
    rot = _op(graph, "Concat", [_op(graph, "Neg", [x2]), x1], {"axis": -1}, shape=x.shape)
    a = _op(graph, "Mul", [x, _c("cos", cos.reshape(shape))], shape=x.shape)
    b = _op(graph, "Mul", [rot, _c("sin", sin.reshape(shape))], shape=x.shape)
    return _op(graph, "Add", [a, b], shape=x.shape)


def block(batch=2, seq=6, heads=4, dim=8, *, eps=1e-5, theta=10000.0, offset=3, slope=0.1,
          seed=0):
    """A transformer-like block mixing every pattern with ordinary ops:
    RMSNorm -> MatMul -> Reshape -> RoPE -> Reshape -> LeakyRelu -> residual Add ->
    RMSNorm (reciprocal form) -> wrap Pad on the last two dims."""
    rng = np.random.default_rng(seed)
    hidden = heads * dim
    graph = gs.Graph(opset=OPSET)
    x = gs.Variable("hidden_states", np.float32, (batch, seq, hidden))
    graph.inputs = [x]
    w1 = _c("norm1_weight", (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
    h = rmsnorm(graph, x, w1, eps, variant="div")
    wq = _c("wq", (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32))
    q = _op(graph, "MatMul", [h, wq], shape=(batch, seq, hidden))
    q4 = _op(graph, "Reshape", [q, _c("shape4", np.int64([batch, seq, heads, dim]))],
             shape=(batch, seq, heads, dim))
    r4 = rope(graph, q4, theta=theta, offset=offset)
    r = _op(graph, "Reshape", [r4, _c("shape3", np.int64([batch, seq, hidden]))],
            shape=(batch, seq, hidden))
    act = _op(graph, "LeakyRelu", [r], {"alpha": slope}, shape=(batch, seq, hidden))
    res = _op(graph, "Add", [x, act], shape=(batch, seq, hidden))
    w2 = _c("norm2_weight", (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
    n2 = rmsnorm(graph, res, w2, 1e-6, variant="reciprocal")
    out = _op(graph, "Pad", [n2, _c("pads", np.int64([0, 1, 2, 0, 2, 1]))], {"mode": "wrap"})
    out.name, out.shape = "block_out", (batch, seq + 3, hidden + 3)
    graph.outputs = [out]
    return graph


def export(graph):
    """The ModelProto of a gs graph, checked by onnx."""
    model = gs.export_onnx(graph.cleanup().toposort())
    model.ir_version = min(model.ir_version, 10)
    onnx.checker.check_model(model)
    return model
