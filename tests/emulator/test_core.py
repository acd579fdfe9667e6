"""The emulator core against docs/trt-protocol.md (§1, §3-§6, §11) and TensorRT's bindings.

Covers enums, Dims, IExprBuilder/IDimensionExpr/DimsExprs, the descriptors, PluginField(s),
the base classes, the registry, ``nptype``/``install`` and the trampoline ("the C++ side").
Where a test pins behaviour that goes beyond docs/trt-protocol.md, a comment above it cites the
binding source (``python/src/infer/pyPlugin.cpp``, 11.1).
"""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

from pyplugins import emulator as trt
from pyplugins._config import override
from pyplugins.emulator import trampoline
from pyplugins.emulator.dims import INT64_MIN

Op = trt.DimensionOperation
DT = trt.DataType
FT = trt.PluginFieldType


# ==================================================================================================
# Enums (§11, §4.3, §6)
# ==================================================================================================

ENUM_VALUES = {
    trt.DataType: dict(FLOAT=0, HALF=1, INT8=2, INT32=3, BOOL=4, UINT8=5, FP8=6, BF16=7, INT64=8,
                       INT4=9, FP4=10, E8M0=11),
    trt.TensorFormat: dict(LINEAR=0, CHW2=1, HWC8=2, CHW4=3, CHW16=4, CHW32=5, DHWC8=6, CDHW32=7,
                           HWC=8, DLA_LINEAR=9, DLA_HWC4=10, HWC16=11, DHWC=12),
    trt.PluginFieldType: dict(FLOAT16=0, FLOAT32=1, FLOAT64=2, INT8=3, INT16=4, INT32=5, CHAR=6,
                              DIMS=7, UNKNOWN=8, BF16=9, INT64=10, FP8=11, INT4=12, FP4=13),
    trt.DimensionOperation: dict(SUM=0, PROD=1, MAX=2, MIN=3, SUB=4, EQUAL=5, LESS=6, FLOOR_DIV=7,
                                 CEIL_DIV=8),
    trt.TensorRTPhase: dict(BUILD=0, RUNTIME=1),
    trt.PluginCapabilityType: dict(CORE=0, BUILD=1, RUNTIME=2),
}


@pytest.mark.parametrize("enum", list(ENUM_VALUES), ids=lambda e: e.__name__)
def test_enum_members_and_values_match_the_protocol(enum):
    assert {m.name: m.value for m in enum} == ENUM_VALUES[enum]
    for name, value in ENUM_VALUES[enum].items():
        member = getattr(enum, name)
        assert int(member) == value and member.value == value and member.name == name


def test_enums_behave_like_pybind_enums():
    assert DT.FLOAT != 0  # pybind11 enums do not compare equal to ints
    assert DT.HALF == DT.HALF and DT.HALF != trt.PluginFieldType.FLOAT32
    assert repr(DT.HALF) == "<DataType.HALF: 1>" and str(DT.HALF) == "DataType.HALF"
    assert [0, 1, 2][DT.INT8] == 2  # __index__
    assert len({DT.FLOAT, DT.FLOAT, DT.HALF}) == 2


def test_plugin_version_for_python_v2_plugins():
    from pyplugins.emulator.enums import PluginVersion

    assert PluginVersion.V2_DYNAMICEXT_PYTHON.value == 0x43


# ==================================================================================================
# Dims and descriptors (§3, §2.1)
# ==================================================================================================

def test_dims_is_tuple_like():
    d = trt.Dims([2, -1, 8])
    assert len(d) == 3 and not hasattr(d, "nbDims") and d.MAX_DIMS == 8
    assert d[0] == 2 and d[-1] == 8 and d[1:] == (-1, 8)
    assert list(d) == [2, -1, 8] and d == (2, -1, 8) and d == [2, -1, 8] and d != (2, -1)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        d == trt.Dims((2, -1, 8))  # noqa: B015 - pybind's Dims.__eq__ takes a list or tuple only
    with pytest.raises(TypeError, match="unhashable type: 'tensorrt.Dims'"):
        hash(d)
    assert repr(d) == "(2, -1, 8)"
    with pytest.raises(IndexError):
        d[3]
    d[1] = 5
    assert tuple(d) == (2, 5, 8)


def test_dims_at_most_8():
    trt.Dims([1] * 8)
    with pytest.raises(ValueError, match="at most 8"):
        trt.Dims([1] * 9)


def test_plugin_tensor_desc_defaults_and_copies():
    d = trt.PluginTensorDesc()
    assert tuple(d.dims) == () and d.type == DT.FLOAT and d.format == trt.TensorFormat.LINEAR
    assert d.scale == 0.0 and d.type is not d.type  # a new enum object per read, as pybind
    d = trt.PluginTensorDesc([2, 3], DT.HALF, trt.TensorFormat.HWC8, 0.5)
    assert isinstance(d.dims, trt.Dims) and tuple(d.dims) == (2, 3)
    c = d._copy()
    c.dims = (4,)
    c.type = DT.INT8
    assert tuple(d.dims) == (2, 3) and d.type == DT.HALF


def test_dynamic_desc_fields():
    dd = trt.DynamicPluginTensorDesc(trt.PluginTensorDesc((-1, 3)), (1, 3), (2, 3), (4, 3))
    assert tuple(dd.desc.dims) == (-1, 3)
    assert (tuple(dd.min), tuple(dd.opt), tuple(dd.max)) == ((1, 3), (2, 3), (4, 3))
    assert all(isinstance(x, trt.Dims) for x in (dd.min, dd.opt, dd.max))
    c = dd._copy()
    c.desc.dims = (9, 9)
    assert tuple(dd.desc.dims) == (-1, 3)


