"""V3-only capabilities: size tensors, aliased I/O, tactic timing (GPU), and their CPU checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pyplugins import emulator
from pyplugins._config import override
from pyplugins.checker import _fresh, lifecycle
from pyplugins.emulator import trampoline
from pyplugins.checker.checks.recorder import Recorder
from pyplugins.checker.lifecycle import TensorSpec

emulator.install()

PLUGINS = Path(__file__).parent / "plugins"
special = _fresh.import_module(str(PLUGINS / "v3_special.py"))
scale = _fresh.import_module(str(PLUGINS / "v3_scale.py"))

NONZERO_INPUT = np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 0, 4]], dtype=np.float32)


class Calls:
    def __init__(self):
        self.events = []

    def __enter__(self):
        trampoline.listeners.append(self.events.append)
        return self

    def __exit__(self, *exc):
        trampoline.listeners.remove(self.events.append)

    def of(self, method):
        return [e for e in self.events if e.method == method]


# -- on the CPU -----------------------------------------------------------------------------------

def test_size_tensor_outputs_are_allocated_at_the_upper_bound():
    with override(device="cpu"):
        report = lifecycle.run("PPTestV3NonZero", ["3x4:float32"])
    assert report.ok, report.format()
    assert report.output_shapes == [(12, 2), ()]
    assert any("output 0's shape depends on size tensor output(s) [1]" in w
               for w in report.warnings)
    assert [t.name for t in report.output_dtypes] == ["INT32", "INT64"]


def test_size_tensor_on_a_non_scalar_output_is_reported():
    with override(device="cpu"):
        report = lifecycle.run("PPTestV3NonZeroNot0D", ["3x4:float32"])
    assert report.checks() == ["size_tensor"]


def test_v2_expression_builder_still_refuses_size_tensors():
    eb = emulator.IExprBuilder()
    with pytest.raises(RuntimeError, match="only available to IPluginV3"):
        eb.declare_size_tensor(0, eb.constant(1), eb.constant(2))


def test_aliasing_is_honoured_only_with_the_preview_feature():
    with override(device="cpu"), Calls() as calls:
        plain = lifecycle.run("PPTestV3AliasBadIndex", ["3x4:float32"])
        assert calls.of("get_aliased_input") == []
        aliased = lifecycle.run("PPTestV3AliasBadIndex", ["3x4:float32"], aliased_io=True)
    assert plain.ok and aliased.checks() == ["aliasing"]
    assert [e.args for e in calls.of("get_aliased_input")] == [(0,)]


def test_aliasing_is_ignored_for_a_plain_build_capability():
    with override(device="cpu"), Calls() as calls:
        report = lifecycle.run("PPTestV3Scale", ["2x8:float32"], aliased_io=True)
    assert report.ok and calls.of("get_aliased_input") == []


# -- on the GPU -----------------------------------------------------------------------------------

@pytest.mark.gpu
def test_tactics_are_timed_and_the_fastest_is_chosen():
    x = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    with Calls() as calls:
        report = lifecycle.run("PPTestV3Scale", [x], {"scale": 3.0})
    assert report.ok, report.format()
    np.testing.assert_allclose(report.outputs[0], 3.0 * x, rtol=1e-6)
    # tactic 2 (offered first) launches its kernel 64 times; only timing can prefer tactic 1
    set_tactics = [(e.obj, e.args[0]) for e in calls.of("set_tactic")]
    attached = [e.result for e in calls.of("attach_to_context")]
    # both contexts get the fastest (1); one more context runs 2 to compare outputs
    assert [t for obj, t in set_tactics if any(obj is a for a in attached)] == [1, 1, 2]
    build_enqueues = [e for e in calls.of("enqueue") if e.obj not in attached]
    assert len(build_enqueues) == 2 * 6  # two tactics, a warm-up and five timed each


@pytest.mark.gpu
def test_size_tensor_is_written_by_enqueue_and_outputs_cut_to_it():
    spec = TensorSpec((3, 4), np.float32, data=NONZERO_INPUT)
    report = lifecycle.run("PPTestV3NonZero", [spec])
    assert report.ok, report.format()
    indices, count = report.outputs
    assert int(count) == 4
    np.testing.assert_array_equal(indices, [[0, 1], [0, 3], [1, 0], [2, 3]])
    assert report.output_shapes[0] == (4, 2)


@pytest.mark.gpu
def test_size_tensor_over_its_upper_bound_is_reported():
    spec = TensorSpec((3, 4), np.float32, data=NONZERO_INPUT)
    report = lifecycle.run("PPTestV3NonZeroOver", [spec])
    assert "size_tensor" in report.checks(), report.format()


@pytest.mark.gpu
@pytest.mark.parametrize("aliased_io", [True, False])
def test_aliased_output_is_written_in_place(aliased_io):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with Calls() as calls:
        report = lifecycle.run("PPTestV3AddOne", [TensorSpec((3, 4), np.float32, data=x)],
                               aliased_io=aliased_io)
    assert report.ok, report.format()
    np.testing.assert_array_equal(report.outputs[0], x + 1)
    runtime = [e for e in calls.of("enqueue") if e.error is None][-1]
    inputs, outputs = runtime.args[2], runtime.args[3]
    assert (outputs[0] == inputs[0]) is aliased_io


# -- runtime_v3's bookkeeping on host memory (the device calls replaced) --------------------------

class _HostRun:
    """buffers.DeviceRun on host arrays: a pointer is a key of ``memory``."""

    memory = {}

    def __init__(self, inputs, outputs, workspace):
        from pyplugins.checker.checks.outputs import GUARD_BYTES, poison_pattern

        self.cp = type("cp", (), {"asnumpy": staticmethod(lambda a, stream=None: np.asarray(a))})
        self.stream = None  # DeviceRun's copies name its stream
        self.inputs = [np.array(a) for a in inputs]
        self.meta = [(tuple(s), np.dtype(d)) for s, d in outputs]
        self.patterns = [[np.frombuffer(poison_pattern(d, int(np.prod(s)) + GUARD_BYTES //
                                                       d.itemsize, alt), dtype=np.uint8)
                          for s, d in self.meta] for alt in (False, True)]
        self.raw = [p.copy() for p in self.patterns[0]]
        self.in_ptrs = [self._add(a.reshape(-1).view(np.uint8)) for a in self.inputs]
        self.out_ptrs = [self._add(r) for r in self.raw]

    def _add(self, array):
        ptr = 0x1000 * (len(self.memory) + 1)
        self.memory[ptr] = array
        return ptr

    def call(self, enqueue, alt=False):
        for r, p in zip(self.raw, self.patterns[alt]):
            r[:] = p
        return enqueue(self.in_ptrs, self.out_ptrs, 0, 0)

    def read_raw(self):
        return [r.copy() for r in self.raw]


def _runtime(monkeypatch, enqueue, arrays, shapes, dtypes, **kwargs):
    from pyplugins.checker import buffers, runtime_v3

    monkeypatch.setattr(buffers, "DeviceRun", _HostRun)
    return runtime_v3.runtime_enqueue(enqueue, arrays, shapes, dtypes, 0, Recorder(),
                                      check_capture=False, **kwargs)


@pytest.mark.parametrize("count, ok", [(3, True), (7, False)])
def test_size_tensor_value_cuts_outputs_and_is_checked(monkeypatch, count, ok):
    mem = _HostRun.memory

    def enqueue(i, o, w, s):
        mem[o[0]][:count * 8].view(np.int32)[:] = np.arange(2 * count)
        mem[o[1]][:8].view(np.int64)[0] = count
        return 0

    outcome = _runtime(monkeypatch, enqueue, [np.zeros(6, np.float32)], [(6, 2), ()],
                       [np.int32, np.int64], aliases={}, size_outputs={1: 6},
                       real_shape=lambda j, sizes: ((sizes[1], 2), ())[j])
    assert outcome.ran
    assert ("size_tensor" in [v.check for v in outcome.violations]) is not ok
    if ok:
        assert outcome.violations == []
        assert outcome.host_outputs[0].shape == (3, 2) and int(outcome.host_outputs[1]) == 3
        np.testing.assert_array_equal(outcome.host_outputs[0].reshape(-1), np.arange(6))


def test_short_data_dependent_output_is_unwritten(monkeypatch):
    mem = _HostRun.memory

    def enqueue(i, o, w, s):
        mem[o[1]][:8].view(np.int64)[0] = 2  # claims 2 rows, writes none
        return 0

    outcome = _runtime(monkeypatch, enqueue, [np.zeros(4, np.float32)], [(4, 2), ()],
                       [np.int32, np.int64], aliases={}, size_outputs={1: 4},
                       real_shape=lambda j, sizes: ((sizes[1], 2), ())[j])
    assert [v.check for v in outcome.violations] == ["output_mismatch"]
    assert "left 4 of 4 elements of output 0" in outcome.violations[0].message


def test_aliased_output_gets_the_input_pointer_and_is_read_from_it(monkeypatch):
    mem = _HostRun.memory
    seen = []

    def enqueue(i, o, w, s):
        seen.append((list(i), list(o)))
        mem[o[0]].view(np.float32)[:] += 1
        return 0

    x = np.arange(4, dtype=np.float32)
    outcome = _runtime(monkeypatch, enqueue, [x], [(4,)], [np.float32], aliases={0: 0},
                       size_outputs={}, real_shape=lambda j, sizes: (4,))
    assert outcome.ran and outcome.violations == []
    assert seen[0][0][0] == seen[0][1][0]
    np.testing.assert_array_equal(outcome.host_outputs[0], x + 1)


class _HostScale(emulator.IPluginV3, emulator.IPluginV3OneCore, emulator.IPluginV3OneBuild,
                 emulator.IPluginV3OneRuntime):
    """out = 2 * x on host memory; tactic 7 is 'faster' under the fake timer below."""

    def __init__(self):
        for base in (emulator.IPluginV3, emulator.IPluginV3OneCore, emulator.IPluginV3OneBuild,
                     emulator.IPluginV3OneRuntime):
            base.__init__(self)
        self.num_outputs, self.plugin_name, self.plugin_version = 1, "PPTestHostScale", "1"
        self.plugin_namespace = ""

    def get_capability_interface(self, type):  # noqa: A002 - TensorRT's name
        return self

    def get_output_data_types(self, types):
        return [types[0]]

    def get_output_shapes(self, inputs, shape_inputs, eb):
        return [emulator.DimsExprs(inputs[0])]

    def supports_format_combination(self, pos, in_out, num_inputs):
        return in_out[pos].desc.type == emulator.DataType.FLOAT

    def configure_plugin(self, inp, out):
        pass

    def get_valid_tactics(self):
        return [3, 7]

    def set_tactic(self, tactic):
        self.tactic = tactic

    def on_shape_change(self, inp, out):
        self.n = int(np.prod(tuple(inp[0].dims)))

    FACTORS = {3: 2, 7: 2}

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        mem = _HostRun.memory
        if inputs[0] in mem:
            x = mem[inputs[0]].view(np.float32)[:self.n]
            mem[outputs[0]].view(np.float32)[:self.n] = self.FACTORS[self.tactic] * x

    def attach_to_context(self, context):
        return self.clone()

    def get_fields_to_serialize(self):
        return emulator.PluginFieldCollection([])

    def clone(self):
        return type(self)()


class _HostScaleCreator(emulator.IPluginCreatorV3One):
    def __init__(self, plugin=_HostScale):
        emulator.IPluginCreatorV3One.__init__(self)
        self.plugin = plugin
        self.name, self.plugin_version = "PPTestHostScale", "1"
        self.field_names = emulator.PluginFieldCollection([])

    def create_plugin(self, name, fc, phase):
        return self.plugin()


def _fake_device(monkeypatch, timed=None, order=None):
    from pyplugins.checker import buffers, runtime_v3

    monkeypatch.setattr(buffers, "cupy_or_reason", lambda: (object(), None))
    monkeypatch.setattr(buffers, "DeviceRun", _HostRun)

    def fake_time(in_bytes, out_bytes, workspace, aliases, enqueue):
        """Tactic 7 'runs' faster when the test tracks tactics, else all are equal."""
        assert enqueue([0x1], [0x2], 0, 0) == 0
        if order is None:
            return 0, 1.0
        timed.append(order[0].tactic)
        return 0, {3: 2.0, 7: 1.0}[order[0].tactic]

    monkeypatch.setattr(runtime_v3, "time_enqueue", fake_time)


def _run_registered(creator, x):
    registry = emulator.get_plugin_registry()
    assert registry.register_creator(creator, "")
    try:
        return lifecycle.run(creator, [x], check_capture=False)
    finally:
        registry.deregister_creator(creator)


def test_tactics_computing_different_functions_are_reported(monkeypatch):
    class Differs(_HostScale):
        FACTORS = {3: 3, 7: 2}

    _fake_device(monkeypatch)
    report = _run_registered(_HostScaleCreator(Differs), np.ones((2, 3), np.float32))
    assert report.checks() == ["tactic_outputs_differ"], report.format()
    assert "tactic 7 differs" in report.violations[0].message  # equal times: 3 kept


def test_driver_keeps_the_fastest_tactic_and_runs_both_contexts(monkeypatch):
    """The GPU path of DriverV3 with the device replaced: a fake timer makes tactic 7 faster."""
    timed, order = [], []
    _fake_device(monkeypatch, timed, order)
    monkeypatch.setattr(_HostScale, "set_tactic",
                        lambda self, t: (setattr(self, "tactic", t), order.insert(0, self)))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with Calls() as calls:
        report = _run_registered(_HostScaleCreator(), x)
    assert report.ok, report.format()
    assert timed == [3, 7] and report.enqueue_ran
    np.testing.assert_array_equal(report.outputs[0], 2 * x)
    attached = [e.result for e in calls.of("attach_to_context")]
    # two contexts with the chosen tactic 7, then one more comparing tactic 3's outputs
    assert [e.args[0] for e in calls.of("set_tactic")
            if any(e.obj is a for a in attached)] == [7, 7, 3]
    assert sum(any(e.obj is a for a in attached) for e in calls.of("enqueue")) == 3


def test_onnx_shape_input_indices_route_node_inputs():
    from onnx import helper

    from pyplugins.emulator import onnx_import

    node = helper.make_node("PPTestV3Scale", ["x", "n"], ["y"], name="scale_node", scale=2.0,
                            tensorrt_plugin_shape_input_indices=[1])
    imported = onnx_import.import_node(node)
    assert imported.shape_input_indices == (1,)
    assert imported.split_inputs(list(node.input)) == (["x"], ["n"])
    assert [f.name for f in imported.fc] == ["scale"]  # not a field the creator lists
    plain = onnx_import.import_node(helper.make_node("PPTestV3Scale", ["x"], ["y"]))
    assert plain.shape_input_indices == ()
