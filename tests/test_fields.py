"""Field schema: field_names, conversion from ONNX-style / QDP-style / Python values, validation."""

from __future__ import annotations

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.emulator.onnx_import import fields_from_attributes
from pyplugins.errors import FieldError, PluginDefinitionError
from pyplugins.runtime.fields import Field, collect, field_names, values_from_fc, values_from_python
from pyplugins.runtime.plugin import Plugin

FT = trt.PluginFieldType


class Schema(Plugin):
    name = "SchemaOp"
    pads = Field.ints(len=4, min=0)
    scales = Field.floats(default=(1.0, 2.0))
    axis = Field.int(default=-1, min=-8, max=7)
    eps = Field.float(default=1e-5, min=0.0)
    mode = Field.enum("max", "avg", default="max")
    level = Field.enum(1, 2, 3, default=1)
    label = Field.str(default="")
    flag = Field.bool(default=False)


FIELDS = Schema.__pp_fields__


def pf(name, values, dtype, ftype):
    return trt.PluginField(name, np.array(values, dtype=dtype), ftype)


def chars(name, text: bytes):
    return trt.PluginField(name, np.frombuffer(text, dtype=np.int8), FT.CHAR)


def from_fc(fc):
    """What Plugin.from_fields does: read the collection, then convert each value once."""
    return values_from_python(FIELDS, values_from_fc(FIELDS, fc, "SchemaOp"), "SchemaOp")


def fc_of(*fields):
    return trt.PluginFieldCollection_(list(fields))


# -- declaration ------------------------------------------------------------------------------------

def test_collect_keeps_declaration_order():
    assert list(collect(Schema)) == ["pads", "scales", "axis", "eps", "mode", "level", "label",
                                     "flag"]


def test_field_names_advertise_types_with_empty_data():
    names = field_names(FIELDS)
    assert isinstance(names, trt.PluginFieldCollection)
    got = {f.name: (f.type, f.size) for f in names}
    assert got == {"pads": (FT.INT32, 0), "scales": (FT.FLOAT32, 0), "axis": (FT.INT32, 0),
                   "eps": (FT.FLOAT32, 0), "mode": (FT.CHAR, 0), "level": (FT.INT32, 0),
                   "label": (FT.CHAR, 0), "flag": (FT.INT32, 0)}


def test_bad_default_is_a_definition_error():
    with pytest.raises(PluginDefinitionError, match="bad default.*'k'.*must be an int"):
        class _Bad(Plugin):
            name = "BadDefault"
            k = Field.int(default=1.5)


def test_enum_needs_homogeneous_choices():
    with pytest.raises(PluginDefinitionError, match="at least one"):
        Field.enum()
    with pytest.raises(PluginDefinitionError, match="all strings or all ints"):
        Field.enum("a", 1)


def test_one_field_object_cannot_serve_two_names():
    shared = Field.int(default=1)
    with pytest.raises((PluginDefinitionError, RuntimeError), match="one Field per attribute"):
        class _Twice(Plugin):
            name = "Twice"
            a = shared
            b = shared


# -- ONNX-parser-style field collections ------------------------------------------------------------

def test_onnx_style_values_convert():
    fc = fc_of(pf("pads", [1, 1, 2, 2], np.int32, FT.INT32),
               pf("scales", [0.5], np.float32, FT.FLOAT32),
               pf("axis", [3], np.int32, FT.INT32),
               pf("eps", [1], np.int32, FT.INT32),           # an INT attribute for a float field
               chars("mode", b"avg\0"),                      # STRING: CHAR with trailing NUL
               chars("label", b"hello\0"),
               pf("flag", [1], np.int32, FT.INT32))
    values = from_fc(fc)
    assert values == {"pads": [1, 1, 2, 2], "scales": [0.5], "axis": 3, "eps": 1.0, "mode": "avg",
                      "level": 1, "label": "hello", "flag": True}
    assert type(values["axis"]) is int and type(values["eps"]) is float
    assert all(type(v) is int for v in values["pads"])


def test_through_the_emulated_onnx_parser():
    attrs = {"pads": (0, 1, 2, 3), "mode": "avg", "eps": 0.25, "flag": True, "unrelated": 7}
    fc, warnings = fields_from_attributes(attrs, field_names(FIELDS))
    values = from_fc(fc)
    assert values["pads"] == [0, 1, 2, 3] and values["mode"] == "avg"
    assert values["eps"] == 0.25 and values["flag"] is True
    assert values["scales"] == [1.0, 2.0]  # missing attribute -> default
    assert any("scales" in w for w in warnings)


