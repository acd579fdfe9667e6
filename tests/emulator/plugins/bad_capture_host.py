"""Broken on purpose (test fixture): an enqueue that copies through host memory.

PPTestCaptureHostCopy computes ``out = 2 * x`` (FLOAT) by copying ``x`` to a host NumPy array
(``ndarray.get`` on TensorRT's stream, which waits for the stream), doubling it on the CPU and
copying it back (``ndarray.set``). Eagerly the output is right; under CUDA-graph capture the
device-to-host copy's wait on the capturing stream is illegal, so the capture check flags it.
"""

import numpy as np
import tensorrt as trt

try:
    import cupy as cp
except ImportError:
    cp = None

NAME = "PPTestCaptureHostCopy"


def _wrap(ptr, count):
    mem = cp.cuda.UnownedMemory(ptr, count * 4, None, cp.cuda.Device().id)
    return cp.ndarray((count,), cp.float32, cp.cuda.MemoryPointer(mem, 0))


class HostCopyPlugin(trt.IPluginV2DynamicExt):
    def __init__(self):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = NAME
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
        count = int(np.prod(tuple(input_desc[0].dims)))
        x, y = _wrap(inputs[0], count), _wrap(outputs[0], count)
        s = cp.cuda.ExternalStream(stream)
        host = x.get(stream=s)  # the bug: a device-to-host copy (and a wait) inside enqueue
        y.set(host * np.float32(2), stream=s)  # ...and a host-to-device copy back

    def serialize(self):
        return b"{}"

    def clone(self):
        return HostCopyPlugin()


class HostCopyCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name = NAME
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection()

    def create_plugin(self, name, fc):
        return HostCopyPlugin()

    def deserialize_plugin(self, name, data):
        return HostCopyPlugin()


creator = HostCopyCreator()
trt.get_plugin_registry().register_creator(creator, "")
