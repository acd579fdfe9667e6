"""pp.Plugin and pp.register, driven as TensorRT drives them (through the emulator's trampoline)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.runtime import creator as creator_mod
from pyplugins.runtime import shapes
from pyplugins.runtime.creator import register, unregister
from pyplugins.emulator import trampoline
from pyplugins.emulator.onnx_import import fields_from_attributes
from pyplugins.errors import FieldError, PluginDefinitionError, RegistrationError
from pyplugins.runtime.fields import Field
from pyplugins.runtime.launch import POINTER, Launch
from pyplugins.runtime.plugin import Plugin

DT = trt.DataType


class Scale(Plugin):
    """The test's example op: y = alpha * x (+ bias), elementwise."""

    name = "TestScale"
    version = "2"
    namespace = "tests"
    alpha = Field.float(default=1.0)
    axes = Field.ints(default=(0,), min=0)
    mode = Field.enum("mul", "add", default="mul")

    def setup(self):
        self.setup_calls = getattr(self, "setup_calls", 0) + 1

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        return shapes.dims(inputs[0], expr_builder)  # a list: the base converts it

    def configure_plugin(self, inp, out):
        dims = inp[0].desc.dims
        if shapes.is_concrete(dims):
            n = shapes.volume(dims)
            self.params = {"n": n, "grid": shapes.cdiv(n, 256)}  # host-side launch parameters

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        self.enqueued = (self.params["n"], inputs[0], outputs[0], stream)


@pytest.fixture
def scale():
    register(Scale, replace=True)
    yield Scale
    unregister(Scale)


def dyn(shape, t=DT.FLOAT):
    desc = trt.PluginTensorDesc(shape, t, trt.TensorFormat.LINEAR)
    return trt.DynamicPluginTensorDesc(desc, shape, shape, shape)


def created(cls, layer="node0", **attrs):
    fc, _ = fields_from_attributes(attrs, cls.creator.field_names)
    plugin = trampoline.create_plugin(cls.creator, layer, fc)
    assert plugin is not None
    return plugin


# -- identity ---------------------------------------------------------------------------------------

def test_identity_lives_in_the_cpp_properties(scale):
    p = created(scale, alpha=2.0)
    assert trampoline.identity(p) == ("TestScale", "2", "tests")
    assert trampoline.get_nb_outputs(p) == 1
    assert "num_outputs" not in p.__dict__ and "plugin_type" not in p.__dict__


def test_outputs_sets_num_outputs():
    class Two(Plugin):
        name = "TestTwoOutputs"
        outputs = 2

    assert trampoline.get_nb_outputs(Two()) == 2


@pytest.mark.parametrize("attr, use", [("num_outputs", "outputs"), ("plugin_type", "name"),
                                       ("plugin_version", "version"),
                                       ("plugin_namespace", "namespace"),
                                       ("plugin_name", "name")])
def test_shadowing_class_attributes_are_refused(attr, use):
    with pytest.raises(PluginDefinitionError, match=f"defines '{attr}'.*shadow.*set '{use}'"):
        type("Shadow", (Plugin,), {"name": "Shadow", attr: 1 if attr == "num_outputs" else "x"})


@pytest.mark.parametrize("method, hint", [("get_output_shapes", "get_output_dimensions"),
                                          ("get_output_data_types", "get_output_datatype"),
                                          ("on_shape_change", "configure_plugin"),
                                          ("get_fields_to_serialize", "serialized for you")])
def test_v3_method_names_are_refused(method, hint):
    with pytest.raises(PluginDefinitionError, match=f"{method}\\(\\).*never calls.*{hint}"):
        type("V3ish", (Plugin,), {"name": "V3ish", method: lambda self, *a: None})


@pytest.mark.parametrize("body, message", [
    ({"version": 1}, "version must be a str"), ({"outputs": 0}, "outputs must be an int >= 1"),
    ({"tensorrt_version": 1}, "read-only"), ({"shared": "buf"}, "tuple of attribute names"),
    ({"layer_name": Field.str(default="")}, "cannot be named 'layer_name'"),
    ({"setup": Field.str(default="")}, "cannot be named 'setup'"),
    ({"version": Field.str(default="")}, "version must be a str"),
])
def test_bad_declarations(body, message):
    with pytest.raises(PluginDefinitionError, match=message):
        type("Bad", (Plugin,), {"name": "Bad", **body})


