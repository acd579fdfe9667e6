"""Broken on purpose (test fixture): supports_format_combination reads in_out beyond pos.

At pos 0 it compares the input's type with the output's, in_out[1], which TensorRT has not chosen
yet. Otherwise a correct identity plugin (no enqueue needed: the check is host-side).
"""

import numpy as np
import tensorrt as trt


class BeyondPosPlugin(trt.IPluginV2DynamicExt):
    def __init__(self):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = "PPTestBeyondPos"
        self.plugin_version = "1"

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        return trt.DimsExprs(inputs[0])

    def supports_format_combination(self, pos, in_out, num_inputs):
        # The bug: in_out[1] is not valid while pos == 0.
        return (in_out[pos].format == trt.TensorFormat.LINEAR
                and in_out[0].type == in_out[1].type == trt.DataType.FLOAT)

    def configure_plugin(self, inp, out):
        pass

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        import cupy as cp

        nbytes = int(np.prod(tuple(input_desc[0].dims))) * 4
        cp.cuda.runtime.memcpyAsync(outputs[0], inputs[0], nbytes, 3, stream)

    def serialize(self):
        return b""

    def clone(self):
        return BeyondPosPlugin()


class BeyondPosCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name = "PPTestBeyondPos"
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection()

    def create_plugin(self, name, fc):
        return BeyondPosPlugin()

    def deserialize_plugin(self, name, data):
        return BeyondPosPlugin()


plg_registry = trt.get_plugin_registry()
my_plugin_creator = BeyondPosCreator()
plg_registry.register_creator(my_plugin_creator, "")
