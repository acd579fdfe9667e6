"""pp.Plugin as a tensorrt.plugin (QDP) plugin: registration, the shape adapter, attributes,
autotune and the JIT impl, driven through the emulator's stand-in as TensorRT calls it (protocol
§8.4)."""

from __future__ import annotations

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins._config import override
from pyplugins.errors import (FieldError, FormatError, PluginDefinitionError,
                              QDPDefinitionError, RegistrationError, ShapeError)
from pyplugins.ops.bar import BarPlugin
from pyplugins.ops.leaky_relu import LeakyReLU
from pyplugins.ops.rmsnorm import RMSNorm
from pyplugins.ops.seq_repeat import SeqRepeat
from pyplugins.runtime import creator as creator_mod
from pyplugins.runtime import qdp, qdp_functions
from pyplugins.runtime.fields import Field
from pyplugins.runtime.plugin import Plugin
from pyplugins.runtime.qdp_shapes import QdpDims, QdpExpr, QdpExprBuilder

from tests.qdp_support import REQUEST, Built, create, desc

F, H, I8, I32 = trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.INT8, trt.DataType.INT32


class QLeaky(LeakyReLU):
    inputs = 1


class QSeq(SeqRepeat):
    inputs = 1


class QBar(BarPlugin):
    inputs = 2


class QNorm(RMSNorm):
    inputs = 2


#: A plugin that records its configure and enqueue calls (no GPU needed), with every field kind
#: and tactics.
CALLS: list = []
CONFIGURES: list = []


class Recorder(Plugin):
    name = "QdpRecorder"
    inputs = 1
    tactics = ("wide", "narrow")
    scale = Field.float(default=1.0)
    counts = Field.ints(default=[1, 2])
    mode = Field.enum("sum", "max", default="sum")
    flag = Field.bool(default=False)

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        return inputs[0]

    def configure_plugin(self, inp, out):
        super().configure_plugin(inp, out)
        CONFIGURES.append(tuple(inp[0].desc.dims))
        self.seen = (inp[0].desc.dims, self.tactic)

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        CALLS.append({"in": list(inputs), "out": list(outputs), "stream": stream,
                      "dims": tuple(input_desc[0].dims), "type": output_desc[0].type,
                      "fields": (self.scale, self.counts, self.mode, self.flag),
                      "seen": self.seen})


@pytest.fixture
def defined():
    """Define classes as QDP for one test; forget them after."""
    made = []

    def define(cls, **kwargs):
        made.append(cls)
        return qdp.define(cls, **kwargs)

    yield define
    for cls in made:
        qdp.forget(cls)


def test_a_class_registers_as_namespace_name_with_typed_attributes(defined):
    c = defined(QLeaky)
    assert (c.name, c.plugin_namespace, c.plugin_version) == ("LReLU_TRT", "pyplugins", "1")
    assert [(f.name, f.type.name) for f in c.field_names] == [("neg_slope", "FLOAT64")]
    assert isinstance(c, trt.IPluginCreatorV3Quick)
    import pyplugins.emulator.plugin as trtp
    assert trtp.op.pyplugins.LReLU_TRT.num_outputs == 1
    c2 = defined(Recorder)
    assert [(f.name, f.type.name) for f in c2.field_names] == [
        ("scale", "FLOAT64"), ("counts", "INT64"), ("mode", "CHAR"), ("flag", "INT8")]


