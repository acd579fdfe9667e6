"""What lets checks and runs share GPUs across threads, tested without one: a fake CuPy records
every stream, copy, synchronization and capture mode the checker's device buffers use, and the
``device=`` grammar refuses what it does not understand."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import numpy as np
import pytest

from pyplugins.checker import buffers
from pyplugins.runtime import execute
from pyplugins.runtime.device_choice import (DeviceChoice, DeviceChoiceError, gpu_ordinal,
                                             parse_device)

PACKAGE = Path(__file__).resolve().parent.parent / "pyplugins"


class _Mem:
    def __init__(self, owner, calls):
        self.owner, self.calls, self.ptr = owner, calls, id(owner)

    def copy_from_device_async(self, src, nbytes, stream):
        self.calls.append(("copy", stream))
        self.owner.bytes[:nbytes] = src.owner.bytes[:nbytes]


class _Array:
    def __init__(self, values, calls):
        self.values = np.ascontiguousarray(values)
        self.bytes = self.values.reshape(-1).view(np.uint8)
        self.nbytes, self.size = self.values.nbytes, self.values.size
        self.data = _Mem(self, calls)


class _Stream:
    def __init__(self, fake, non_blocking=False):
        self.fake, self.non_blocking, self.ptr = fake, non_blocking, id(self)

    def __enter__(self):
        self.fake.current.append(self)
        return self

    def __exit__(self, *exc):
        self.fake.current.pop()

    def synchronize(self):
        self.fake.calls.append(("sync", self))

    def record(self):
        self.fake.calls.append(("record", self))
        return ("event", self)

    def wait_event(self, event):
        self.fake.calls.append(("wait", event))

    def begin_capture(self, mode):
        self.fake.calls.append(("begin_capture", mode))

    def end_capture(self):
        self.fake.calls.append(("end_capture", self))
        return _Graph(self.fake)


class _Graph:
    def __init__(self, fake):
        self.fake = fake

    def launch(self, stream):
        self.fake.calls.append(("graph_launch", stream))


class _Runtime:  # CuPy's runtime module, with CUDA's names
    streamCaptureModeGlobal, streamCaptureModeThreadLocal = 0, 1  # noqa: N815
    streamLegacy = 1  # noqa: N815

    def __init__(self, fake):
        self.fake = fake

    def streamSynchronize(self, handle):  # noqa: N802
        self.fake.calls.append(("stream_sync_handle", handle))

    def deviceSynchronize(self):  # noqa: N802
        raise AssertionError("cudaDeviceSynchronize: it fails every capture on the device")

    def getDeviceCount(self):  # noqa: N802
        return self.fake.devices

    def getDevice(self):  # noqa: N802
        return self.fake.device_stack[-1]


class _Device:
    def __init__(self, fake, ordinal):
        self.fake, self.ordinal = fake, ordinal

    def __enter__(self):
        self.fake.device_stack.append(self.ordinal)
        self.fake.calls.append(("device", self.ordinal))

    def __exit__(self, *exc):
        self.fake.device_stack.pop()


class FakeCupy:
    """Just enough of CuPy for :class:`buffers.DeviceRun`, recording what it is asked to do."""

    def __init__(self, devices=1):
        self.calls, self.current, self.devices, self.device_stack = [], [], devices, [0]
        fake = self
        self.legacy = _Stream(self)

        class cuda:  # noqa: N801 - mirrors cupy.cuda
            runtime = _Runtime(fake)

            @staticmethod
            def Stream(non_blocking=False):  # noqa: N802 - mirrors cupy.cuda.Stream
                return _Stream(fake, non_blocking)

            @staticmethod
            def Device(ordinal):  # noqa: N802 - mirrors cupy.cuda.Device
                return _Device(fake, ordinal)

            @staticmethod
            def get_current_stream():
                return fake.current[-1] if fake.current else fake.legacy

            @staticmethod
            def get_allocator():
                return lambda size: None

            @staticmethod
            def using_allocator(allocator):
                return contextlib.nullcontext()

        self.cuda = cuda

    def _stream(self):
        return self.current[-1] if self.current else None  # None: the legacy default stream

    def asarray(self, a):
        self.calls.append(("h2d", self._stream()))
        return a if isinstance(a, _Array) else _Array(np.asarray(a), self.calls)

    def ascontiguousarray(self, a):
        return a

    def empty(self, n, dtype):
        self.calls.append(("alloc", self._stream()))
        return _Array(np.zeros(n, dtype), self.calls)

    zeros = empty

    def asnumpy(self, a, stream=None):
        self.calls.append(("d2h", stream or self._stream()))
        return a.values.copy()


@pytest.fixture
def fake(monkeypatch):
    cp = FakeCupy()
    monkeypatch.setattr(buffers, "cupy_or_reason", lambda: (cp, None))
    return cp


def _device_run(cp):
    return buffers.DeviceRun([np.arange(4, dtype=np.float32)], [((4,), np.float32)], 16)


def test_device_run_works_on_its_own_non_blocking_stream(fake):
    run = _device_run(fake)
    assert run.stream.non_blocking  # a blocking stream's capture fails on legacy-stream work
    status = run.call(lambda i, o, w, s: 0)
    run.read_raw()
    assert status == 0
    streams = [s for kind, s in fake.calls if kind in ("h2d", "alloc", "copy", "d2h", "sync")]
    assert streams and all(s is run.stream for s in streams), fake.calls
    # the legacy default stream is waited for (a plugin's stray launch there), not the device
    assert ("stream_sync_handle", _Runtime.streamLegacy) in fake.calls


def test_device_run_waits_for_the_callers_stream_before_copying_cupy_inputs(fake):
    on_device = _Array(np.arange(4, dtype=np.float32), fake.calls)
    run = buffers.DeviceRun([on_device], [((4,), np.float32)], 0)
    waits = [i for i, (kind, _) in enumerate(fake.calls) if kind == "wait"]
    copies = [i for i, (kind, _) in enumerate(fake.calls) if kind == "h2d"]
    assert waits and fake.calls[waits[0]][1] == ("event", fake.legacy), fake.calls
    assert waits[0] < copies[0]
    fake.calls.clear()
    buffers.DeviceRun([np.arange(4, dtype=np.float32)], [((4,), np.float32)], 0)
    assert not [c for c in fake.calls if c[0] in ("wait", "record")]  # NumPy: nothing to wait for
    assert run.in_ptrs


def test_capture_is_thread_local(fake):
    run = _device_run(fake)
    outcome = run.capture(lambda i, o, w, s: 0)
    assert ("begin_capture", fake.cuda.runtime.streamCaptureModeThreadLocal) in fake.calls
    assert not outcome.errors and outcome.replay is not None, outcome
    assert ("graph_launch", run.stream) in fake.calls


def test_scratch_enqueue_waits_for_streams_not_the_device(fake):
    seen = []
    status = buffers.scratch_enqueue([8], [8], 0, lambda i, o, w, s: seen.append(s) or 0)
    assert status == 0 and len(seen) == 1
    made = [s for kind, s in fake.calls if kind == "alloc"]
    assert made and all(s is not None and s.non_blocking for s in made)
    assert ("stream_sync_handle", _Runtime.streamLegacy) in fake.calls


def test_no_device_wide_synchronization_on_the_check_and_execution_paths():
    """``cudaDeviceSynchronize`` fails a capture another thread has under way on the device."""
    found = []
    for folder in ("checker", "runtime"):
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#", 1)[0]
                if re.search(r"deviceSynchronize\(|Device\(\)\.synchronize\(", code):
                    found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert found == [], "device-wide synchronization:\n" + "\n".join(found)


def test_no_global_capture_mode_in_the_package():
    found = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if "streamCaptureModeGlobal" in p.read_text()]
    assert found == [], f"global capture mode (one thread's unsafe call fails all): {found}"


# -- the device= grammar -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("auto", DeviceChoice("auto")), ("cpu", DeviceChoice("cpu")), ("gpu", DeviceChoice("gpu")),
    ("cuda", DeviceChoice("gpu")), ("gpu:1", DeviceChoice("gpu", 1)),
    ("cuda:0", DeviceChoice("gpu", 0)), (3, DeviceChoice("gpu", 3)),
])
def test_device_grammar(text, expected):
    assert parse_device(text) == expected


@pytest.mark.parametrize("bad", ["gpu:", "gpu:-1", "GPU:1", "gpu1", "tpu", -1, True, 1.0, None])
def test_device_grammar_refuses_with_the_grammar_and_an_example(bad):
    with pytest.raises(DeviceChoiceError, match=r"device must be 'auto', 'cpu', 'gpu', 'gpu:N'"
                       r".*e\.g\. device='gpu:1'") as info:
        parse_device(bad)
    assert isinstance(info.value, ValueError) and repr(bad) in str(info.value)


def test_an_ordinal_past_the_last_gpu_is_refused_naming_the_count():
    cp = FakeCupy(devices=2)
    assert gpu_ordinal(cp, parse_device("gpu:1")) == 1
    assert gpu_ordinal(cp, parse_device("gpu")) == 0  # the thread's current device
    with pytest.raises(DeviceChoiceError, match=r"'gpu:2'.*sees 2 GPUs \(ordinals 0 to 1\)"):
        gpu_ordinal(cp, parse_device(2))


def test_execution_sets_up_its_plugin_on_the_device_asked_for(monkeypatch):
    from pyplugins.ops.leaky_relu import LeakyReLU

    cp = FakeCupy(devices=2)
    from pyplugins.runtime import device_choice

    monkeypatch.setattr(device_choice, "no_device_reason", lambda: None)
    monkeypatch.setattr(device_choice, "import_cupy", lambda: cp)
    node = execute.Execution(LeakyReLU.creator, {"neg_slope": 0.5}, device="gpu:1")
    assert node.device == 1 and node.how == "kernel"
    assert ("device", 1) in cp.calls  # create_plugin ran with GPU 1 current
    node.close()
    with pytest.raises(DeviceChoiceError, match="sees 2 GPUs"):
        execute.Execution(LeakyReLU.creator, {"neg_slope": 0.5}, device=5)


def test_execution_without_a_gpu_names_the_device_asked_for():
    from pyplugins._config import override
    from pyplugins.errors import ExecutionError
    from pyplugins.ops.leaky_relu import LeakyReLU

    with override(device="cpu"), pytest.raises(ExecutionError, match=r"device='gpu:1' was "
                                                                      r"asked for, but there"):
        execute.Execution(LeakyReLU.creator, {"neg_slope": 0.5}, device="gpu:1")