# ==================================================================================================
# IExprBuilder / IDimensionExpr (§6)
# ==================================================================================================

@pytest.fixture
def eb():
    return trt.IExprBuilder()


def const(eb, op, a, b):
    e = eb.operation(op, eb.constant(a), eb.constant(b))
    assert e.is_constant()
    return e.get_constant_value()


@pytest.mark.parametrize("op, a, b, expected", [
    (Op.SUM, 3, 4, 7), (Op.SUM, -3, 1, -2),
    (Op.PROD, 3, 4, 12), (Op.PROD, -3, 4, -12),
    (Op.MAX, 3, 4, 4), (Op.MAX, -3, -4, -3),
    (Op.MIN, 3, 4, 3), (Op.MIN, -3, -4, -4),
    (Op.SUB, 3, 4, -1), (Op.SUB, 4, 3, 1),
    (Op.EQUAL, 3, 3, 1), (Op.EQUAL, 3, 4, 0),
    (Op.LESS, 3, 4, 1), (Op.LESS, 4, 3, 0), (Op.LESS, 3, 3, 0),
    (Op.FLOOR_DIV, 7, 2, 3), (Op.FLOOR_DIV, 8, 2, 4), (Op.FLOOR_DIV, -7, 2, -4),
    (Op.FLOOR_DIV, 7, -2, -4), (Op.FLOOR_DIV, -7, -2, 3), (Op.FLOOR_DIV, 0, 5, 0),
    (Op.CEIL_DIV, 7, 2, 4), (Op.CEIL_DIV, 8, 2, 4), (Op.CEIL_DIV, -7, 2, -3),
    (Op.CEIL_DIV, 7, -2, -3), (Op.CEIL_DIV, -7, -2, 4), (Op.CEIL_DIV, 1, 8, 1),
])
def test_each_dimension_operation(eb, op, a, b, expected):
    assert const(eb, op, a, b) == expected
    # the same result when the operands are symbols evaluated later
    sym = eb._input(0, (-1, -1))
    e = eb.operation(op, sym[0], sym[1])
    assert not e.is_constant() and e.get_constant_value() == INT64_MIN
    assert e._evaluate({0: (a, b)}) == expected


def test_constants_are_int64(eb):
    e = eb.constant(2**40)
    assert e.is_constant() and e.get_constant_value() == 2**40
    assert eb.constant(np.int64(3)).get_constant_value() == 3
    assert not e.is_size_tensor()


@pytest.mark.parametrize("bad", [1.5, "3", None])
def test_constant_needs_an_int(eb, bad):
    with pytest.raises(TypeError):
        eb.constant(bad)


def test_operation_type_checks(eb):
    with pytest.raises(TypeError, match="DimensionOperation"):
        eb.operation(0, eb.constant(1), eb.constant(2))
    with pytest.raises(TypeError, match="IDimensionExpr"):
        eb.operation(Op.SUM, eb.constant(1), 2)
    with pytest.raises(TypeError):
        trt.IDimensionExpr()


def test_constant_division_by_zero_gives_none(eb):
    assert eb.operation(Op.FLOOR_DIV, eb.constant(4), eb.constant(0)) is None
    assert eb.operation(Op.CEIL_DIV, eb.constant(4), eb.constant(0)) is None


def test_symbolic_division_by_zero_raises_when_evaluated(eb):
    x = eb._input(0, (-1,))[0]
    e = eb.operation(Op.FLOOR_DIV, eb.constant(4), x)
    with pytest.raises(ZeroDivisionError):
        e._evaluate({0: (0,)})


def test_static_input_dims_are_constants_dynamic_ones_symbols(eb):
    dims = eb._input(1, (-1, 3, 8))
    assert len(dims) == 3
    assert not dims[0].is_constant() and dims[1].get_constant_value() == 3
    assert repr(dims[0]) == "in1[0]"
    e = eb.operation(Op.PROD, dims[0], eb.operation(Op.SUM, dims[2], eb.constant(2)))
    assert repr(e) == "PROD(in1[0], 10)"  # the constant part folded
    assert e._evaluate({1: (5, 3, 8)}) == 50


def test_nested_symbolic_expression(eb):
    a, b = eb._input(0, (-1, -1))
    e = eb.operation(Op.CEIL_DIV, eb.operation(Op.SUM, a, b), eb.constant(4))
    assert e._evaluate({0: (5, 6)}) == 3
    assert eb.operation(Op.MAX, a, b)._evaluate({0: (5, 6)}) == 6


def test_declare_size_tensor_is_v3_only(eb):
    with pytest.raises(RuntimeError, match="IPluginV3"):
        eb.declare_size_tensor(0, eb.constant(1), eb.constant(2))


def test_expressions_expire_with_their_callback(eb):
    kept = eb.constant(3)
    sym = eb._input(0, (-1,))[0]
    eb._expire()
    for call in (kept.is_constant, kept.get_constant_value, kept.is_size_tensor, sym.is_constant):
        with pytest.raises(RuntimeError, match="callback has returned"):
            call()
    with pytest.raises(RuntimeError, match="only valid during that call"):
        eb.constant(1)
    fresh = trt.IExprBuilder()
    with pytest.raises(RuntimeError):
        fresh.operation(Op.SUM, kept, fresh.constant(1))
    assert repr(kept) == "3"  # still printable for error messages and traces


