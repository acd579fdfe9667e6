"""Broken on purpose (test fixture): enqueues that work eagerly but not under CUDA-graph capture.

- PPTestCaptureAlloc: ``x * 2`` allocates a temporary in enqueue;
- PPTestCaptureSync: synchronizes TensorRT's stream in enqueue;
- PPTestCaptureNullStream: launches on CuPy's current stream (the legacy default stream), not on
  TensorRT's;
- PPTestCaptureOtherStream: launches on a stream of its own.
Each computes ``out = 2 * x`` (FLOAT).
"""

import numpy as np
import tensorrt as trt

try:
    import cupy as cp
except ImportError:
    cp = None

_SIDE = None


def _side_stream():
    global _SIDE
    if _SIDE is None:
        _SIDE = cp.cuda.Stream(non_blocking=True)
    return _SIDE


def _wrap(ptr, count):
    mem = cp.cuda.UnownedMemory(ptr, count * 4, None, cp.cuda.Device().id)
    return cp.ndarray((count,), cp.float32, cp.cuda.MemoryPointer(mem, 0))


class _DoublePlugin(trt.IPluginV2DynamicExt):
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
        count = int(np.prod(tuple(input_desc[0].dims)))
        self.launch(_wrap(inputs[0], count), _wrap(outputs[0], count), stream)

    def serialize(self):
        return b"{}"

    def clone(self):
        return type(self)()


class AllocPlugin(_DoublePlugin):
    TYPE = "PPTestCaptureAlloc"

    def launch(self, x, y, stream):
        with cp.cuda.ExternalStream(stream):
            y[...] = x * np.float32(2)  # the bug: x * 2 allocates a temporary


class SyncPlugin(_DoublePlugin):
    TYPE = "PPTestCaptureSync"

    def launch(self, x, y, stream):
        s = cp.cuda.ExternalStream(stream)
        with s:
            cp.multiply(x, np.float32(2), out=y)
        s.synchronize()  # the bug: waits for the GPU inside enqueue


class NullStreamPlugin(_DoublePlugin):
    TYPE = "PPTestCaptureNullStream"

    def launch(self, x, y, stream):
        cp.multiply(x, np.float32(2), out=y)  # the bug: CuPy's current stream, not `stream`


class OtherStreamPlugin(_DoublePlugin):
    TYPE = "PPTestCaptureOtherStream"

    def launch(self, x, y, stream):
        with _side_stream():  # the bug: a stream of its own
            cp.multiply(x, np.float32(2), out=y)


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
creators = [_Creator(c) for c in (AllocPlugin, SyncPlugin, NullStreamPlugin, OtherStreamPlugin)]
for _c in creators:
    plg_registry.register_creator(_c, "")
