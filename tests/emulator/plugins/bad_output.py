"""Broken on purpose (test fixture): outputs that disagree with what the plugin declared.

- PPTestOutputOver: the kernel writes one element more than the declared output holds;
- PPTestOutputUnder: the kernel writes one element fewer;
- PPTestOutputDtype: get_output_datatype says HALF, supports_format_combination only accepts the
  output with the input's type (FLOAT).
"""

import numpy as np
import tensorrt as trt

try:
    import cupy as cp
except ImportError:
    cp = None

_SOURCE = r"""
extern "C" __global__ void copy_n(const unsigned int* x, unsigned int* y, long long n,
                                  long long count) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i < count ? i : count - 1];
}
"""
_KERNEL = None


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = cp.RawKernel(_SOURCE, "copy_n")
    return _KERNEL


class _CopyPlugin(trt.IPluginV2DynamicExt):
    TYPE = ""
    EXTRA = 0  # elements written beyond (or, negative, short of) the declared count

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
        if desc.format != trt.TensorFormat.LINEAR:
            return False
        if pos == 0:
            return desc.type == trt.DataType.FLOAT
        return desc.type == in_out[0].type

    def configure_plugin(self, inp, out):
        pass

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        count = int(np.prod(tuple(output_desc[0].dims)))
        n = count + self.EXTRA
        x = cp.ndarray((count,), cp.uint32, cp.cuda.MemoryPointer(
            cp.cuda.UnownedMemory(inputs[0], count * 4, None, cp.cuda.Device().id), 0))
        y = cp.ndarray((count,), cp.uint32, cp.cuda.MemoryPointer(
            cp.cuda.UnownedMemory(outputs[0], count * 4, None, cp.cuda.Device().id), 0))
        with cp.cuda.ExternalStream(stream):
            _kernel()(((n + 127) // 128,), (128,), (x, y, np.int64(n), np.int64(count)))

    def serialize(self):
        return b"{}"

    def clone(self):
        return type(self)()


class OverPlugin(_CopyPlugin):
    TYPE = "PPTestOutputOver"
    EXTRA = 1


class UnderPlugin(_CopyPlugin):
    TYPE = "PPTestOutputUnder"
    EXTRA = -1


class DtypePlugin(_CopyPlugin):
    TYPE = "PPTestOutputDtype"

    def get_output_datatype(self, index, input_types):
        return trt.DataType.HALF  # the bug: the kernel (and the format check) keep FLOAT


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
creators = [_Creator(OverPlugin), _Creator(UnderPlugin), _Creator(DtypePlugin)]
for _c in creators:
    plg_registry.register_creator(_c, "")
