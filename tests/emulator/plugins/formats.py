"""Test fixture: plugins accepting a vectorized format besides LINEAR (y = 2 * x, FLOAT).

- PPTestFormatCHW4Linear accepts CHW4 but indexes as LINEAR: it covers volume(dims) elements, so
  on CHW4 (channels padded to 4) it leaves the end of the padded buffer unwritten (broken);
- PPTestFormatHWC8 accepts HWC8 and sizes its elementwise loop with the padded channel count, as
  HWC8 needs (correct: elementwise work is layout-independent over the whole padded buffer).
"""

import numpy as np
import tensorrt as trt


class _Double(trt.IPluginV2DynamicExt):
    TYPE = ""
    FORMAT = trt.TensorFormat.LINEAR

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
        desc = in_out[pos]
        if pos == 0:
            return desc.type == trt.DataType.FLOAT and desc.format in (trt.TensorFormat.LINEAR,
                                                                       self.FORMAT)
        return desc.type == in_out[0].type and desc.format == in_out[0].format

    def configure_plugin(self, inp, out):
        pass

    def elements(self, desc):
        return int(np.prod(tuple(desc.dims)))

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        import cupy as cp

        n = self.elements(input_desc[0])
        x = cp.ndarray((n,), cp.float32, cp.cuda.MemoryPointer(
            cp.cuda.UnownedMemory(inputs[0], n * 4, self), 0))
        y = cp.ndarray((n,), cp.float32, cp.cuda.MemoryPointer(
            cp.cuda.UnownedMemory(outputs[0], n * 4, self), 0))
        with cp.cuda.ExternalStream(stream):
            cp.multiply(x, np.float32(2), out=y)
        return 0

    def serialize(self):
        return b""

    def clone(self):
        return type(self)()


class CHW4Linear(_Double):
    TYPE = "PPTestFormatCHW4Linear"
    FORMAT = trt.TensorFormat.CHW4  # the bug: accepted, but elements() counts LINEAR


class HWC8(_Double):
    TYPE = "PPTestFormatHWC8"
    FORMAT = trt.TensorFormat.HWC8

    def elements(self, desc):
        dims = list(desc.dims)
        if desc.format == trt.TensorFormat.HWC8:
            dims[-3] = -(-dims[-3] // 8) * 8  # HWC8 pads the channels to a multiple of 8
        return int(np.prod(dims))


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
creators = [_Creator(CHW4Linear), _Creator(HWC8)]
for _c in creators:
    plg_registry.register_creator(_c, "")
