"""pp.run: wiring through the emulator lifecycle, error paths (CPU), and real runs (GPU)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins import dtypes
from pyplugins.runtime import eager, shapes
from pyplugins._config import override
from pyplugins.runtime.creator import register, unregister
from pyplugins.runtime.eager import EagerRunError, run
from pyplugins.checker import lifecycle
from pyplugins.errors import FieldError, PluginDefinitionError
from pyplugins.runtime.fields import Field
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import POINTER, Launch
from pyplugins.runtime.plugin import Plugin


class Probe(Plugin):
    """Records what reaches it; its enqueue is never reached on CPU."""

    name = "EagerProbe"
    alpha = Field.float(default=1.0)
    mode = Field.enum("a", "b", default="a")
    sizes = Field.ints(default=())
    seen: list = []

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        x = shapes.dims(inputs[0], expr_builder)
        return [x[0], x[1] + len(self.sizes)]

    def configure_plugin(self, inp, out):
        Probe.seen.append(([tuple(d.desc.dims) for d in inp], [tuple(d.desc.dims) for d in out],
                           [d.desc.type for d in inp], self.alpha, self.mode, self.sizes))

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        pass


@pytest.fixture
def probe():
    register(Probe, replace=True)
    Probe.seen = []
    yield Probe
    unregister(Probe)


def test_fields_and_shapes_reach_the_plugin_then_no_gpu_is_a_clear_error(probe):
    x = np.zeros((2, 3), np.float16)
    with override(device="cpu"), pytest.raises(EagerRunError) as info:
        run(probe, x, x, alpha=2, mode="b", sizes=[4, 5])
    message = str(info.value)
    assert "pp.run(Probe): enqueue could not run" in message and "needs a CUDA GPU" in message
    assert info.value.report.output_shapes == [(2, 5)]
    assert probe.seen, "configure_plugin was never called"
    assert all(s == ([(2, 3), (2, 3)], [(2, 5)], [trt.DataType.HALF] * 2, 2.0, "b", [4, 5])
               for s in probe.seen if -1 not in s[0][0])


def test_unknown_or_bad_fields_fail_before_the_lifecycle(probe, monkeypatch):
    monkeypatch.setattr(lifecycle, "run", lambda *a, **k: pytest.fail("lifecycle reached"))
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(FieldError, match="no field 'alpah' \\(did you mean 'alpha'\\?\\)"):
        run(probe, x, alpah=1.0)
    with pytest.raises(FieldError, match="must be one of 'a', 'b'"):
        run(probe, x, mode="c")


def test_unregistered_class_and_non_array_inputs(probe):
    class Loose(Plugin):
        name = "EagerLoose"

    with pytest.raises(PluginDefinitionError, match="decorate it with @pp.register"):
        run(Loose, np.zeros(3))
    with pytest.raises(TypeError, match="input 0 must be a NumPy or CuPy array"):
        run(probe, [1.0, 2.0])


def test_lifecycle_errors_are_raised_with_the_report(probe):
    class Failing(Plugin):
        name = "EagerFailing"

        def get_output_dimensions(self, output_index, inputs, expr_builder):
            raise ValueError("no shape for you")

        def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
            pass

    register(Failing, replace=True)
    try:
        with override(device="cpu"), pytest.raises(EagerRunError) as info:
            run(Failing, np.zeros((2, 2), np.float32))
    finally:
        unregister(Failing)
    assert "the lifecycle reported" in str(info.value)
    assert "no shape for you" in str(info.value)
    assert not info.value.report.ok


def fake_report(outputs, ok=True, ran=True):
    return SimpleNamespace(ok=ok, enqueue_ran=ran, outputs=outputs, skipped=None, errors=[],
                           violations=[], format=lambda: "report")


def test_outputs_single_and_several_and_the_call_made(probe, monkeypatch):
    calls = []

    def fake_run(creator, specs, fields, **kwargs):
        calls.append((creator, specs, fields, kwargs))
        return fake_report([np.ones(2)] if len(specs) == 1 else [np.ones(2), np.zeros(2)])

    monkeypatch.setattr(lifecycle, "run", fake_run)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    one = run(probe, x, alpha=3.0)
    assert isinstance(one, np.ndarray)
    creator, specs, fields, kwargs = calls[0]
    assert creator is probe.creator and fields == {"alpha": 3.0}
    assert kwargs == {"keep_on_device": False}
    assert specs[0].shape == (2, 3) and specs[0].data is x
    two = run(probe, x, x)
    assert isinstance(two, tuple) and len(two) == 2


def test_violations_without_errors_still_raise(probe, monkeypatch):
    report = fake_report([np.ones(2)], ok=False)
    report.violations = ["clone_shares_state: ..."]
    monkeypatch.setattr(lifecycle, "run", lambda *a, **k: report)
    with pytest.raises(EagerRunError, match="0 errors and 1 violation"):
        run(probe, np.zeros(2, np.float32))


# -- GPU: the module docstring's worked example, for real -----------------------------------------

class LeakyReLU(Plugin):
    name = "EagerLeakyReLU"
    negative_slope = Field.float(default=0.01, min=0.0)
    kernel = Kernel("leaky_relu.cu", "leaky_relu<{T}>")
    dtypes = (trt.DataType.FLOAT, trt.DataType.HALF)

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        return inputs[0]

    def configure_plugin(self, inp, out):
        desc = inp[0].desc
        if not shapes.is_concrete(desc.dims):
            return
        n = shapes.volume(desc.dims)
        fn = self.kernel.function(dtypes.ctype_from_trt(desc.type))
        self.launch = Launch(fn, grid=min(shapes.cdiv(n, 1024), 65535), block=256,
                             args=(POINTER, POINTER, np.int64(n),
                                   np.float32(self.negative_slope)))

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        self.launch(stream, inputs[0], outputs[0])


@pytest.fixture
def leaky():
    register(LeakyReLU, replace=True)
    yield LeakyReLU
    unregister(LeakyReLU)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-6), (np.float16, 1e-3)])
def test_gpu_leaky_relu_numpy(leaky, dtype, tol):
    x = np.random.default_rng(0).standard_normal((3, 5, 7)).astype(dtype)
    y = run(leaky, x, negative_slope=0.1)
    ref = np.where(x >= 0, x, x.astype(np.float32) * 0.1).astype(dtype)
    assert y.dtype == dtype and y.shape == x.shape
    np.testing.assert_allclose(y.astype(np.float32), ref.astype(np.float32), rtol=tol, atol=tol)


@pytest.mark.gpu
def test_gpu_cupy_inputs_stay_on_device(leaky):
    cupy = pytest.importorskip("cupy")
    x = cupy.asarray(np.linspace(-1, 1, 1000, dtype=np.float32))
    y = run(leaky, x)
    assert isinstance(y, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(y), np.where(cupy.asnumpy(x) >= 0, cupy.asnumpy(x),
                                                         cupy.asnumpy(x) * 0.01), rtol=1e-6)


def test_eager_module_exports():
    assert eager.__all__ == ["EagerRunError", "run"]
