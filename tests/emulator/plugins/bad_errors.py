"""Broken on purpose (test fixture): callbacks that raise, and output shapes that are invalid.

- PPTestWorkspaceRaises: get_workspace_size raises (TensorRT prints it and uses 0);
- PPTestShapeSlot: get_output_dimensions leaves a DimsExprs slot unset;
- PPTestShapeNegative: the output's first dim is ``in[0] - 5``, negative at small profiles.
"""

import numpy as np
import tensorrt as trt


class _Plugin(trt.IPluginV2DynamicExt):
    TYPE = ""

    def __init__(self):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = self.TYPE
        self.plugin_version = "1"

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

        nbytes = int(np.prod(tuple(output_desc[0].dims))) * 4
        cp.cuda.runtime.memcpyAsync(outputs[0], inputs[0], nbytes, 3, stream)

    def serialize(self):
        return b"{}"

    def clone(self):
        return type(self)()


class WorkspacePlugin(_Plugin):
    TYPE = "PPTestWorkspaceRaises"

    def get_workspace_size(self, input_desc, output_desc):
        return input_desc[0].dims[5] * 4  # the bug: there is no dim 5


class SlotPlugin(_Plugin):
    TYPE = "PPTestShapeSlot"

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        out = trt.DimsExprs(2)
        out[0] = inputs[0][0]  # the bug: out[1] is never set
        return out


class NegativePlugin(_Plugin):
    TYPE = "PPTestShapeNegative"

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        out = trt.DimsExprs(inputs[0])
        out[0] = exprBuilder.operation(trt.DimensionOperation.SUB, inputs[0][0],
                                       exprBuilder.constant(5))
        return out


class _Creator(trt.IPluginCreator):
    def __init__(self, cls):
        trt.IPluginCreator.__init__(self)
        self.cls = cls
        self.name = cls.TYPE
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection()

    def create_plugin(self, name, fc):
        return self.cls()

    def deserialize_plugin(self, name, data):
        return self.cls()


plg_registry = trt.get_plugin_registry()
creators = [_Creator(c) for c in (WorkspacePlugin, SlotPlugin, NegativePlugin)]
for _c in creators:
    plg_registry.register_creator(_c, "")
