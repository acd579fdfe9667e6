"""pp.Plugin as IPluginV3: one class serves both interfaces, driven through the emulator's V3
trampoline as TensorRT calls it (protocol §2.5, §7); tactics; V3 field serialization; the
V3-only capabilities (size tensors, shape inputs, aliased I/O); the interface choice."""

from __future__ import annotations

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.runtime import creator as creator_mod
from pyplugins.runtime import tactics, v3_fields
from pyplugins._config import override
from pyplugins.emulator import trampoline, trampoline_v3
from pyplugins.emulator.onnx_import import fields_from_attributes
from pyplugins.checker.size_tensors import SizeTensorBuilder
from pyplugins.runtime.fields import Field
from pyplugins.errors import FieldError, PluginDefinitionError, SerializationError
from pyplugins.ops import (BarPlugin, CircPad, LeakyReLU, LeakyReLUNumba, Pool, RMSNorm, RoPE,
                           SeqRepeat)
from pyplugins.runtime.plugin import Plugin
from pyplugins.runtime.plugin_v3 import adapter_class

from tests import v3_plugins
from tests.ops.support import Junk

F, H = trt.DataType.FLOAT, trt.DataType.HALF
CORE, BUILD, RUNTIME = (trt.PluginCapabilityType.CORE, trt.PluginCapabilityType.BUILD,
                        trt.PluginCapabilityType.RUNTIME)