@pytest.mark.parametrize("cls, values, shapes, at, expected", [
    (QLeaky, {"neg_slope": 0.2}, [(-1, 8)], [(5, 8)], [(5, 8)]),
    (QSeq, {"factor": 3}, [(2, -1, 4)], [(2, 7, 4)], [(2, 21, 4)]),
    (QBar, {}, [(-1, 3), (-1, 3)], [(2, 3), (5, 3)], [(7, 3), (5, 3)]),
    (QNorm, {"eps": 1e-5}, [(-1, 9, 64), (64,)], [(3, 9, 64), (64,)], [(3, 9, 64)]),
])
def test_output_shapes_come_from_get_output_dimensions(defined, cls, values, shapes, at, expected):
    defined(cls)
    built = Built(create(cls, values), shapes, [H] * len(shapes))
    assert built.out_types == [H] * cls.outputs
    assert built.out_shapes(at) == expected
    assert built.out_exprs[0][-1].is_constant()  # constant dims stay constant
    assert not built.out_exprs[0][0].is_constant() or shapes[0][0] != -1


def test_shape_adapter_maps_every_operation():
    import pyplugins.emulator.plugin as trtp
    from pyplugins.emulator.plugin.sym_exprs import set_expr_builder
    ops = trt.DimensionOperation
    eb = trt.IExprBuilder()
    set_expr_builder(eb)
    try:
        a, b = (QdpExpr(trtp.ShapeExpr(d)) for d in eb._input(0, (-1, -1)))
        qb = QdpExprBuilder(trtp)
        expected = {ops.SUM: 17, ops.SUB: 11, ops.PROD: 42, ops.FLOOR_DIV: 4, ops.CEIL_DIV: 5,
                    ops.MAX: 14, ops.MIN: 3, ops.EQUAL: 0, ops.LESS: 0}
        for op, value in expected.items():
            got = qb.operation(op, a, b).sym._expr._evaluate({0: (14, 3)})
            assert got == value, op
        seven = qb.constant(7)
        assert seven.is_constant() and seven.get_constant_value() == 7
        assert not a.is_constant() and a.get_constant_value() == -(2**63)
        with pytest.raises(ShapeError, match="second operand"):
            qb.operation(ops.SUM, a, 3)
        with pytest.raises(ShapeError, match="size tensors"):
            qb.declare_size_tensor(1, a, b)
        assert len(qb.dims_exprs(3)) == 3 and isinstance(qb.dims_exprs(0), QdpDims)
    finally:
        set_expr_builder(None)


def test_attributes_keep_the_plugins_validation_and_messages(defined):
    defined(QSeq)
    with pytest.raises(FieldError, match=r"Field 'factor' of plugin 'SeqRepeat' must be >= 1 "
                                         r"\(got 0\)"):
        Built(create(QSeq, attrs={"factor": np.array([0], np.int64)}), [(2, 3)], [F])
    with pytest.raises(FieldError, match="Field 'factor' of plugin 'SeqRepeat' must be an int"):
        Built(create(QSeq, attrs={"factor": np.array([2, 3], np.int64)}), [(2, 3)], [F])
    with pytest.raises(FieldError, match=r"got no attribute 'factor'.*every attribute"):
        Built(create(QSeq, attrs={}), [(2, 3)], [F])
    # an ONNX node's INT arrives as int32 and converts; the output follows it
    built = Built(create(QSeq, attrs={"factor": np.array([4], np.int32)}), [(2, 3)], [F])
    assert built.out_shapes([(2, 3)]) == [(2, 12)]


def test_every_field_kind_travels_and_strings_lose_the_parsers_nul(defined):
    defined(Recorder)
    attrs = {"scale": np.array([0.5], np.float32), "counts": np.array([3, 4], np.int32),
             "mode": "max\0", "flag": np.array([1], np.int32)}
    plugin = create(Recorder, attrs=attrs)
    plugin.get_output_data_types([F], [1])
    d = qdp.definition(qdp.plugin_id(Recorder))
    made = d.plugin([plugin.attrs[k] for k in ("scale", "counts", "mode", "flag")])
    assert (made.scale, made.counts, made.mode, made.flag) == (0.5, [3, 4], "max", True)
    with pytest.raises(FieldError, match="Field 'mode' of plugin 'QdpRecorder' must be one of"):
        create(Recorder, attrs={**attrs, "mode": "min"}).get_output_data_types([F], [1])


