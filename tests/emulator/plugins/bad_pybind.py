"""Broken on purpose (test fixture): plain-Python idioms that pybind11 objects refuse in TensorRT.

Each plugin works on ordinary Python objects and fails in TensorRT (§12):

- PPTestEnumIs: ``in_out[pos].type is trt.DataType.FLOAT`` (always False in TensorRT);
- PPTestEnumIsOut: ``get_output_datatype`` tests ``input_types[0] is trt.DataType.FLOAT``;
- PPTestDeepcopyClone: ``clone()`` is ``copy.deepcopy(self)``;
- PPTestPickle: ``serialize()`` pickles the plugin;
- PPTestDimsEq: ``configure_plugin`` compares ``Dims == Dims``;
- PPTestDimsKey: ``configure_plugin`` uses a ``Dims`` as a dict key;
- PPTestBool: a V2 plugin on BOOL tensors;
- PPTestGood: the same plugin written right (==, constructor clone, tuple keys): no violation.
"""

import copy
import json
import pickle

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
        self.cache = {}

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, output_index, inputs, exprBuilder):
        return trt.DimsExprs(inputs[0])

    def supports_format_combination(self, pos, in_out, num_inputs):
        return (in_out[pos].type == trt.DataType.FLOAT
                and in_out[pos].format == trt.TensorFormat.LINEAR)

    def configure_plugin(self, inp, out):
        self.cache = {tuple(inp[0].desc.dims): len(out)}

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        import cupy as cp

        nbytes = int(np.prod(tuple(input_desc[0].dims))) * input_desc[0].type.itemsize
        cp.cuda.runtime.memcpyAsync(outputs[0], inputs[0], nbytes, 3, stream)

    def serialize(self):
        return json.dumps({}).encode()

    def clone(self):
        cloned = type(self)()
        cloned.__dict__.update(copy.deepcopy(self.__dict__))
        return cloned


class EnumIsPlugin(_Base):
    TYPE = "PPTestEnumIs"

    def supports_format_combination(self, pos, in_out, num_inputs):
        return (in_out[pos].type is trt.DataType.FLOAT  # the bug: `is` on a pybind enum
                and in_out[pos].format == trt.TensorFormat.LINEAR)


class EnumIsOutPlugin(_Base):
    TYPE = "PPTestEnumIsOut"

    def get_output_datatype(self, index, input_types):
        return trt.DataType.FLOAT if input_types[0] is trt.DataType.FLOAT else trt.DataType.HALF


class DeepcopyClonePlugin(_Base):
    TYPE = "PPTestDeepcopyClone"

    def clone(self):
        return copy.deepcopy(self)  # the bug: pybind objects cannot be copied


class PicklePlugin(_Base):
    TYPE = "PPTestPickle"

    def serialize(self):
        return pickle.dumps(self)  # the bug: pybind objects cannot be pickled


class DimsEqPlugin(_Base):
    TYPE = "PPTestDimsEq"

    def configure_plugin(self, inp, out):
        self.same = inp[0].desc.dims == out[0].desc.dims  # the bug: Dims == Dims raises


class DimsKeyPlugin(_Base):
    TYPE = "PPTestDimsKey"

    def configure_plugin(self, inp, out):
        self.cache = {inp[0].desc.dims: 1}  # the bug: Dims is unhashable


class BoolPlugin(_Base):
    TYPE = "PPTestBool"

    def supports_format_combination(self, pos, in_out, num_inputs):
        return in_out[pos].type == trt.DataType.BOOL  # V2 plugins never get BOOL


class GoodPlugin(_Base):
    TYPE = "PPTestGood"


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
creators = [_Creator(c) for c in (EnumIsPlugin, EnumIsOutPlugin, DeepcopyClonePlugin,
                                  PicklePlugin, DimsEqPlugin, DimsKeyPlugin, BoolPlugin,
                                  GoodPlugin)]
for _c in creators:
    plg_registry.register_creator(_c, "")