def test_qdp_style_int64_float64_int8():
    fc = fc_of(pf("pads", [4, 3, 2, 1], np.int64, FT.INT64),
               pf("scales", [0.1, 0.2], np.float64, FT.FLOAT64),
               pf("flag", [1], np.int8, FT.INT8),
               trt.PluginField("label", np.frombuffer(b"no-nul", np.int8), FT.CHAR))
    values = from_fc(fc)
    assert values["pads"] == [4, 3, 2, 1]
    assert values["scales"] == [0.1, 0.2]
    assert values["flag"] is True and values["label"] == "no-nul"


def test_string_utf8_and_nul_handling():
    fc = fc_of(pf("pads", [0, 0, 0, 0], np.int32, FT.INT32), chars("label", "héllo\0".encode()))
    assert from_fc(fc)["label"] == "héllo"
    two = fc_of(pf("pads", [0, 0, 0, 0], np.int32, FT.INT32), chars("label", b"a\0b\0"))
    with pytest.raises(FieldError, match="several NUL-separated"):
        from_fc(two)


@pytest.mark.parametrize("field, message", [
    (pf("pads", [1.5, 0, 0, 0], np.float32, FT.FLOAT32),
     "Field 'pads' of plugin 'SchemaOp' must be a list of ints"),
    (pf("axis", [1, 2], np.int32, FT.INT32), "must be a single value"),
    (chars("axis", b"3\0"), "must be an int \\(got the string '3'\\)"),
    (pf("label", [1, 2], np.int32, FT.INT32), "must be a string"),
    (chars("mode", b"mean\0"), "must be one of 'max', 'avg' \\(got 'mean'\\)"),
    (pf("flag", [2], np.int32, FT.INT32), "must be a bool"),
    (trt.PluginField("eps", np.array([1], np.float16), FT.FLOAT16), "cannot be read"),
])
def test_bad_onnx_values_name_field_plugin_and_value(field, message):
    fc = fc_of(pf("pads", [0, 0, 0, 0], np.int32, FT.INT32), field) if field.name != "pads" \
        else fc_of(field)
    with pytest.raises(FieldError, match=message):
        from_fc(fc)


def test_missing_required_and_unknown_and_duplicate():
    with pytest.raises(FieldError, match="needs field\\(s\\) 'pads'.*no default"):
        from_fc(fc_of())
    with pytest.raises(FieldError, match="no field 'pad' \\(did you mean 'pads'\\?\\)"):
        from_fc(fc_of(pf("pad", [1], np.int32, FT.INT32)))
    dup = fc_of(pf("pads", [0, 0, 0, 0], np.int32, FT.INT32),
                pf("pads", [0, 0, 0, 0], np.int32, FT.INT32))
    with pytest.raises(FieldError, match="appears twice"):
        from_fc(dup)


# -- Python values ----------------------------------------------------------------------------------

def test_python_values_convert_and_validate():
    values = values_from_python(FIELDS, {"pads": (1, 2, 3, 4), "eps": np.float32(0.5),
                                         "axis": np.int64(2), "flag": "true", "level": 3,
                                         "label": b"x\0"}, "SchemaOp")
    assert values["pads"] == [1, 2, 3, 4] and isinstance(values["pads"], list)
    assert values["eps"] == 0.5 and values["axis"] == 2 and values["flag"] is True
    assert values["level"] == 3 and values["label"] == "x"
    arr = values_from_python(FIELDS, {"pads": np.array([0, 0, 1, 1], np.int32)}, "SchemaOp")
    assert arr["pads"] == [0, 0, 1, 1]


@pytest.mark.parametrize("given, message", [
    ({"pads": 1.5}, r"Field 'pads' of plugin 'SchemaOp' must be a list of ints \(got 1.5, a float\)\."),
    ({"pads": [1, 2.5, 0, 0]}, r"must be a list of ints \(got \[1, 2.5, 0, 0\], whose element 2.5, a float\)"),
    ({"pads": [1, 2, 3]}, r"must have exactly 4 elements \(got 3: \[1, 2, 3\]\)"),
    ({"pads": [1, -2, 3, 4]}, r"must have every element >= 0"),
    ({"pads": [0] * 4, "axis": 9}, r"Field 'axis' .* must be <= 7 \(got 9\)"),
    ({"pads": [0] * 4, "axis": True}, r"must be an int \(got True, a bool\)"),
    ({"pads": [0] * 4, "eps": -1.0}, r"must be >= 0.0"),
    ({"pads": [0] * 4, "eps": "1"}, r"must be a float \(got '1', a str\)"),
    ({"pads": [0] * 4, "level": 4}, r"must be one of 1, 2, 3 \(got 4\)"),
    ({"pads": [0] * 4, "flag": 2}, r"must be a bool"),
    ({"pads": [0] * 4, "label": 3}, r"must be a string"),
    ({"pads": [0] * 4, "mod": "avg"}, r"no field 'mod' \(did you mean 'mode'\?\)"),
])
def test_python_value_errors(given, message):
    with pytest.raises(FieldError, match=message):
        values_from_python(FIELDS, given, "SchemaOp")


