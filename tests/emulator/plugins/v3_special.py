"""IPluginV3 test fixtures for V3-only capabilities, written for real TensorRT.

- PPTestV3NonZero (correct): the (row, col) indices of the non-zero elements of a 2-D FLOAT input;
  output 0 is ``(n, 2)`` INT32 with ``n`` a size tensor, output 1 the size tensor (0-D INT64,
  written by ``enqueue``; upper bound ``R * C``).
- PPTestV3NonZeroOver (broken): writes ``R * C + 1`` into the size tensor.
- PPTestV3NonZeroNot0D (broken): declares its size tensor on an output of rank 1.
- PPTestV3AddOne (correct, IPluginV3OneBuildV2): ``out = in + 1`` in place, output 0 aliasing
  input 0 (honoured only with ``PreviewFeature.ALIASED_PLUGIN_IO_10_03``); it writes through
  ``outputs[0]``, so it is right with and without aliasing.
- PPTestV3AliasBadIndex (broken): ``get_aliased_input`` names input 3 of 1.
"""

import numpy as np
import tensorrt as trt

try:
    import cupy as cp
except ImportError:
    cp = None

_SOURCE = r'''
// One thread walks the input in order, so the indices come out in a fixed order (a replayed
// CUDA graph must write the same bytes as the eager run).
extern "C" __global__ void pp_test_nonzero(const float* x, int* idx, long long* count,
                                           int rows, int cols) {
    long long k = 0;
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
            if (x[r * cols + c] != 0.f) {
                idx[2 * k] = r;
                idx[2 * k + 1] = c;
                ++k;
            }
        }
    }
    *count = k;
}
extern "C" __global__ void pp_test_set(long long* count, long long value) { *count = value; }
'''
_MODULE = None


def _kernels():
    global _MODULE
    if _MODULE is None:
        _MODULE = cp.RawModule(code=_SOURCE)
    return _MODULE


def _init(plugin, name, build=trt.IPluginV3OneBuild):
    trt.IPluginV3.__init__(plugin)
    trt.IPluginV3OneCore.__init__(plugin)
    build.__init__(plugin)
    trt.IPluginV3OneRuntime.__init__(plugin)
    plugin.plugin_namespace = ""
    plugin.plugin_name = name
    plugin.plugin_version = "1"


class NonZero(trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuild, trt.IPluginV3OneRuntime):
    NAME = "PPTestV3NonZero"

    def __init__(self):
        _init(self, self.NAME)
        self.num_outputs = 2

    def get_capability_interface(self, type):
        return self

    def get_output_data_types(self, input_types):
        return [trt.DataType.INT32, trt.DataType.INT64]

    def get_output_shapes(self, inputs, shape_inputs, eb):
        upper = eb.operation(trt.DimensionOperation.PROD, inputs[0][0], inputs[0][1])
        opt = eb.operation(trt.DimensionOperation.FLOOR_DIV, upper, eb.constant(2))
        n = eb.declare_size_tensor(1, opt, upper)
        return [trt.DimsExprs([n, eb.constant(2)]), trt.DimsExprs(0)]

    def supports_format_combination(self, pos, in_out, num_inputs):
        want = (trt.DataType.FLOAT, trt.DataType.INT32, trt.DataType.INT64)[pos]
        return in_out[pos].desc.type == want and in_out[pos].desc.format == trt.TensorFormat.LINEAR

    def configure_plugin(self, inp, out):
        pass

    def set_tactic(self, tactic):
        pass

    def on_shape_change(self, inp, out):
        self.rows, self.cols = int(inp[0].dims[0]), int(inp[0].dims[1])

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        with cp.cuda.ExternalStream(stream):
            _kernels().get_function("pp_test_nonzero")(
                (1,), (1,), (np.uint64(inputs[0]), np.uint64(outputs[0]), np.uint64(outputs[1]),
                             np.int32(self.rows), np.int32(self.cols)))
            self.after(outputs[1])

    def after(self, count_ptr):
        pass

    def attach_to_context(self, context):
        return self.clone()

    def get_fields_to_serialize(self):
        return trt.PluginFieldCollection([])

    def clone(self):
        return type(self)()


class NonZeroOver(NonZero):
    NAME = "PPTestV3NonZeroOver"

    def after(self, count_ptr):
        _kernels().get_function("pp_test_set")(
            (1,), (1,), (np.uint64(count_ptr), np.int64(self.rows * self.cols + 1)))


class NonZeroNot0D(NonZero):
    NAME = "PPTestV3NonZeroNot0D"

    def get_output_shapes(self, inputs, shape_inputs, eb):
        n = eb.declare_size_tensor(1, eb.constant(1), inputs[0][0])
        return [trt.DimsExprs([n, eb.constant(2)]), trt.DimsExprs([eb.constant(1)])]


class AddOne(trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuildV2,
             trt.IPluginV3OneRuntime):
    NAME = "PPTestV3AddOne"
    ALIAS = 0

    def __init__(self):
        _init(self, self.NAME, trt.IPluginV3OneBuildV2)
        self.num_outputs = 1

    def get_capability_interface(self, type):
        return self

    def get_output_data_types(self, input_types):
        return [input_types[0]]

    def get_output_shapes(self, inputs, shape_inputs, eb):
        return [trt.DimsExprs(inputs[0])]

    def supports_format_combination(self, pos, in_out, num_inputs):
        return (in_out[pos].desc.type == trt.DataType.FLOAT
                and in_out[pos].desc.format == trt.TensorFormat.LINEAR)

    def get_aliased_input(self, output_index):
        return self.ALIAS

    def configure_plugin(self, inp, out):
        pass

    def set_tactic(self, tactic):
        pass

    def on_shape_change(self, inp, out):
        self.count = int(np.prod(tuple(inp[0].dims)))

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        self.pointers = (inputs[0], outputs[0])
        nbytes = self.count * 4
        with cp.cuda.ExternalStream(stream):
            x = cp.ndarray((self.count,), cp.float32, cp.cuda.MemoryPointer(
                cp.cuda.UnownedMemory(inputs[0], nbytes, None), 0))
            y = cp.ndarray((self.count,), cp.float32, cp.cuda.MemoryPointer(
                cp.cuda.UnownedMemory(outputs[0], nbytes, None), 0))
            cp.add(x, np.float32(1), out=y)

    def attach_to_context(self, context):
        return self.clone()

    def get_fields_to_serialize(self):
        return trt.PluginFieldCollection([])

    def clone(self):
        return type(self)()


class AliasBadIndex(AddOne):
    NAME = "PPTestV3AliasBadIndex"
    ALIAS = 3


class _Creator(trt.IPluginCreatorV3One):
    def __init__(self, plugin):
        trt.IPluginCreatorV3One.__init__(self)
        self.plugin = plugin
        self.name = plugin.NAME
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection([])

    def create_plugin(self, name, fc, phase):
        return self.plugin()


plg_registry = trt.get_plugin_registry()
creators = [_Creator(p) for p in (NonZero, NonZeroOver, NonZeroNot0D, AddOne, AliasBadIndex)]
for creator in creators:
    plg_registry.register_creator(creator, "")
