"""Broken on purpose (test fixture): supports_format_combination returns None on a path.

Its accepting branch is right, but the final `return` has no value, as in a plugin whose body
was commented out below it: TensorRT's binding reads None as False, so no combination is
accepted. Otherwise a correct identity plugin (no enqueue needed: the check is host-side).
"""

import numpy as np
import tensorrt as trt


class FormatNonePlugin(trt.IPluginV2DynamicExt):
    def __init__(self):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = "PPTestFormatNone"
        self.plugin_version = "1"

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        return trt.DimsExprs(inputs[0])

    def supports_format_combination(self, pos, in_out, num_inputs):
        if in_out[pos].type == trt.DataType.HALF:
            return in_out[pos].format == trt.TensorFormat.LINEAR
        return  # the bug: None, read as False

    def configure_plugin(self, inp, out):
        pass

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        import cupy as cp

        nbytes = int(np.prod(tuple(input_desc[0].dims))) * 4
        cp.cuda.runtime.memcpyAsync(outputs[0], inputs[0], nbytes, 3, stream)

    def serialize(self):
        return b""

    def clone(self):
        return FormatNonePlugin()


class FormatNoneCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name = "PPTestFormatNone"
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection()

    def create_plugin(self, name, fc):
        return FormatNonePlugin()

    def deserialize_plugin(self, name, data):
        return FormatNonePlugin()


plg_registry = trt.get_plugin_registry()
my_plugin_creator = FormatNoneCreator()
plg_registry.register_creator(my_plugin_creator, "")
