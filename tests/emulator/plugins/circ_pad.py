"""A correct circular-padding plugin written for real TensorRT with raw CuPy (test fixture).

Modelled on NVIDIA's ``circ_pad_plugin_cupy.py`` sample, without its bugs: ``pads`` is read from
``self``, clones copy their state, ``serialize`` is deterministic and ``enqueue`` only launches on
the stream it is given. Padding is (left, right, top, bottom) over the last two dims. The kernel
moves elements as same-sized unsigned ints, so one source serves FLOAT and HALF.
"""

import json

import numpy as np
import tensorrt as trt

try:
    import cupy as cp
except ImportError:  # the plugin is importable (and buildable) without a GPU
    cp = None

_SOURCE = r"""
extern "C" __global__ void circ_pad(const ELEM* x, ELEM* y, long long total, int h, int w,
                                    int top, int left, int ho, int wo) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    int ow = (int)(i % wo);
    long long t = i / wo;
    int oh = (int)(t % ho);
    long long plane = t / ho;
    int ih = ((oh - top) % h + h) % h;
    int iw = ((ow - left) % w + w) % w;
    y[i] = x[(plane * h + ih) * w + iw];
}
"""
_ELEM = {np.dtype(np.float32): "unsigned int", np.dtype(np.float16): "unsigned short"}
_KERNELS = {}


def _kernel(dtype):
    if dtype not in _KERNELS:
        _KERNELS[dtype] = cp.RawKernel(_SOURCE.replace("ELEM", _ELEM[dtype]), "circ_pad")
    return _KERNELS[dtype]


def _device_array(ptr, shape, dtype):
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    mem = cp.cuda.UnownedMemory(ptr, nbytes, None, cp.cuda.Device().id)
    return cp.ndarray(tuple(shape), dtype=dtype, memptr=cp.cuda.MemoryPointer(mem, 0))


class CircPadPlugin(trt.IPluginV2DynamicExt):
    def __init__(self, fc=None):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = "PPTestCircPad"
        self.plugin_version = "1"
        self.pads = [0, 0, 0, 0]
        if fc is not None:
            for f in fc:
                if f.name == "pads":
                    self.pads = [int(v) for v in f.data]

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        left, right, top, bottom = self.pads
        out = trt.DimsExprs(inputs[0])
        out[-1] = exprBuilder.operation(trt.DimensionOperation.SUM, inputs[0][-1],
                                        exprBuilder.constant(left + right))
        out[-2] = exprBuilder.operation(trt.DimensionOperation.SUM, inputs[0][-2],
                                        exprBuilder.constant(top + bottom))
        return out

    def serialize(self):
        return json.dumps({"pads": self.pads}).encode("utf-8")

    def configure_plugin(self, inp, out):
        self.rank = len(inp[0].desc.dims)

    def supports_format_combination(self, pos, in_out, num_inputs):
        desc = in_out[pos]
        if desc.format != trt.TensorFormat.LINEAR:
            return False
        if pos == 0:
            return desc.type in (trt.DataType.FLOAT, trt.DataType.HALF)
        return desc.type == in_out[0].type

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        dtype = np.dtype(trt.nptype(input_desc[0].type))
        in_shape, out_shape = tuple(input_desc[0].dims), tuple(output_desc[0].dims)
        x = _device_array(inputs[0], in_shape, dtype)
        y = _device_array(outputs[0], out_shape, dtype)
        left, _, top, _ = self.pads
        total = int(np.prod(out_shape))
        h, w = in_shape[-2], in_shape[-1]
        with cp.cuda.ExternalStream(stream):
            _kernel(dtype)(((total + 255) // 256,), (256,),
                           (x, y, np.int64(total), np.int32(h), np.int32(w), np.int32(top),
                            np.int32(left), np.int32(out_shape[-2]), np.int32(out_shape[-1])))

    def clone(self):
        cloned = CircPadPlugin()
        cloned.__dict__.update(self.__dict__)
        cloned.pads = list(self.pads)
        return cloned


class CircPadPluginCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name = "PPTestCircPad"
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection(
            [trt.PluginField("pads", np.array([]), trt.PluginFieldType.INT32)])

    def create_plugin(self, name, fc):
        return CircPadPlugin(fc)

    def deserialize_plugin(self, name, data):
        plugin = CircPadPlugin()
        plugin.pads = [int(v) for v in json.loads(data.decode("utf-8"))["pads"]]
        return plugin


def reference(x, pads):
    """NumPy circular padding, for tests."""
    left, right, top, bottom = pads
    width = [(0, 0)] * (x.ndim - 2) + [(top, bottom), (left, right)]
    return np.pad(x, width, mode="wrap")


plg_registry = trt.get_plugin_registry()
my_plugin_creator = CircPadPluginCreator()
plg_registry.register_creator(my_plugin_creator, "")