# ==================================================================================================
# DimsExprs (§6)
# ==================================================================================================

def test_dims_exprs_constructors(eb):
    assert len(trt.DimsExprs()) == 0
    items = [eb.constant(i) for i in range(3)]
    d = trt.DimsExprs(items)
    assert len(d) == 3 and d[1] is items[1]
    assert len(trt.DimsExprs(tuple(items))) == 3
    copy = trt.DimsExprs(d)
    assert [e.get_constant_value() for e in copy] == [0, 1, 2]
    copy[0] = eb.constant(9)
    assert d[0].get_constant_value() == 0  # a copy, not a view


def test_dims_exprs_n_null_slots(eb):
    d = trt.DimsExprs(3)
    assert len(d) == 3 and list(d) == [None, None, None]
    d[0] = eb.constant(1)
    d[-1] = eb.constant(3)
    assert d[0].get_constant_value() == 1 and d[2].get_constant_value() == 3 and d[1] is None
    assert len(trt.DimsExprs(0)) == 0


def test_dims_exprs_at_most_8(eb):
    trt.DimsExprs(8)
    trt.DimsExprs([eb.constant(1)] * 8)
    with pytest.raises(ValueError):
        trt.DimsExprs(9)
    with pytest.raises(ValueError):
        trt.DimsExprs([eb.constant(1)] * 9)


def test_dims_exprs_indexing(eb):
    d = trt.DimsExprs([eb.constant(i) for i in range(4)])
    assert d[-1].get_constant_value() == 3 and d[-4].get_constant_value() == 0
    for bad in (4, -5, 100):
        with pytest.raises(IndexError):
            d[bad]
        with pytest.raises(IndexError):
            d[bad] = eb.constant(0)


def test_dims_exprs_hold_only_expressions(eb):
    d = trt.DimsExprs(2)
    with pytest.raises(TypeError, match="constant"):
        d[0] = 3
    with pytest.raises(TypeError):
        d[0] = "x"
    with pytest.raises(TypeError):
        trt.DimsExprs([1, 2])


# ==================================================================================================
# PluginField / PluginFieldCollection(_) (§4.3)
# ==================================================================================================

@pytest.mark.parametrize("ftype, dtype", [
    (FT.INT32, np.int32), (FT.FLOAT32, np.float32), (FT.FLOAT64, np.float64),
    (FT.INT8, np.int8), (FT.UNKNOWN, np.int8), (FT.INT16, np.int16), (FT.INT64, np.int64),
    (FT.CHAR, np.int8),
])
def test_field_data_dtype_follows_type(ftype, dtype):
    values = np.array([1, 2, 3], dtype=dtype)
    f = trt.PluginField("f", values, ftype)
    assert f.size == 3 and f.name == "f" and f.type == ftype
    assert f.data.dtype == dtype and f.data.tolist() == [1, 2, 3]


@pytest.mark.parametrize("ftype", [FT.FLOAT16, FT.BF16, FT.DIMS, FT.FP8, FT.FP4, FT.INT4])
def test_field_data_unreadable_types(ftype):
    f = trt.PluginField("f", np.zeros(4, np.uint16), ftype)
    assert f.size == 4
    with pytest.raises(AttributeError, match="No known conversion"):
        f.data


def test_field_data_is_a_fresh_copy_each_time():
    f = trt.PluginField("f", np.array([1, 2], np.int32), FT.INT32)
    first = f.data
    first[0] = 42
    assert f.data.tolist() == [1, 2] and f.data is not f.data


def test_field_refuses_str_and_non_buffers():
    with pytest.raises(TypeError, match="buffer protocol"):
        trt.PluginField("f", "text", FT.CHAR)
    with pytest.raises(TypeError, match="buffer protocol"):
        trt.PluginField("f", [1, 2], FT.INT32)
    with pytest.raises(TypeError):
        trt.PluginField(3)
    with pytest.raises(TypeError):
        trt.PluginField("f", b"x", 6)


def test_field_defaults_and_bytes():
    f = trt.PluginField()
    assert (f.name, f.size, f.type) == ("", 0, FT.UNKNOWN)
    assert f.data.tolist() == []
    f = trt.PluginField("raw", b"\x01\xff")
    assert f.type == FT.UNKNOWN and f.size == 2 and f.data.tolist() == [1, -1]


def test_field_dtype_mismatch_is_not_checked():
    # §4.3 / §10.8: an int64 array declared INT32 keeps its element count (2) and is read as
    # int32 from the first 8 bytes, exactly what TensorRT does.
    f = trt.PluginField("pads", np.array([1, 2]), FT.INT32)
    assert f.size == 2
    assert f.data.dtype == np.int32 and f.data.tolist() == [1, 0]


def test_field_dtype_mismatch_that_would_read_out_of_bounds_is_refused():
    f = trt.PluginField("pads", np.array([1, 2], np.int32), FT.INT64)
    assert f.size == 2
    with pytest.raises(ValueError, match="dtype=int64"):
        f.data


def test_plugin_field_collection_is_a_list_of_fields():
    fields = [trt.PluginField("a"), trt.PluginField("b")]
    pfc = trt.PluginFieldCollection(fields)
    assert isinstance(pfc, list) and len(pfc) == 2 and pfc[-1].name == "b"
    with pytest.raises(TypeError):
        trt.PluginFieldCollection(["a"])


