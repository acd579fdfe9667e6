"""Each lifecycle check, tripped by a plugin module broken on purpose (tests/emulator/plugins/)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pyplugins import emulator
from pyplugins.checker import _fresh, lifecycle
from pyplugins.checker.checks import CHECKS, Violation, beyond_pos, clones, outputs, serialization
from pyplugins.emulator.specs import TensorSpec

emulator.install()

PLUGINS = Path(__file__).parent / "plugins"


def load(name):
    return _fresh.import_module(str(PLUGINS / f"{name}.py"))


def run(plugin, spec="2x8:float32", **kwargs):
    kwargs.setdefault("device", "cpu")
    return lifecycle.run(plugin, [TensorSpec.parse(spec)], **kwargs)


def messages(report, check):
    return [v.message for v in report.violations if v.check == check]


# -- host-side checks (CPU) ------------------------------------------------------------------------

def test_in_out_beyond_pos():
    load("bad_beyond_pos")
    report = run("PPTestBeyondPos")
    assert report.checks() == ["in_out_beyond_pos"], report.format()
    (message,) = messages(report, "in_out_beyond_pos")
    assert "pos=0" in message and "in_out[1].type" in message
    assert report.violations[0].method == "supports_format_combination"


def test_a_format_answer_of_none_is_named():
    load("bad_format_none")
    report = run("PPTestFormatNone")  # float32 tensors: every answer is the bare return
    assert report.checks() == ["format"], report.format()
    (message,) = messages(report, "format")
    assert "of the" in message and "calls returned None" in message, message
    assert "reads as False: return True or False on every path" in message


def test_clone_shares_state():
    load("bad_clone")
    report = run("PPTestCloneShared")
    assert report.checks() == ["clone_shares_state"], report.format()
    named = " ".join(messages(report, "clone_shares_state"))
    assert "'scales'" in named and "'table'" in named and "'name'" not in named
    # the builder's clone P2 wrote what P1 holds; the context's clone P4 what the engine's P3 holds
    assert "P2 SharedPlugin's configure_plugin()" in named and "with P1 SharedPlugin" in named
    assert "P3->P4" in named


def test_clone_sharing_unchanged_state_passes_as_the_samples_do():
    load("clone_sample_style")
    report = run("PPTestCloneSampleStyle", "2x3x4x4:float32")
    assert report.ok, report.format()


def test_clone_sharing_a_list_configure_appends_to_fails():
    load("clone_sample_style")
    report = run("PPTestCloneAppends", "2x3x4x4:float32")
    assert report.checks() == ["clone_shares_state"], report.format()
    (message,) = messages(report, "clone_shares_state")
    assert "configure_plugin() changed attribute 'seen' (a builtins.list)" in message
    assert "'pads'" not in message and "'X_shape'" not in message


def test_clone_returning_self():
    load("bad_clone")
    report = run("PPTestCloneSelf")
    assert "clone_shares_state" in report.checks(), report.format()
    assert any("source object itself" in m for m in messages(report, "clone_shares_state"))


def test_clone_without_init():
    load("bad_clone")
    report = run("PPTestCloneNoInit")
    found = messages(report, "clone_shares_state")
    assert found and "num_outputs is unset" in found[0] and "plugin_type is None" in found[0]
    assert "lifecycle" in report.checks()  # add_plugin_v2's copy has no num_outputs


def test_serialize_nondeterministic():
    load("bad_serialize")
    report = run("PPTestSerializeCounter")
    assert "serialize_nondeterministic" in report.checks(), report.format()
    assert "3 calls" in messages(report, "serialize_nondeterministic")[0]


def test_enqueue_unconfigured():
    load("bad_configure")
    report = run("PPTestConfigureRaises")
    assert report.checks() == ["enqueue_unconfigured", "callback_error"], report.format()
    (message,) = messages(report, "enqueue_unconfigured")
    assert "raised in configure_plugin" in message and "P4" in message
    assert any("IndexError" in e for e in report.errors)
    assert run("PPTestConfigureRaises", "2x8x4:float32").ok  # rank 3: configure works


def test_output_dtype_disagreement():
    load("bad_output")
    report = run("PPTestOutputDtype")
    assert report.checks() == ["output_mismatch"], report.format()
    message = messages(report, "output_mismatch")[0]
    assert "accepts output 0 as FLOAT" in message and "returned HALF" in message


def test_callback_error_reports_every_printed_line(capfd):
    load("bad_errors")
    report = run("PPTestWorkspaceRaises", "2x8:float32")
    assert report.checks() == ["callback_error"], report.format()
    assert len(report.errors) == 2  # build and runtime get_workspace_size
    assert all(e.startswith("[ERROR] Exception caught in get_workspace_size(): IndexError")
               for e in report.errors)
    assert all(v.method == "get_workspace_size" for v in report.violations)
    assert "[ERROR] Exception caught in get_workspace_size()" in capfd.readouterr().err


def test_shape_empty_slot_and_negative():
    load("bad_errors")
    slot = run("PPTestShapeSlot")
    assert slot.checks() == ["shape"] and "empty slot" in slot.violations[0].message
    assert "build failed" in slot.skipped
    negative = run("PPTestShapeNegative", "2-6-8x4:float32")
    assert negative.checks() == ["shape"]
    assert "output 0 dim 0 is -3 at the min input shapes" in negative.violations[0].message
    assert run("PPTestShapeNegative", "6-7-8x4:float32").ok


def test_fresh_process_catches_module_globals():
    module = load("bad_global")
    module.SCALE = 3.0  # what the script's __main__ block does
    path = str(PLUGINS / "bad_global.py")
    assert run("PPTestGlobalScale").ok
    report = run("PPTestGlobalScale", fresh_process=True, plugin_module=path)
    assert report.checks() == ["fresh_process"], report.format()
    message = messages(report, "fresh_process")[0]
    assert "NameError" in message and "SCALE" in message and "bad_global.py" in message


def test_fresh_process_infers_module_from_creator():
    module = load("bad_global")
    module.SCALE = 3.0
    report = run(module.my_plugin_creator, fresh_process=True)
    assert report.checks() == ["fresh_process"], report.format()


# -- the check helpers -----------------------------------------------------------------------------

def test_output_violations_guard_and_unwritten():
    shape, dt = (2, 3), np.dtype(np.float16)
    raw = np.frombuffer(outputs.poison_pattern(dt, 6 + outputs.GUARD_BYTES // 2), np.uint8).copy()
    body = raw[:12].view(np.float16)
    body[:] = 1.0
    assert outputs.output_violations(0, raw, shape, dt) == []
    assert np.isnan(np.frombuffer(outputs.poison_pattern(dt, 1), np.float16)[0])
    body[4] = np.frombuffer(outputs.poison_pattern(dt, 1), np.float16)[0]
    (under,) = outputs.output_violations(0, raw, shape, dt)
    assert "left 1 of 6" in under.message and "(1, 1)" in under.message
    body[4] = 2.0
    raw[12:14] = 0
    (over,) = outputs.output_violations(1, raw, shape, dt)
    assert "past the end of output 1" in over.message and over.check == "output_mismatch"


def test_int_poison_is_a_byte_pattern():
    assert outputs.poison_pattern(np.int32, 2) == b"\xa5" * 8
    raw = np.frombuffer(outputs.poison_pattern(np.int32, 4 + 64), np.uint8).copy()
    raw[:16] = 0
    assert outputs.output_violations(0, raw, (4,), np.int32) == []


def test_serialization_violations():
    assert serialization.serialization_violations([b"ab", b"ab", b"ab"], 2, b"ab") == []
    (v,) = serialization.serialization_violations([b"ab", b"ac"], 2, b"ab")
    assert v.check == "serialize_nondeterministic" and "byte 1" in v.message
    (v,) = serialization.serialization_violations([b"ab"], 5, b"ab")
    assert v.check == "serialize" and "read past the end" in v.message
    (v,) = serialization.serialization_violations([None], 0, None)
    assert v.check == "serialize"


def test_shared_state_reports_only_what_changes():
    class Obj:
        pass

    a, b = Obj(), Obj()
    shared = (1, "s", (2.0, None), np.float32(1), emulator.DataType.HALF, np.dtype("f4"))
    for i, value in enumerate(shared):
        setattr(a, f"v{i}", value)
        setattr(b, f"v{i}", value)
    frozen = np.arange(3)
    frozen.flags.writeable = False
    a.frozen = b.frozen = frozen
    a.never = b.never = [1, 2]  # shared, never written
    a.t = b.t = (1, [2])  # a tuple holding a list
    a.table = b.table = np.zeros(4)
    a.view = b.table[1:]  # another view of the same memory
    watch = clones.SharedState()
    watch.track(a, "P1 Obj", b, "P2 Obj")
    assert watch.changes(b, "configure_plugin", lambda o: None) == []
    b.never = [3]  # assigning a new object changes nothing shared
    assert watch.changes(b, "configure_plugin", lambda o: None) == []
    b.t[1].append(3)
    (v,) = watch.changes(b, "configure_plugin", lambda o: None)
    assert "P2 Obj's configure_plugin() changed attribute 't[1]'" in v.message
    assert "with P1 Obj" in v.message
    a.view[0] = 5  # through a view: the memory b.table reads
    (v,) = watch.changes(a, "enqueue", lambda o: None)
    assert "P1 Obj's enqueue() changed attribute" in v.message and "P2 Obj" in v.message
    watch.release(a)  # destroyed: nobody else sees b's changes
    b.t[1].append(4)
    assert watch.changes(b, "configure_plugin", lambda o: None) == []


def test_clone_violations_check_the_clone_itself():
    class Obj:
        pass

    a, b = Obj(), Obj()
    a._pp_num_outputs = b._pp_num_outputs = 1
    a._pp_type = b._pp_type = "X"
    a.t = b.t = (1, [2])
    assert clones.clone_violations(a, b) == []
    (v,) = clones.clone_violations(a, a)
    assert "source object itself" in v.message


def test_poisoned_desc_records_only_beyond_pos_while_armed():
    probe = beyond_pos.PoisonProbe()
    desc = beyond_pos.PoisonedDesc(2, probe)
    assert isinstance(desc, emulator.PluginTensorDesc)
    desc.type  # not armed: nobody's call
    probe.arm(1)
    _ = desc.format
    probe.disarm()
    _ = desc.dims
    assert probe.reads == [(1, 2, "format")]
    (v,) = probe.violations()
    assert isinstance(v, Violation) and "in_out[2].format" in v.message


def test_every_check_is_documented():
    for name in ("in_out_beyond_pos", "clone_shares_state", "serialize_nondeterministic",
                 "enqueue_unconfigured", "output_mismatch", "capture_unsafe", "fresh_process",
                 "callback_error", "shape", "format"):
        assert name in CHECKS


# -- GPU checks ---------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("name, extra", [("PPTestOutputOver", "past the end"),
                                         ("PPTestOutputUnder", "left 1 of 24")])
def test_output_mismatch_on_gpu(name, extra):
    load("bad_output")
    report = run(name, "2x3x4:float32", device="gpu")
    assert report.enqueue_ran
    assert report.checks() == ["output_mismatch"], report.format()
    assert extra in messages(report, "output_mismatch")[0]


@pytest.mark.gpu
def test_capture_check_passes_for_good_plugins():
    circ_pad = load("circ_pad")
    report = lifecycle.run(circ_pad.my_plugin_creator, ["1x2x5x5:float32"],
                           {"pads": (1, 1, 1, 1)}, device="gpu")
    assert report.ok and report.enqueue_ran, report.format()
    load("bad_errors")
    assert run("PPTestWorkspaceRaises", device="gpu").checks() == ["callback_error"]


@pytest.mark.gpu
@pytest.mark.parametrize("name, needle", [
    ("PPTestCaptureAlloc", "allocated device memory"),
    ("PPTestCaptureSync", "raised while the stream was captured"),
    # The checker captures a non-blocking stream (so that other threads' legacy-stream work
    # cannot fail it): a legacy-stream launch then runs eagerly, outside the graph, and the
    # replay leaves the poison (the poison check). Were CUDA to refuse the launch instead, the
    # capture would fail: either way it is reported.
    ("PPTestCaptureNullStream", ("different from the eager run",
                                 "raised while the stream was captured", "ending the capture")),
    ("PPTestCaptureOtherStream", "different from the eager run"),
])
def test_capture_unsafe(name, needle):
    load("bad_capture")
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    report = lifecycle.run(name, [x], device="gpu")
    assert report.enqueue_ran
    if name == "PPTestCaptureOtherStream":
        # The eager run waits for its stream and the legacy one, never the whole device (that
        # would fail other threads' captures): work on a stream of the plugin's own may land
        # late, so an output check may fire beside the capture check.
        assert "capture_unsafe" in report.checks(), report.format()
    else:
        np.testing.assert_array_equal(report.outputs[0], 2 * x)  # eagerly it works
        assert report.checks() == ["capture_unsafe"], report.format()
    needles = needle if isinstance(needle, tuple) else (needle,)
    assert any(n in messages(report, "capture_unsafe")[0] for n in needles), report.format()
    assert lifecycle.run(name, [x], device="gpu", check_capture=False).ok


@pytest.mark.gpu
def test_fresh_process_on_gpu_compares_outputs():
    module = load("bad_global")
    module.SCALE = 3.0
    x = np.ones((2, 8), np.float32)
    good = lifecycle.run("PPTestGlobalScale", [x], device="gpu")
    assert good.ok and np.all(good.outputs[0] == 3.0), good.format()
    report = lifecycle.run("PPTestGlobalScale", [x], device="gpu", fresh_process=True,
                           plugin_module=str(PLUGINS / "bad_global.py"))
    assert report.checks() == ["fresh_process"], report.format()


def test_output_holding_the_poison_value_is_not_unwritten_when_the_second_run_differs():
    """int8 -91 is 0xA5, the first poison byte: a correct kernel may write it."""
    import numpy as np

    from pyplugins.checker.checks.outputs import output_violations, poison_pattern

    shape, dt = (4,), np.int8
    values = np.array([-91, 3, -91, 7], dtype=np.int8).view(np.uint8)
    guard_a = np.frombuffer(poison_pattern(dt, 256), dtype=np.uint8)
    written = np.concatenate([values, guard_a])
    assert [v.check for v in output_violations(0, written, shape, dt)] == ["output_mismatch"]
    # the second run (second poison) wrote the same values: nothing is unwritten
    guard_b = np.frombuffer(poison_pattern(dt, 256, alt=True), dtype=np.uint8)
    assert output_violations(0, written, shape, dt, raw_alt=np.concatenate([values, guard_a])) == []
    # an element that held each run's poison was never written
    skipped_b = np.concatenate([values[:3], guard_b[:1], guard_a])
    skipped_a = np.concatenate([values[:3], guard_a[:1], guard_a])
    found = output_violations(0, skipped_a, shape, dt, raw_alt=skipped_b)
    assert [v.check for v in found] == ["output_mismatch"] and "1 of 4" in found[0].message