def test_a_plugin_needs_a_name():
    class Nameless(Plugin):
        pass

    with pytest.raises(PluginDefinitionError, match="has no plugin name"):
        Nameless()


# -- fields on instances ----------------------------------------------------------------------------

def test_fields_from_onnx_style_fc_and_python(scale):
    p = created(scale, alpha=3, axes=[1, 2], mode="add")  # alpha arrives as INT32
    assert (p.alpha, p.axes, p.mode, p.layer_name) == (3.0, [1, 2], "add", "node0")
    assert Scale(alpha=0.5, axes=(2,)).axes == [2]
    with pytest.raises(FieldError, match="Field 'axes' of plugin 'TestScale' must have every"):
        Scale(axes=[-1])


def test_bad_fields_through_the_creator_name_the_cause(scale, caplog, capfd):
    fc, _ = fields_from_attributes({"mode": "div"}, scale.creator.field_names)
    with caplog.at_level(logging.ERROR, logger="pyplugins"):
        assert trampoline.create_plugin(scale.creator, "bad_node", fc) is None
    assert "plugin 'TestScale' version '2' namespace 'tests' (layer 'bad_node')" in caplog.text
    assert "create_plugin('bad_node', fc{mode:CHAR[4]})" in caplog.text
    assert "must be one of 'mul', 'add' (got 'div')" in caplog.text
    assert "[ERROR] Exception caught in create_plugin(): FieldError" in capfd.readouterr().err


# -- clone ------------------------------------------------------------------------------------------

def test_clone_is_independent_and_reruns_init(scale):
    p = created(scale, axes=[1, 2])
    p.notes = {"seen": [1]}
    c = trampoline.clone(p)
    assert c is not p and type(c) is Scale
    assert trampoline.identity(c) == ("TestScale", "2", "tests")
    assert trampoline.get_nb_outputs(c) == 1
    c.axes.append(3)
    c.notes["seen"].append(2)
    assert p.axes == [1, 2] and p.notes == {"seen": [1]}
    assert c.layer_name == "node0" and c.setup_calls >= 1


def test_configured_source_gives_configured_clone(scale):
    p = created(scale)
    trampoline.configure_plugin(p, [dyn((4, 64))], [dyn((4, 64))])
    c = trampoline.clone(p)
    assert c.params == {"n": 256, "grid": 1} and c.params is not p.params
    trampoline.configure_plugin(c, [dyn((4, 64))], [dyn((4, 64))])  # TensorRT configures clones
    assert trampoline.enqueue(c, [dyn((4, 64)).desc], [dyn((4, 64)).desc], [16], [32], 0, 7) == 0
    assert c.enqueued == (256, 16, 32, 7)


def test_clone_copy_policy_for_device_state_and_launches():
    class FakeDeviceArray:
        pass

    FakeDeviceArray.__module__, FakeDeviceArray.__name__ = "cupy", "ndarray"

    class FakeKernel:
        pass

    FakeKernel.__module__ = "cupy._core.raw"

    class Frozen:
        def __deepcopy__(self, memo):
            raise TypeError("cannot copy")

    class Stateful(Plugin):
        name = "TestStateful"
        shared = ("table",)

    p = Stateful()
    p.buf, p.fn, p.table = FakeDeviceArray(), FakeKernel(), Frozen()
    p.host = np.arange(4)
    p.launch = Launch(0x1234, grid=0, block=256, device=0, args=(POINTER, np.int64(0)))
    c = p.clone()
    assert c.buf is None                     # device buffers: never shared, rebuilt in configure
    assert c.fn is p.fn and c.table is p.table
    assert c.host is not p.host and np.array_equal(c.host, p.host)
    assert type(c.launch) is Launch and c.launch.grid == p.launch.grid
    p.other = Frozen()
    with pytest.raises(PluginDefinitionError, match="cannot copy attribute 'other'.*shared"):
        p.clone()


# -- defaults and return-value conveniences ---------------------------------------------------------