def test_creator_side_collection_has_no_negative_index():
    fc = trt.PluginFieldCollection_([trt.PluginField("a"), trt.PluginField("b")])
    assert len(fc) == 2 and not hasattr(fc, "nbFields")
    assert fc[0].name == "a" and fc[1].name == "b"
    assert [f.name for f in fc] == ["a", "b"]
    with pytest.raises(IndexError, match="no negative indexing"):
        fc[-1]
    with pytest.raises(IndexError):
        fc[2]
    with pytest.raises(TypeError):
        fc["a"]


# ==================================================================================================
# Base classes (§1.1, §1.2, §5.1)
# ==================================================================================================

class Plugin(trt.IPluginV2DynamicExt):
    def __init__(self, n=1):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = n
        self.plugin_type = "P"
        self.plugin_version = "1"
        self.plugin_namespace = ""
        self.state = [1]


class Bare(trt.IPluginV2DynamicExt):
    def __init__(self):
        trt.IPluginV2DynamicExt.__init__(self)


def test_identity_lives_outside_dict():
    p = Plugin(2)
    assert (p.num_outputs, p.plugin_type, p.plugin_version, p.plugin_namespace) == (2, "P", "1", "")
    assert set(vars(p)) == {"state"}
    clone = Bare()
    clone.__dict__.update(p.__dict__)
    assert clone.state == [1]
    assert trampoline.identity(clone) == (None, None, None)


def test_unset_num_outputs_prints_and_returns_minus_one(capfd):
    p = Bare()
    assert p.num_outputs == -1
    err = capfd.readouterr().err
    assert "num_outputs not initialized" in err
    assert trampoline.get_nb_outputs(p) == -1


# Binding behaviour (pyPlugin.cpp, 11.1): pyPlugin.cpp getNbOutputs():
# throwPyError(PyExc_AttributeError, 'num_outputs not initialized') caught by
# PLUGIN_API_CATCH('num_outputs'), so the getter prints '[ERROR] Exception caught in
# num_outputs(): AttributeError: num_outputs not initialized'
def test_unset_num_outputs_prints_the_binding_error_line(capfd):
    Bare().num_outputs
    assert capfd.readouterr().err == ("[ERROR] Exception caught in num_outputs(): AttributeError: "
                                      "num_outputs not initialized\n")


def test_unset_identity_strings_are_none():
    p = Bare()
    assert (p.plugin_type, p.plugin_version, p.plugin_namespace) == (None, None, None)


# Binding behaviour (pyPlugin.cpp, 11.1): pyPlugin.cpp binds plugin_type to
# IPluginV2::getPluginType, whose Python-plugin override throws AttributeError('plugin_type not
# initialized') into PLUGIN_API_CATCH('plugin_type') and returns nullptr: reading an unset
# plugin_type prints '[ERROR] Exception caught in plugin_type(): AttributeError: plugin_type not
# initialized' (likewise plugin_version, plugin_namespace)
def test_unset_plugin_type_prints_the_binding_error_line(capfd):
    assert Bare().plugin_type is None
    assert "plugin_type not initialized" in capfd.readouterr().err


def test_identity_setters_type_check():
    p = Bare()
    with pytest.raises(TypeError):
        p.num_outputs = "1"
    with pytest.raises(TypeError):
        p.num_outputs = 1.0
    with pytest.raises(TypeError):
        p.plugin_type = 3
    p.num_outputs = True  # pybind's int caster takes bool and NumPy ints, its str caster bytes
    assert p.num_outputs == 1 and type(p.num_outputs) is int
    p.num_outputs = np.int32(2)
    p.plugin_type = b"Pad"
    assert p.num_outputs == 2 and p.plugin_type == "Pad"


def test_missing_base_init_is_a_type_error():
    class NoInit(trt.IPluginV2DynamicExt):
        def __init__(self):
            self.x = 1

    with pytest.raises(TypeError, match="__init__"):
        NoInit()

    class NoCreatorInit(trt.IPluginCreator):
        def __init__(self):
            pass

    with pytest.raises(TypeError, match="__init__"):
        NoCreatorInit()


def test_copy_constructor_copies_nothing():
    src = Plugin(3)

    class Copy(trt.IPluginV2DynamicExt):
        def __init__(self, other):
            trt.IPluginV2DynamicExt.__init__(self, other)

    c = Copy(src)
    assert trampoline.get_nb_outputs(c) == -1
    assert trampoline.identity(c) == (None, None, None) and vars(c) == {}


def test_class_constants_and_read_only_properties():
    p = Plugin()
    assert trt.IPluginV2DynamicExt.FORMAT_COMBINATION_LIMIT == 100
    assert p.FORMAT_COMBINATION_LIMIT == 100
    assert isinstance(p.tensorrt_version, int)
    with pytest.raises(AttributeError):
        p.tensorrt_version = 1


# Binding behaviour (pyPlugin.cpp, 11.1): pyPlugin.cpp
# PyIPluginV2DynamicExtImpl::getTensorRTVersion returns (kV2_DYNAMICEXT_PYTHON << 24) |
# (NV_TENSORRT_VERSION & 0xFFFFFF), and the bindings read the plugin version back as version >> 24
# & 0xFF (getPluginVersion)
def test_tensorrt_version_carries_the_plugin_version_in_the_top_byte():
    assert (Plugin().tensorrt_version >> 24) & 0xFF == 0x43


def test_serialization_size_property_uses_the_binding_path():
    class S(Plugin):
        def serialize(self):
            return "é"

    assert S().serialization_size == 2  # len of the UTF-8 encoding


