"""IPluginV3 test fixtures written for real TensorRT: a correct plugin and broken variants.

``PPTestV3Scale`` (correct): ``out = scale * x`` for FLOAT/HALF, one field ``scale``, two tactics
(1: one elementwise kernel; 2: the same kernel launched 64 times, equally correct and much
slower, offered first so only timing picks 1). With a shape input, the output is the input
flattened and cut to the shape input's first value (``out[:n]``).

Broken on purpose, each under its own name:
- PPTestV3AttachSelf: ``attach_to_context`` returns ``self``;
- PPTestV3AttachShared: ``attach_to_context`` returns a clone sharing a list with its source;
- PPTestV3BadTactics: ``get_valid_tactics`` returns ``[0, 1, 1]``;
- PPTestV3FieldsRandom: ``get_fields_to_serialize`` differs on every call;
- PPTestV3FieldsLossy: ``create_plugin`` reads the field under another name, so ``scale`` is lost;
- PPTestV3NewRuntime: ``get_capability_interface(RUNTIME)`` builds a new runtime object per call;
- PPTestV3ConfigureRaises: ``configure_plugin`` raises (V3: the build fails).
"""

import numpy as np
import tensorrt as trt

try:
    import cupy as cp
except ImportError:
    cp = None

_SCALE = None


def _kernel():
    global _SCALE
    if _SCALE is None:
        _SCALE = cp.ElementwiseKernel("T x, float32 s", "T y", "y = (T)(s * (float)x)",
                                      "pp_test_v3_scale")
    return _SCALE


def _device_array(ptr, count, dtype):
    mem = cp.cuda.UnownedMemory(ptr, count * np.dtype(dtype).itemsize, None, cp.cuda.Device().id)
    return cp.ndarray((count,), dtype=dtype, memptr=cp.cuda.MemoryPointer(mem, 0))


class ScalePlugin(trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuild,
                  trt.IPluginV3OneRuntime):
    NAME = "PPTestV3Scale"

    def __init__(self, scale=1.0):
        trt.IPluginV3.__init__(self)
        trt.IPluginV3OneCore.__init__(self)
        trt.IPluginV3OneBuild.__init__(self)
        trt.IPluginV3OneRuntime.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_name = self.NAME
        self.plugin_version = "1"
        self.scale = float(scale)
        self.tactic = None
        self.history = []

    def get_capability_interface(self, type):
        return self

    def get_output_data_types(self, input_types):
        return [input_types[0]]

    def get_output_shapes(self, inputs, shape_inputs, expr_builder):
        if shape_inputs:
            return [trt.DimsExprs([shape_inputs[0][0]])]
        return [trt.DimsExprs(inputs[0])]

    def supports_format_combination(self, pos, in_out, num_inputs):
        desc = in_out[pos].desc
        if desc.format != trt.TensorFormat.LINEAR:
            return False
        if pos == 0:
            return desc.type in (trt.DataType.FLOAT, trt.DataType.HALF)
        return desc.type == in_out[0].desc.type

    def configure_plugin(self, inp, out):
        self.history.append("configure")

    def get_valid_tactics(self):
        return [2, 1]

    def set_tactic(self, tactic):
        self.tactic = tactic

    def on_shape_change(self, inp, out):
        self.count = int(np.prod(tuple(out[0].dims))) if len(out[0].dims) else 1

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        dtype = np.dtype(trt.nptype(input_desc[0].type))
        x = _device_array(inputs[0], self.count, dtype)
        y = _device_array(outputs[0], self.count, dtype)
        with cp.cuda.ExternalStream(stream):
            for _ in range(64 if self.tactic == 2 else 1):
                _kernel()(x, np.float32(self.scale), y)

    def attach_to_context(self, context):
        return self.clone()

    def get_fields_to_serialize(self):
        return trt.PluginFieldCollection([
            trt.PluginField("scale", np.array([self.scale], dtype=np.float32),
                            trt.PluginFieldType.FLOAT32)])

    def clone(self):
        cloned = type(self)(self.scale)
        cloned.tactic = self.tactic
        return cloned


class ScaleCreator(trt.IPluginCreatorV3One):
    PLUGIN = ScalePlugin
    RUNTIME_FIELD = "scale"  # the field read back at TensorRTPhase.RUNTIME

    def __init__(self):
        trt.IPluginCreatorV3One.__init__(self)
        self.name = self.PLUGIN.NAME
        self.plugin_namespace = ""
        self.plugin_version = "1"
        self.field_names = trt.PluginFieldCollection(
            [trt.PluginField("scale", np.array([]), trt.PluginFieldType.FLOAT32)])

    def create_plugin(self, name, fc, phase):
        scale = 1.0
        want = self.RUNTIME_FIELD if phase == trt.TensorRTPhase.RUNTIME else "scale"
        for f in fc:
            if f.name == want:
                scale = float(f.data[0])
        return self.PLUGIN(scale)


# -- broken variants ---------------------------------------------------------------------------

class AttachSelf(ScalePlugin):
    NAME = "PPTestV3AttachSelf"

    def attach_to_context(self, context):
        return self


class AttachShared(ScalePlugin):
    NAME = "PPTestV3AttachShared"

    def attach_to_context(self, context):
        cloned = self.clone()
        cloned.history = self.history  # the same list: contexts see each other's changes
        return cloned


class BadTactics(ScalePlugin):
    NAME = "PPTestV3BadTactics"

    def get_valid_tactics(self):
        return [0, 1, 1]


class FieldsRandom(ScalePlugin):
    NAME = "PPTestV3FieldsRandom"
    calls = [0]

    def get_fields_to_serialize(self):
        self.calls[0] += 1
        fields = ScalePlugin.get_fields_to_serialize(self)
        fields.append(trt.PluginField("nonce", np.array([self.calls[0]], dtype=np.int32),
                                      trt.PluginFieldType.INT32))
        return fields


class FieldsLossy(ScalePlugin):
    NAME = "PPTestV3FieldsLossy"


class _Runtime(trt.IPluginV3OneRuntime):
    """A separate runtime object that forwards to the plugin (made anew per request)."""

    def __init__(self, plugin):
        trt.IPluginV3OneRuntime.__init__(self)
        self.plugin = plugin

    def set_tactic(self, tactic):
        self.tactic = tactic

    def on_shape_change(self, inp, out):
        self.plugin.on_shape_change(inp, out)

    def enqueue(self, *args):
        self.plugin.enqueue(*args)

    def attach_to_context(self, context):
        return self.plugin.clone()

    def get_fields_to_serialize(self):
        return self.plugin.get_fields_to_serialize()


class NewRuntime(ScalePlugin):
    NAME = "PPTestV3NewRuntime"

    def get_capability_interface(self, type):
        return _Runtime(self) if type == trt.PluginCapabilityType.RUNTIME else self


class ConfigureRaises(ScalePlugin):
    NAME = "PPTestV3ConfigureRaises"

    def configure_plugin(self, inp, out):
        raise ValueError("cannot configure")


def _creator(plugin, runtime_field="scale"):
    return type(plugin.__name__ + "Creator", (ScaleCreator,),
                {"PLUGIN": plugin, "RUNTIME_FIELD": runtime_field})


plg_registry = trt.get_plugin_registry()
creators = [_creator(ScalePlugin)(), _creator(AttachSelf)(), _creator(AttachShared)(),
            _creator(BadTactics)(), _creator(FieldsRandom)(), _creator(FieldsLossy, "scal")(),
            _creator(NewRuntime)(), _creator(ConfigureRaises)()]
for creator in creators:
    plg_registry.register_creator(creator, "")
