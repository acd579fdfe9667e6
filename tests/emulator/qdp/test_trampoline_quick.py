"""The C++ side of the Quick bindings (pyplugins.emulator.trampoline_quick): what the binding does
with each answer of a QDP plugin, and what it prints when one fails (§8.4)."""

from pyplugins import emulator as trt
from pyplugins._config import override
from pyplugins.emulator import trampoline, trampoline_quick as tq

from .support import dyn


class Build(trt.IPluginV3QuickBuild):
    """A Quick build capability whose answers a test sets."""

    def __init__(self, combos=None):
        trt.IPluginV3QuickBuild.__init__(self)
        self.calls = 0
        self.combos = combos or []

    def get_num_outputs(self):
        return 1

    def get_supported_format_combinations(self, in_out, num_inputs):
        self.calls += 1
        return self.combos[min(self.calls, len(self.combos)) - 1]


def desc(dtype):
    return trt.PluginTensorDesc((2,), dtype, trt.TensorFormat.LINEAR, -1.0)


def test_format_combinations_are_asked_twice_and_the_first_answer_kept(capfd):
    first = [desc(trt.DataType.FLOAT), desc(trt.DataType.FLOAT)]
    second = [desc(trt.DataType.HALF), desc(trt.DataType.HALF)] * 2
    build = Build([first, second])
    got = tq.get_supported_format_combinations(build, [dyn((2,)), dyn((2,))], 1)
    assert build.calls == 2
    assert [[d.type for d in c] for c in got] == [[trt.DataType.FLOAT, trt.DataType.FLOAT]]
    assert capfd.readouterr().err == ""


def test_a_flat_list_that_is_not_a_multiple_of_the_io_count_fails(capfd):
    build = Build([[desc(trt.DataType.FLOAT)] * 3])
    assert tq.get_supported_format_combinations(build, [dyn((2,)), dyn((2,))], 1) is None
    assert "not a multiple of number of IO" in capfd.readouterr().err


def test_get_kernel_takes_a_str_or_bytes_name_and_bytes_only(capfd):
    class AOT(trt.IPluginV3QuickAOTBuild):
        def __init__(self, answer):
            trt.IPluginV3QuickAOTBuild.__init__(self)
            self.answer = answer

        def get_kernel(self, input_desc, output_desc):
            return self.answer

    assert tq.get_kernel(AOT((b"k", b"ptx")), [], []) == ("k", b"ptx")
    assert tq.get_kernel(AOT(("k", "ptx as str")), [], []) is None
    assert "could not be interpreted as std::tuple<std::string, std::bytes>" in \
        capfd.readouterr().err


def test_create_plugin_passes_the_request_from_10_9_only():
    seen = []

    class Creator(trt.IPluginCreatorV3Quick):
        def __init__(self):
            trt.IPluginCreatorV3Quick.__init__(self)

        def create_plugin(self, *args):
            seen.append(args)
            return None

    with override(trt_version="10.8"):
        tq.create_plugin(Creator(), "p", "ns", [], trt.TensorRTPhase.BUILD)
    with override(trt_version="11.1"):
        tq.create_plugin(Creator(), "p", "ns", [], trt.TensorRTPhase.BUILD)
    assert len(seen[0]) == 4 and len(seen[1]) == 5
    assert seen[1][4].name == "UNKNOWN"


def test_get_num_outputs_is_read_as_a_property_before_10_7():
    build = Build()
    build.num_outputs = 3
    with override(trt_version="10.6"):
        assert tq.get_nb_outputs(build) == 3
    assert tq.get_nb_outputs(build) == 1


def test_every_call_reaches_the_listeners():
    events = []
    trampoline.listeners.append(events.append)
    try:
        tq.configure_plugin(Build(), [], [])
    finally:
        trampoline.listeners.remove(events.append)
    assert [e.method for e in events] == ["configure_plugin"]
    assert events[0].error is not None  # not defined: TensorRT requires it