class Creator(trt.IPluginCreator):
    def __init__(self, name="P", version="1"):
        trt.IPluginCreator.__init__(self)
        self.name = name
        self.plugin_version = version
        self.field_names = trt.PluginFieldCollection([trt.PluginField("pads")])

    def create_plugin(self, name, fc):
        return Plugin()

    def deserialize_plugin(self, name, data):
        return Plugin()


def test_creator_properties_outside_dict(capfd):
    c = Creator()
    assert (c.name, c.plugin_version) == ("P", "1") and vars(c) == {}
    assert [f.name for f in c.field_names] == ["pads"]
    c.field_names = [trt.PluginField("x")]
    assert isinstance(c.field_names, trt.PluginFieldCollection_)  # the C++ struct, read back
    assert [f.name for f in c.field_names] == ["x"] and not hasattr(c.field_names, "append")
    with pytest.raises(TypeError):
        c.field_names = "x"

    class Unset(trt.IPluginCreator):
        def __init__(self):
            trt.IPluginCreator.__init__(self)

    u = Unset()
    assert u.name is None and len(u.field_names) == 0  # never None (helpers::getFieldNames)
    err = capfd.readouterr().err
    assert "name not initialized" in err and "field_names not initialized" in err


def test_logger_filters_by_severity(capsys):
    log = trt.Logger(trt.Logger.WARNING)
    log.log(trt.Logger.ERROR, "bad")
    log.log(trt.Logger.INFO, "chatty")
    err = capsys.readouterr().err
    assert "bad" in err and "chatty" not in err


# ==================================================================================================
# Registry (§5.3)
# ==================================================================================================

@pytest.fixture
def registry():
    reg = trt.get_plugin_registry()
    saved = dict(reg._creators)  # creators other test modules registered at import
    reg._clear()
    yield reg
    reg._clear()
    reg._creators.update(saved)


def test_register_get_deregister(registry):
    c = Creator()
    assert registry is trt.get_plugin_registry()
    assert registry.register_creator(c, "ns") is True
    assert c.plugin_namespace == "ns"  # the registry sets it
    assert registry.get_creator("P", "1", "ns") is c
    assert registry.get_creator("P", "1") is None and registry.get_creator("P", "2", "ns") is None
    assert registry.all_creators == [c]
    assert registry.deregister_creator(c) is True
    assert registry.deregister_creator(c) is False
    assert registry.get_creator("P", "1", "ns") is None


def test_duplicate_registration_returns_false(registry):
    first = Creator()
    assert registry.register_creator(first, "")
    assert registry.register_creator(Creator(), "") is False
    assert registry.get_creator("P", "1", "") is first
    assert registry.register_creator(Creator(version="2"), "")
    assert registry.register_creator(Creator(), "other")
    assert len(registry.all_creators) == 3


def test_register_refuses_non_creators(registry):
    with pytest.raises(TypeError):
        registry.register_creator(object(), "")


def test_names_removed_in_11_exist_only_when_emulating_10(registry):
    c = Creator()
    registry.register_creator(c, "")
    with pytest.raises(AttributeError, match="11.0 removed"):
        registry.get_plugin_creator
    with pytest.raises(AttributeError, match="11.0 removed"):
        registry.plugin_creator_list
    assert registry.all_creators_recursive == [c]
    with override(trt_version="10.16"):
        assert registry.get_plugin_creator("P", "1", "") is c
        assert registry.plugin_creator_list == [c]
    with override(trt_version="10.9"):
        with pytest.raises(AttributeError):
            registry.all_creators_recursive
    with pytest.raises(AttributeError):
        registry.no_such_thing


# ==================================================================================================
# nptype, install (§3, DESIGN)
# ==================================================================================================

@pytest.mark.parametrize("dt, np_type", [(DT.FLOAT, np.float32), (DT.HALF, np.float16),
                                         (DT.INT8, np.int8), (DT.INT32, np.int32),
                                         (DT.INT64, np.int64), (DT.BOOL, np.bool_),
                                         (DT.UINT8, np.uint8)])
def test_nptype(dt, np_type):
    assert trt.nptype(dt) is np_type


@pytest.mark.parametrize("dt", [DT.BF16, DT.FP8, DT.INT4, DT.FP4, DT.E8M0])
def test_nptype_refuses_types_numpy_lacks(dt):
    with pytest.raises(TypeError):
        trt.nptype(dt)


def test_install_makes_import_tensorrt_the_emulator(monkeypatch, tmp_path):
    monkeypatch.delitem(sys.modules, "tensorrt", raising=False)
    monkeypatch.delitem(sys.modules, "written_for_trt", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "written_for_trt.py").write_text(textwrap.dedent("""
        import tensorrt as trt

        class P(trt.IPluginV2DynamicExt):
            def __init__(self):
                trt.IPluginV2DynamicExt.__init__(self)
                self.num_outputs = 1
    """))
    active = trt.install()
    assert active is sys.modules["tensorrt"]
    import tensorrt

    assert tensorrt is trt and tensorrt.__version__.startswith("11.1")
    import written_for_trt

    assert isinstance(written_for_trt.P(), trt.IPluginV2DynamicExt)
    trt.uninstall()
    assert "tensorrt" not in sys.modules


def test_emulated_version_string():
    with override(trt_version="10.16"):
        assert trt.__version__ == "10.16.0"


# ==================================================================================================
# Trampoline: errors, fallbacks, counts (§1.3, §1.4, §11)
# ==================================================================================================