def test_autotune_offers_the_classes_format_rules_and_tactics(defined):
    defined(QBar)
    built = Built(create(QBar), [(2, 3), (4, 3)], [F, F])
    assert built.combinations() == [("FLOAT",) * 4, ("HALF",) * 4, ("INT8",) * 4, ("INT32",) * 4]
    built.configure([I8] * 4)
    assert built.plugin.get_valid_tactics() == []  # no tactics: TensorRT uses 0
    defined(Recorder)
    rec = Built(create(Recorder), [(2, 3)], [H])
    assert rec.combinations() == [("FLOAT", "FLOAT"), ("HALF", "HALF")]
    rec.configure([H, H], tactic=2)
    assert sorted(rec.plugin.get_valid_tactics()) == [1, 2]


def test_autotune_refuses_when_nothing_is_accepted(defined):
    class Picky(Recorder):
        name = "QdpPicky"

        def supports_format_combination(self, pos, in_out, num_inputs):
            return False

    defined(Picky)
    built = Built(create(Picky), [(2, 3)], [F])
    with pytest.raises(FormatError, match="accepts no type/format combination"):
        built.combinations()


def test_impl_configures_once_per_shape_and_enqueues_on_trts_stream(defined):
    defined(Recorder)
    CALLS.clear()
    CONFIGURES.clear()
    plugin = create(Recorder, {"scale": 2.0, "mode": "max"}, REQUEST.PREFER_JIT)
    built = Built(plugin, [(-1, 3)], [H], lo=[(1, 3)], hi=[(8, 3)])
    built.configure([H, H], tactic=2)
    runtime = plugin.clone()
    strides = [trt.Dims((3, 1))]
    for ptrs, stream in (([100], 7), ([200], 8)):
        runtime.enqueue([desc((4, 3), H)], [desc((4, 3), H)], ptrs, [300], strides, strides,
                        stream)
    runtime.enqueue([desc((5, 3), H)], [desc((5, 3), H)], [100], [300], strides, strides, 9)
    first, second, third = CALLS
    assert (first["in"], first["out"], first["stream"], first["dims"]) == ([100], [300], 7, (4, 3))
    assert first["type"] == H and first["fields"] == (2.0, [1, 2], "max", False)
    assert first["seen"] == ((4, 3), "narrow")  # configured with concrete dims and the tactic
    assert (second["in"], second["stream"]) == ([200], 8)
    assert third["dims"] == (5, 3)
    assert CONFIGURES == [(4, 3), (5, 3)]  # configured once per shape, not per enqueue
    with pytest.raises(FormatError, match="contiguous"):
        runtime.enqueue([desc((4, 3), H)], [desc((4, 3), H)], [1], [2], [trt.Dims((1, 4))],
                        strides, 0)


def test_impl_refuses_a_workspace(defined):
    class Greedy(Recorder):
        name = "QdpGreedy"

        def get_workspace_size(self, input_desc, output_desc):
            return 256

    defined(Greedy)
    plugin = create(Greedy, {}, REQUEST.PREFER_JIT)
    Built(plugin, [(2, 3)], [F]).configure([F, F], tactic=1)
    strides = [trt.Dims((3, 1))]
    with pytest.raises(PluginDefinitionError, match="256 bytes of workspace"):
        plugin.enqueue([desc((2, 3), F)], [desc((2, 3), F)], [1], [2], strides, strides, 0)


@pytest.mark.parametrize("attrs, message", [
    ({"inputs": None}, "set inputs = N"),
    ({"inputs": 0}, "at least one input"),
    ({"version": "2"}, "always version '1'"),
    ({"namespace": "trt"}, "reserved by TensorRT"),
    ({"namespace": "a.b"}, "must not contain"),
    ({"aliases": {0: 0}}, "aliases cannot be served"),
    ({"stream": Field.int(default=0)}, "field 'stream' clashes"),
    ({"inp0": Field.int(default=0)}, "field 'inp0' clashes"),
])
def test_classes_qdp_cannot_serve_are_refused_with_the_reason(attrs, message):
    cls = type("Odd", (Recorder,), {"name": "QdpOdd", **attrs})
    with pytest.raises(PluginDefinitionError, match=message):
        qdp.define(cls)


