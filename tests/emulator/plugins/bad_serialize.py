"""Broken on purpose (test fixture): serialize() counts its calls, so its bytes change."""

import json

import numpy as np
import tensorrt as trt


class CountingPlugin(trt.IPluginV2DynamicExt):
    def __init__(self):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = "PPTestSerializeCounter"
        self.plugin_version = "1"
        self.serialized = 0

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        return trt.DimsExprs(inputs[0])

    def supports_format_combination(self, pos, in_out, num_inputs):
        return in_out[pos].type == trt.DataType.FLOAT and in_out[pos].format == trt.TensorFormat.LINEAR

    def configure_plugin(self, inp, out):
        pass

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        import cupy as cp

        nbytes = int(np.prod(tuple(input_desc[0].dims))) * 4
        cp.cuda.runtime.memcpyAsync(outputs[0], inputs[0], nbytes, 3, stream)

    def serialize(self):
        self.serialized += 1  # the bug: state that changes on every call ends up in the bytes
        return json.dumps({"version": 1, "serialized": self.serialized}).encode()

    def clone(self):
        return CountingPlugin()


class CountingCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name = "PPTestSerializeCounter"
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection()

    def create_plugin(self, name, fc):
        return CountingPlugin()

    def deserialize_plugin(self, name, data):
        return CountingPlugin()


plg_registry = trt.get_plugin_registry()
my_plugin_creator = CountingCreator()
plg_registry.register_creator(my_plugin_creator, "")