def raising(name):
    def method(self, *args):
        raise ValueError(f"{name} failed")
    return method


def plugin_with(**methods):
    return type("Custom", (Plugin,), methods)()


def desc(shape=(2, 3), dtype=DT.FLOAT):
    return trt.PluginTensorDesc(shape, dtype)


def dyn(shape=(2, 3)):
    return trt.DynamicPluginTensorDesc(desc(shape), shape, shape, shape)


CALLS = {
    # method: (call through the trampoline, fallback)
    "get_output_datatype": (lambda p: trampoline.get_output_data_type(p, 0, [DT.HALF]), DT.FLOAT),
    "get_output_dimensions": (lambda p: len(trampoline.get_output_dimensions(
        p, 0, [trt.DimsExprs()], trt.IExprBuilder())), 0),
    "supports_format_combination": (
        lambda p: trampoline.supports_format_combination(p, 0, [desc(), desc()], 1), False),
    "configure_plugin": (lambda p: trampoline.configure_plugin(p, [dyn()], [dyn()]), None),
    "get_workspace_size": (lambda p: trampoline.get_workspace_size(p, [desc()], [desc()]), 0),
    "initialize": (lambda p: trampoline.initialize(p), -1),
    "terminate": (lambda p: trampoline.terminate(p), None),
    "serialize": (lambda p: trampoline.serialize(p), None),
    "get_serialization_size": (lambda p: trampoline.get_serialization_size(p), 0),
    "clone": (lambda p: trampoline.clone(p), None),
    "destroy": (lambda p: trampoline.destroy(p), None),
}


@pytest.mark.parametrize("method", sorted(set(CALLS) - {"initialize"}))
def test_exception_is_printed_to_fd2_and_the_fallback_returned(method, capfd):
    call, fallback = CALLS[method]
    p = plugin_with(**{method: raising(method)})
    assert call(p) == fallback
    err = capfd.readouterr().err
    assert err.startswith(f"[ERROR] Exception caught in {method}(): ValueError: {method} failed")


def test_enqueue_exception_prints_thrown_from_and_returns_minus_one(capfd):
    p = plugin_with(enqueue=raising("enqueue"))
    trampoline.configure_plugin(p, [], [])
    capfd.readouterr()
    assert trampoline.enqueue(p, [], [], [], [], 0, 0) == -1
    assert capfd.readouterr().err.startswith(
        "[ERROR] Exception thrown from enqueue() ValueError: enqueue failed")


def test_initialize_exception_is_printed_and_returns_minus_one(capfd):
    assert trampoline.initialize(plugin_with(initialize=raising("initialize"))) == -1
    err = capfd.readouterr().err
    assert err.startswith("[ERROR] Exception ") and "initialize()" in err
    assert "ValueError: initialize failed" in err


def test_successful_enqueue_returns_zero_whatever_python_returns():
    p = plugin_with(enqueue=lambda self, *a: -5, configure_plugin=lambda self, i, o: None)
    assert trampoline.enqueue(p, [], [], [], [], 0, 0) == 0


# Binding behaviour (pyPlugin.cpp, 11.1): pyPlugin.cpp initialize(): catch (py::error_already_set&
# e) { std::cerr << '[ERROR] Exception thrown from initialize() ' << e.what()
def test_initialize_exception_prints_thrown_from(capfd):
    assert trampoline.initialize(plugin_with(initialize=raising("initialize"))) == -1
    assert capfd.readouterr().err.startswith(
        "[ERROR] Exception thrown from initialize() ValueError: initialize failed")


def test_configure_plugin_failure_still_caches_the_input_count(capfd):
    seen = {}

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        seen["n"] = (len(input_desc), len(inputs))

    p = plugin_with(configure_plugin=raising("configure_plugin"), enqueue=enqueue)
    assert trampoline.configure_plugin(p, [dyn(), dyn()], [dyn()]) is None
    assert trampoline.enqueue(p, [desc(), desc()], [desc()], [1, 2], [3], 0, 0) == 0
    assert seen["n"] == (2, 2)


REQUIRED = ["get_output_datatype", "get_output_dimensions", "supports_format_combination",
            "configure_plugin", "serialize", "clone"]


@pytest.mark.parametrize("method", REQUIRED)
def test_missing_required_method_prints_not_overriden(method, capfd):
    call, fallback = CALLS[method]
    assert call(Plugin()) == fallback
    err = capfd.readouterr().err
    assert (f"Method: {method} was not overriden. Please provide an implementation for this "
            "method.") in err
    assert f"[ERROR] Exception caught in {method}(): " in err
    assert f"no implementation provided for {method}()" in err


def test_missing_enqueue_fails(capfd):
    assert trampoline.enqueue(Plugin(), [], [], [], [], 0, 0) == -1
    err = capfd.readouterr().err
    assert "Method: enqueue was not overriden" in err
    assert "no implementation provided for enqueue()" in err


# Binding behaviour (pyPlugin.cpp, 11.1): pyPlugin.cpp: a missing override is
# utils::throwPyError(PyExc_RuntimeError, 'no implementation provided for X()'), caught by
# PLUGIN_API_CATCH(X): the line reads '[ERROR] Exception caught in X(): RuntimeError: no
# implementation provided for X()' (for enqueue too: the throw is outside its inner try, so it is
# 'caught in', not 'thrown from')
@pytest.mark.parametrize("method", ["get_output_datatype", "enqueue"])
def test_missing_required_method_error_line_matches_the_binding(method, capfd):
    if method == "enqueue":
        trampoline.enqueue(Plugin(), [], [], [], [], 0, 0)
    else:
        CALLS[method][0](Plugin())
    assert (f"[ERROR] Exception caught in {method}(): RuntimeError: no implementation provided "
            f"for {method}()") in capfd.readouterr().err