def test_registration_swaps_classes_only_when_asked_and_never_steals_a_key(defined):
    defined(QLeaky)
    assert defined(QLeaky).name == "LReLU_TRT"  # the same class again: fine

    class Other(QLeaky):
        pass

    with pytest.raises(RegistrationError, match="already serves class"):
        defined(Other)
    defined(Other, replace=True)
    assert qdp.definition("pyplugins::LReLU_TRT").cls is Other

    class Numbered(Recorder):
        name, namespace = "QdpTaken", "taken_ns"

    creator_mod.register(Numbered, interface="v2")
    try:
        with pytest.raises(RegistrationError, match="cannot coexist"):
            defined(Numbered)
    finally:
        creator_mod.unregister(Numbered)


def test_pp_register_and_the_interface_knob_pick_qdp():
    class Knobbed(Recorder):
        name = "QdpKnobbed"

    with override(interface="qdp"):
        assert creator_mod.default_interface(Knobbed) == "qdp"
        creator_mod.register(Knobbed)
    try:
        assert Knobbed.creator.plugin_namespace == "pyplugins"
        assert creator_mod.registered()[("QdpKnobbed", "1", "pyplugins")] is Knobbed.creator
    finally:
        assert creator_mod.unregister(Knobbed)
    assert Knobbed.creator is None and qdp.definition("pyplugins::QdpKnobbed") is None
    with pytest.raises(PluginDefinitionError, match="makes and registers a QDP creator itself"):
        creator_mod.make_creator(Knobbed, "qdp")
    with override(interface="qdp4"), pytest.raises(ValueError, match="auto, v2, v3 or qdp"):
        creator_mod.default_interface(Knobbed)


def test_under_the_knob_a_class_qdp_cannot_serve_takes_the_auto_rule(caplog):
    uncounted = type("Uncounted", (Recorder,), {"name": "QdpUncounted", "inputs": None,
                                                "tactics": ()})
    with override(interface="qdp"):
        assert creator_mod.default_interface(uncounted) == "v2"
        assert creator_mod.default_interface(QLeaky) == "qdp"
    assert "set inputs = N" in caplog.text and "auto rule" in caplog.text
    with pytest.raises(PluginDefinitionError, match="set inputs = N"):
        qdp.define(uncounted)  # asked for explicitly, it is an error


def test_a_forgotten_plugins_functions_say_so(defined):
    defined(QLeaky)
    plugin = create(QLeaky, {"neg_slope": 0.1})
    assert plugin.get_output_data_types([F], [2]) == [F]
    assert qdp.forget(QLeaky) and not qdp.forget(QLeaky)
    assert trt.get_plugin_registry().get_creator("LReLU_TRT", "1", "pyplugins") is None
    with pytest.raises(RegistrationError, match="forgotten by pyplugins"):
        plugin.get_output_data_types([F], [2])  # a plugin made before: its functions say so


def test_signatures_are_the_annotated_ones_qdp_validates():
    import pyplugins.emulator.plugin as trtp
    d = qdp_functions.QdpDefinition(QBar, trtp, 2)
    assert str(qdp_functions.signature(d, "impl")) == "(inp0, inp1, outputs, stream, tactic)"
    assert str(qdp_functions.signature(d, "aot_impl")).startswith("(inp0, inp1, outputs, tactic)")
    register_sig = qdp_functions.signature(d, "register")
    assert [p.annotation for p in register_sig.parameters.values()] == [trtp.TensorDesc] * 2
    with pytest.raises(QDPDefinitionError):  # what QDP itself says of a wrong signature
        trtp.register("pyplugins::QdpBadSig")(lambda inp0: inp0)
