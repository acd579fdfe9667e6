"""onnx_import: the ONNX parser's loadFields / FallbackPluginImporter, case by case (§4.4)."""

from __future__ import annotations

import numpy as np
import pytest

from pyplugins import emulator as trt
from pyplugins._config import override
from pyplugins.emulator.enums import PluginFieldType as T
from pyplugins.emulator.onnx_import import (ImportedNode, fields_from_attributes, import_node,
                                            value_from_cli)
from pyplugins.errors import FieldError

onnx = pytest.importorskip("onnx")
from onnx import AttributeProto, TensorProto, helper, numpy_helper


def one(value, name="a", field_names=None):
    fc, warnings = fields_from_attributes({name: value}, field_names or [name])
    assert len(fc) == 1 and fc[0].name == name
    return fc[0], warnings


def both(value, name="a"):
    """The field built from a plain Python value and from onnx.helper.make_attribute(value)."""
    plain, _ = one(value, name)
    proto, _ = one(helper.make_attribute(name, value), name)
    return plain, proto


# -- INT / INTS -------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [0, 7, -3, 2**31 - 1, -(2**31)])
def test_int_becomes_one_int32(value):
    for f in both(value):
        assert f.type == T.INT32 and f.size == 1
        assert f.data.dtype == np.int32 and f.data.tolist() == [value]


def test_bool_is_an_int_attribute():
    for f in both(True):
        assert f.type == T.INT32 and f.data.tolist() == [1]


@pytest.mark.parametrize("value, wrapped", [(2**31, -(2**31)), (2**32 + 5, 5), (-(2**31) - 1, 2**31 - 1),
                                            (2**63 - 1, -1)])
def test_int_outside_int32_wraps_like_cpp_narrowing_and_is_noted(value, wrapped):
    # OnnxAttrs::get<int32_t> returns attr.i() (int64) as int32_t: modulo 2**32 on every compiler.
    for f in both(value):
        assert f.data.tolist() == [wrapped]
    _, warnings = one(value)
    assert any(str(value) in w and str(wrapped) in w for w in warnings)


def test_int_beyond_int64_cannot_be_an_onnx_attribute():
    with pytest.raises(FieldError, match="'a'"):
        one(2**64)


def test_ints_become_int32_array_narrowed():
    for f in both([1, -2, 2**33 + 3]):
        assert f.type == T.INT32 and f.size == 3
        assert f.data.dtype == np.int32 and f.data.tolist() == [1, -2, 3]


def test_tuple_of_ints_is_ints_like_graphsurgeon():
    f, _ = one((1, 1, 2, 2))
    assert f.type == T.INT32 and f.data.tolist() == [1, 1, 2, 2]


def test_numpy_integer_scalars_count_as_ints():
    f, _ = one(np.int64(5))
    assert f.type == T.INT32 and f.data.tolist() == [5]
    f, _ = one([np.int16(1), np.int64(2)])
    assert f.data.tolist() == [1, 2]


# -- FLOAT / FLOATS ---------------------------------------------------------------------------------

def test_float_becomes_one_float32():
    for f in both(0.1):
        assert f.type == T.FLOAT32 and f.size == 1
        assert f.data.dtype == np.float32 and f.data[0] == np.float32(0.1)


def test_floats_become_float32_array():
    for f in both([0.5, 1.25, -2.0]):
        assert f.type == T.FLOAT32 and f.data.tolist() == [0.5, 1.25, -2.0]


def test_mixed_ints_and_floats_are_floats_as_onnx_helper_makes_them():
    for f in both([1, 2.5]):
        assert f.type == T.FLOAT32 and f.data.tolist() == [1.0, 2.5]


def test_finite_float_overflowing_float32_is_refused_but_a_proto_inf_passes():
    with pytest.raises(FieldError, match="'a': 1e\\+300 does not fit an ONNX FLOAT"):
        one(1e300)
    with pytest.raises(FieldError, match="'a': 1e\\+39 does not fit"):
        one([1.0, 1e39])
    f, _ = one(helper.make_attribute("a", 1e39))  # onnx stored inf: the parser passes it
    assert f.data[0] == np.inf
    f, warnings = one(float("inf"))
    assert f.data[0] == np.inf and warnings == []