@pytest.mark.parametrize("method, default", [("get_workspace_size", 0), ("initialize", 0),
                                             ("terminate", None), ("destroy", None)])
def test_optional_methods_default_silently(method, default, capfd):
    assert CALLS[method][0](Plugin()) == default
    assert capfd.readouterr().err == ""


def test_default_serialization_size_is_len_of_serialize(capfd):
    calls = []

    def serialize(self):
        calls.append(1)
        return "héllo"

    p = plugin_with(serialize=serialize)
    assert trampoline.get_serialization_size(p) == 6
    assert trampoline.serialize(p) == "héllo".encode()
    assert len(calls) == 2
    q = plugin_with(serialize=serialize, get_serialization_size=lambda self: 3)
    assert trampoline.get_serialization_size(q) == 3


BAD_RETURNS = {
    "get_output_datatype": "HALF",
    "get_output_dimensions": [1, 2],
    "supports_format_combination": "yes",
    "get_workspace_size": 1.5,
    "serialize": 123,
    "get_serialization_size": "3",
    "clone": object(),
}


@pytest.mark.parametrize("method", sorted(BAD_RETURNS))
def test_uninterpretable_return_prints_and_falls_back(method, capfd):
    bad = BAD_RETURNS[method]
    methods = {"serialize": lambda self: b""}
    methods[method] = lambda self, *a: bad
    p = plugin_with(**methods)
    call, fallback = CALLS[method]
    assert call(p) == fallback
    err = capfd.readouterr().err
    assert err.startswith(f"[ERROR] Return value of {method}() could not be interpreted as ")


# Binding behaviour (pyPlugin.cpp, 11.1): pyPlugin.cpp PLUGIN_API_CATCH_CAST names the C++ types:
# 'nvinfer1::DataType', 'nvinfer1::DimsExprs', 'bool', 'size_t', 'std::string',
# 'nvinfer1::IPluginV2DynamicExt', and 'IPluginV2*' for create_plugin/deserialize_plugin
def test_uninterpretable_return_names_the_cpp_type(capfd):
    expected = {"get_output_datatype": "nvinfer1::DataType",
                "get_output_dimensions": "nvinfer1::DimsExprs",
                "get_workspace_size": "size_t", "serialize": "std::string",
                "clone": "nvinfer1::IPluginV2DynamicExt"}
    for method, ctype in expected.items():
        bad = BAD_RETURNS[method]
        p = plugin_with(**{method: lambda self, *a, bad=bad: bad})
        CALLS[method][0](p)
        assert f"could not be interpreted as {ctype}\n" in capfd.readouterr().err
    wrong = type("W", (Creator,), {"create_plugin": lambda self, name, fc: "not a plugin"})()
    trampoline.create_plugin(wrong, "n", trt.PluginFieldCollection_())
    assert "create_plugin() could not be interpreted as IPluginV2*\n" in capfd.readouterr().err


# Binding behaviour (pyPlugin.cpp, 11.1): pyPlugin.cpp supportsFormatCombination:
# pyResult.cast<bool>() loads with convert=true, and pybind11's bool caster then accepts None
# (False) and any object with nb_bool (ints, floats, numpy scalars): 'return 1' means True in
# TensorRT
def test_supports_format_combination_accepts_what_pybind_converts_to_bool(capfd):
    for value, expected in ((1, True), (0, False), (None, False), (2.5, True)):
        p = plugin_with(supports_format_combination=lambda self, *a, v=value: v)
        assert CALLS["supports_format_combination"][0](p) is expected
    assert capfd.readouterr().err == ""


def test_supports_format_combination_accepts_numpy_bool():
    p = plugin_with(supports_format_combination=lambda self, *a: np.bool_(True))
    assert CALLS["supports_format_combination"][0](p) is True


# Binding behaviour (pyPlugin.cpp, 11.1): pyPlugin.cpp getWorkspaceSize: pyResult.cast<size_t>()
# fails for a negative int (pybind's unsigned caster raises OverflowError), printing 'Return value
# of get_workspace_size() could not be interpreted as size_t' and returning 0
def test_negative_workspace_size_is_uninterpretable(capfd):
    p = plugin_with(get_workspace_size=lambda self, i, o: -1)
    assert CALLS["get_workspace_size"][0](p) == 0
    assert "could not be interpreted" in capfd.readouterr().err


def test_workspace_size_accepts_index_types():
    p = plugin_with(get_workspace_size=lambda self, i, o: np.int64(256))
    assert CALLS["get_workspace_size"][0](p) == 256


def test_serialize_accepts_str_as_utf8():
    p = plugin_with(serialize=lambda self: '{"a": 1}')
    assert trampoline.serialize(p) == b'{"a": 1}'


def test_enqueue_lists_come_from_the_cached_configure_count():
    seen = []

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        seen.append((len(input_desc), len(output_desc), list(inputs), list(outputs),
                     workspace, stream))

    p = plugin_with(enqueue=enqueue, configure_plugin=lambda self, i, o: None)
    # never configured: the C++ side has mNbInputs == 0
    trampoline.enqueue(p, [desc(), desc()], [desc()], [16, 32], [48], 64, 7)
    trampoline.configure_plugin(p, [dyn(), dyn()], [dyn()])
    trampoline.enqueue(p, [desc(), desc(), desc()], [desc(), desc()], [16, 32, 99], [48, 80],
                       64, 7)
    assert seen[0] == (0, 1, [], [48], 64, 7)
    assert seen[1] == (2, 1, [16, 32], [48], 64, 7)
    assert all(isinstance(x, int) for x in seen[1][2] + seen[1][3])


