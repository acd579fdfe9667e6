"""Broken on purpose (test fixture): configure_plugin assumes a rank-3 input and raises otherwise.

TensorRT prints the error and carries on, so enqueue later reaches an object whose configure never
completed (and here reads ``self.count``, which was never set).
"""

import tensorrt as trt


class ConfigureRaisesPlugin(trt.IPluginV2DynamicExt):
    def __init__(self):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = "PPTestConfigureRaises"
        self.plugin_version = "1"

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        return trt.DimsExprs(inputs[0])

    def supports_format_combination(self, pos, in_out, num_inputs):
        return in_out[pos].type == trt.DataType.FLOAT and in_out[pos].format == trt.TensorFormat.LINEAR

    def configure_plugin(self, inp, out):
        dims = inp[0].desc.dims
        self.count = dims[0] * dims[1] * dims[2]  # the bug: IndexError for rank-2 inputs

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        import cupy as cp

        cp.cuda.runtime.memcpyAsync(outputs[0], inputs[0], self.count * 4, 3, stream)

    def serialize(self):
        return b"{}"

    def clone(self):
        return ConfigureRaisesPlugin()


class ConfigureRaisesCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name = "PPTestConfigureRaises"
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection()

    def create_plugin(self, name, fc):
        return ConfigureRaisesPlugin()

    def deserialize_plugin(self, name, data):
        return ConfigureRaisesPlugin()


plg_registry = trt.get_plugin_registry()
my_plugin_creator = ConfigureRaisesCreator()
plg_registry.register_creator(my_plugin_creator, "")