def test_float_underflowing_float32_is_noted_like_int_narrowing():
    f, warnings = one(1e-50)
    assert f.data[0] == 0.0
    assert any("1e-50 loses precision as float32" in w and "receives 0.0" in w for w in warnings)
    _, warnings = one(0.1)  # ordinary rounding is not a loss worth a note
    assert warnings == []


# -- STRING / STRINGS -------------------------------------------------------------------------------

def test_string_becomes_char_with_trailing_nul_viewed_as_int8():
    for f in both("wrap"):
        assert f.type == T.CHAR and f.size == 5
        assert f.data.dtype == np.int8
        assert f.data.tobytes() == b"wrap\0"
        data = f.data
        assert (data[:-1] if data[-1] == 0 else data).tobytes().decode() == "wrap"  # the sample


def test_bytes_string_and_utf8():
    f, _ = one(b"ab")
    assert f.data.tobytes() == b"ab\0"
    f, _ = one("é")
    assert f.data.tobytes() == "é".encode() + b"\0" and f.size == 3
    assert f.data.tolist()[0] < 0  # C char is signed: bytes >= 0x80 read negative


def test_empty_string_is_one_nul():
    for f in both(""):
        assert f.type == T.CHAR and f.data.tobytes() == b"\0"


def test_strings_are_each_nul_terminated_and_concatenated():
    for f in both(["ab", "", "c"]):
        assert f.type == T.CHAR and f.size == 6
        assert f.data.tobytes() == b"ab\0\0c\0"


# -- TENSOR -----------------------------------------------------------------------------------------

def tensor_attr(array, name="w"):
    return helper.make_attribute(name, numpy_helper.from_array(array, name))


@pytest.mark.parametrize("dtype, ftype", [
    (np.float32, T.FLOAT32), (np.int8, T.INT8), (np.int32, T.INT32),
])
def test_tensor_keeps_its_element_type(dtype, ftype):
    array = np.arange(6, dtype=dtype).reshape(2, 3)
    for value in (array, tensor_attr(array), numpy_helper.from_array(array)):
        f, _ = one(value, "w")
        assert f.type == ftype and f.size == 6  # element count, shape flattened
        assert f.data.dtype == dtype and f.data.tolist() == list(range(6))


def test_tensor_float16_is_float16_field_unreadable_through_data():
    array = np.array([1.0, 2.0, 0.5], dtype=np.float16)
    for value in (array, tensor_attr(array)):
        f, _ = one(value, "w")
        assert f.type == T.FLOAT16 and f.size == 3
        with pytest.raises(AttributeError, match="No known conversion"):
            f.data


def test_tensor_bfloat16_is_bf16_field():
    t = helper.make_tensor("w", TensorProto.BFLOAT16, [2], [1.0, 2.0])
    f, _ = one(helper.make_attribute("w", t), "w")
    assert f.type == T.BF16 and f.size == 2
    with pytest.raises(AttributeError):
        f.data


def test_tensor_double_arrives_as_float32():
    # docs/trt-protocol.md §4.4: convertOnnxWeights turns DOUBLE weights into FLOAT
    # before loadFields' switch, so its kFLOAT64 case is unreachable.
    array = np.array([0.1, 2.5], dtype=np.float64)
    for value in (array, tensor_attr(array)):
        f, _ = one(value, "w")
        assert f.type == T.FLOAT32 and f.size == 2
        assert f.data.dtype == np.float32 and f.data.tolist() == [np.float32(0.1), 2.5]


@pytest.mark.parametrize("array", [np.array([1, 2], np.int16), np.array(["ab", "c"])],
                         ids=["INT16", "STRING"])
def test_tensor_int16_and_string_are_refused_by_the_weight_conversion(array):
    # docs/trt-protocol.md §4.4: convertOnnxWeights has no branch for
    # these element types ("Unable to convert ONNX weights") so loadFields never sees them.
    for value in (array, tensor_attr(array)):
        with pytest.raises(FieldError, match="'w'.*Unable to convert ONNX weights"):
            one(value, "w")


@pytest.mark.parametrize("dtype, onnx_name", [(np.int64, "INT64"), (np.bool_, "BOOL"),
                                              (np.uint8, "UINT8")])
