"""Broken on purpose (test fixture): the plugin reads a module global its script sets.

Like NVIDIA's V2 samples reading the global ``pads`` (docs/trt-protocol.md §10.11): ``SCALE`` exists only
because the script (here the ``__main__`` block, or a test doing the same) assigns it, so a
process that just imports this module to run the engine fails in configure_plugin.
"""

import json

import numpy as np
import tensorrt as trt

try:
    import cupy as cp
except ImportError:
    cp = None

_SCALE_KERNEL = None


def _scale_kernel():
    global _SCALE_KERNEL
    if _SCALE_KERNEL is None:
        _SCALE_KERNEL = cp.ElementwiseKernel("float32 x, float32 s", "float32 y", "y = x * s",
                                             "pp_test_scale")
    return _SCALE_KERNEL


class GlobalScalePlugin(trt.IPluginV2DynamicExt):
    def __init__(self):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = "PPTestGlobalScale"
        self.plugin_version = "1"

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        return trt.DimsExprs(inputs[0])

    def supports_format_combination(self, pos, in_out, num_inputs):
        return in_out[pos].type == trt.DataType.FLOAT and in_out[pos].format == trt.TensorFormat.LINEAR

    def configure_plugin(self, inp, out):
        self.scale = float(SCALE)  # the bug: a global only the script defines

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        count = int(np.prod(tuple(input_desc[0].dims)))
        dev = cp.cuda.Device().id
        x = cp.ndarray((count,), cp.float32, cp.cuda.MemoryPointer(
            cp.cuda.UnownedMemory(inputs[0], count * 4, None, dev), 0))
        y = cp.ndarray((count,), cp.float32, cp.cuda.MemoryPointer(
            cp.cuda.UnownedMemory(outputs[0], count * 4, None, dev), 0))
        with cp.cuda.ExternalStream(stream):
            _scale_kernel()(x, np.float32(self.scale), y)

    def serialize(self):
        return json.dumps({}).encode()

    def clone(self):
        cloned = GlobalScalePlugin()
        cloned.__dict__.update(self.__dict__)
        return cloned


class GlobalScaleCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name = "PPTestGlobalScale"
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection()

    def create_plugin(self, name, fc):
        return GlobalScalePlugin()

    def deserialize_plugin(self, name, data):
        return GlobalScalePlugin()


plg_registry = trt.get_plugin_registry()
my_plugin_creator = GlobalScaleCreator()
plg_registry.register_creator(my_plugin_creator, "")

if __name__ == "__main__":
    SCALE = 3.0  # what the sample scripts do before building and running the engine
