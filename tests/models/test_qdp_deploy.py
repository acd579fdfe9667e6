"""The deployment path of a QDP AOT plugin: an ONNX node with ``plugin_namespace`` and ``aot=1``
imports through the parser's field rules into the QDP creator (under the emulator); with real
TensorRT, it builds with PREFER_AOT_PYTHON_PLUGINS and the engine runs in a process that never
imports pyplugins."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.emulator.onnx_import import fields_from_attributes
from pyplugins.errors import AotUnsupportedError, FieldError, PluginDefinitionError
from pyplugins.models.qdp_node import node_attributes, qdp_node
from pyplugins.ops import CircPad, LeakyReLU, RMSNorm, SeqRepeat
from pyplugins.runtime import qdp
from pyplugins.runtime.fields import Field
from pyplugins.runtime.plugin import Plugin

from tests.qdp_support import REQUEST, Built

onnx = pytest.importorskip("onnx")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Wide(Plugin):
    name, inputs = "QdpWide", 1
    big = Field.int(default=0)

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        return inputs[0]

    def enqueue(self, *args):
        pass


@pytest.fixture
def aot_defined():
    made = []

    def define(cls):
        made.append(cls)
        return qdp.define(cls)

    yield define
    for cls in made:
        qdp.forget(cls)


def test_a_node_carries_namespace_aot_and_every_field():
    node = qdp_node(SeqRepeat, ["x"], ["y"], name="rep", factor=3)
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert (node.op_type, node.name) == ("SeqRepeat", "rep")
    assert attrs == {"plugin_namespace": b"pyplugins", "plugin_version": b"1", "aot": 1,
                     "factor": 3}
    assert node_attributes(RMSNorm)["eps"] == pytest.approx(1e-6)  # defaults written too


def test_a_node_is_refused_for_what_qdp_or_the_parser_cannot_carry():
    uncounted = type("Uncounted", (CircPad,), {"name": "Uncounted", "inputs": None})
    with pytest.raises(PluginDefinitionError, match="Uncounted.*set inputs = N"):
        qdp_node(uncounted, ["x"], ["y"], pads=[1, 1])
    jit_only = type("JitSeq", (SeqRepeat,), {"name": "JitSeq", "aot_launch": None})
    with pytest.raises(AotUnsupportedError, match="JitSeq.*no aot_launch"):
        qdp_node(jit_only, ["x"], ["y"], factor=2)
    assert qdp_node(jit_only, ["x"], ["y"], aot=False, factor=2).attribute[2].i == 0
    with pytest.raises(FieldError, match="'big' of plugin 'QdpWide'.*narrows INT attributes"):
        node_attributes(Wide, aot=False, big=2**31)
    assert node_attributes(Wide, aot=False, big=-2**31)["big"] == -2**31
    with pytest.raises(FieldError, match="must be >= 1"):
        node_attributes(SeqRepeat, factor=0)
    with pytest.raises(ValueError, match="takes 2 input"):
        qdp_node(RMSNorm, ["x"], ["y"])


def test_the_nodes_fields_as_the_parser_passes_them_make_an_aot_plugin(aot_defined):
    creator = aot_defined(LeakyReLU)
    node = qdp_node(LeakyReLU, ["x"], ["y"], neg_slope=0.25)
    fc, warnings = fields_from_attributes(list(node.attribute),
                                          [f.name for f in creator.field_names])
    assert [(f.name, f.type.name) for f in fc] == [("neg_slope", "FLOAT32")] and not warnings
    plugin = creator.create_plugin("LReLU_TRT", "pyplugins", fc, trt.TensorRTPhase.BUILD,
                                   REQUEST.STRICT_AOT)
    built = Built(plugin, [(-1, 16)], [trt.DataType.HALF], [(1, 16)], [(8, 16)])
    launch = built.launch(built.configure([trt.DataType.HALF] * 2), [(4, 16)])
    assert launch["args"] == [64, int(np.float32(0.25).view(np.int32))]


def test_under_the_interface_knob_every_shipped_op_registers_as_qdp():
    code = textwrap.dedent("""
        import pyplugins.ops, pyplugins.trt as trt
        r = trt.get_plugin_registry()
        for name in ("LReLU_TRT", "SeqRepeat", "BarPlugin", "RMSNorm", "CircPad", "Pool", "RoPE"):
            print(name, r.get_creator(name, "1", "pyplugins") is not None,
                  r.get_creator(name, "1", "") is not None)
    """)
    env = {**os.environ, "PYPLUGINS_INTERFACE": "qdp", "PYPLUGINS_TRT": "emulator"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    names = ("LReLU_TRT", "SeqRepeat", "BarPlugin", "RMSNorm", "CircPad", "Pool", "RoPE")
    assert done.stdout.split("\n")[:7] == [f"{n} True False" for n in names]
    assert "auto rule" not in done.stderr, done.stderr


# -- with real TensorRT and a GPU -------------------------------------------------------------------

_RUN_WITHOUT_PYPLUGINS = """
import sys
import numpy as np, cupy as cp, tensorrt as trt
engine = trt.Runtime(trt.Logger(trt.Logger.WARNING)).deserialize_cuda_engine(
    open(sys.argv[1], "rb").read())
context = engine.create_execution_context()
x = cp.asarray(np.load(sys.argv[2]))
y = cp.empty_like(x)
context.set_input_shape("x", x.shape)
context.set_tensor_address("x", x.data.ptr)
context.set_tensor_address("y", y.data.ptr)
stream = cp.cuda.Stream(non_blocking=True)
assert context.execute_async_v3(stream.ptr)
stream.synchronize()
assert "pyplugins" not in sys.modules
np.save(sys.argv[3], cp.asnumpy(y))
"""


@pytest.mark.trt
@pytest.mark.gpu
def test_an_aot_engine_builds_and_runs_where_pyplugins_is_never_imported(tmp_path, aot_defined):
    from pyplugins.models import trt_build

    aot_defined(LeakyReLU)
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [-1, 64])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [-1, 64])
    node = qdp_node(LeakyReLU, ["x"], ["y"], name="lrelu", neg_slope=0.125)
    model = onnx.helper.make_model(onnx.helper.make_graph([node], "qdp_aot", [x], [y]))
    engine = trt_build.build_engine(model, str(tmp_path / "aot.engine"), prefer_aot=True,
                                    ranges={"x": ((1, 64), (4, 64), (32, 64))})
    data = np.random.default_rng(3).uniform(-4, 4, (5, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", data)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", _RUN_WITHOUT_PYPLUGINS, str(engine),
                           str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                          capture_output=True, text=True, cwd=str(tmp_path), env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    (expected,) = LeakyReLU(neg_slope=0.125).reference(data)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), expected)
