"""User plugins written for real TensorRT, for the model runner's tests (fixture, not shipped).

``PPModelAxpy``: ``out = alpha * a + b``, with a NumPy ``reference``. ``PPModelNoRef``: the same
without one. ``PPModelBadRef``: a reference whose output dtype differs from what the plugin
declares. ``enqueue`` runs a CuPy ElementwiseKernel on TensorRT's stream.
"""

import json

import numpy as np
import tensorrt as trt

try:
    import cupy as cp
except ImportError:
    cp = None


def _view(ptr, count, dtype):
    mem = cp.cuda.UnownedMemory(ptr, count * np.dtype(dtype).itemsize, None, cp.cuda.Device().id)
    return cp.ndarray((count,), dtype=dtype, memptr=cp.cuda.MemoryPointer(mem, 0))


class ModelAxpy(trt.IPluginV2DynamicExt):
    NAME = "PPModelAxpy"

    def __init__(self, alpha=1.0):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = self.NAME
        self.plugin_version = "1"
        self.alpha = float(alpha)
        self.kernel = None

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
        if cp is not None and all(d >= 0 for d in inp[0].desc.dims):
            try:
                self.kernel = cp.ElementwiseKernel("T a, T b, float32 alpha", "T c",
                                                   "c = alpha * a + b", "pp_model_axpy")
            except Exception:  # noqa: BLE001 - no usable GPU: nothing to compile
                self.kernel = None

    def get_workspace_size(self, input_desc, output_desc):
        return 0

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        count = int(np.prod(tuple(output_desc[0].dims)))
        a, b, c = (_view(p, count, np.float32) for p in (inputs[0], inputs[1], outputs[0]))
        with cp.cuda.ExternalStream(stream):
            self.kernel(a, b, np.float32(self.alpha), c)

    def serialize(self):
        return json.dumps({"alpha": self.alpha}).encode()

    def clone(self):
        return type(self)(self.alpha)

    def reference(self, a, b):
        return ((np.float32(self.alpha) * a + b).astype(a.dtype),)


class ModelNoRef(ModelAxpy):
    NAME = "PPModelNoRef"
    reference = None


class ModelBadRef(ModelAxpy):
    NAME = "PPModelBadRef"

    def reference(self, a, b):
        return (a.astype(np.float64),)


class Creator(trt.IPluginCreator):
    def __init__(self, plugin):
        trt.IPluginCreator.__init__(self)
        self.plugin = plugin
        self.name = plugin.NAME
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection(
            [trt.PluginField("alpha", np.array([]), trt.PluginFieldType.FLOAT32)])

    def create_plugin(self, name, fc):
        alpha = 1.0
        for f in fc:
            if f.name == "alpha":
                alpha = float(f.data[0])
        return self.plugin(alpha)

    def deserialize_plugin(self, name, data):
        return self.plugin(json.loads(data.decode())["alpha"])


registry = trt.get_plugin_registry()
creators = [Creator(p) for p in (ModelAxpy, ModelNoRef, ModelBadRef)]
for creator in creators:
    registry.register_creator(creator, "")
