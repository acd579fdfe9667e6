"""trace: every trampoline call recorded, labelled and summarised for people reading it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pyplugins import emulator as trt
from pyplugins.emulator import trampoline
from pyplugins.emulator.onnx_import import fields_from_attributes
from pyplugins.checker.trace import Trace, TraceEntry, summarize

Op = trt.DimensionOperation


class Pad(trt.IPluginV2DynamicExt):
    def __init__(self):
        trt.IPluginV2DynamicExt.__init__(self)
        self.num_outputs = 1
        self.plugin_type, self.plugin_version, self.plugin_namespace = "Pad", "1", ""

    def get_output_datatype(self, index, input_types):
        return input_types[0]

    def get_output_dimensions(self, index, inputs, eb):
        out = trt.DimsExprs(inputs[0])
        out[-1] = eb.operation(Op.SUM, inputs[0][-1], eb.constant(2))
        out[0] = eb.operation(Op.PROD, inputs[0][0], eb.constant(2))
        return out

    def supports_format_combination(self, pos, in_out, num_inputs):
        return in_out[pos].type == trt.DataType.FLOAT

    def configure_plugin(self, inp, out):
        pass

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        raise ValueError("boom")

    def serialize(self):
        return b"abc"

    def clone(self):
        c = Pad()
        c.__dict__.update(self.__dict__)
        return c


class PadCreator(trt.IPluginCreator):
    def __init__(self):
        trt.IPluginCreator.__init__(self)
        self.name, self.plugin_version = "Pad", "1"
        self.field_names = trt.PluginFieldCollection([trt.PluginField("pads"),
                                                      trt.PluginField("mode")])

    def create_plugin(self, name, fc):
        return Pad()


def desc(shape, dtype=trt.DataType.FLOAT):
    return trt.PluginTensorDesc(shape, dtype, trt.TensorFormat.LINEAR)


def dyn(shape, lo, opt, hi):
    return trt.DynamicPluginTensorDesc(desc(shape), lo, opt, hi)


@pytest.fixture
def traced(capfd):
    creator = PadCreator()
    fc, _ = fields_from_attributes({"pads": [1, 2], "mode": "wrap"}, creator.field_names)
    with Trace() as trace:
        with trace.phase("parse"):
            p0 = trampoline.create_plugin(creator, "pad_node", fc)
            p1 = trampoline.clone(p0)
            trampoline.get_output_data_type(p1, 0, [trt.DataType.FLOAT])
            eb = trt.IExprBuilder()
            trampoline.get_output_dimensions(p1, 0, [eb._input(0, (-1, 3, 8, 8))], eb)
            eb._expire()
        with trace.phase("build"):
            d = dyn((-1, 3, 8, 8), (1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))
            trampoline.supports_format_combination(p1, 0, [d.desc, d.desc], 1)
            trampoline.configure_plugin(p1, [d], [d])
            trampoline.get_workspace_size(p1, [d.desc], [d.desc])
            trampoline.enqueue(p1, [desc((2, 3, 8, 8))], [desc((2, 3, 8, 10))], [0x7F00], [0x7F40],
                               0, 0x1234)
            trampoline.get_serialization_size(p1)
        trampoline.destroy(p0)
    capfd.readouterr()
    return trace


def by_method(trace, method):
    return [e for e in trace.entries if e.method == method]


def test_entries_in_order_with_indices_and_phases(traced):
    methods = [e.method for e in traced.entries]
    assert methods == ["create_plugin", "clone", "get_output_datatype", "get_output_dimensions",
                       "supports_format_combination", "configure_plugin", "get_workspace_size",
                       "enqueue", "serialize", "destroy"]
    assert [e.index for e in traced.entries] == list(range(len(methods)))
    assert [e.phase for e in traced.entries[:4]] == ["parse"] * 4
    assert {e.phase for e in traced.entries[4:9]} == {"build"}
    assert traced.entries[-1].phase is None  # after the phase block
    assert all(isinstance(e, TraceEntry) for e in traced)
    offsets = [e.t_offset_s for e in traced.entries]
    assert offsets == sorted(offsets) and offsets[0] >= 0


def test_objects_labelled_in_order_of_appearance(traced):
    create, clone = traced.entries[0], traced.entries[1]
    assert create.obj_label == "C0 PadCreator"
    assert create.result_summary == "P0 Pad"
    assert clone.obj_label == "P0 Pad" and clone.result_summary == "P1 Pad"
    assert traced.entries[2].obj_label == "P1 Pad"
    assert traced.entries[-1].obj_label == "P0 Pad"  # destroy(p0)
    assert clone.obj_id != traced.entries[2].obj_id


def test_argument_summaries_are_short_and_typed(traced):
    create = traced.entries[0]
    assert create.args_summary == "name='pad_node', fc={pads=[1, 2], mode='wrap\\x00'}"
    assert by_method(traced, "get_output_datatype")[0].args_summary == \
        "index=0, input_types=[FLOAT]"
    dims = by_method(traced, "get_output_dimensions")[0]
    assert dims.args_summary == ("output_index=0, inputs=[(in0[0], 3, 8, 8)], "
                                 "expr_builder=expr_builder")
    assert dims.result_summary == "(PROD(in0[0], 2), 3, 8, 10)"
    conf = by_method(traced, "configure_plugin")[0]
    assert conf.args_summary.startswith(
        "in=[(-1,3,8,8) FLOAT LINEAR min=(1,3,8,8) opt=(2,3,8,8) max=(4,3,8,8)], out=[")
    sfc = by_method(traced, "supports_format_combination")[0]
    assert sfc.args_summary == ("pos=0, in_out=[(-1,3,8,8) FLOAT LINEAR, (-1,3,8,8) FLOAT "
                                "LINEAR], num_inputs=1")
    assert sfc.result_summary == "True"


def test_pointers_and_streams_in_hex(traced):
    enq = by_method(traced, "enqueue")[0]
    assert "inputs=[0x7f00], outputs=[0x7f40], workspace=0x0, stream=0x1234" in enq.args_summary
    assert enq.args_summary.startswith("input_desc=[(2,3,8,8) FLOAT LINEAR], output_desc=[(2,3,8,10)")


def test_errors_and_defaults_recorded(traced):
    enq = by_method(traced, "enqueue")[0]
    assert enq.error.startswith("[ERROR] Exception thrown from enqueue()")
    assert "boom" in enq.error
    assert enq.result_summary == "-1"
    ws = by_method(traced, "get_workspace_size")[0]
    assert ws.default is True and ws.result_summary == "0" and ws.error is None
    assert by_method(traced, "configure_plugin")[0].default is False
    assert by_method(traced, "serialize")[0].result_summary == "<3 bytes>"


def test_timeline_is_one_line_per_call_with_errors_inline(traced):
    text = traced.format_timeline(legend=False)
    lines = text.splitlines()
    calls = [line for line in lines if not line.lstrip().startswith("!!")]
    assert len(calls) == len(traced.entries)
    first = calls[0]
    assert first.split()[0] == "0" and first.split()[1].startswith("+")
    assert "parse" in first and "C0 PadCreator" in first
    assert "create_plugin(name='pad_node', fc={pads=[1, 2], mode='wrap\\x00'}) -> P0 Pad" in first
    assert first.rstrip().endswith("ms")
    enq_at = next(i for i, line in enumerate(lines) if "enqueue(" in line)
    assert lines[enq_at + 1].strip().startswith("!! [ERROR] Exception thrown from enqueue()")
    assert "TensorRT's default" in next(line for line in lines if "get_workspace_size" in line)


def test_to_json_is_serializable_and_complete(traced):
    data = traced.to_json()
    text = json.dumps(data)
    assert json.loads(text) == data
    assert len(data) == len(traced.entries)
    assert set(data[0]) == {"index", "t_offset_s", "obj_id", "obj_label", "method",
                            "args_summary", "result_summary", "error", "seconds", "phase",
                            "default"}


def test_trace_only_records_while_active(capfd):
    plugin = Pad()
    trace = Trace()
    trampoline.get_output_data_type(plugin, 0, [trt.DataType.HALF])
    assert trace.entries == []
    with trace:
        trampoline.get_output_data_type(plugin, 0, [trt.DataType.HALF])
        assert trace._on_call in trampoline.listeners
    assert trace._on_call not in trampoline.listeners
    trampoline.get_output_data_type(plugin, 0, [trt.DataType.HALF])
    assert len(trace) == 1 and trace.entries[0].result_summary == "HALF"
    assert "1 calls" in repr(trace)


def test_nested_phases_restore(capfd):
    plugin = Pad()
    with Trace() as trace:
        with trace.phase("build"):
            with trace.phase("timing"):
                trampoline.initialize(plugin)
            trampoline.terminate(plugin)
    assert [e.phase for e in trace.entries] == ["timing", "build"]
    assert trace.entries[0].result_summary == "0"


def test_empty_timeline():
    assert "no plugin callbacks" in Trace().format_timeline()


def test_summarize_helpers():
    assert summarize(b"x" * 10) == "<10 bytes>"
    assert summarize(trt.DataType.HALF) == "HALF"
    assert summarize(desc((2, 3), trt.DataType.INT8)) == "(2,3) INT8 LINEAR"
    q = trt.PluginTensorDesc((4,), trt.DataType.INT8, trt.TensorFormat.LINEAR, 0.25)
    assert summarize(q) == "(4) INT8 LINEAR scale=0.25"
    assert summarize(trt.DimsExprs(2)) == "(?, ?)"
    assert summarize(np.zeros((2, 3), np.float16)) == "array(2,3) float16"
    long = summarize(list(range(100)))
    assert "..." in long and len(long) < 80
    assert len(summarize("y" * 1000)) <= 240
    f16 = trt.PluginField("h", np.zeros(2, np.float16), trt.PluginFieldType.FLOAT16)
    assert summarize(trt.PluginFieldCollection_([f16])) == "{h=<FLOAT16 x2>}"


def test_labels_are_reassigned_when_an_id_is_reused():
    trace = Trace()
    a = Pad()
    assert trace.label(a) == "P0 Pad"
    assert trace.label(a) == "P0 Pad"
    del a
    b = Pad()  # may reuse the id of the collected object
    assert trace.label(b) == "P1 Pad"


def test_long_format_searches_are_collapsed_to_accepted_combinations(capfd):
    class Picky(Pad):
        def supports_format_combination(self, pos, in_out, num_inputs):
            return in_out[pos].type == trt.DataType.HALF

    plugin = Picky()
    with Trace() as trace:
        for dtype in [trt.DataType.FLOAT] * 9 + [trt.DataType.HALF] + [trt.DataType.INT8] * 3:
            trampoline.supports_format_combination(plugin, 0, [desc((2,), dtype)], 1)
        trampoline.initialize(plugin)
    short = trace.format_timeline()
    assert "9 rejected format combination(s) not shown" in short
    assert "3 rejected format combination(s) not shown" in short
    assert "HALF LINEAR" in short and "-> True" in short
    assert sum("supports_format_combination(" in line for line in short.splitlines()) == 1
    full = trace.format_timeline(collapse=False)
    assert sum("supports_format_combination(" in line for line in full.splitlines()) == 13
    assert "not shown" not in full


def test_short_format_searches_are_not_collapsed():
    plugin = Pad()
    with Trace() as trace:
        for dtype in (trt.DataType.HALF, trt.DataType.FLOAT):
            trampoline.supports_format_combination(plugin, 0, [desc((2,), dtype)], 1)
    assert "not shown" not in trace.format_timeline()
    assert trace.format_timeline().count("supports_format_combination(") == 2


def test_timeline_opens_with_a_legend_of_the_labels(traced):
    lines = traced.format_timeline().splitlines()
    assert lines[0].startswith("Objects (labelled in order of first appearance")
    legend = lines[1:lines.index(next(line for line in lines if line.startswith("Calls (")))]
    roles = dict(line.strip().split("  ", 1) for line in legend)
    roles = {label: role.strip() for label, role in roles.items()}
    assert list(roles) == ["C0 PadCreator", "P0 Pad", "P1 Pad"], roles
    assert roles["C0 PadCreator"].startswith("plugin creator")
    assert roles["P0 Pad"] == "made by C0 create_plugin from the ONNX node's attributes (parse)"
    assert roles["P1 Pad"].startswith("clone of P0: ")
    # the calls follow, unchanged
    assert lines[len(legend) + 2:] == traced.format_timeline(legend=False).splitlines()


class RoundTripCreator(PadCreator):
    def deserialize_plugin(self, name, data):
        return Pad()


def test_roles_name_each_copy_by_the_phase_that_made_it(capfd):
    creator = RoundTripCreator()
    fc, _ = fields_from_attributes({}, creator.field_names)
    with Trace() as trace:
        with trace.phase("parse"):
            p0 = trampoline.create_plugin(creator, "n", fc)
            p1 = trampoline.clone(p0)
        with trace.phase("build"):
            trampoline.clone(p1)
        with trace.phase("runtime"):
            pd = trampoline.deserialize_plugin(creator, "n", b"{}")
            trampoline.clone(pd)
    roles = trace.roles()
    assert list(roles) == ["C0 RoundTripCreator", "P0 Pad", "P1 Pad", "P2 Pad", "P3 Pad",
                          "P4 Pad"]
    assert "add_plugin_v2" in roles["P1 Pad"] and roles["P1 Pad"].startswith("clone of P0")
    assert "builder's copy" in roles["P2 Pad"] and roles["P2 Pad"].startswith("clone of P1")
    assert roles["P3 Pad"].startswith("made by C0 deserialize_plugin")
    assert "execution context's copy" in roles["P4 Pad"] and roles["P4 Pad"].startswith(
        "clone of P3")


def test_an_object_no_call_made_is_first_seen(capfd):
    plugin = Pad()
    with Trace() as trace:
        trampoline.initialize(plugin)
    assert trace.roles() == {"P0 Pad": "first seen in initialize (-)"}