def test_default_datatype_and_formats(scale):
    p = created(scale)
    assert trampoline.get_output_data_type(p, 0, [DT.HALF]) == DT.HALF  # a new object (§12)
    desc = trt.PluginTensorDesc((2,), DT.HALF, trt.TensorFormat.LINEAR)
    assert trampoline.supports_format_combination(p, 1, [desc, desc], 1) is True
    int_desc = trt.PluginTensorDesc((2,), DT.INT32, trt.TensorFormat.LINEAR)
    assert trampoline.supports_format_combination(p, 0, [int_desc, desc], 1) is False
    assert trampoline.get_workspace_size(p, [desc], [desc]) == 0
    assert trampoline.initialize(p) == 0


def test_list_dims_and_numpy_dtypes_are_converted():
    class Conv(Plugin):
        name = "TestConv"

        def get_output_datatype(self, index, input_types):
            return np.float16

        def get_output_dimensions(self, output_index, inputs, expr_builder):
            x = shapes.dims(inputs[0], expr_builder)
            return [x[0], x[1] * 2, 7]

    p = Conv()
    eb = trt.IExprBuilder()
    out = trampoline.get_output_dimensions(p, 0, [eb._input(0, [-1, 3])], eb)
    assert [e._evaluate({0: (5, 3)}) for e in out] == [5, 6, 7]
    assert trampoline.get_output_data_type(p, 0, [DT.FLOAT]) is DT.HALF


def test_errors_are_reported_with_plugin_method_and_arguments(caplog, capfd):
    class Broken(Plugin):
        name = "TestBroken"

        def get_output_datatype(self, index, input_types):
            return "not a type"

        def supports_format_combination(self, pos, in_out, num_inputs):
            return None  # forgot to return

        def configure_plugin(self, inp, out):
            raise ValueError("bad config")

        def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
            return self.launch(stream)

    p = Broken()
    p.layer_name = "conv_3"
    with caplog.at_level(logging.ERROR, logger="pyplugins"):
        assert trampoline.get_output_data_type(p, 0, [DT.HALF]) is DT.FLOAT  # TRT's fallback
        desc = dyn((2, 3), DT.HALF)
        assert trampoline.supports_format_combination(p, 0, [desc.desc], 1) is False
        trampoline.configure_plugin(p, [desc], [desc])
        assert trampoline.enqueue(p, [desc.desc], [desc.desc], [1], [2], 0, 0) == -1
    text = caplog.text
    assert "plugin 'TestBroken' (layer 'conv_3'): get_output_datatype(0, [HALF])" in text
    assert "must return a trt.DataType (got 'not a type')" in text
    assert "supports_format_combination(0, [HALF[2, 3]], 1)" in text
    assert "must return True or False (got None)" in text
    assert "configure_plugin([HALF[2, 3] min=[2, 3] max=[2, 3]]" in text
    assert "ValueError: bad config" in text
    assert "enqueue(" in text and "AttributeError" in text
    assert "[configure_plugin had failed before: ValueError: bad config]" in text
    err = capfd.readouterr().err
    assert "[ERROR] Exception thrown from enqueue()" in err


def test_an_exception_is_reported_once_through_super_calls(caplog):
    class Base(Plugin):
        name = "TestOnce"

        def configure_plugin(self, inp, out):
            raise RuntimeError("inner")

    class Child(Base):
        def configure_plugin(self, inp, out):
            super().configure_plugin(inp, out)

    with caplog.at_level(logging.ERROR, logger="pyplugins"):
        with pytest.raises(RuntimeError):
            Child().configure_plugin([], [])
    assert len(caplog.records) == 1


# -- registration -----------------------------------------------------------------------------------

def test_register_builds_and_registers_the_creator(scale):
    c = scale.creator
    assert isinstance(c, trt.IPluginCreator) and type(c).__name__ == "ScaleCreator"
    assert (c.name, c.plugin_version, c.plugin_namespace) == ("TestScale", "2", "tests")
    assert [(f.name, f.type.name) for f in c.field_names] == [
        ("alpha", "FLOAT32"), ("axes", "INT32"), ("mode", "CHAR")]
    assert trt.get_plugin_registry().get_creator("TestScale", "2", "tests") is c
    assert creator_mod._registry is trt.get_plugin_registry()  # references kept alive
    assert creator_mod.registered()[("TestScale", "2", "tests")] is c


