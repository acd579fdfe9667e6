"""NumbaLaunch through the prepacked driver call (pyplugins.runtime.numba_driver), with fakes of
numba-cuda's compiled kernel: numba's flattened arguments, the handle (CUfunction or CUkernel),
and the clear fallback to numba's own launch when there is no usable handle."""

from __future__ import annotations

import logging
import types

import numpy as np
import pytest

pytest.importorskip("numba_cuda", reason="numba kernels need the 'numba' extra")

from pyplugins.runtime import numba_driver, numba_launch
from pyplugins.runtime.launch import POINTER, Launch
from pyplugins.runtime.numba_driver import driver_launch, flat_arguments
from pyplugins.runtime.numba_launch import ArraySlot, NumbaKernel, NumbaLaunch, numba_cuda
from pyplugins.runtime.plugin import Plugin

N = 100
SPEC = (ArraySlot((N,), np.float32), ArraySlot((2, 3), np.float16), np.int64(N),
        np.float32(0.25))


def _le(value: int) -> bytes:
    return int(value).to_bytes(8, "little")


class FakeHandle:
    def __init__(self, value):
        self.value = value


def fake_compiled(handle=0x7000, **flags):
    """What NumbaKernel.compiled returns on a GPU, as far as driver_launch reads it."""
    cufunc = types.SimpleNamespace(handle=handle)
    library = types.SimpleNamespace(get_cufunc=lambda: cufunc)
    fields = dict(_codelibrary=library, argument_types=("a",) * len(SPEC), debug=False,
                  cooperative=False, extensions=[])
    return types.SimpleNamespace(**dict(fields, **flags))


def test_flat_arguments_are_numbas_per_array_fields_then_the_scalars():
    args = flat_arguments(SPEC)
    plain = [a if a is POINTER else a.item() for a in args]
    assert plain == [0, 0, N, 4, POINTER, N, 4,                    # x: 1-D float32
                     0, 0, 6, 2, POINTER, 2, 3, 6, 2,               # y: 2x3 float16
                     N, 0.25]
    assert args[-1].dtype == np.float32 and args[-2].dtype == np.int64  # C types kept
    for bad in (np.bool_(True), np.complex64(1), 3):
        with pytest.raises(TypeError, match="argument 0"):
            flat_arguments((bad,))


def test_driver_launch_packs_the_arguments_around_numbas_handle():
    numba_cuda()
    launch, why = driver_launch(numba_cuda(), fake_compiled(FakeHandle(0x7000)), SPEC,
                                (4, 1, 1), (128, 1, 1), 0, "axpy")
    assert why is None and isinstance(launch, Launch)
    assert launch.function_ptr == 0x7000 and launch.pointer_count == 2
    seen = []
    launch._go = lambda stream, params, extra: seen.append(
        [launch.param_bytes(i) for i in range(len(launch.layout))])
    launch(5, 0xA000, 0xB000)
    params = seen[0]
    assert params[4] == _le(0xA000) and params[11] == _le(0xB000)  # each array's data field
    assert params[:4] == [_le(0), _le(0), _le(N), _le(4)] and params[16] == _le(N)
    assert params[17] == np.float32(0.25).tobytes()


def test_a_cukernel_handle_becomes_the_contexts_cufunction(monkeypatch):
    from cuda.bindings import driver

    numba_cuda()
    asked = []

    class CUkernel:
        pass

    def get_function(kernel):
        asked.append(kernel)
        return 0, 0x9000

    monkeypatch.setattr(driver, "cuKernelGetFunction", get_function)
    kernel = CUkernel()
    assert numba_driver.function_handle(numba_cuda(), fake_compiled(kernel), 0) == 0x9000
    assert asked == [kernel]


@pytest.mark.parametrize("compiled, why", [
    (fake_compiled(debug=True), "numba launches a debug kernel itself"),
    (fake_compiled(cooperative=True), "numba launches a cooperative kernel itself"),
    (types.SimpleNamespace(argument_types=("a",) * len(SPEC)), "AttributeError"),
    (fake_compiled(argument_types=("a",)), "takes 1 argument"),
])
def test_driver_launch_says_why_numba_keeps_the_launch(compiled, why):
    numba_cuda()
    launch, reason = driver_launch(numba_cuda(), compiled, SPEC, (4, 1, 1), (128, 1, 1), 0,
                                   "axpy")
    assert launch is None and why in reason


def _as_on_a_gpu(monkeypatch, compiled):
    """NumbaLaunch built as on a GPU (no simulator), with ``compiled`` as numba's kernel."""
    numba_cuda()
    monkeypatch.setattr(numba_launch, "simulated", lambda: False)
    monkeypatch.setattr(numba_launch, "_device_view", lambda cuda: None)
    monkeypatch.setattr(NumbaKernel, "compiled", lambda self, args, device: compiled)
    return NumbaLaunch(NumbaKernel(lambda x, y, n, a: None, name="axpy"), grid=4, block=128,
                       args=SPEC)


def test_numba_launch_calls_the_prepacked_driver_launch(monkeypatch, caplog):
    with caplog.at_level(logging.WARNING, logger="pyplugins"):
        launch = _as_on_a_gpu(monkeypatch, fake_compiled(0x7000))
    assert launch.path == "driver" and launch.fallback_reason is None and not caplog.records
    seen = []
    launch.prepacked._go = lambda stream, params, extra: seen.append(
        (stream, launch.prepacked.param_bytes(4), launch.prepacked.param_bytes(11)))
    launch(5, 0xA000, 0xB000)
    assert seen == [(5, _le(0xA000), _le(0xB000))]
    assert "path=driver" in repr(launch)

    class NumbaOp(Plugin):
        name = "TestNumbaPrepacked"

        def get_output_dimensions(self, output_index, inputs, expr_builder):
            return inputs[0]

    plugin = NumbaOp()
    plugin.launch = launch  # TensorRT is handed the prepacked Launch's own enqueue
    assert plugin.enqueue.__self__ is launch.prepacked
    plugin.enqueue([], [], [0xC000], [0xD000], 0, 6)
    assert seen[-1] == (6, _le(0xC000), _le(0xD000))


def test_numba_launch_without_a_handle_falls_back_and_says_why(monkeypatch, caplog):
    broken = fake_compiled()
    del broken._codelibrary
    with caplog.at_level(logging.WARNING, logger="pyplugins"):
        launch = _as_on_a_gpu(monkeypatch, broken)
    assert launch.path == "numba" and "AttributeError" in launch.fallback_reason
    assert "numba kernel 'axpy' launches through numba's own launch" in caplog.text
    assert "AttributeError" in caplog.text
