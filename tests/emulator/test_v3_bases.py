"""The IPluginV3 base classes and trampoline: pybind rules, identity storage, return codes."""

from __future__ import annotations

import pytest

from pyplugins import emulator as trt
from pyplugins._config import override
from pyplugins.emulator import bases_v3, trampoline, trampoline_v3


class Full(trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuild, trt.IPluginV3OneRuntime):
    def __init__(self, skip=None):
        for base in (trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuild,
                     trt.IPluginV3OneRuntime):
            if base is not skip:
                base.__init__(self)
        self.num_outputs = 1
        self.plugin_name = "Full"
        self.plugin_version = "1"
        self.plugin_namespace = ""

    def get_capability_interface(self, type):  # noqa: A002 - TensorRT's name
        return self

    def configure_plugin(self, inp, out):
        raise ValueError("bad config")

    def set_tactic(self, tactic):
        self.tactic = tactic

    def on_shape_change(self, inp, out):
        self.seen = (len(inp), len(out))

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        self.enqueued = (len(input_desc), len(output_desc), list(inputs), list(outputs))


def _events():
    seen = []
    trampoline.listeners.append(seen.append)
    return seen


@pytest.mark.parametrize("skip", [trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuild,
                                  trt.IPluginV3OneRuntime])
def test_every_base_init_must_run(skip):
    with pytest.raises(TypeError, match=rf"{skip.__name__}.__init__\(\) must be called"):
        Full(skip=skip)


def test_identity_lives_outside_dict_and_a_dict_copy_loses_it(capfd):
    p = Full()
    assert "plugin_name" not in p.__dict__ and "num_outputs" not in p.__dict__
    q = Full.__new__(Full)
    trt.IPluginV3OneCore.__init__(q)
    q.__dict__.update(p.__dict__)
    assert q.plugin_name is None
    assert "plugin_name not initialized" in capfd.readouterr().err
    assert p.format_combination_limit == trt.IPluginV3OneBuild.DEFAULT_FORMAT_COMBINATION_LIMIT
    assert p.timing_cache_id is None and p.metadata_string is None
    p.format_combination_limit = 3
    assert trampoline_v3.format_combination_limit(p) == 3
    with pytest.raises(TypeError, match="num_outputs must be an int"):
        p.num_outputs = 1.5


def test_unset_num_outputs_is_minus_one_with_error(capfd):
    p = Full.__new__(Full)
    trt.IPluginV3OneBuild.__init__(p)
    assert trampoline_v3.get_nb_outputs(p) == -1
    assert "num_outputs not initialized" in capfd.readouterr().err


def test_configure_raising_returns_minus_one_with_thrown_line(capfd):
    assert trampoline_v3.configure_plugin(Full(), [], []) == -1
    err = capfd.readouterr().err
    assert "[ERROR] Exception thrown from configure_plugin() ValueError: bad config" in err


def test_missing_required_method_prints_not_overriden(capfd):
    class NoAttach(Full):
        pass
    assert trampoline_v3.attach_to_context(NoAttach(), None) is None
    assert trampoline_v3.get_fields_to_serialize(NoAttach()) is None
    err = capfd.readouterr().err
    assert "Method: attach_to_context was not overriden" in err
    assert "Method: get_fields_to_serialize was not overriden" in err


def test_enqueue_counts_come_from_on_shape_change_on_the_same_object():
    p, other = Full(), Full()
    desc = trt.PluginTensorDesc()
    assert trampoline_v3.on_shape_change(p, [desc, desc], [desc]) == 0
    assert trampoline_v3.enqueue(p, [desc] * 3, [desc] * 2, [1, 2, 3], [4, 5], 0, 0) == 0
    assert p.enqueued == (2, 1, [1, 2], [4])
    assert trampoline_v3.enqueue(other, [desc] * 3, [desc] * 2, [1, 2, 3], [4, 5], 0, 0) == 0
    assert other.enqueued == (0, 0, [], [])