def test_tensor_int64_bool_uint8_are_node_errors_naming_the_attribute(dtype, onnx_name):
    array = np.array([1, 0], dtype=dtype)
    for value in (array, tensor_attr(array)):
        with pytest.raises(FieldError, match=f"'w'.*Tensor type: {onnx_name} is unsupported"):
            one(value, "w")


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64, np.complex64])
def test_tensor_other_types_are_errors(dtype):
    with pytest.raises(FieldError, match="'w'"):
        one(np.zeros(2, dtype=dtype), "w")


def test_tensor_rank_above_8_is_refused():
    with pytest.raises(FieldError, match="rank 9"):
        one(np.zeros([1] * 9, np.float32), "w")


def test_scalar_and_empty_tensors():
    f, _ = one(np.array(3, np.int32), "w")
    assert f.size == 1 and f.data.tolist() == [3]
    f, _ = one(np.zeros((0, 4), np.float32), "w")
    assert f.size == 0 and f.data.tolist() == []


def test_fp8_tensor_keeps_the_default_field_type():
    # loadFields' switch has no FLOAT8E4M3FN case, so the type stays PluginFieldType{} == FLOAT16.
    t = helper.make_tensor("w", TensorProto.FLOAT8E4M3FN, [3], [1.0, 2.0, 0.5])
    f, _ = one(helper.make_attribute("w", t), "w")
    assert f.type == T.FLOAT16 and f.size == 3


def test_graph_attribute_is_refused():
    graph = helper.make_graph([], "g", [], [])
    with pytest.raises(FieldError, match="'g'.*GRAPH are unsupported"):
        one(helper.make_attribute("g", graph), "g")


# -- which names travel -----------------------------------------------------------------------------

def test_only_field_names_travel_in_field_names_order_and_types_come_from_attributes():
    names = trt.PluginFieldCollection([
        trt.PluginField("mode", np.array([], np.float32), T.FLOAT32),  # declared type ignored
        trt.PluginField("pads", np.array([], np.float32), T.FLOAT32),
    ])
    fc, warnings = fields_from_attributes({"pads": [1, 2], "mode": "wrap", "extra": 5}, names)
    assert [(f.name, f.type) for f in fc] == [("mode", T.CHAR), ("pads", T.INT32)]
    assert warnings == []
    assert isinstance(fc, trt.PluginFieldCollection_)


def test_missing_names_are_skipped_with_the_parser_warning():
    fc, warnings = fields_from_attributes({"pads": [1]}, ["scale", "pads", "mode"])
    assert [f.name for f in fc] == ["pads"]
    assert len(warnings) == 2
    assert warnings[0] == ("Attribute scale not found in plugin node! Ensure that the plugin "
                           "creator has a default value defined or the engine may fail to build.")
    assert "mode" in warnings[1]


def test_attrs_may_be_node_attribute_list_and_field_names_may_be_none():
    node = helper.make_node("X", ["i"], ["o"], pads=[1, 2])
    fc, _ = fields_from_attributes(node.attribute, ["pads"])
    assert fc[0].data.tolist() == [1, 2]
    fc, warnings = fields_from_attributes({"a": 1}, None)
    assert len(fc) == 0 and warnings == []


def test_empty_list_is_ambiguous_unless_typed():
    with pytest.raises(FieldError, match="empty list"):
        one([])
    f, _ = one(helper.make_attribute("a", [], attr_type=AttributeProto.INTS))
    assert f.type == T.INT32 and f.size == 0


def test_unsupported_python_values_are_errors():
    with pytest.raises(FieldError, match="'a'"):
        one({"x": 1})
    with pytest.raises(FieldError, match="'a'"):
        one([1, "x"])


def test_fc_data_is_a_fresh_copy():
    f, _ = one([1, 2])
    f.data[0] = 99
    assert f.data.tolist() == [1, 2]


