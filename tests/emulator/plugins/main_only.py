"""Test fixture in the style of NVIDIA's python_plugin samples (our own code).

The creator is registered only under ``if __name__ == "__main__":``, and ``configure_plugin``
reads the module-global ``pads`` that only that block defines (the samples' bug, §10.11).
``pyplugins check`` must find the creator and report the NameError.
"""

import json

import numpy as np
import tensorrt as trt


class MainOnlyPad(trt.IPluginV2DynamicExt):
    def __init__(self, fc=None):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = "PPTestMainOnlyPad"
        self.plugin_version = "1"
        self.pads = [0, 0]
        for f in fc or []:
            if f.name == "pads":
                self.pads = [int(v) for v in f.data]

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        out = trt.DimsExprs(inputs[0])
        out[-1] = exprBuilder.operation(trt.DimensionOperation.SUM, inputs[0][-1],
                                        exprBuilder.constant(self.pads[0] + self.pads[1]))
        return out

    def supports_format_combination(self, pos, in_out, num_inputs):
        return (in_out[pos].type == trt.DataType.FLOAT
                and in_out[pos].format == trt.TensorFormat.LINEAR)

    def configure_plugin(self, inp, out):
        self.width = inp[0].desc.dims[-1] + pads[0] + pads[1]  # the bug: a global

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        pass

    def serialize(self):
        return json.dumps({"pads": self.pads})

    def clone(self):
        cloned = MainOnlyPad()
        cloned.pads = list(self.pads)
        return cloned


class MainOnlyPadCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name = "PPTestMainOnlyPad"
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection([trt.PluginField("pads", np.array([]))])

    def create_plugin(self, name, fc):
        return MainOnlyPad(fc)

    def deserialize_plugin(self, name, data):
        plugin = MainOnlyPad()
        plugin.pads = json.loads(data.decode())["pads"]
        return plugin


if __name__ == "__main__":
    pads = (1, 1)
    registry = trt.get_plugin_registry()
    creator = MainOnlyPadCreator()
    registry.register_creator(creator, "")
