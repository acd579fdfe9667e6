"""The V3 lifecycle driver: call order, objects, shape inputs, and every planted V3 defect."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyplugins import emulator
from pyplugins._config import override
from pyplugins.checker import _fresh, lifecycle
from pyplugins.emulator import trampoline

emulator.install()

PLUGINS = Path(__file__).parent / "plugins"
v3 = _fresh.import_module(str(PLUGINS / "v3_scale.py"))


def run(name, spec="1-2-4x8:float32", **kwargs):
    with override(device="cpu"):
        return lifecycle.run(name, [spec], {"scale": 3.0}, **kwargs)


class Calls:
    def __init__(self):
        self.events = []

    def __enter__(self):
        trampoline.listeners.append(self.events.append)
        return self

    def __exit__(self, *exc):
        trampoline.listeners.remove(self.events.append)


def test_correct_plugin_is_ok_and_follows_the_v3_call_order():
    with Calls() as calls:
        report = run("PPTestV3Scale")
    assert report.ok, report.format()
    assert report.output_shapes == [(2, 8)] and report.output_dtypes == [emulator.DataType.FLOAT]
    methods = [e.method for e in calls.events]
    assert methods[:2] == ["create_plugin", "clone"]
    assert "get_output_data_types" in methods and "get_output_shapes" in methods
    # per combination: configure_plugin, then get_valid_tactics, then per tactic set_tactic,
    # on_shape_change, get_workspace_size
    i = methods.index("get_valid_tactics")
    assert methods[i - 1] == "configure_plugin"
    assert methods[i + 1:i + 7] == ["set_tactic", "on_shape_change", "get_workspace_size"] * 2
    creates = [e for e in calls.events if e.method == "create_plugin"]
    assert [str(e.args[2]) for e in creates] == ["TensorRTPhase.BUILD", "TensorRTPhase.RUNTIME"]
    assert methods.count("attach_to_context") == 2
    assert methods.count("get_fields_to_serialize") == 3  # twice on the kept plugin, once rebuilt
    # the chosen tactic reaches each context's object before on_shape_change
    attached = [e.result for e in calls.events if e.method == "attach_to_context"]
    for obj in attached:
        own = [e.method for e in calls.events if e.obj is obj and e.method in
               ("set_tactic", "on_shape_change")]
        assert own == ["set_tactic", "on_shape_change"]
    # every object TensorRT made was destroyed
    made = {id(e.result) for e in calls.events
            if e.method in ("create_plugin", "clone", "attach_to_context")}
    destroyed = {id(e.obj) for e in calls.events if e.method == "destroy"}
    assert made <= destroyed


def test_without_gpu_the_first_candidate_is_kept_and_the_report_says_so():
    with Calls() as calls:
        report = run("PPTestV3Scale")
    assert not report.enqueue_ran and "CPU" in report.format().splitlines()[0]
    runtime_tactics = [e.args[0] for e in calls.events if e.method == "set_tactic"][-2:]
    assert runtime_tactics == [2, 2]  # untimed: the first tactic offered
    assert not any(e.method == "enqueue" for e in calls.events)


def test_shape_inputs_reach_get_output_shapes():
    report = run("PPTestV3Scale", "2x8:float32", shape_inputs=[(5,)])
    assert report.ok and report.output_shapes == [(5,)]


@pytest.mark.parametrize("name, check", [
    ("PPTestV3AttachSelf", "attach_shares_state"),
    ("PPTestV3AttachShared", "attach_shares_state"),
    ("PPTestV3BadTactics", "tactics_invalid"),
    ("PPTestV3FieldsRandom", "fields_nondeterministic"),
    ("PPTestV3FieldsLossy", "fields_incomplete"),
    ("PPTestV3NewRuntime", "capability_unstable"),
    ("PPTestV3NewRuntime", "shape_change_not_kept"),
    ("PPTestV3NewRuntime", "tactic_not_set"),
    ("PPTestV3ConfigureRaises", "lifecycle"),
])
def test_planted_v3_defects_are_reported(name, check):
    report = run(name)
    assert check in report.checks(), report.format()


def test_configure_raising_fails_the_v3_build_unlike_v2():
    report = run("PPTestV3ConfigureRaises")
    assert "callback_error" in report.checks()
    assert "V3 returns -1" in report.skipped


def test_v2_creators_still_take_the_v2_driver():
    _fresh.import_module(str(PLUGINS / "elementwise.py"))
    with Calls() as calls, override(device="cpu"):
        lifecycle.run("PPTestAxpy", ["2x3:float32", "2x3:float32"])
    assert "get_output_dimensions" in [e.method for e in calls.events]


def test_trace_labels_v3_objects_and_phases():
    report = run("PPTestV3Scale", trace=True)
    text = report.trace.format_timeline()
    assert "build: tactics" in text and "runtime: context 1" in text
    assert "set_tactic(tactic=2) -> 0" in text
    assert "create_plugin(name='plugin_node', fc={scale=[3.0]}, phase=RUNTIME) -> P" in text


def test_cli_check_takes_shape_inputs_and_reports_v3_defects():
    from pyplugins import cli

    module = str(PLUGINS / "v3_scale.py")
    ok = cli.main(["check", module, "--plugin", "PPTestV3Scale", "--input", "2x8:float32",
                   "--shape-input", "5", "--attr", "scale=2.0", "--device", "cpu"])
    bad = cli.main(["check", module, "--plugin", "PPTestV3BadTactics", "--input", "2x8:float32",
                    "--attr", "scale=2.0", "--device", "cpu"])
    assert (ok, bad) == (0, 1)


def test_shape_inputs_are_refused_for_v2_creators():
    _fresh.import_module(str(PLUGINS / "elementwise.py"))
    with pytest.raises(ValueError, match="IPluginV3 features"):
        lifecycle.run("PPTestAxpy", ["2x3:float32", "2x3:float32"], shape_inputs=[(2,)])
