"""Test fixture: clones made as NVIDIA's samples make them, ``cloned.__dict__.update(self.__dict__)``.

- PPTestCloneSampleStyle shares its ``pads`` array, ``X_shape`` list and ``dims`` tuple with its
  clones, and never changes them in place (``configure_plugin`` assigns a new ``X_shape``): fine
  in TensorRT, so the check must pass it;
- PPTestCloneAppends appends to the shared ``seen`` list in ``configure_plugin``: the source sees
  the clone's change (the real bug the check reports).
"""

import json

import numpy as np
import tensorrt as trt


class SampleStyle(trt.IPluginV2DynamicExt):
    TYPE = "PPTestCloneSampleStyle"

    def __init__(self, fc=None):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = self.TYPE
        self.plugin_version = "1"
        self.pads = np.array([1, 1], dtype=np.int32)
        self.X_shape = []
        self.dims = (1, 2)
        self.seen = []

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        return trt.DimsExprs(inputs[0])

    def supports_format_combination(self, pos, in_out, num_inputs):
        return in_out[pos].type == trt.DataType.FLOAT and in_out[pos].format == trt.TensorFormat.LINEAR

    def configure_plugin(self, inp, out):
        self.X_shape = np.zeros((len(inp[0].desc.dims),))  # a new object: nothing shared changes
        for i, d in enumerate(inp[0].desc.dims):
            self.X_shape[i] = d

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        import cupy as cp

        nbytes = int(np.prod(tuple(input_desc[0].dims))) * 4
        cp.cuda.runtime.memcpyAsync(outputs[0], inputs[0], nbytes, 3, stream)

    def serialize(self):
        return json.dumps({"pads": self.pads.tolist()})

    def clone(self):
        cloned = type(self)()
        cloned.__dict__.update(self.__dict__)
        return cloned


class Appends(SampleStyle):
    TYPE = "PPTestCloneAppends"

    def configure_plugin(self, inp, out):
        super().configure_plugin(inp, out)
        self.seen.append(tuple(inp[0].desc.dims))  # the bug: the source's list grows too


class _Creator(trt.IPluginCreator):
    def __init__(self, cls):
        trt.IPluginCreator.__init__(self)
        self.cls = cls
        self.name = cls.TYPE
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection()

    def create_plugin(self, name, fc):
        return self.cls(fc)

    def deserialize_plugin(self, name, data):
        plugin = self.cls()
        plugin.pads = np.array(json.loads(data)["pads"], dtype=np.int32)
        return plugin


plg_registry = trt.get_plugin_registry()
creators = [_Creator(SampleStyle), _Creator(Appends)]
for _c in creators:
    plg_registry.register_creator(_c, "")