# -- value_from_cli ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("3", 3), ("-2", -2), ("0x10", 16), ("0.5", 0.5), ("1e-3", 1e-3), ("-1.5", -1.5),
    ("1,1,2,2", [1, 1, 2, 2]), ("[1, 2]", [1, 2]), ("5,", [5]), ("0.5,1", [0.5, 1.0]),
    ("1,2.5", [1.0, 2.5]), ("wrap", "wrap"), ("a,b", "a,b"), ("'3'", "3"), ('"1,2"', "1,2"),
    ("", ""), ("1,x", "1,x"),
])
def test_value_from_cli(text, expected):
    value = value_from_cli(text)
    assert value == expected and type(value) is type(expected)
    if isinstance(value, list):
        assert all(type(v) is type(expected[0]) for v in value)


def test_cli_values_convert_like_onnx_attributes():
    f, _ = one(value_from_cli("1,1,2,2"))
    assert f.type == T.INT32
    f, _ = one(value_from_cli("0.5"))
    assert f.type == T.FLOAT32
    f, _ = one(value_from_cli("wrap"))
    assert f.data.tobytes() == b"wrap\0"


# -- import_node ------------------------------------------------------------------------------------

class _Plugin(trt.IPluginV2DynamicExt):
    def __init__(self):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1


class _Creator(trt.IPluginCreator):
    def __init__(self, name="Pad", version="1", fields=("pads", "mode")):
        trt.IPluginCreator.__init__(self)
        self.name = name
        self.plugin_version = version
        self.field_names = trt.PluginFieldCollection([trt.PluginField(f) for f in fields])

    def create_plugin(self, name, fc):
        return _Plugin()


@pytest.fixture
def registry():
    reg = trt.get_plugin_registry()
    saved = dict(reg._creators)  # creators other test modules registered at import
    reg._clear()
    yield reg
    reg._clear()
    reg._creators.update(saved)


def test_import_node_defaults_version_1_and_empty_namespace(registry):
    creator = _Creator()
    assert registry.register_creator(creator, "")
    node = helper.make_node("Pad", ["x"], ["y"], name="pad0", pads=[1, 1], mode="wrap", other=3)
    imported = import_node(node)
    assert isinstance(imported, ImportedNode)
    assert imported.creator is creator
    assert imported.name == "pad0"
    assert imported.key == ("Pad", "1", "")
    assert [(f.name, f.type) for f in imported.fc] == [("pads", T.INT32), ("mode", T.CHAR)]
    assert imported.warnings == []


def test_import_node_reads_plugin_version_and_namespace(registry):
    v2 = _Creator(version="2")
    registry.register_creator(v2, "my_ns")
    registry.register_creator(_Creator(), "")
    node = helper.make_node("Pad", ["x"], ["y"], plugin_version="2", plugin_namespace="my_ns",
                            pads=[0])
    imported = import_node(node, registry)
    assert imported.creator is v2 and imported.key == ("Pad", "2", "my_ns")
    assert any("mode not found" in w for w in imported.warnings)


def test_unnamed_node_is_named_after_its_first_output(registry):
    registry.register_creator(_Creator(), "")
    node = helper.make_node("Pad", ["x"], ["y_out", "z"])
    assert import_node(node).name == "node_of_y_out"


def test_unknown_op_raises_lookup_error_listing_registered_creators(registry):
    registry.register_creator(_Creator(), "")
    registry.register_creator(_Creator("Other", "3"), "ns")
    node = helper.make_node("Nope", ["x"], ["y"], plugin_version="7")
    with pytest.raises(LookupError) as info:
        import_node(node)
    text = str(info.value)
    assert "'Nope', '7', ''" in text
    assert "Pad:1:" in text and "Other:3:ns" in text


def test_version_mismatch_is_not_found(registry):
    registry.register_creator(_Creator(), "")
    with pytest.raises(LookupError):
        import_node(helper.make_node("Pad", ["x"], ["y"], plugin_version="2"))


def test_int_plugin_version_is_read_as_an_empty_string(registry):
    # OnnxAttrs::get<std::string> reads attr.s(), which is "" for an INT attribute.
    registry.register_creator(_Creator(), "")
    node = helper.make_node("Pad", ["x"], ["y"], plugin_version=1)
    with pytest.raises(LookupError, match="not a STRING attribute"):
        import_node(node)