def test_duplicates_and_replace(scale):
    first = scale.creator
    with pytest.raises(RegistrationError, match="already registered.*replace=True"):
        register(scale)

    class Again(Scale):
        pass

    assert Again.creator is None  # a subclass of a registered plugin is not registered
    register(replace=True)(Again)
    assert trt.get_plugin_registry().get_creator("TestScale", "2", "tests") is Again.creator
    assert Again.creator is not first and Scale.creator is None
    assert unregister(Again) and trt.get_plugin_registry().get_creator(
        "TestScale", "2", "tests") is None


def test_register_refuses_incomplete_classes():
    class NoEnqueue(Plugin):
        name = "TestNoEnqueue"

        def get_output_dimensions(self, output_index, inputs, expr_builder):
            return inputs[0]

    with pytest.raises(PluginDefinitionError, match="must define enqueue\\(self, input_desc"):
        register(NoEnqueue)
    with pytest.raises(PluginDefinitionError, match="subclass of pp.Plugin"):
        register(dict)


def test_full_emulated_round_trip(scale):
    p = created(scale, "layer_a", alpha=0.25, axes=[3])
    first = trampoline.serialize(p)
    assert first == trampoline.serialize(p) == trampoline.serialize(trampoline.clone(p))
    q = trampoline.deserialize_plugin(scale.creator, "layer_a", first)
    assert (q.alpha, q.axes, q.mode, q.layer_name) == (0.25, [3], "mul", "layer_a")
    assert trampoline.identity(q) == trampoline.identity(p)
    trampoline.destroy(q)
    assert id(q) not in trampoline.held


# -- the plan / check_shapes / check_configure hooks and the default enqueue ----------------------

def _dyn(dims):
    desc = trt.PluginTensorDesc(list(dims), DT.FLOAT, trt.TensorFormat.LINEAR)
    return trt.DynamicPluginTensorDesc(desc, dims, dims, dims)


class Planned(Plugin):
    """Records each hook call; ``plan`` returns two recording launches."""

    name = "TestPlanned"

    def setup(self):
        self.calls = []

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        return inputs[0]

    def check_configure(self, inp, out):
        self.calls.append(("check_configure", tuple(inp[0].desc.dims)))

    def check_shapes(self, inputs, outputs):
        self.calls.append(("check_shapes", tuple(inputs[0].dims), tuple(outputs[0].dims)))

    def plan(self, inputs, outputs, device):
        self.calls.append(("plan", device))
        return [_Recorder("first", self.calls), _Recorder("second", self.calls)]


class _Recorder:
    def __init__(self, tag, calls):
        self.tag, self.calls = tag, calls

    def __call__(self, stream, *pointers):
        self.calls.append((self.tag, stream, pointers))


def test_plan_waits_for_concrete_dims_and_the_launch_says_why():
    p = Planned()
    with pytest.raises(Exception, match="'TestPlanned': enqueue found no kernel launch .no "
                                        "configure_plugin yet"):
        p.enqueue([], [], [1], [2], 0, 7)
    p.configure_plugin([_dyn((-1, 3))], [_dyn((-1, 3))])
    assert p.calls == [("check_configure", (-1, 3))]  # no check_shapes, no plan at -1
    with pytest.raises(Exception, match="the last configure_plugin saw -1 dims"):
        p.enqueue([], [], [1], [2], 0, 7)


def test_without_a_gpu_check_shapes_runs_plan_does_not_and_enqueue_explains(monkeypatch):
    from pyplugins.runtime import plugin as plugin_mod

    monkeypatch.setattr(plugin_mod, "usable_device", lambda: None)
    p = Planned()
    p.configure_plugin([_dyn((2, 3))], [_dyn((2, 3))])
    assert p.calls == [("check_configure", (2, 3)), ("check_shapes", (2, 3), (2, 3))]
    with pytest.raises(Exception, match="'TestPlanned': enqueue cannot run: there was no "
                                        "usable CUDA GPU"):
        p.enqueue([], [], [1], [2], 0, 7)