def test_capability_of_the_wrong_class_is_nullptr(capfd):
    class Core(trt.IPluginV3OneCore):
        def __init__(self):
            trt.IPluginV3OneCore.__init__(self)

    class P(Full):
        def get_capability_interface(self, type):  # noqa: A002 - TensorRT's name
            return Core()
    assert trampoline_v3.get_capability_interface(P(), trt.PluginCapabilityType.BUILD) is None
    assert "could not be interpreted as  a valid build capability interface" in capfd.readouterr().err
    p = Full()
    assert trampoline_v3.get_capability_interface(p, trt.PluginCapabilityType.RUNTIME) is p


def test_valid_tactics_cast_and_version_rule(capfd):
    calls = []

    class T(Full):
        def get_valid_tactics(self):
            calls.append(1)
            return (1, 2)
    assert trampoline_v3.get_valid_tactics(T()) == [1, 2] and len(calls) == 1
    with override(trt_version="10.0"):
        trampoline_v3.get_valid_tactics(T())
    assert len(calls) == 3
    assert trampoline_v3.get_valid_tactics(Full()) == []

    class F(Full):
        def get_valid_tactics(self):
            return [1.5]
    assert trampoline_v3.get_valid_tactics(F()) is None
    assert "get_valid_tactics() could not be interpreted" in capfd.readouterr().err


def test_output_types_length_must_match_num_outputs(capfd):
    class P(Full):
        def get_output_data_types(self, types):
            return [types[0], types[0]]
    assert trampoline_v3.get_output_data_types(P(), [trt.DataType.HALF]) is None
    assert "different length than num_outputs" in capfd.readouterr().err


def test_creator_registers_in_10_and_11_and_runs_create_plugin():
    class C(trt.IPluginCreatorV3One):
        def __init__(self):
            trt.IPluginCreatorV3One.__init__(self)
            self.name, self.plugin_version = "Full", "1"
            self.field_names = trt.PluginFieldCollection([])

        def create_plugin(self, name, fc, phase):
            self.phase = phase
            return Full()
    for version in ("10.16", "11.1"):
        with override(trt_version=version):
            reg = trt.get_plugin_registry()
            c = C()
            assert reg.register_creator(c, "")
            assert reg.get_creator("Full", "1", "") is c
            assert reg.deregister_creator(c)
    p = trampoline_v3.create_plugin(c, "n", [], trt.TensorRTPhase.RUNTIME)
    assert isinstance(p, Full) and c.phase == trt.TensorRTPhase.RUNTIME
    assert id(p) in trampoline.held
    trampoline_v3.destroy(p)
    assert id(p) not in trampoline.held


def test_build_v2_exists_from_10_3():
    with override(trt_version="10.2"):
        assert not hasattr(trt, "IPluginV3OneBuildV2")
    with override(trt_version="10.3"):
        assert trt.IPluginV3OneBuildV2 is bases_v3.IPluginV3OneBuildV2


def test_exceptions_reach_listeners():
    seen = _events()
    try:
        trampoline_v3.set_tactic(Full.__new__(Full), 2)
    finally:
        trampoline.listeners.remove(seen.append)
    assert [e.method for e in seen] == ["set_tactic"]


def test_error_frames_leave_out_the_emulator_like_pybind(capfd):
    class Broken(Full):
        def __init__(self):
            Full.__init__(self)
            raise ValueError("no init")

    class C(trt.IPluginCreatorV3One):
        def __init__(self):
            trt.IPluginCreatorV3One.__init__(self)

        def create_plugin(self, name, fc, phase):
            return Broken()
    assert trampoline_v3.create_plugin(C(), "n", [], trt.TensorRTPhase.BUILD) is None
    err = capfd.readouterr().err
    assert "test_v3_bases.py" in err and "__init__" in err
    assert "pyplugins/emulator" not in err  # the metaclass and trampoline are C++ in TensorRT