#: Every shipped op with fields and concrete input shapes (dim 0 is made dynamic) and types.
OPS = [
    (CircPad, {"pads": [1, 1, 2, 2]}, [(2, 3, 8, 8)], [F]),
    (LeakyReLU, {"neg_slope": 0.2}, [(2, 3, 5)], [H]),
    (LeakyReLUNumba, {"neg_slope": 0.2}, [(2, 3, 5)], [F]),
    (BarPlugin, {}, [(2, 3, 5), (4, 3, 5)], [H, H]),
    (Pool, {"mode": "avg", "kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]},
     [(2, 3, 12, 9)], [H]),
    (RMSNorm, {"eps": 1e-5}, [(2, 7, 48), (48,)], [H, H]),
    (RoPE, {"rotary_dim": 32, "layout": "gptj"}, [(2, 9, 4, 64)], [H]),
    (SeqRepeat, {"factor": 3}, [(2, 5, 3)], [F]),
]
IDS = [cls.__name__ for cls, *_ in OPS]


def _fc(cls, fields):
    fc, _ = fields_from_attributes(fields, [f.name for f in cls.creator.field_names])
    return list(fc)


def _desc(dims, dtype):
    return trt.PluginTensorDesc(list(dims), dtype, trt.TensorFormat.LINEAR)


def _dyn(dims, dtype, lo=None, hi=None):
    net = [-1] + list(dims[1:]) if lo is not None else list(dims)
    return trt.DynamicPluginTensorDesc(_desc(net, dtype), lo or dims, dims, hi or dims)


def _shapes(plugin, in_shapes, v3=True, at=None):
    """Every output's dims with dim 0 of each input dynamic, evaluated at ``at``."""
    eb = trt.IExprBuilder()
    exprs = [eb._input(i, [-1, *s[1:]]) for i, s in enumerate(in_shapes)]
    at = at or {i: tuple(s) for i, s in enumerate(in_shapes)}
    if v3:
        outs = trampoline_v3.get_output_shapes(plugin, exprs, [], eb)
    else:
        outs = [trampoline.get_output_dimensions(plugin, i, exprs, eb)
                for i in range(trampoline.get_nb_outputs(plugin))]
    values = [tuple(e._evaluate(at) for e in dims) for dims in outs]
    eb._expire()
    return values


def _v3(cls, fields, name="node"):
    creator = creator_mod.make_creator(cls, "v3")
    p0 = trampoline_v3.create_plugin(creator, name, _fc(cls, fields), trt.TensorRTPhase.BUILD)
    assert p0 is not None
    return creator, p0


# -- one class, both interfaces --------------------------------------------------------------------

@pytest.mark.parametrize("cls,fields,in_shapes,types", OPS, ids=IDS)
def test_shipped_op_answers_v3_as_it_answers_v2(cls, fields, in_shapes, types):
    v2 = trampoline.create_plugin(creator_mod.make_creator(cls, "v2"), "node", _fc(cls, fields))
    creator, p0 = _v3(cls, fields)
    p1 = trampoline_v3.clone(p0)
    assert p1 is not p0 and p1.plugin is not p0.plugin
    assert [trampoline_v3.get_capability_interface(p1, k) for k in (CORE, BUILD, RUNTIME)] == \
        [p1, p1, p1]
    assert trampoline_v3.identity(p1) == (cls.name, cls.version, cls.namespace)
    n_out = trampoline_v3.get_nb_outputs(p1)
    assert n_out == trampoline.get_nb_outputs(v2) == cls.outputs

    out_types = trampoline_v3.get_output_data_types(p1, types)
    assert out_types == [trampoline.get_output_data_type(v2, i, types) for i in range(n_out)]
    out_shapes = _shapes(p1, in_shapes)
    assert out_shapes == _shapes(v2, in_shapes, v3=False)

    lo = [(1, *s[1:]) for s in in_shapes]
    hi = [(4, *s[1:]) for s in in_shapes]
    ins = [_dyn(s, t, lo=a, hi=b) for s, t, a, b in zip(in_shapes, types, lo, hi)]
    outs = [_dyn(s, t) for s, t in zip(out_shapes, out_types)]
    every = ins + outs
    for pos in range(len(every)):  # the accepted combination, position by position
        junk = [Junk()] * (len(every) - pos - 1)
        assert trampoline_v3.supports_format_combination(p1, pos, every[:pos + 1] + junk,
                                                         len(ins))
        v2_view = [d.desc for d in every]
        assert trampoline.supports_format_combination(v2, pos, v2_view, len(ins))
    assert trampoline_v3.configure_plugin(p1, ins, outs) == 0
    assert trampoline_v3.get_workspace_size(p1, ins, outs) == 0
    offered = trampoline_v3.get_valid_tactics(p1)
    assert offered == list(tactics.declared(cls))
    for tactic in [0, *offered]:
        assert trampoline_v3.set_tactic(p1, tactic) == 0
        assert p1.plugin.tactic == tactics.tactic_name(cls, tactic)
        concrete_in = [_desc(s, t) for s, t in zip(in_shapes, types)]
        concrete_out = [_desc(s, t) for s, t in zip(out_shapes, out_types)]
        assert trampoline_v3.on_shape_change(p1, concrete_in, concrete_out) == 0

    fields1 = trampoline_v3.get_fields_to_serialize(p1)
    fields2 = trampoline_v3.get_fields_to_serialize(p1)
    assert [(f.name, f.type, f.data.tobytes()) for f in fields1] == \
        [(f.name, f.type, f.data.tobytes()) for f in fields2]
    pr = trampoline_v3.create_plugin(creator, "node", list(fields1), trt.TensorRTPhase.RUNTIME)
    assert pr.plugin.field_values() == p1.plugin.field_values() == v2.field_values()
    assert [trampoline_v3.get_capability_interface(pr, k) for k in (CORE, RUNTIME)] == [pr, pr]
    pc = trampoline_v3.attach_to_context(pr, trt.IPluginResourceContext._make(0))
    assert pc is not pr and pc.plugin is not pr.plugin
    assert trampoline_v3.set_tactic(pc, offered[-1] if offered else 0) == 0
    assert pr.plugin.tactic is None  # the context's clone is independent


def test_v2_registration_is_unchanged():
    v2 = trampoline.create_plugin(creator_mod.make_creator(LeakyReLU, "v2"), "n",
                                  _fc(LeakyReLU, {"neg_slope": 0.3}))
    assert type(v2) is LeakyReLU and v2.neg_slope == pytest.approx(0.3)


def test_adapter_is_every_v3_base_and_build_v2():
    cls = adapter_class(CircPad)
    for base in (trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuildV2,
                 trt.IPluginV3OneRuntime):
        assert issubclass(cls, base)
    assert adapter_class(CircPad) is cls  # made once per class
    assert cls.__name__ == "CircPadV3"


def test_supports_format_combination_reads_only_up_to_pos():
    _, p = _v3(LeakyReLU, {"neg_slope": 0.1})
    first = _dyn((2, 3), H)
    assert trampoline_v3.supports_format_combination(p, 0, [first, Junk()], 1)


def test_an_error_in_the_users_method_names_the_plugin(caplog, capfd):
    _, p = _v3(CircPad, {"pads": [1, 1]})
    eb = trt.IExprBuilder()
    two = [eb._input(0, [2, 3]), eb._input(1, [2, 3])]
    assert trampoline_v3.get_output_shapes(p, two, [], eb) is None
    assert "Exception" in capfd.readouterr().err
    assert "'CircPad'" in caplog.text and "exactly 1 input" in caplog.text


# -- tactics ---------------------------------------------------------------------------------------

def test_circ_pad_offers_its_two_kernels():
    assert tactics.declared(CircPad) == {1: "staged", 2: "strips"}
    assert CircPad.strips_kernel.options[-1] == "-DCIRC_PAD_STAGE_BYTES=0"
    assert CircPad(pads=[1, 1]).tactic is None  # V2, and V3's default tactic 0


def test_tactic_survives_clone_and_attach():
    creator, p = _v3(CircPad, {"pads": [1, 1]})
    assert trampoline_v3.set_tactic(p, 2) == 0
    c = trampoline_v3.clone(p)
    assert c.plugin.tactic == "strips"
    pc = trampoline_v3.attach_to_context(c, trt.IPluginResourceContext._make(0))
    assert pc.plugin.tactic == "strips"


def test_unknown_tactic_is_refused(caplog):
    _, p = _v3(CircPad, {"pads": [1, 1]})
    assert trampoline_v3.set_tactic(p, 7) == -1
    assert "set_tactic(7) names a tactic it never offered" in caplog.text
    assert "1 ('staged'), 2 ('strips')" in caplog.text


@pytest.mark.parametrize("value,match", [
    ({0: "a"}, "1..2\\*\\*31-1"), (("a", "a"), "given twice"), ("ab", "tuple of names"),
    ({1: ""}, "non-empty"), ({True: "a"}, "must be an int"),
])
def test_bad_tactics_declarations(value, match):
    class Op(Plugin):
        name = "BadTactics"
        tactics = value

    with pytest.raises(PluginDefinitionError, match=match):
        tactics.declared(Op)


def test_tactic_dict_keeps_ids():
    class Op(Plugin):
        name = "DictTactics"
        tactics = {7: "wide", 3: "narrow"}

    assert tactics.declared(Op) == {7: "wide", 3: "narrow"}
    assert tactics.tactic_name(Op, 3) == "narrow"


# -- V3 field serialization ------------------------------------------------------------------------

class Wide(Plugin):
    name = "WideFields"
    big = Field.int(default=0)
    ratio = Field.float(default=0.1)
    flags = Field.bool(default=True)
    label = Field.str(default="é")
    sizes = Field.ints(default=[])


def test_fields_round_trip_exactly_at_full_width():
    p = Wide(big=2**40, ratio=0.1, flags=False, label="ü-x", sizes=[-1, 2**33])
    fc = v3_fields.collection(p)
    assert [f.type.name for f in fc] == ["CHAR", "INT64", "FLOAT64", "INT32", "CHAR", "INT64"]
    back = Wide(**v3_fields.values(Wide, fc))
    assert back.field_values() == p.field_values()
    assert back.ratio == 0.1  # not rounded through float32


def test_fields_of_another_plugin_or_version_are_refused():
    fc = list(v3_fields.collection(Wide()))
    with pytest.raises(SerializationError, match="written by plugin 'WideFields'"):
        v3_fields.values(CircPad, fc)
    with pytest.raises(SerializationError, match="did not write"):
        v3_fields.values(Wide, fc[1:])
    newer = v3_fields._char(v3_fields.HEADER, b'{"format":99,"plugin":"WideFields","version":"1"}')
    with pytest.raises(SerializationError, match="newer than this pyplugins reads"):
        v3_fields.values(Wide, [newer, *fc[1:]])


def test_a_changed_schema_is_refused_by_field_name():
    fc = list(v3_fields.collection(Wide()))
    fc.append(trt.PluginField("gone", np.array([1], np.int64), trt.PluginFieldType.INT64))
    with pytest.raises(FieldError, match="no field 'gone'"):
        v3_fields.values(Wide, fc)


# -- capabilities only V3 has ----------------------------------------------------------------------

def test_shape_input_values_reach_get_output_dimensions():
    _, p = _v3(v3_plugins.Tile, {})
    eb = trt.IExprBuilder()
    value = trt.DimsExprs([eb.constant(10)])
    (out,) = trampoline_v3.get_output_shapes(p, [eb._input(0, [3])], [value], eb)
    assert [e.get_constant_value() for e in out] == [10]


def test_a_missing_shape_input_is_reported(caplog):
    _, p = _v3(v3_plugins.Tile, {})
    eb = trt.IExprBuilder()
    assert trampoline_v3.get_output_shapes(p, [eb._input(0, [3])], [], eb) is None
    assert "declares shape_inputs = 1 but the network gives it 0" in caplog.text


def test_size_tensor_output_is_0d_and_sizes_the_other_output():
    _, p = _v3(v3_plugins.NonZero, {})
    assert trampoline_v3.get_output_data_types(p, [F]) == [trt.DataType.INT32,
                                                           trt.DataType.INT64]
    eb = SizeTensorBuilder()  # the builder a V3 get_output_shapes receives
    idx, count = trampoline_v3.get_output_shapes(p, [eb._input(0, [4, 5])], [], eb)
    assert len(count) == 0
    assert idx[0].is_size_tensor() and idx[1].get_constant_value() == 2


def test_aliased_output_names_its_input():
    _, p = _v3(v3_plugins.LeakyReLUInPlace, {"neg_slope": 0.1})
    assert isinstance(p, trt.IPluginV3OneBuildV2)
    assert trampoline_v3.get_aliased_input(p, 0) == 0
    _, plain = _v3(LeakyReLU, {"neg_slope": 0.1})
    assert trampoline_v3.get_aliased_input(plain, 0) == -1


@pytest.mark.parametrize("cls", [v3_plugins.NonZero, v3_plugins.Tile, v3_plugins.LeakyReLUInPlace])
def test_v3_only_classes_refuse_v2_and_default_to_v3(cls):
    with pytest.raises(PluginDefinitionError, match="register it with interface='v3'"):
        creator_mod.make_creator(cls, "v2")
    assert cls.creator.interface == "v3" and isinstance(cls.creator, trt.IPluginCreatorV3One)


@pytest.mark.parametrize("attr,value,match", [
    ("aliases", {1: 0}, "below outputs=1"), ("aliases", [0], "dict"),
    ("size_tensors", (0, 0), "distinct"), ("shape_inputs", -1, "int >= 0"),
])
def test_bad_v3_attributes(attr, value, match):
    Op = type("Op", (Plugin,), {"name": "BadV3", attr: value,  # noqa: N806 - a class
                                "get_output_dimensions": lambda *a: a[2][0],
                                "enqueue": lambda *a: None})
    with pytest.raises(PluginDefinitionError, match=match):
        creator_mod.make_creator(Op, "v3")


def test_adapter_hands_tensorrt_its_plugins_own_enqueue():
    """TensorRT finds the adapter's enqueue by name: the wrapped plugin's bound enqueue (no
    forwarding frame), a clone's bound to the clone's plugin; errors still report and fail."""
    seen = []

    class Rec(Plugin):
        name = "RecordEnqueueV3"

        def get_output_dimensions(self, output_index, inputs, expr_builder):
            return inputs[0]

        def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
            if stream == 13:
                raise ValueError("unlucky stream")
            seen.append((self, inputs, outputs, workspace, stream))

    adapter = adapter_class(Rec)(Rec())
    clone = adapter.clone()
    assert adapter.enqueue == adapter.plugin.enqueue and clone.enqueue == clone.plugin.enqueue
    trampoline_v3.on_shape_change(clone, [trt.PluginTensorDesc((2,), trt.DataType.FLOAT,
                                                               trt.TensorFormat.LINEAR)],
                                  [trt.PluginTensorDesc((2,), trt.DataType.FLOAT,
                                                        trt.TensorFormat.LINEAR)])
    desc = [trt.PluginTensorDesc((2,), trt.DataType.FLOAT, trt.TensorFormat.LINEAR)]
    assert trampoline_v3.enqueue(clone, desc, desc, [0x10], [0x20], 0, 7) == 0
    assert seen == [(clone.plugin, [0x10], [0x20], 0, 7)]
    assert trampoline_v3.enqueue(clone, desc, desc, [0x10], [0x20], 0, 13) == -1


def test_adapter_takes_the_plugins_launch_again_whenever_it_configures(monkeypatch):
    """The adapter's enqueue follows the plugin's launch: the Launch's own enqueue after
    on_shape_change plans one, the class path again once a build-phase configure resets it."""
    from pyplugins.runtime import plugin as plugin_mod
    from pyplugins.runtime.launch import POINTER, Launch

    class Planned(Plugin):
        name = "PlannedV3Enqueue"

        def get_output_dimensions(self, output_index, inputs, expr_builder):
            return inputs[0]

        def plan(self, inputs, outputs, device):
            return Launch(0x1234, grid=0, block=256, device=device, args=(POINTER, POINTER))

    monkeypatch.setattr(plugin_mod, "usable_device", lambda: 0)
    adapter = adapter_class(Planned)(Planned())
    desc = trt.PluginTensorDesc((2,), trt.DataType.FLOAT, trt.TensorFormat.LINEAR)
    assert trampoline_v3.on_shape_change(adapter, [desc], [desc]) == 0
    launch = adapter.plugin.launch
    assert isinstance(launch, Launch) and adapter.enqueue.__self__ is launch
    assert trampoline_v3.enqueue(adapter, [desc], [desc], [0x10], [0x20], 0, 7) == 0
    assert launch.param_bytes(1) == (0x20).to_bytes(8, "little")
    build = trt.DynamicPluginTensorDesc(trt.PluginTensorDesc((-1,), trt.DataType.FLOAT,
                                                             trt.TensorFormat.LINEAR),
                                        min=(1,), opt=(2,), max=(4,))
    trampoline_v3.configure_plugin(adapter, [build], [build])
    assert adapter.enqueue.__self__ is adapter.plugin  # an Unlaunchable now: the class path
    assert trampoline_v3.enqueue(adapter, [desc], [desc], [0x10], [0x20], 0, 7) == -1


# -- which interface -------------------------------------------------------------------------------

def test_default_interface_rule(monkeypatch):
    assert creator_mod.default_interface(LeakyReLU) == "v2"  # TensorRT still binds V2
    assert creator_mod.default_interface(v3_plugins.Tile) == "v3"  # needs V3
    with override(interface="v3"):
        assert creator_mod.default_interface(LeakyReLU) == "v3"
    with override(interface="v2"):
        assert creator_mod.default_interface(LeakyReLU) == "v2"
    class WithoutV2:  # a TensorRT that no longer binds IPluginV2DynamicExt
        def __getattr__(self, name):
            if name == "IPluginV2DynamicExt":
                raise AttributeError(name)
            return getattr(trt, name)

    monkeypatch.setattr(creator_mod, "trt", WithoutV2())
    assert creator_mod.default_interface(LeakyReLU) == "v3"


def test_unknown_interface_is_refused():
    with pytest.raises(PluginDefinitionError, match="interface must be one of 'v2', 'v3'"):
        creator_mod.make_creator(LeakyReLU, "v4")


def test_register_as_v3_and_back():
    try:
        creator_mod.register(LeakyReLU, replace=True, interface="v3")
        found = trt.get_plugin_registry().get_creator("LReLU_TRT", "1", "")
        assert isinstance(found, trt.IPluginCreatorV3One) and found is LeakyReLU.creator
    finally:
        creator_mod.register(LeakyReLU, replace=True, interface="v2")
    assert isinstance(LeakyReLU.creator, trt.IPluginCreator)


# -- on the GPU: the kernels behind the adapter ----------------------------------------------------

def _run_v3(cls, fields, xs, out_shapes, out_dtypes, tactic=0, outputs=None):
    """Drive a V3 plugin as a TensorRT runtime context does and run its enqueue on CuPy arrays."""
    import cupy as cp

    _, p = _v3(cls, fields)
    pc = trampoline_v3.attach_to_context(p, trt.IPluginResourceContext._make(0))
    assert trampoline_v3.set_tactic(pc, tactic) == 0
    ys = outputs if outputs is not None else [cp.zeros(s, d)
                                              for s, d in zip(out_shapes, out_dtypes)]
    in_desc = [_desc(x.shape, _trt_type(x.dtype)) for x in xs]
    out_desc = [_desc(y.shape, _trt_type(y.dtype)) for y in ys]
    assert trampoline_v3.on_shape_change(pc, in_desc, out_desc) == 0
    stream = cp.cuda.Stream(non_blocking=True)
    status = trampoline_v3.enqueue(pc, in_desc, out_desc, [x.data.ptr for x in xs],
                                   [y.data.ptr for y in ys], 0, stream.ptr)
    stream.synchronize()
    assert status == 0
    return [cp.asnumpy(y) for y in ys]


def _trt_type(dtype):
    from pyplugins import dtypes

    return getattr(trt.DataType, dtypes.trt_name_from_numpy(np.dtype(dtype).name))


@pytest.mark.gpu
@pytest.mark.parametrize("tactic", [0, 1, 2])
@pytest.mark.parametrize("shape,pads,dtype", [
    ((2, 3, 8, 8), [1, 1, 2, 2], np.float32), ((64, 3), [1, 1], np.float16),
    ((2, 5000), [3, 2], np.float32), ((3, 4, 7), [9, 0, 1, 1], np.int8),
])
def test_circ_pad_tactics_are_bit_exact(tactic, shape, pads, dtype):
    import cupy as cp

    from pyplugins.ops.circ_pad import pad_widths

    x = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    want = np.pad(x, pad_widths(len(shape), pads), mode="wrap")
    (got,) = _run_v3(CircPad, {"pads": pads}, [cp.asarray(x)], [want.shape], [dtype], tactic)
    assert np.array_equal(got, want)


@pytest.mark.gpu
def test_non_zero_writes_indices_and_count():
    import cupy as cp

    x = np.float32([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 0, 4]])
    idx, count = _run_v3(v3_plugins.NonZero, {}, [cp.asarray(x)], [(12, 2), ()],
                         [np.int32, np.int64])
    want_idx, want_count = v3_plugins.NonZero().reference(x)
    assert int(count) == int(want_count) == 4
    assert np.array_equal(idx[:4], want_idx)


