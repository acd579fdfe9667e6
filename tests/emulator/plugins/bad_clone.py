"""Broken on purpose (test fixture): three ways to get clone() wrong.

- PPTestCloneShared: ``__dict__.update`` only, so the clone shares the source's list and array,
  and its configure_plugin then changes both in place: the source sees the change;
- PPTestCloneSelf: returns ``self``;
- PPTestCloneNoInit: builds the clone with ``__new__``, skipping ``__init__``, so the identity
  properties (held in C++) are missing.
"""

import json

import numpy as np
import tensorrt as trt


class _Base(trt.IPluginV2DynamicExt):
    TYPE = ""

    def __init__(self):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_namespace = ""
        self.plugin_type = self.TYPE
        self.plugin_version = "1"
        self.scales = [1.0, 2.0]
        self.table = np.arange(4, dtype=np.float32)
        self.name = "scaled"

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        return trt.DimsExprs(inputs[0])

    def supports_format_combination(self, pos, in_out, num_inputs):
        return in_out[pos].type == trt.DataType.FLOAT and in_out[pos].format == trt.TensorFormat.LINEAR

    def configure_plugin(self, inp, out):
        pass

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        import cupy as cp

        nbytes = int(np.prod(tuple(input_desc[0].dims))) * 4
        cp.cuda.runtime.memcpyAsync(outputs[0], inputs[0], nbytes, 3, stream)

    def serialize(self):
        return json.dumps({"scales": self.scales}).encode()


class SharedPlugin(_Base):
    TYPE = "PPTestCloneShared"

    def configure_plugin(self, inp, out):
        self.scales.append(float(inp[0].desc.dims[-1]))  # changes the list the source holds
        self.table[0] = len(self.scales)  # and the array

    def clone(self):
        cloned = SharedPlugin()
        cloned.__dict__.update(self.__dict__)  # the bug: the list and the array are shared
        return cloned


class SelfPlugin(_Base):
    TYPE = "PPTestCloneSelf"

    def clone(self):
        return self


class NoInitPlugin(_Base):
    TYPE = "PPTestCloneNoInit"

    def clone(self):
        cloned = NoInitPlugin.__new__(NoInitPlugin)  # the bug: __init__ never runs
        cloned.__dict__.update({k: (list(v) if isinstance(v, list) else v.copy()
                                    if isinstance(v, np.ndarray) else v)
                                for k, v in self.__dict__.items()})
        return cloned


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
        plugin = self.cls()
        plugin.scales = json.loads(data.decode())["scales"]
        return plugin


plg_registry = trt.get_plugin_registry()
creators = [_Creator(SharedPlugin), _Creator(SelfPlugin), _Creator(NoInitPlugin)]
for _c in creators:
    plg_registry.register_creator(_c, "")
