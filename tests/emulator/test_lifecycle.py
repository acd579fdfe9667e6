"""The lifecycle driver: call order, objects, shapes, format search, serialization, devices."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pyplugins import emulator
from pyplugins._config import override
from pyplugins.emulator import DataType, TensorFormat, trampoline
from pyplugins.checker import _fresh, lifecycle
from pyplugins.emulator.specs import TensorSpec

emulator.install()  # `import tensorrt` in the plugin modules gives the emulator

PLUGINS = Path(__file__).parent / "plugins"
CIRC_PAD = str(PLUGINS / "circ_pad.py")
AXPY = str(PLUGINS / "elementwise.py")
circ_pad = _fresh.import_module(CIRC_PAD)
axpy = _fresh.import_module(AXPY)


class Calls:
    """Records (object, method, args) of every trampoline call in a block."""

    def __init__(self):
        self.events = []

    def __enter__(self):
        trampoline.listeners.append(self.events.append)
        return self

    def __exit__(self, *exc):
        trampoline.listeners.remove(self.events.append)

    def of(self, method):
        return [e for e in self.events if e.method == method]


# -- TensorSpec ------------------------------------------------------------------------------------

def test_spec_parse_static_and_dynamic():
    s = TensorSpec.parse("2x3x8x8:float32")
    assert (s.shape, s.min, s.opt, s.max, s.datatype) == (
        (2, 3, 8, 8), (2, 3, 8, 8), (2, 3, 8, 8), (2, 3, 8, 8), DataType.FLOAT)
    d = TensorSpec.parse("1-2-4x3x8x8:float16")
    assert (d.shape, d.min, d.opt, d.max, d.datatype) == (
        (-1, 3, 8, 8), (1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8), DataType.HALF)
    assert TensorSpec.parse("4x4:fp16:HWC").format is TensorFormat.HWC
    assert TensorSpec.parse(":int32").shape == ()
    assert TensorSpec((2,), "HALF").datatype is DataType.HALF
    assert TensorSpec((2,), DataType.INT8).datatype is DataType.INT8


@pytest.mark.parametrize("bad", ["2x1-2x3:float32", "2xa:float32", "2x3:float64", "1:2:3:4"])
def test_spec_parse_rejects(bad):
    with pytest.raises((ValueError, TypeError)):
        TensorSpec.parse(bad)


def test_spec_validation():
    with pytest.raises(ValueError, match="opt"):
        TensorSpec((-1, 3), np.float32)
    with pytest.raises(ValueError, match="min <= opt <= max"):
        TensorSpec((-1, 3), np.float32, min=(4, 3), opt=(2, 3), max=(8, 3))
    with pytest.raises(ValueError, match="does not fit"):
        TensorSpec((2, 3), np.float32, opt=(2, 4))
    spec = TensorSpec((-1, 3), np.float32, data=np.zeros((5, 3), np.float32))
    assert spec.min == spec.opt == spec.max == (5, 3)


# -- the lifecycle on the CPU ------------------------------------------------------------------------

def run_circ_pad(spec="1x3x8x8:float32", **kwargs):
    kwargs.setdefault("device", "cpu")
    return lifecycle.run(circ_pad.my_plugin_creator, [TensorSpec.parse(spec)],
                         {"pads": (1, 2, 2, 1)}, **kwargs)


def test_good_plugin_cpu_report():
    report = run_circ_pad()
    assert report.ok, report.format()
    assert report.plugin == "PPTestCircPad:1:"
    assert report.output_shapes == [(1, 3, 11, 11)]
    assert report.output_dtypes == [DataType.FLOAT]
    assert not report.enqueue_ran and report.outputs is None
    assert "device='cpu'" in report.skipped
    assert json.loads(json.dumps(report.to_dict()))["plugin"] == "PPTestCircPad:1:"
    assert "PPTestCircPad:1:: OK" in report.format()


def test_lookup_by_name_and_tuple():
    spec = [TensorSpec.parse("1x1x4x4:float32")]
    assert lifecycle.run("PPTestCircPad", spec, {"pads": (1, 1, 1, 1)}, device="cpu").ok
    assert lifecycle.run(("PPTestCircPad", "1", ""), spec, {"pads": (1, 1, 1, 1)},
                         device="cpu").ok
    with pytest.raises(LookupError, match="NoSuchPlugin"):
        lifecycle.run("NoSuchPlugin:1", spec, device="cpu")


def test_call_order_and_objects():
    report = run_circ_pad("1-2-3x3x8x8:float32", trace=True)
    assert report.ok, report.format()
    steps = [(e.obj_label.split()[0], e.method, e.phase) for e in report.trace.entries]
    first = [s[:2] for s in steps[:7]]
    assert first == [("C0", "create_plugin"), ("P0", "clone"), ("P1", "get_output_datatype"),
                     ("P1", "get_output_dimensions"), ("P0", "destroy"), ("P1", "clone"),
                     ("P2", "supports_format_combination")]
    build = [s[:2] for s in steps if s[2] == "build" and s[1] != "supports_format_combination"]
    assert build == [("P1", "clone"), ("P2", "configure_plugin"), ("P2", "get_workspace_size"),
                     ("P2", "initialize"), ("P2", "configure_plugin"), ("P2", "serialize"),
                     ("P2", "serialize"), ("P2", "serialize"), ("P2", "terminate"),
                     ("P2", "destroy"), ("P1", "destroy")]
    runtime = [s[:2] for s in steps if s[2] == "runtime"]
    assert runtime == [("C0", "deserialize_plugin"), ("P3", "initialize"), ("P3", "clone"),
                       ("P4", "configure_plugin"), ("P4", "get_workspace_size"),
                       ("P4", "destroy"), ("P3", "terminate"), ("P3", "destroy")]
    assert "create_plugin" in report.trace.format_timeline()


def test_configure_phases_and_expression_symbols():
    with Calls() as calls:
        report = run_circ_pad("1-2-4x3x8x8:float16")
    assert report.ok, report.format()
    assert report.output_shapes == [(2, 3, 11, 11)] and report.output_dtypes == [DataType.HALF]
    build, execution, runtime = calls.of("configure_plugin")
    (bin_,), (bout,) = build.args
    assert tuple(bin_.desc.dims) == (-1, 3, 8, 8) and tuple(bout.desc.dims) == (-1, 3, 11, 11)
    assert (tuple(bin_.min), tuple(bin_.opt), tuple(bin_.max)) == (
        (1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))
    assert (tuple(bout.min), tuple(bout.max)) == ((1, 3, 11, 11), (4, 3, 11, 11))
    assert bin_.desc.type == DataType.HALF and bin_.desc.format == TensorFormat.LINEAR
    for event in (execution, runtime):
        (i,), (o,) = event.args
        assert tuple(i.desc.dims) == (2, 3, 8, 8) and tuple(o.desc.dims) == (2, 3, 11, 11)
    workspace = calls.of("get_workspace_size")
    assert tuple(workspace[0].args[0][0].dims) == (4, 3, 8, 8)  # build: the profile's max
    assert tuple(workspace[1].args[0][0].dims) == (2, 3, 8, 8)  # runtime: concrete


def test_expressions_expire_and_dynamic_dims_are_symbols():
    seen = []

    def listener(event):
        if event.method == "get_output_dimensions":
            seen.append(event.args[1][0])

    trampoline.listeners.append(listener)
    try:
        run_circ_pad("1-2-4x3x8x8:float32")
    finally:
        trampoline.listeners.remove(listener)
    with pytest.raises(RuntimeError, match="callback has returned"):
        seen[0][0].is_constant()
    assert repr(seen[0][0]) == "in0[0]" and repr(seen[0][1]) == "3"


def test_format_search_prefix_and_declared_first():
    with Calls() as calls:
        run_circ_pad("1x3x8x8:float16")
    sfc = calls.of("supports_format_combination")
    assert 1 < len(sfc) <= 100
    pos, in_out, n_in = sfc[0].args
    assert (pos, n_in, len(in_out)) == (0, 1, 2)
    assert in_out[0].type == DataType.HALF and in_out[0].format == TensorFormat.LINEAR
    later = [e for e in sfc if e.args[0] == 1]
    assert later and all(type(e.args[1][0]) is emulator.PluginTensorDesc for e in later)
    offered = {(e.args[1][0].type, e.args[1][0].format) for e in sfc if e.args[0] == 0}
    assert (DataType.INT32, TensorFormat.HWC8) in offered  # other types and formats are probed


def test_format_search_stops_at_limit():
    import tensorrt as trt

    class Anything(axpy.AxpyPlugin):
        def supports_format_combination(self, pos, in_out, num_inputs):
            return True

        def clone(self):
            return Anything(self.alpha)

    class Creator(axpy.AxpyPluginCreator):
        def create_plugin(self, name, fc):
            return Anything()

    with Calls() as calls:
        report = lifecycle.run(Creator(), ["2x3x4x4:float32", "2x3x4x4:float32"], device="cpu")
    assert report.ok, report.format()
    # TensorRT stops after 100 combinations *found* (here 100 accepted whole combinations),
    # not after 100 calls: the calls for the positions before the last come on top.
    limit = trt.IPluginV2DynamicExt.FORMAT_COMBINATION_LIMIT
    sfc = calls.of("supports_format_combination")
    last = [e for e in sfc if e.args[0] == 2]
    assert len(last) == limit and len(sfc) > limit
    from pyplugins.checker.format_search import search_formats
    from pyplugins.emulator.specs import TensorSpec
    from pyplugins.emulator.tensors import PluginTensors

    specs = [TensorSpec.parse("2x3x4x4:float32")] * 2
    tensors = PluginTensors(specs, {"net": [(2, 3, 4, 4)]})
    combos, tried, _ = search_formats(Anything(), tensors, [DataType.FLOAT] * 3)
    assert len(combos) == limit and len(tried) == len(sfc)


def test_strongly_typed_build_fails_clearly():
    report = lifecycle.run(axpy.my_plugin_creator, ["4:int32", "4:int32"], {"alpha": 2.0},
                           device="cpu")
    assert report.checks() == ["format"]
    message = report.violations[0].message
    assert "INT32" in message and "refused in_out[0] = INT32/LINEAR" in message
    assert "returned None" not in message  # its answers are False, not None
    assert "build failed" in report.skipped


def test_serialize_called_as_the_binding_does():
    with Calls() as calls:
        report = run_circ_pad()
    serialized = [e.result for e in calls.of("serialize")]
    assert len(serialized) == 3 and len(set(serialized)) == 1
    deserialized = calls.of("deserialize_plugin")[0]
    assert deserialized.args == ("plugin_node", serialized[0])
    assert report.ok


def test_fields_from_attributes_and_missing_warning():
    with Calls() as calls:
        report = lifecycle.run(axpy.my_plugin_creator, ["2x3:float32", "2x3:float32"],
                               device="cpu")
    assert report.ok
    assert report.warnings and "alpha" in report.warnings[0]
    assert len(calls.of("create_plugin")[0].args[1]) == 0
    with Calls() as calls:
        lifecycle.run(axpy.my_plugin_creator, ["2x3:float32", "2x3:float32"],
                      {"alpha": 0.5, "unused": 3}, device="cpu")
    fc = calls.of("create_plugin")[0].args[1]
    assert [(f.name, f.type.name, f.data.tolist()) for f in fc] == [("alpha", "FLOAT32", [0.5])]


def test_pyplugins_device_cpu_knob():
    with override(device="cpu"):
        report = run_circ_pad(device="auto")
    assert "PYPLUGINS_DEVICE=cpu" in report.skipped and not report.enqueue_ran


def test_fresh_process_cpu_good_plugin():
    report = run_circ_pad(fresh_process=True, plugin_module=CIRC_PAD)
    assert report.ok, report.format()


def test_bad_device_argument():
    with pytest.raises(ValueError, match="device"):
        run_circ_pad(device="tpu")


# -- on the GPU ----------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_circ_pad_outputs_match_numpy(dtype):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 7)).astype(dtype)
    spec = TensorSpec((-1, 3, 5, 7), dtype, min=(1, 3, 5, 7), max=(4, 3, 5, 7), data=x)
    report = lifecycle.run(circ_pad.my_plugin_creator, [spec], {"pads": (1, 2, 3, 1)})
    assert report.ok, report.format()
    assert report.enqueue_ran and report.skipped is None
    np.testing.assert_array_equal(report.outputs[0], circ_pad.reference(x, (1, 2, 3, 1)))


@pytest.mark.gpu
def test_elementwise_outputs_timing_and_fresh_process():
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((2, 3, 4, 5)).astype(np.float32) for _ in range(2))
    with Calls() as calls:
        report = lifecycle.run(axpy.my_plugin_creator, [a, b], {"alpha": 0.5},
                               fresh_process=True, plugin_module=AXPY)
    assert report.ok, report.format()
    np.testing.assert_allclose(report.outputs[0], 0.5 * a + b, rtol=1e-6)
    # LINEAR and HWC were both accepted: the build timed two enqueues before the runtime one,
    # and the runtime also ran the combination the builder did not pick (HWC), since which one
    # TensorRT keeps is decided by timing.
    assert len(calls.of("enqueue")) == 2 + 1 + 1 + 1  # timing x2, eager, captured, HWC run


@pytest.mark.gpu
def test_keep_on_device_and_circ_pad_fresh_process():
    import cupy as cp

    report = run_circ_pad("1x2x4x4:float32", device="gpu", keep_on_device=True,
                          fresh_process=True, plugin_module=CIRC_PAD)
    assert report.ok, report.format()
    assert isinstance(report.outputs[0], cp.ndarray) and report.outputs[0].shape == (1, 2, 7, 7)