def test_namespace_falls_back_to_node_domain_from_10_10(registry):
    creator = _Creator()
    registry.register_creator(creator, "dom")
    node = helper.make_node("Pad", ["x"], ["y"], domain="dom")
    imported = import_node(node)
    assert imported.creator is creator and imported.key == ("Pad", "1", "dom")
    with override(trt_version="10.9"):
        with pytest.raises(LookupError):
            import_node(node)


def test_unsupported_attribute_in_field_names_fails_the_node(registry):
    registry.register_creator(_Creator(), "")
    node = helper.make_node("Pad", ["x"], ["y"], pads=numpy_helper.from_array(
        np.array([1, 2], np.int64)))
    with pytest.raises(FieldError, match="'pads'.*INT64"):
        import_node(node)


def test_create_plugin_receives_the_imported_fields(registry):
    from pyplugins.emulator import trampoline

    seen = {}

    class Recording(_Creator):
        def create_plugin(self, name, fc):
            seen["name"] = name
            seen["fields"] = {f.name: f.data.tobytes() for f in fc}
            return _Plugin()

    registry.register_creator(Recording(), "")
    imported = import_node(helper.make_node("Pad", ["x"], ["y"], name="n", mode="m", pads=[3]))
    plugin = trampoline.create_plugin(imported.creator, imported.name, imported.fc)
    assert isinstance(plugin, _Plugin)
    assert seen == {"name": "n", "fields": {"pads": np.int32(3).tobytes(), "mode": b"m\0"}}
    trampoline.destroy(plugin)


# -- external data, data/dims mismatches, duplicates (issue 9) -------------------------------------

def _external(location):
    from onnx import TensorProto, helper

    t = TensorProto()
    t.data_type = TensorProto.INT8
    t.dims.extend([4])
    t.data_location = TensorProto.EXTERNAL
    entry = t.external_data.add()
    entry.key, entry.value = "location", location
    return helper.make_attribute("w", t)


def test_external_data_is_read_only_inside_the_model_directory(tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    from pyplugins.emulator.onnx_import import fields_from_attributes

    (tmp_path / "secret.bin").write_bytes(b"TOP-SECRET-TOKEN")
    model = tmp_path / "model"
    model.mkdir()
    (model / "w.bin").write_bytes(b"\x01\x02\x03\x04")
    (model / "link.bin").symlink_to(tmp_path / "secret.bin")
    monkeypatch.chdir(tmp_path)  # the working directory holds the secret: never read from it
    for location, model_dir, needle in [
            ("secret.bin", None, "no model directory was given"),
            ("../secret.bin", str(model), "not a relative path inside"),
            (str(tmp_path / "secret.bin"), str(model), "not a relative path inside"),
            ("link.bin", str(model), "leads out of the model's directory")]:
        with pytest.raises(FieldError, match=needle) as info:
            fields_from_attributes([_external(location)], ["w"], node="n7", model_dir=model_dir)
        assert "'n7'" in str(info.value) and "'w'" in str(info.value)
        assert "TOP-SECRET" not in str(info.value)
    fc, _ = fields_from_attributes([_external("w.bin")], ["w"], node="n7", model_dir=str(model))
    assert fc[0].data.tobytes() == b"\x01\x02\x03\x04"


def test_tensor_data_that_does_not_match_its_dims_names_node_and_attribute():
    onnx = pytest.importorskip("onnx")
    from pyplugins.emulator.onnx_import import fields_from_attributes

    t = onnx.TensorProto()
    t.data_type = onnx.TensorProto.FLOAT
    t.dims.extend([3])
    t.raw_data = b"12345"
    with pytest.raises(FieldError, match="TENSOR data does not match its dims") as info:
        fields_from_attributes([onnx.helper.make_attribute("w", t)], ["w"], node="n8")
    assert "Node 'n8'" in str(info.value) and "Attribute 'w'" in str(info.value)


def test_duplicate_attributes_keep_the_first_with_a_warning():
    onnx = pytest.importorskip("onnx")
    from pyplugins.emulator.onnx_import import fields_from_attributes

    attrs = [onnx.helper.make_attribute("a", 1), onnx.helper.make_attribute("a", 2)]
    fc, warnings = fields_from_attributes(attrs, ["a"], node="n9")
    assert list(fc[0].data) == [1]
    assert any("appears more than once" in w and "keeps the first" in w for w in warnings)