def test_custom_validator():
    def even(v):
        if v % 2:
            raise ValueError("must be even")

    class V(Plugin):
        name = "ValidatorOp"
        k = Field.int(validate=even)
        ks = Field.ints(default=(), validate=lambda v: len(v) < 3)

    assert values_from_python(V.__pp_fields__, {"k": 2}, "ValidatorOp")["k"] == 2
    with pytest.raises(FieldError, match="is invalid: must be even"):
        values_from_python(V.__pp_fields__, {"k": 3}, "ValidatorOp")
    with pytest.raises(FieldError, match="fails check <lambda>"):
        values_from_python(V.__pp_fields__, {"k": 2, "ks": [1, 2, 3]}, "ValidatorOp")
    with pytest.raises(PluginDefinitionError, match="callable"):
        Field.int(validate=3)


def test_defaults_are_fresh_copies():
    a = values_from_python(FIELDS, {"pads": [0] * 4}, "SchemaOp")
    b = values_from_python(FIELDS, {"pads": [0] * 4}, "SchemaOp")
    a["scales"].append(9.0)
    assert b["scales"] == [1.0, 2.0] and Schema.scales.default == [1.0, 2.0]


def test_attribute_access_and_assignment_validate():
    p = Schema(pads=[1, 1, 1, 1])
    assert p.pads == [1, 1, 1, 1] and p.mode == "max"
    p.eps = 2
    assert p.eps == 2.0
    with pytest.raises(FieldError, match="Field 'mode' of plugin 'SchemaOp'"):
        p.mode = "median"
    assert isinstance(Schema.pads, Field) and "ints" in repr(Schema.pads)


# -- what the kernels can take (issue 9) ------------------------------------------------------------

class Launch(Plugin):
    name = "LaunchOp"
    stride = Field.int(default=1, min=1, int32=True)
    sizes = Field.ints(default=(), int32=True)
    count = Field.int(default=0)
    eps = Field.float(default=1e-5)
    scales = Field.floats(default=())

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        return inputs[0]

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        pass


def test_int32_launch_fields_are_refused_at_create_time_naming_plugin_and_field():
    with pytest.raises(FieldError, match=r"Field 'stride' of plugin 'LaunchOp' must be in "
                                         r"-2147483648 \.\. 2147483647, as the kernel's launch "
                                         r"arithmetic holds it in int32 \(got 2147483648\)"):
        Launch(stride=2**31)
    fc = trt.PluginFieldCollection_([pf("sizes", [1, 2**31], np.int64, FT.INT64)])
    with pytest.raises(FieldError, match="'sizes' of plugin 'LaunchOp' must have every element in"):
        Launch.from_fields(fc)
    assert Launch(stride=2**31 - 1, sizes=[-2**31]).stride == 2**31 - 1
    assert Launch(count=2**40).count == 2**40  # not declared int32: int64 is the limit
    with pytest.raises(FieldError, match="'count' .* as it is serialized as int64"):
        Launch(count=2**63)


def test_float_fields_must_be_float32_and_lossy_narrowing_warns():
    with pytest.raises(FieldError, match=r"Field 'eps' of plugin 'LaunchOp' must be representable "
                                         r"as float32 .*1e\+39 becomes inf"):
        Launch(eps=1e39)
    with pytest.raises(FieldError, match="'scales' .* must have every element representable"):
        Launch(scales=[1.0, -1e39])
    assert Launch(eps=float("inf")).eps == float("inf")  # inf given as inf stays a choice
    with pytest.warns(UserWarning, match=r"Field 'eps' of plugin 'LaunchOp': 1e-50 loses "
                                         r"precision as float32 \(the kernel receives 0\.0\)"):
        Launch(eps=1e-50)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Launch(eps=0.1, scales=[0.3, 1e30]).eps == 0.1  # rounding alone does not warn


def test_messages_cap_echoed_values():
    big = list(range(1_000_000))
    for call in (lambda: values_from_python(FIELDS, {"pads": big}, "SchemaOp"),
                 lambda: from_fc(fc_of(pf("pads", big, np.int32, FT.INT32))),
                 lambda: values_from_python(FIELDS, {"pads": [0.5] + big}, "SchemaOp"),
                 lambda: from_fc(fc_of(pf("pads", [0] * 4, np.int32, FT.INT32),
                                       pf("axis", big, np.int32, FT.INT32)))):
        with pytest.raises(FieldError) as info:
            call()
        text = str(info.value)
        assert len(text) < 400 and "elements" in text and "999999" in text, text
    with pytest.raises(FieldError, match=r"\(got 1000000: \[0, 1, 2, 3, 4, 5, \.\.\., 999998, "
                                         r"999999\] \(1000000 elements\)\)"):
        values_from_python(FIELDS, {"pads": big}, "SchemaOp")
    with pytest.raises(FieldError) as info:
        values_from_python(FIELDS, {"pads": [0] * 4, "label": b"\xff" * 10**6}, "SchemaOp")
    assert len(str(info.value)) < 400


