"""benchmarks/cpp/trt_call.cpp, TensorRT's enqueue trampoline mirrored for the host-overhead
benchmark: built here with the host compiler and pybind11 (skipped when either is missing), then
checked for what TensorRT's binding does on every call. Nothing here times."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # benchmarks/ is a top-level folder, not an installed package
    sys.path.insert(0, str(REPO))

from benchmarks import overhead, timing
from benchmarks.launch_paths import CppTrtCall, TrtCall, pybind11_noop


@pytest.fixture(scope="module")
def trt_call(tmp_path_factory):
    import shutil

    if not (shutil.which("g++") or shutil.which("c++")) or overhead.pybind11_include() is None:
        pytest.skip("needs a C++ compiler and pybind11 headers (pip install pybind11)")
    module, why = overhead.build_trt_call(tmp_path_factory.mktemp("trt_call"))
    assert why is None, why
    return module


def _descs():
    from pyplugins.emulator import DataType, PluginTensorDesc, TensorFormat

    return ([PluginTensorDesc([2, 3], DataType.HALF, TensorFormat.LINEAR, -1.0)],
            [PluginTensorDesc([4], DataType.FLOAT, TensorFormat.CHW32, 0.5)])


class Recorder:
    def __init__(self):
        self.seen = []

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        self.seen.append((input_desc, output_desc, inputs, outputs, workspace, stream))


@pytest.mark.slow
@pytest.mark.parametrize("lookup", ["plain object", "pybind11 subclass"])
def test_each_enqueue_gets_fresh_descriptor_copies_and_lists(trt_call, lookup):
    if lookup == "plain object":
        plugin = Recorder()
    else:
        class Sub(trt_call.IPluginV2DynamicExt):
            def __init__(self):
                trt_call.IPluginV2DynamicExt.__init__(self)
                self.seen = []

            enqueue = Recorder.enqueue

        plugin = Sub()
    ins, outs = _descs()
    call = CppTrtCall(trt_call, plugin, ins, outs, [0x1000], [0x2000], 0, 77)
    call()
    call.run_batch(2)
    assert len(plugin.seen) == 3
    a, b = plugin.seen[:2]
    assert type(a[0]) is list and type(a[2]) is list and a[2:] == ([0x1000], [0x2000], 0, 77)
    d, o = a[0][0], a[1][0]
    assert (len(d.dims), d.dims[0], d.dims[-1], d.type.name, d.scale) == (2, 2, 3, "HALF", -1.0)
    assert (len(o.dims), o.dims[0], o.format.name, o.scale) == (1, 4, "CHW32", 0.5)
    assert a[0] is not b[0] and a[2] is not b[2] and a[0][0] is not b[0][0]  # fresh every call
    # pybind11 enums: a new object, never the class's member (protocol §12)
    assert d.type == trt_call.DataType.HALF and d.type is not trt_call.DataType.HALF


@pytest.mark.slow
def test_descriptor_enums_have_tensorrts_names_and_values(trt_call):
    from pyplugins.emulator import DataType, TensorFormat

    for ours, theirs in ((trt_call.DataType, DataType), (trt_call.TensorFormat, TensorFormat)):
        assert {k: int(v) for k, v in ours.__members__.items()} == \
               {k: int(v) for k, v in theirs.__members__.items()}


@pytest.mark.slow
def test_a_raising_enqueue_or_none_at_all_is_an_error(trt_call):
    ins, outs = _descs()

    class Raises:
        def enqueue(self, *args):
            raise ValueError("refused by the test")

    with pytest.raises(RuntimeError, match="refused by the test"):
        CppTrtCall(trt_call, Raises(), ins, outs, [1], [2], 0, 0).run_batch(3)
    with pytest.raises(RuntimeError, match="no implementation provided for enqueue"):
        CppTrtCall(trt_call, object(), ins, outs, [1], [2], 0, 0)()
    with pytest.raises(ValueError, match="one descriptor per pointer"):
        trt_call.run(Recorder(), [], [], [1], [], 0, 0, 1)


@pytest.mark.slow
def test_both_lookups_refuse_an_enqueue_that_calls_itself(trt_call):
    """pybind11's recursion guard: called from the plugin's own ``enqueue`` frame, get_override
    finds no override. The harness's lookup of plain objects must do the same."""
    ins, outs = _descs()
    d = trt_call.desc([2], trt_call.DataType.FLOAT, trt_call.TensorFormat.LINEAR, -1.0)

    def enqueue(self, *args):  # the guard compares the calling frame's code name with "enqueue"
        try:
            trt_call.run(self, [d], [d], [1], [2], 0, 0, 1)
        except RuntimeError as err:
            self.error = str(err)

    class Plain:
        pass

    class Sub(trt_call.IPluginV2DynamicExt):
        def __init__(self):
            trt_call.IPluginV2DynamicExt.__init__(self)

    Plain.enqueue = Sub.enqueue = enqueue
    for plugin in (Plain(), Sub()):
        CppTrtCall(trt_call, plugin, ins, outs, [1], [2], 0, 0)()
        assert "no implementation provided for enqueue" in plugin.error


