"""pp.run: the execution path by default, the check lifecycle first with check=True; error
paths and references (CPU), and real runs (GPU)."""

from __future__ import annotations

import numpy as np
import pytest

import pyplugins as pp
import pyplugins.trt as trt
from pyplugins import dtypes
from pyplugins.runtime import eager, shapes
from pyplugins._config import override
from pyplugins.runtime.creator import register, unregister
from pyplugins.runtime.eager import EagerRunError, run
from pyplugins.checker import checked_run, lifecycle
from pyplugins.errors import FieldError, PluginDefinitionError
from pyplugins.runtime.fields import Field
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import POINTER, Launch
from pyplugins.runtime.plugin import Plugin


class Probe(Plugin):
    """Records what reaches it; its enqueue is never reached on CPU, and it has no reference."""

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


class Scaled(Probe):
    """Probe with a NumPy reference: ``alpha * x`` and a copy of ``x``."""

    name = "EagerScaled"
    outputs = 2

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        return inputs[0]

    def reference(self, x):
        return (np.float32(self.alpha) * x).astype(x.dtype), x.copy()


@pytest.fixture
def probe():
    register(Probe, replace=True)
    register(Scaled, replace=True)
    Probe.seen = []
    yield Probe
    unregister(Probe)
    unregister(Scaled)


def test_fields_and_shapes_reach_the_plugin_then_no_gpu_no_reference_is_a_clear_error(probe):
    x = np.zeros((2, 3), np.float16)
    with override(device="cpu"), pytest.raises(EagerRunError) as info:
        run(probe, x, x, alpha=2, mode="b", sizes=[4, 5])
    message = str(info.value)
    assert "plugin node 'pp.run(Probe)' (EagerProbe): enqueue did not run" in message
    assert "defines no NumPy reference" in message and "CUDA GPU" in message
    assert info.value.report is None
    assert probe.seen, "configure_plugin was never called"
    assert all(s == ([(2, 3), (2, 3)], [(2, 5)], [trt.DataType.HALF] * 2, 2.0, "b", [4, 5])
               for s in probe.seen)


def test_without_a_gpu_the_reference_gives_the_outputs_of_the_fields(probe):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with override(device="cpu"):
        y, z = run(Scaled, x, alpha=3.0)
    np.testing.assert_array_equal(y, 3 * x)
    np.testing.assert_array_equal(z, x)


def test_unknown_or_bad_fields_fail_before_the_plugin_is_made(probe):
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(FieldError, match="no field 'alpah' \\(did you mean 'alpha'\\?\\)"):
        run(probe, x, alpah=1.0)
    with pytest.raises(FieldError, match="must be one of 'a', 'b'"):
        pp.run(probe, x, mode="c", check=True)
    assert probe.seen == []


def test_unregistered_class_and_non_array_inputs(probe):
    class Loose(Plugin):
        name = "EagerLoose"

    with pytest.raises(PluginDefinitionError, match="decorate it with @pp.register"):
        run(Loose, np.zeros(3))
    with pytest.raises(TypeError, match="input 0 must be a NumPy or CuPy array"):
        run(probe, [1.0, 2.0])


class Failing(Plugin):
    name = "EagerFailing"

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        raise ValueError("no shape for you")

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        pass


@pytest.mark.parametrize("check", [False, True])
def test_a_failing_callback_is_raised_naming_the_method(check):
    register(Failing, replace=True)
    try:
        with override(device="cpu"), pytest.raises(EagerRunError) as info:
            pp.run(Failing, np.zeros((2, 2), np.float32), check=check)
    finally:
        unregister(Failing)
    assert "no shape for you" in str(info.value)
    if check:  # the check lifecycle found it, and says so with its report
        assert "the check lifecycle reported 1 error" in str(info.value)
        assert not info.value.report.ok
    else:
        assert "get_output_dimensions() failed on the execution path" in str(info.value)
        assert info.value.report is None


def test_pp_run_is_the_checker_entry_and_check_runs_the_lifecycle_first(probe, monkeypatch):
    assert pp.run is checked_run.run
    calls = []
    real = lifecycle.run

    def spy(creator, specs, fields, **kwargs):
        calls.append((creator, [s.data for s in specs], fields))
        return real(creator, specs, fields, **kwargs)

    monkeypatch.setattr(lifecycle, "run", spy)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with override(device="cpu"):
        plain = pp.run(Scaled, x, alpha=2.0)
        assert calls == []  # the default is the execution path alone
        checked = pp.run(Scaled, x, alpha=2.0, check=True)
    assert len(calls) == 1 and calls[0][0] is Scaled.creator and calls[0][1][0] is x
    assert calls[0][2] == {"alpha": 2.0}  # check is pp.run's, never a field
    for a, b in zip(plain, checked):
        np.testing.assert_array_equal(a, b)


def test_violations_without_errors_still_raise(probe, monkeypatch):
    class Report:
        ok, errors, violations = False, [], ["clone_shares_state: ..."]

        def format(self):
            return "report text"

    monkeypatch.setattr(lifecycle, "run", lambda *a, **k: Report())
    with pytest.raises(EagerRunError, match="0 errors and 1 violation:\nreport text"):
        pp.run(Scaled, np.zeros(2, np.float32), check=True)


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
    assert eager.__all__ == ["EagerRunError", "plugin_creator", "run"]
    assert checked_run.__all__ == ["run"]
