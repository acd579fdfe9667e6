"""Concurrent lifecycle runs are isolated (a thread storm reports what sequential runs do), the
registry and ``pp.register`` are thread-safe, and the trampoline contains every BaseException."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import pyplugins as pp
from pyplugins import emulator
from pyplugins.checker import _fresh, lifecycle
from pyplugins.emulator import trampoline
from pyplugins.emulator.specs import TensorSpec
from pyplugins.runtime import creator
from pyplugins.errors import RegistrationError

emulator.install()
PLUGINS = Path(__file__).parent / "plugins"
for _name in ("circ_pad", "bad_beyond_pos", "bad_clone", "bad_serialize", "bad_configure",
              "bad_errors", "bad_output", "bad_pybind"):
    _fresh.import_module(str(PLUGINS / f"{_name}.py"))

# (plugin, input spec, fields): clean ones and defective ones, mixed.
CHECKS = [
    ("PPTestCircPad", "1x3x8x8:float32", {"pads": (1, 2, 2, 1)}),
    ("PPTestCircPad", "1-2-4x2x5x5:float16", {"pads": (1, 1, 1, 1)}),
    ("PPTestBeyondPos", "2x8:float32", None),
    ("PPTestCloneShared", "2x8:float32", None),
    ("PPTestCloneSelf", "2x8:float32", None),
    ("PPTestSerializeCounter", "2x8:float32", None),
    ("PPTestConfigureRaises", "2x8:float32", None),
    ("PPTestWorkspaceRaises", "2x8:float32", None),
    ("PPTestOutputDtype", "2x8:float32", None),
    ("PPTestShapeNegative", "2-6-8x4:float32", None),
    ("PPTestDimsEq", "2x8:float32", None),  # an idiom noted by the stand-in, per thread
    ("PPTestDimsKey", "2x8:float32", None),
    ("PPTestGood", "2x8:float32", None),
]


def check(index: int) -> str:
    plugin, spec, fields = CHECKS[index]
    report = lifecycle.run(plugin, [TensorSpec.parse(spec)], fields, device="cpu", trace=True)
    return json.dumps(report.to_dict(), default=str, sort_keys=True)


def _stable(text: str) -> str:
    data = json.loads(text)
    for entry in data.get("trace") or []:  # timings differ from run to run, nothing else
        entry.pop("t_offset_s", None)
        entry.pop("seconds", None)
        entry.pop("obj_id", None)
    return json.dumps(data, sort_keys=True)


def test_thread_storm_reports_equal_sequential_reports(capfd):
    sequential = [_stable(check(i)) for i in range(len(CHECKS))]
    assert len(set(sequential)) == len(CHECKS)  # the checks differ, so a mix-up would show
    assert sum('"ok": true' in s for s in sequential) == 3  # three clean, the rest defective
    plan = [[(t * 7 + k) % len(CHECKS) for k in range(40)] for t in range(8)]
    start = threading.Barrier(8)

    def worker(indices):
        start.wait()
        return [(i, _stable(check(i))) for i in indices]

    with ThreadPoolExecutor(8) as pool:
        results = [r for rs in pool.map(worker, plan) for r in rs]
    assert len(results) == 320
    differ = [CHECKS[i][0] for i, text in results if text != sequential[i]]
    assert differ == [], f"{len(differ)} of 320 concurrent reports differ: {sorted(set(differ))}"


def test_listeners_are_per_thread():
    seen, done = [], []
    trampoline.listeners.append(seen.append)
    try:
        other = threading.Thread(target=lambda: done.append(check(0)))
        other.start()
        other.join()
        assert done and '"ok": true' in done[0]  # the other run happened, and was clean
        assert seen == []  # another thread's run is not ours to see
        assert trampoline.listeners.__len__() == 1
    finally:
        trampoline.listeners.remove(seen.append)


def test_registry_is_thread_safe():
    reg = emulator.get_plugin_registry()

    class C(emulator.IPluginCreator):
        def __init__(self, name):
            emulator.IPluginCreator.__init__(self)
            self.name, self.plugin_version = name, "1"

    def churn(t):
        wins = 0
        for k in range(200):
            c = C(f"PPStorm{k % 5}")
            if reg.register_creator(c, "storm"):
                wins += 1
                assert reg.deregister_creator(c)
        return wins

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(churn, range(8))) > 0
    assert not [c for c in reg.all_creators if c.plugin_namespace == "storm"]


def test_concurrent_register_replace_is_safe():
    errors = []

    def make(t):
        class Op(pp.Plugin):
            name = "PPStormReplace"

            def get_output_dimensions(self, output_index, inputs, expr_builder):
                return inputs[0]

            def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
                pass
        Op.__name__ = f"Op{t}"
        for _ in range(30):
            try:
                pp.register(Op, replace=True)
            except Exception as err:  # noqa: BLE001 - collected and asserted
                errors.append(err)
        return Op

    with ThreadPoolExecutor(8) as pool:
        classes = list(pool.map(make, range(8)))
    assert errors == []
    key = ("PPStormReplace", "1", "")
    winner = emulator.get_plugin_registry().get_creator(*key)
    assert winner is not None and creator.registered()[key] is winner
    assert sum(cls.creator is winner for cls in classes) == 1
    for cls in classes:
        pp.unregister(cls)


def test_a_lost_race_is_reported_as_one():
    class Op(pp.Plugin):
        name = "PPStormLost"

        def get_output_dimensions(self, output_index, inputs, expr_builder):
            return inputs[0]

        def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
            pass

    pp.register(Op)
    reg = emulator.get_plugin_registry()
    original = reg.register_creator
    intruder = type(Op.creator)()  # someone else takes the key between deregister and register

    calls = {"n": 0}

    def register_creator(creator, namespace=""):
        calls["n"] += 1
        if calls["n"] == 2:  # the retry after deregistering: another caller got there first
            original(intruder, namespace)
        return original(creator, namespace)

    reg.register_creator = register_creator
    try:
        with pytest.raises(RegistrationError, match="another caller") as info:
            pp.register(Op, replace=True)
        assert "TensorRT's registry" not in str(info.value)
    finally:
        del reg.register_creator
        reg.deregister_creator(intruder)
        pp.unregister(Op)


@pytest.mark.parametrize("exc", [SystemExit(0), SystemExit(3), KeyboardInterrupt(),
                                 GeneratorExit()])
def test_every_base_exception_is_contained_with_pybinds_what(exc, capfd):
    class P(emulator.IPluginV2DynamicExt):
        def __init__(self):
            emulator.IPluginV2DynamicExt.__init__(self)

        def get_output_datatype(self, index, input_types):
            raise exc

    result = trampoline.get_output_data_type(P(), 0, [emulator.DataType.HALF])
    assert result == emulator.DataType.FLOAT
    err = capfd.readouterr().err
    assert err.startswith(f"[ERROR] Exception caught in get_output_datatype(): "
                          f"{type(exc).__name__}: ")
    assert "\n\nAt:\n  " in err and "test_isolation.py(" in err and "): get_output_datatype" in err


def test_an_exception_whose_str_raises(capfd):
    class Nasty(Exception):
        def __str__(self):
            raise ValueError("no")

    class P(emulator.IPluginV2DynamicExt):
        def __init__(self):
            emulator.IPluginV2DynamicExt.__init__(self)

        def get_output_datatype(self, index, input_types):
            raise Nasty()

    trampoline.get_output_data_type(P(), 0, [emulator.DataType.HALF])
    err = capfd.readouterr().err
    assert "Nasty: <MESSAGE UNAVAILABLE DUE TO ANOTHER EXCEPTION>" in err
    assert "MESSAGE UNAVAILABLE DUE TO EXCEPTION: ValueError" in err


def test_enum_singletons_stay_in_their_thread():
    """One thread inside enums.singletons() (the `is` check's re-ask) leaves every other thread
    receiving fresh enum objects, and nothing is left set once the threads interleave their exits
    (a process-wide flag once leaked from the thread storm into later checks)."""
    from pyplugins.emulator import enums

    inside, release = threading.Event(), threading.Event()
    seen = []

    def holder():
        with enums.singletons():
            seen.append(enums.fresh(enums.DataType.HALF) is enums.DataType.HALF)
            inside.set()
            release.wait(10)

    other = threading.Thread(target=holder)
    other.start()
    assert inside.wait(10)
    with enums.singletons():  # entered after, left before the other thread leaves
        assert enums.fresh(enums.DataType.HALF) is enums.DataType.HALF
    assert enums.fresh(enums.DataType.HALF) is not enums.DataType.HALF  # the other is still in
    release.set()
    other.join(10)
    assert seen == [True]
    assert enums.fresh(enums.DataType.HALF) is not enums.DataType.HALF