@pytest.mark.slow
def test_host_loops_time_the_trampoline_from_its_own_loop(trt_call):
    ins, outs = _descs()
    plugin = Recorder()
    fns = {"cpp": CppTrtCall(trt_call, plugin, ins, outs, [1], [2], 0, 0),
           "cpp_empty": CppTrtCall(trt_call, pybind11_noop(trt_call), ins, outs, [1], [2], 0, 0),
           "python": TrtCall(Recorder(), ins, outs, [1], [2], 0, 0)}
    rows = timing.host_loops(fns, lambda: None, calls=40, batch=10, warmup_batches=1)
    assert len(plugin.seen) == 10 * (1 + 2 * 4)  # warm-up batch + 4 turns x 2 batches
    assert all(r["host_us"]["median"] > 0 and r["calls"] == 40 for r in rows.values())


def test_a_missing_compiler_is_a_reason_not_a_crash(monkeypatch, tmp_path):
    monkeypatch.setattr(overhead.shutil, "which", lambda name: None)
    module, why = overhead.build_trt_call(tmp_path)
    assert module is None and "missing a C++ compiler" in why


# -- run_threads: many threads calling enqueue through the trampoline (benchmarks/threads.py) ----

@pytest.mark.slow
def test_run_threads_gives_each_thread_its_plugin_stream_and_pointers(trt_call):
    import threading

    ins, outs = _descs()
    d_in = [trt_call.desc([2, 3], trt_call.DataType.HALF, trt_call.TensorFormat.LINEAR, -1.0)]
    d_out = [trt_call.desc([4], trt_call.DataType.FLOAT, trt_call.TensorFormat.LINEAR, 0.5)]

    class Seen(Recorder):
        def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
            self.seen.append((inputs[0], outputs[0], stream, threading.get_ident()))

    plugins = [Seen() for _ in range(3)]
    setups = {}
    got = trt_call.run_threads(plugins, d_in, d_out, [[10 + i] for i in range(3)],
                               [[20 + i] for i in range(3)], [30 + i for i in range(3)],
                               lambda i: setups.setdefault(i, threading.get_ident()), 0.05)
    assert got["seconds"] >= 0.05 and got["calls"] == [len(p.seen) for p in plugins]
    assert all(c > 0 for c in got["calls"])
    for i, p in enumerate(plugins):  # its own pointers and stream, on the thread setup ran on
        assert {s[:3] for s in p.seen} == {(10 + i, 20 + i, 30 + i)}
        assert {s[3] for s in p.seen} == {setups[i]} != {threading.get_ident()}
    assert len(set(setups.values())) == 3


@pytest.mark.slow
def test_run_threads_reports_a_raising_enqueue_or_setup_and_bad_lists(trt_call):
    d = trt_call.desc([2], trt_call.DataType.FLOAT, trt_call.TensorFormat.LINEAR, -1.0)

    class Raises:
        def enqueue(self, *args):
            raise ValueError("refused on purpose")

    with pytest.raises(RuntimeError, match="thread 1 .*refused on purpose"):
        trt_call.run_threads([Recorder(), Raises()], [d], [d], [[1], [2]], [[3], [4]], [0, 0],
                             None, 0.01)
    with pytest.raises(RuntimeError, match="setup of thread 0 raised"):
        trt_call.run_threads([Recorder()], [d], [d], [[1]], [[3]], [0], lambda i: 1 / 0, 0.01)
    with pytest.raises(ValueError, match="one plugin, pointer list pair and stream per thread"):
        trt_call.run_threads([Recorder()], [d], [d], [[1], [2]], [[3]], [0], None, 0.01)
