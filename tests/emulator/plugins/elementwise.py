"""A correct elementwise plugin, ``out = alpha * a + b``, written for real TensorRT (test fixture).

Inputs of any (dynamic) shape and equal types, FLOAT or HALF; every tensor in the same format,
LINEAR or HWC (an elementwise op does not care how elements are laid out, and HWC has no padding),
so a rank >= 3 build has two accepted combinations and times both. ``enqueue`` uses a CuPy
ElementwiseKernel on TensorRT's stream.
"""

import json

import numpy as np
import tensorrt as trt

try:
    import cupy as cp
except ImportError:
    cp = None

_AXPY = None
_FORMATS = (trt.TensorFormat.LINEAR, trt.TensorFormat.HWC)


def _axpy():
    global _AXPY
    if _AXPY is None:
        _AXPY = cp.ElementwiseKernel("T a, T b, float32 alpha", "T c",
                                     "c = (T)(alpha * (float)a + (float)b)", "pp_test_axpy")
    return _AXPY


def _volume(dims):
    return int(np.prod(tuple(dims))) if len(dims) else 1


def _device_array(ptr, count, dtype):
    mem = cp.cuda.UnownedMemory(ptr, count * np.dtype(dtype).itemsize, None, cp.cuda.Device().id)
    return cp.ndarray((count,), dtype=dtype, memptr=cp.cuda.MemoryPointer(mem, 0))


class AxpyPlugin(trt.IPluginV2DynamicExt):
    def __init__(self, alpha=1.0):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = "PPTestAxpy"
        self.plugin_version = "1"
        self.alpha = float(alpha)

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        return trt.DimsExprs(inputs[0])

    def supports_format_combination(self, pos, in_out, num_inputs):
        desc = in_out[pos]
        if pos == 0:
            return desc.type in (trt.DataType.FLOAT, trt.DataType.HALF) and desc.format in _FORMATS
        return desc.type == in_out[0].type and desc.format == in_out[0].format

    def configure_plugin(self, inp, out):
        pass

    def get_workspace_size(self, input_desc, output_desc):
        return 0

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        dtype = np.dtype(trt.nptype(input_desc[0].type))
        count = _volume(output_desc[0].dims)
        a = _device_array(inputs[0], count, dtype)
        b = _device_array(inputs[1], count, dtype)
        out = _device_array(outputs[0], count, dtype)
        with cp.cuda.ExternalStream(stream):
            _axpy()(a, b, np.float32(self.alpha), out)

    def serialize(self):
        return json.dumps({"alpha": self.alpha}).encode()

    def clone(self):
        cloned = AxpyPlugin(self.alpha)
        return cloned


class AxpyPluginCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name = "PPTestAxpy"
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection(
            [trt.PluginField("alpha", np.array([]), trt.PluginFieldType.FLOAT32)])

    def create_plugin(self, name, fc):
        alpha = 1.0
        for f in fc:
            if f.name == "alpha":
                alpha = float(f.data[0])
        return AxpyPlugin(alpha)

    def deserialize_plugin(self, name, data):
        return AxpyPlugin(json.loads(data.decode())["alpha"])


plg_registry = trt.get_plugin_registry()
my_plugin_creator = AxpyPluginCreator()
plg_registry.register_creator(my_plugin_creator, "")