def test_enqueue_descs_are_copies():
    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        input_desc[0].dims = (9,)

    p = plugin_with(enqueue=enqueue, configure_plugin=lambda self, i, o: None)
    trampoline.configure_plugin(p, [dyn()], [dyn()])
    d = desc((2, 3))
    trampoline.enqueue(p, [d], [desc()], [1], [2], 0, 0)
    assert tuple(d.dims) == (2, 3)


def test_configure_plugin_receives_copies_of_dynamic_descs():
    got = {}

    def configure(self, inp, out):
        got["in"] = inp
        inp[0].desc.dims = (7,)

    p = plugin_with(configure_plugin=configure)
    d = dyn((-1, 3))
    trampoline.configure_plugin(p, [d], [dyn()])
    assert tuple(d.desc.dims) == (-1, 3)
    assert isinstance(got["in"][0], trt.DynamicPluginTensorDesc)


def test_get_output_datatype_receives_a_list():
    got = {}

    def get_output_datatype(self, index, input_types):
        got["args"] = (index, input_types)
        return DT.HALF

    p = plugin_with(get_output_datatype=get_output_datatype)
    assert trampoline.get_output_data_type(p, 1, (DT.HALF, DT.INT8)) is DT.HALF
    assert got["args"] == (1, [DT.HALF, DT.INT8])


def test_creator_calls_and_held_references(registry, capfd):
    c = Creator()
    fc = trt.PluginFieldCollection_([])
    p = trampoline.create_plugin(c, "node", fc)
    assert isinstance(p, Plugin) and trampoline.held[id(p)] is p
    d = trampoline.deserialize_plugin(c, "node", bytearray(b"abc"))
    assert isinstance(d, Plugin) and id(d) in trampoline.held
    clone = trampoline.clone(plugin_with(clone=lambda self: Plugin()))
    assert id(clone) in trampoline.held
    for obj in (p, d, clone):
        trampoline.destroy(obj)
        assert id(obj) not in trampoline.held
    assert capfd.readouterr().err == ""


def test_deserialize_plugin_gets_bytes():
    got = {}

    class C(Creator):
        def deserialize_plugin(self, name, data):
            got["args"] = (name, data)
            return Plugin()

    trampoline.destroy(trampoline.deserialize_plugin(C(), "n", memoryview(b"xyz")))
    assert got["args"] == ("n", b"xyz") and type(got["args"][1]) is bytes


@pytest.mark.parametrize("method", ["create_plugin", "deserialize_plugin"])
def test_creator_failures(method, capfd):
    call = {"create_plugin": lambda c: trampoline.create_plugin(c, "n", trt.PluginFieldCollection_()),
            "deserialize_plugin": lambda c: trampoline.deserialize_plugin(c, "n", b"")}[method]
    failing = type("F", (Creator,), {method: raising(method)})()
    assert call(failing) is None
    assert capfd.readouterr().err.startswith(
        f"[ERROR] Exception caught in {method}(): ValueError: {method} failed")
    wrong = type("W", (Creator,), {method: lambda self, *a: "not a plugin"})()
    assert call(wrong) is None
    assert f"Return value of {method}() could not be interpreted" in capfd.readouterr().err

    class Missing(trt.IPluginCreator):
        def __init__(self):
            trt.IPluginCreator.__init__(self)

    assert call(Missing()) is None
    assert f"Method: {method} was not overriden" in capfd.readouterr().err


def test_overridden_ignores_the_base_classes():
    class Mid(trt.IPluginV2DynamicExt):
        def enqueue(self, *a):
            return None

    class Leaf(Mid):
        def __init__(self):
            trt.IPluginV2DynamicExt.__init__(self)

    leaf = Leaf()
    assert trampoline.overridden(leaf, "enqueue") is not None
    assert trampoline.overridden(leaf, "configure_plugin") is None
    assert trampoline.overridden(leaf, "__init__") is not None


def test_listeners_see_every_call_with_errors(capfd):
    events = []
    trampoline.listeners.append(events.append)
    try:
        p = plugin_with(get_output_datatype=raising("x"))
        trampoline.get_output_data_type(p, 0, [DT.FLOAT])
        trampoline.get_workspace_size(p, [], [])
    finally:
        trampoline.listeners.remove(events.append)
    assert [e.method for e in events] == ["get_output_datatype", "get_workspace_size"]
    first, second = events
    assert first.obj is p and first.args == (0, [DT.FLOAT]) and first.result is DT.FLOAT
    assert first.error.startswith("[ERROR] Exception caught in get_output_datatype()")
    assert first.seconds >= 0
    assert second.error is None and second.extra.get("default") is True


def test_num_outputs_shadowed_by_a_subclass_attribute_is_not_what_cpp_reads():
    class Shadow(Plugin):
        num_outputs = 5  # a class attribute hides the property from Python...

    s = Shadow.__new__(Shadow)
    trt.IPluginV2DynamicExt.__init__(s)
    assert s.num_outputs == 5
    assert trampoline.get_nb_outputs(s) == -1  # ...but C++ reads its own member