def test_values_from_fc_reads_and_init_converts_each_value_once(monkeypatch):
    calls = []
    original = Field.convert

    def counting(self, value, plugin):
        calls.append(self.name)
        return original(self, value, plugin)

    monkeypatch.setattr(Field, "convert", counting)
    fc = fc_of(pf("pads", [1, 1, 2, 2], np.int32, FT.INT32), pf("flag", [1], np.int8, FT.INT8))
    raw = values_from_fc(FIELDS, fc, "SchemaOp")
    assert raw == {"pads": [1, 1, 2, 2], "flag": 1} and calls == []  # read, not converted
    plugin = Schema.from_fields(fc)
    assert plugin.pads == [1, 1, 2, 2] and plugin.flag is True
    assert sorted(calls) == ["flag", "pads"]  # once each, defaults are not re-converted


# -- NaN, out-of-range numbers, oversized fields (issue 24) ------------------------------------------

class Ranged(Plugin):
    name = "RangedOp"
    eps = Field.float(default=1e-5, min=0.0)
    gain = Field.float(default=1.0, max=10.0)
    weights = Field.floats(default=())
    fill = Field.float(default=0.0, allow_nan=True)
    clip = Field.float(default=0.0, min=-1.0, max=1.0, allow_nan=True)

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        return inputs[0]

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        pass


@pytest.mark.parametrize("kwargs, match", [
    ({"eps": float("nan")}, r"Field 'eps' of plugin 'RangedOp' must be a finite number >= 0\.0, "
                            r"which NaN is not \(got nan\); give a number in range"),
    ({"gain": float("nan")}, r"Field 'gain' of plugin 'RangedOp' must be a finite number "
                             r"<= 10\.0, which NaN is not"),
    ({"clip": float("nan")}, r"Field 'clip' .* must be a finite number >= -1\.0 and <= 1\.0"),
])
def test_nan_fails_min_and_max_bounds(kwargs, match):
    with pytest.raises(FieldError, match=match):
        Ranged(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"weights": [1.0, float("nan")]}, r"Field 'weights' of plugin 'RangedOp' must have every "
                                       r"element a number, not NaN \(got \[1\.0, nan\]\)"),
    ({"weights": np.array([np.nan], np.float32)}, r"'weights' .* not NaN"),
])
def test_nan_is_refused_unless_the_field_opts_in(kwargs, match):
    with pytest.raises(FieldError, match=match) as info:
        Ranged(**kwargs)
    assert "allow_nan=True" in str(info.value)  # the fix is named
    assert np.isnan(Ranged(fill=float("nan")).fill)
    fc = trt.PluginFieldCollection_([pf("weights", [np.nan], np.float32, FT.FLOAT32)])
    with pytest.raises(FieldError, match="'weights' of plugin 'RangedOp' .* not NaN"):
        Ranged.from_fields(fc)


def test_infinities_are_still_decided_by_bounds():
    assert Ranged(eps=float("inf")).eps == float("inf")
    with pytest.raises(FieldError, match=r"'gain' .* must be <= 10\.0 \(got inf\)"):
        Ranged(gain=float("inf"))


def test_an_int_beyond_the_float_range_is_a_field_error():
    with pytest.raises(FieldError, match=r"Field 'eps' of plugin 'RangedOp' must be a float .*"
                                         r"an int beyond the range of a float"):
        Ranged(eps=10 ** 400)
    with pytest.raises(FieldError, match=r"'weights' .*whose element .*beyond the range"):
        Ranged(weights=[1.0, -10 ** 400])


def test_a_plugin_field_over_the_element_limit_is_refused_before_it_is_read():
    from pyplugins._config import override

    fc = trt.PluginFieldCollection_([pf("weights", np.zeros(50), np.float32, FT.FLOAT32)])
    assert len(Ranged.from_fields(fc).weights) == 50
    with override(max_field_elements="49"):
        with pytest.raises(FieldError, match=r"Field 'weights' of plugin 'RangedOp' holds 50 "
                                             r"values, over the limit of 49 .*"
                                             r"PYPLUGINS_MAX_FIELD_ELEMENTS"):
            Ranged.from_fields(fc)
