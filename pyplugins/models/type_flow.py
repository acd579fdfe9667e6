"""The type and shape of each tensor of a model with plugin nodes, inferred one segment at a time.

ONNX shape inference cannot see through a plugin node (ONNX does not define its op), so the
check writes each plugin's output types back and infers again. Inferring the whole model after
every plugin node is quadratic (2,000 plugin nodes took 12.8 s, 10,000 never finished);
:class:`TypeFlow` instead infers each :class:`~pyplugins.models.partition.Segment` on its own, as a
small model whose inputs are typed from what is already known. Every node is then inferred once,
so the cost is linear in the model's size. What a segment needs from outside as *data* for
inference (a ``Reshape``'s shape) comes with it: the ``Constant`` nodes it reads and the
initializers of at most :data:`DATA_ELEMENTS` elements; larger initializers go in as typed inputs.

Example:
    >>> from onnx import TensorProto, helper
    >>> from pyplugins.models.partition import split
    >>> model = helper.make_model(helper.make_graph(
    ...     [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0])], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])], []))
    >>> flow = TypeFlow(model)
    >>> flow.infer(split(model.graph)[0])
    >>> flow.shape("t"), flow.known["t"].elem_type == TensorProto.FLOAT
    ([3, 2], True)
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from pyplugins.errors import require
from pyplugins.models.partition import Segment

__all__ = ["DATA_ELEMENTS", "TypeFlow"]

#: Initializers of at most this many elements travel with a segment as data (shape inference
#: reads such small constants); larger ones only as a type.
DATA_ELEMENTS = 4096


class TypeFlow:
    """What is known of each tensor's type, filled in as the check walks the model.

    Args:
        model: the ModelProto (its inputs already carry any ``--input`` overrides).

    Attributes:
        known: tensor name -> ``TypeProto.Tensor`` (graph inputs, initializers, declarations,
            then what inference and the plugins give).
        declared: tensor name -> ``TypeProto.Tensor`` the graph declares (``value_info`` and
            graph outputs), which a plugin's outputs are compared with.
        failures: why shape inference failed on a segment, by tensor name it produces, so a
            plugin node reading one can say why its input has no shape.
    """

    def __init__(self, model: Any) -> None:
        onnx = require("onnx", "pyplugins check MODEL.onnx")
        graph = model.graph
        self._model = model
        self.known: Dict[str, Any] = {}
        self.declared: Dict[str, Any] = {}
        self.failures: Dict[str, str] = {}
        for value in list(graph.value_info) + list(graph.output):
            if value.type.tensor_type.elem_type:
                self.declared[value.name] = value.type.tensor_type
        self.known.update(self.declared)
        self._initializers = {t.name: t for t in graph.initializer}
        for tensor in graph.initializer:
            try:
                self.known[tensor.name] = onnx.helper.make_tensor_type_proto(
                    tensor.data_type, list(tensor.dims)).tensor_type
            except Exception:  # noqa: BLE001 - an element type onnx does not know: no type
                continue
        for value in graph.input:
            if value.type.tensor_type.elem_type:
                self.known[value.name] = value.type.tensor_type
        self._constants = {n.output[0]: n for n in graph.node
                           if n.op_type == "Constant" and n.domain in ("", "ai.onnx")
                           and len(n.output) == 1}
        self._functions = {(f.domain, f.name): f for f in model.functions}

    def shape(self, name: str) -> Optional[List[Any]]:
        """The dims of ``name`` (int, or the dim's name, or None), or None when it has no shape."""
        ttype = self.known.get(name)
        if ttype is None or not ttype.HasField("shape"):
            return None
        return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                for d in ttype.shape.dim]

    def infer(self, segment: Segment) -> None:
        """Run ONNX shape inference on ``segment`` alone and record what it finds for the tensors
        the segment produces. An inference error is recorded in :attr:`failures`, not raised."""
        onnx = require("onnx", "pyplugins check MODEL.onnx")
        helper = onnx.helper
        produced = [o for n in segment.nodes for o in n.output if o]
        extra = [self._constants[n] for n in segment.inputs if n in self._constants]
        inputs, inits = [], []
        for name in segment.inputs + segment.initializers:
            tensor = self._initializers.get(name)
            if name in self._constants:
                continue
            if tensor is not None and math.prod(tensor.dims) <= DATA_ELEMENTS:
                inits.append(tensor)
            elif name in self.known:
                inputs.append(helper.make_value_info(name, _type(self.known[name])))
            else:
                inputs.append(helper.make_empty_tensor_value_info(name))
        value_info = [helper.make_value_info(n, _type(self.declared[n])) for n in produced
                      if n in self.declared]
        used = {(n.domain, n.op_type) for n in segment.nodes}
        part = helper.make_model(
            helper.make_graph(extra + list(segment.nodes), "segment", inputs, [], inits,
                              value_info=value_info),
            opset_imports=list(self._model.opset_import), ir_version=self._model.ir_version,
            functions=[f for key, f in self._functions.items() if key in used])
        try:
            inferred = onnx.shape_inference.infer_shapes(part, strict_mode=False)
        except Exception as err:  # noqa: BLE001 - onnx's InferenceError, ValidationError, ...
            reason = (f"ONNX shape inference failed on the nodes producing it: "
                      f"{type(err).__name__}: {str(err).strip()[:300]}")
            self.failures.update((n, reason) for n in produced)
            return
        mine = set(produced)
        for value in inferred.graph.value_info:
            if value.name in mine and value.type.tensor_type.elem_type:
                self.known[value.name] = value.type.tensor_type

    def set_plugin_outputs(self, node: Any, shapes: List[tuple], elem_types: List[int]) -> None:
        """Record what a plugin node gives (``shapes`` at opt and ONNX element types, one per
        output position), except where the graph declares a complete type of its own, which is
        what TensorRT's next layer sees."""
        onnx = require("onnx", "pyplugins check MODEL.onnx")
        for name, shape, elem in zip(node.output, shapes, elem_types):
            if not name:
                continue
            declared = self.declared.get(name)
            if declared is not None and declared.HasField("shape"):
                self.known[name] = declared
            else:
                self.known[name] = onnx.helper.make_tensor_type_proto(elem, list(shape)
                                                                      ).tensor_type


def _type(tensor_type: Any) -> Any:
    """A TypeProto holding ``tensor_type``."""
    onnx = require("onnx", "pyplugins check MODEL.onnx")
    proto = onnx.TypeProto()
    proto.tensor_type.CopyFrom(tensor_type)
    return proto
