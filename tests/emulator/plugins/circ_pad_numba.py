"""A circular-padding plugin written for real TensorRT with a raw numba kernel (test fixture).

In the style of NVIDIA's ``circ_pad_plugin_numba.py`` sample (``@cuda.jit`` at module level,
``cuda.external_stream`` in ``enqueue``) but without its bugs: ``pads`` comes from ``self``, the
shape parameters go by value instead of through ``cp.asarray`` (an allocation and a copy in
``enqueue``), clones copy their state and ``serialize`` is deterministic. TensorRT's pointers
become numba device arrays through ``cuda.from_cuda_array_interface`` (no CuPy). Padding is
(left, right, top, bottom) over the last two dims, FLOAT and HALF.

numba's CUDA simulator has neither ``from_cuda_array_interface`` nor ``external_stream``, so
this module's ``enqueue`` runs on a GPU only (tests check both facts).
"""

import json

import numpy as np
import tensorrt as trt
from numba import cuda


@cuda.jit
def circ_pad_kernel(x, y, h, w, top, left, ho, wo):
    i = cuda.grid(1)
    if i < y.size:
        ow = i % wo
        t = i // wo
        oh = t % ho
        plane = t // ho
        ih = ((oh - top) % h + h) % h
        iw = ((ow - left) % w + w) % w
        y[i] = x[(plane * h + ih) * w + iw]


def _array(ptr, n, dtype):
    desc = {"shape": (n,), "typestr": np.dtype(dtype).str, "data": (int(ptr), False),
            "strides": None, "version": 3}
    return cuda.from_cuda_array_interface(desc, owner=None, sync=False)


class CircPadNumbaPlugin(trt.IPluginV2DynamicExt):
    def __init__(self, pads=(0, 0, 0, 0)):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = "CircPadNumba"
        self.plugin_version = "1"
        self.pads = [int(p) for p in pads]
        self.params = None

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        dims = trt.DimsExprs(inputs[0])
        left, right, top, bottom = self.pads
        n = len(dims)
        dims[n - 1] = expr_builder.operation(trt.DimensionOperation.SUM, inputs[0][n - 1],
                                             expr_builder.constant(left + right))
        dims[n - 2] = expr_builder.operation(trt.DimensionOperation.SUM, inputs[0][n - 2],
                                             expr_builder.constant(top + bottom))
        return dims

    def supports_format_combination(self, pos, in_out, num_inputs):
        desc = in_out[pos]
        if desc.format != trt.TensorFormat.LINEAR:
            return False
        if pos == 0:
            return desc.type in (trt.DataType.FLOAT, trt.DataType.HALF)
        return desc.type == in_out[0].type

    def configure_plugin(self, inp, out):
        dims = tuple(inp[0].desc.dims)
        if any(d < 0 for d in dims):
            return
        left, right, top, bottom = self.pads
        h, w = dims[-2], dims[-1]
        n_in = int(np.prod(dims))
        n_out = n_in // (h * w) * (h + top + bottom) * (w + left + right)
        self.params = (n_in, n_out, h, w, top, left, h + top + bottom, w + left + right,
                       trt.nptype(inp[0].desc.type))

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        n_in, n_out, h, w, top, left, ho, wo, dtype = self.params
        x = _array(inputs[0], n_in, dtype)
        y = _array(outputs[0], n_out, dtype)
        block = 256
        circ_pad_kernel[(n_out + block - 1) // block, block, cuda.external_stream(stream)](
            x, y, h, w, top, left, ho, wo)
        return 0

    def serialize(self):
        return json.dumps({"pads": self.pads}, sort_keys=True).encode()

    def clone(self):
        other = CircPadNumbaPlugin(self.pads)
        other.params = self.params
        return other


class CircPadNumbaCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name = "CircPadNumba"
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection(
            [trt.PluginField("pads", np.array([], dtype=np.int32), trt.PluginFieldType.INT32)])

    def create_plugin(self, name, fc):
        pads = [int(v) for v in fc[0].data] if len(fc) else [0, 0, 0, 0]
        return CircPadNumbaPlugin(pads)

    def deserialize_plugin(self, name, data):
        return CircPadNumbaPlugin(json.loads(bytes(data).decode())["pads"])


CREATOR = CircPadNumbaCreator()
trt.get_plugin_registry().register_creator(CREATOR, "")