def test_default_enqueue_passes_inputs_then_outputs_to_each_planned_launch(monkeypatch):
    from pyplugins.runtime import plugin as plugin_mod

    monkeypatch.setattr(plugin_mod, "usable_device", lambda: 3)
    p = Planned()
    p.configure_plugin([_dyn((2, 3)), _dyn((3,))], [_dyn((2, 3))])
    assert p.calls[-1] == ("plan", 3)
    p.calls.clear()
    p.enqueue([], [], [0x10, 0x20], [0x30], 0, 0x99)
    assert p.calls == [("first", 0x99, (0x10, 0x20, 0x30)), ("second", 0x99, (0x10, 0x20, 0x30))]


def test_a_single_planned_launch_is_kept_as_is(monkeypatch):
    from pyplugins.runtime import plugin as plugin_mod

    class One(Planned):
        name = "TestPlannedOne"

        def plan(self, inputs, outputs, device):
            return Launch(0x1234, grid=0, block=256, device=device, args=(POINTER, POINTER))

    monkeypatch.setattr(plugin_mod, "usable_device", lambda: 0)
    p = One()
    p.configure_plugin([_dyn((2, 3))], [_dyn((2, 3))])
    assert isinstance(p.launch, Launch) and p.launch.skips
    p.enqueue([], [], [1], [2], 0, 0)  # an empty grid launches nothing


def _recording(launch):
    """``launch`` with its driver call replaced by a recorder of (stream, pointers)."""
    seen = []
    launch._go = lambda stream, params, extra: seen.append(
        (stream, *(int.from_bytes(launch.param_bytes(i), "little") for i in range(2))))
    return launch, seen


def test_a_launch_is_handed_to_tensorrt_as_the_plugins_enqueue(caplog):
    """With the default enqueue, setting a Launch stores its bound enqueue on the object, which
    TensorRT's lookup by name finds; anything else removes it; clones get their own; a class
    with its own enqueue keeps it."""
    from pyplugins.runtime.launch import Unlaunchable

    class Fast(Plugin):
        name = "TestFastEnqueue"

        def get_output_dimensions(self, output_index, inputs, expr_builder):
            return inputs[0]

        def plan(self, inputs, outputs, device):
            raise AssertionError("not planned here")

    p = Fast()
    p.layer_name = "fast_1"
    assert "enqueue" not in vars(p)  # an Unlaunchable: the class's enqueue says why
    launch, seen = _recording(Launch(0x1234, grid=0, block=256, device=0,
                                     args=(POINTER, POINTER)))
    p.launch = launch
    assert p.enqueue.__self__ is launch and launch.label == "plugin 'TestFastEnqueue' (layer " \
        "'fast_1')"
    desc = [trt.PluginTensorDesc((2,), trt.DataType.FLOAT, trt.TensorFormat.LINEAR)]
    found = trampoline.overridden(p, "enqueue")  # the binding's lookup by name
    assert found == launch.enqueue
    found(desc, desc, [0x10], [0x20], 0, 7)
    assert seen == [(7, 0x10, 0x20)]
    c = p.clone()
    assert c.launch is not launch and c.enqueue.__self__ is c.launch
    p.launch = Unlaunchable("plugin 'TestFastEnqueue': not today")
    assert "enqueue" not in vars(p)
    with caplog.at_level(logging.ERROR, logger="pyplugins"), pytest.raises(Exception,
                                                                          match="not today"):
        trampoline.overridden(p, "enqueue")(desc, desc, [0x10], [0x20], 0, 7)
    assert "(layer 'fast_1'): enqueue(" in caplog.text  # reported by the class's enqueue

    class Own(Fast):
        name = "TestOwnEnqueue"

        def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
            self.launch(stream, outputs[0], inputs[0])  # its own pointer order

    q = Own()
    q.launch, seen = _recording(Launch(0x1234, grid=0, block=256, device=0,
                                       args=(POINTER, POINTER)))
    assert "enqueue" not in vars(q)
    trampoline.overridden(q, "enqueue")(desc, desc, [0x10], [0x20], 0, 7)
    assert seen == [(7, 0x20, 0x10)]


def test_a_plan_makes_enqueue_optional_but_not_get_output_dimensions():
    from pyplugins.runtime.plugin import missing_methods

    assert missing_methods(Planned) == ()

    class NoDims(Plugin):
        name = "TestNoDims"

        def plan(self, inputs, outputs, device):
            return []

    assert missing_methods(NoDims) == ("get_output_dimensions",)
    assert Plugin.plan is None and Plugin.check_shapes is None and Plugin.reference is None