@pytest.mark.gpu
def test_tile_fills_the_shape_input_length():
    import cupy as cp

    x = np.float32([1, 2, 3])
    (y,) = _run_v3(v3_plugins.Tile, {}, [cp.asarray(x)], [(8,)], [np.float32])
    assert np.array_equal(y, np.resize(x, 8))


@pytest.mark.gpu
def test_aliased_leaky_relu_is_right_in_place():
    import cupy as cp

    x = np.float32([-2.0, -0.5, 0.0, 3.0] * 300)
    buf = cp.asarray(x)
    (y,) = _run_v3(v3_plugins.LeakyReLUInPlace, {"neg_slope": 0.25}, [buf], [x.shape],
                   [np.float32], outputs=[buf])  # TensorRT hands the input's buffer back
    (want,) = LeakyReLU(neg_slope=0.25).reference(x)
    assert np.array_equal(y, want)


def test_v3_creator_advertises_every_name_the_class_accepts():
    creator = creator_mod.make_creator(LeakyReLU, "v3")
    assert [f.name for f in creator.field_names] == ["neg_slope", "negSlope"]
    field = trt.PluginField("negSlope", np.array([0.3], np.float32), trt.PluginFieldType.FLOAT32)
    p = trampoline_v3.create_plugin(creator, "n", [field], trt.TensorRTPhase.BUILD)
    assert p.plugin.neg_slope == pytest.approx(0.3)


def test_tactics_benchmark_says_why_it_skips_without_a_gpu(capsys):
    import json

    from benchmarks import tactics as bench

    if bench._cupy()[0] is not None:
        pytest.skip("a GPU is visible: test_tactics_benchmark_runs_tiny covers it")
    assert bench.main(["--shapes", "tiny"]) == 0
    assert "no usable CUDA GPU" in json.loads(capsys.readouterr().out)["skipped"]


@pytest.mark.gpu
def test_tactics_benchmark_runs_tiny(capsys):
    import json

    from benchmarks import tactics as bench

    assert bench.main(["--shapes", "tiny", "--replays", "3"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert set(row["ms"]) == {"default", "staged", "strips"}
    assert row["chosen"] in ("staged", "strips") and row["gain"] > 0
