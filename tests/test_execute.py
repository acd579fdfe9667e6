"""The execution path (pyplugins.runtime.execute): V2 and V3 set-up in TensorRT's order, one
configured plugin per input signature, named errors, NumPy references without a GPU; enqueue on
the GPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins._config import override
from pyplugins.emulator import trampoline
from pyplugins.models.runner import load_plugin_modules
from pyplugins.ops.leaky_relu import LeakyReLU
from pyplugins.runtime import shapes
from pyplugins.runtime.creator import register, unregister
from pyplugins.errors import ExecutionError
from pyplugins.runtime.execute import Execution
from pyplugins.runtime.fields import Field
from pyplugins.runtime.plugin import Plugin
from pyplugins.testing import assert_close

AXPY = str(Path(__file__).resolve().parent / "models" / "plugins" / "axpy_ref.py")


class Calls:
    """A trampoline listener: the methods called, in order, with their first argument."""

    def __init__(self):
        self.events = []

    def __call__(self, event):
        self.events.append(event)

    def __enter__(self):
        trampoline.listeners.append(self)
        return self

    def __exit__(self, *exc):
        trampoline.listeners.remove(self)

    def methods(self):
        return [e.method for e in self.events]


class Scale(Plugin):
    """``y = alpha * x`` (any rank), with a reference; V2, and V3 with two tactics."""

    name = "PPExecScale"
    alpha = Field.float(default=1.0)
    fail_in = Field.str(default="")

    def get_output_dimensions(self, output_index, inputs, expr_builder):
        if self.fail_in == "shape":
            raise ValueError("no shape today")
        return inputs[0]

    def configure_plugin(self, inp, out):
        if self.fail_in == "configure":
            raise RuntimeError("configure broke")

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        if self.fail_in == "enqueue":
            raise RuntimeError("launch broke")

    def reference(self, x):
        if self.fail_in == "reference":
            raise ZeroDivisionError("reference broke")
        if self.fail_in == "dtype":
            return (x.astype(np.float64),)
        return ((np.float32(self.alpha) * x).astype(x.dtype),)


class ScaleV3(Scale):
    name = "PPExecScaleV3"
    tactics = ("slow", "fast")


class TileV3(Plugin):
    """1-D ``x`` repeated to the length held by a shape input, with a reference."""

    name = "PPExecTile"
    shape_inputs = 1

    def get_output_dimensions(self, output_index, inputs, expr_builder, shape_inputs):
        (length,) = shapes.dims(shape_inputs[0], expr_builder)
        return [length]

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
        pass

    def reference(self, x):
        return (np.resize(x, self.length),)

    def configure_plugin(self, inp, out):
        self.length = int(out[0].desc.dims[0])


@pytest.fixture(scope="module", autouse=True)
def plugins():
    register(Scale, replace=True)
    register(ScaleV3, replace=True, interface="v3")
    register(TileV3, replace=True)
    yield
    for cls in (Scale, ScaleV3, TileV3):
        unregister(cls)


def _x(shape=(2, 3), dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# -- V2 ------------------------------------------------------------------------------------------

def test_v2_is_set_up_as_the_builder_sets_up_its_plugin_then_runs_the_reference():
    x = _x()
    with Calls() as calls, Execution(Scale.creator, {"alpha": 2.0}, node_name="n1",
                                     device="cpu") as node:
        (y,) = node(x)
    np.testing.assert_array_equal(y, 2 * x)
    assert node.how == "reference" and "device='cpu'" in node.why
    assert calls.methods() == [
        "create_plugin", "get_output_datatype", "get_output_dimensions",
        "supports_format_combination", "supports_format_combination", "configure_plugin",
        "initialize", "configure_plugin", "get_workspace_size", "terminate", "destroy"]
    create = calls.events[0]
    assert create.args[0] == "n1" and [f.name for f in create.args[1]] == ["alpha"]
    assert any("fail_in not found" in w for w in node.warnings)  # as TensorRT's parser warns
    configure = calls.events[7].args
    assert [tuple(d.desc.dims) for d in configure[0]] == [(2, 3)]
    assert [(tuple(d.min), tuple(d.max)) for d in configure[1]] == [((2, 3), (2, 3))]
    assert configure[0][0].desc.format == trt.TensorFormat.LINEAR


def test_a_cache_hit_is_a_lookup_without_set_up():
    a, b = _x((2, 3)), _x((4, 5))
    with override(device="cpu"), Execution(Scale.creator, {"alpha": 3.0}) as node:
        with Calls() as first:
            node(a)
        with Calls() as again:
            (y,) = node(a)
        with Calls() as other:
            node(b)
        with Calls() as back:
            node(a)
        node(a.astype(np.float16))
        assert node.configured == 3  # (2, 3) float32, (4, 5) float32, (2, 3) float16
    assert first.methods().count("configure_plugin") == 2 and again.methods() == []
    assert other.methods().count("create_plugin") == 1 and back.methods() == []
    np.testing.assert_array_equal(y, (np.float32(3) * a))


def test_close_terminates_and_destroys_every_configured_plugin():
    with override(device="cpu"):
        node = Execution(Scale.creator)
        node(_x((2, 3)))
        node(_x((3, 3)))
    with Calls() as calls:
        node.close()
    assert calls.methods() == ["terminate", "destroy"] * 2 and node.configured == 0


def test_a_plugin_written_for_real_tensorrt_runs_with_its_reference():
    load_plugin_modules([AXPY])
    creator = trt.get_plugin_registry().get_creator("PPModelAxpy", "1", "")
    a, b = _x((3, 4), seed=1), _x((3, 4), seed=2)
    with override(device="cpu"), Execution(creator, {"alpha": 0.5}) as node:
        (y,) = node(a, b)
    np.testing.assert_allclose(y, 0.5 * a + b, rtol=1e-6)


# -- V3 ------------------------------------------------------------------------------------------

def test_v3_gets_the_builders_steps_for_one_candidate_with_the_first_tactic():
    x = _x((3, 4))
    with override(device="cpu"), Calls() as calls, Execution(ScaleV3.creator,
                                                             {"alpha": -1.0}) as node:
        (y,) = node(x)
    np.testing.assert_array_equal(y, -x)
    assert calls.methods() == [
        "create_plugin", "get_capability_interface", "get_capability_interface",
        "get_capability_interface", "get_output_data_types", "get_output_shapes",
        "supports_format_combination", "supports_format_combination", "configure_plugin",
        "get_valid_tactics", "set_tactic", "on_shape_change", "get_workspace_size", "destroy"]
    assert calls.events[0].args[2] == trt.TensorRTPhase.BUILD
    set_tactic = next(e for e in calls.events if e.method == "set_tactic")
    assert set_tactic.args == (1,)  # "slow": the first offered, not a timed pick


def test_v3_shape_inputs_give_the_output_shape():
    x = np.float32([1, 2, 3])
    with override(device="cpu"), Execution(TileV3.creator) as node:
        (y,) = node(x, shape_inputs=[(7,)])
        (z,) = node(x, shape_inputs=[(2,)])
        assert node.configured == 2  # the shape input's value is part of the signature
    np.testing.assert_array_equal(y, [1, 2, 3, 1, 2, 3, 1])
    np.testing.assert_array_equal(z, [1, 2])


def test_size_tensors_are_refused_with_what_to_use_instead():
    from tests.v3_plugins import NonZero

    with override(device="cpu"), Execution(NonZero.creator) as node, \
            pytest.raises(ExecutionError, match=r"get_output_shapes\(\) failed(?s:.*)size "
                                                r"tensors\); use the check lifecycle") as err:
        node(_x((3, 4)))
    assert err.value.method == "get_output_shapes"


# -- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("where, method, text", [
    ("shape", "get_output_dimensions", "ValueError: no shape today"),
    ("configure", "configure_plugin", "RuntimeError: configure broke"),
    ("reference", "reference", "ZeroDivisionError: reference broke"),
])
def test_a_failing_callback_names_plugin_node_and_method(where, method, text):
    with override(device="cpu"), Execution(Scale.creator, {"fail_in": where},
                                           node_name="scale_7") as node:
        with pytest.raises(ExecutionError) as err:
            node(_x())
    message = str(err.value)
    assert message.startswith("plugin node 'scale_7' (PPExecScale): ") and text in message
    assert (err.value.plugin, err.value.node, err.value.method) == (
        "PPExecScale:1:", "scale_7", method)


def test_v3_failures_are_named_too():
    with override(device="cpu"), Execution(ScaleV3.creator, {"fail_in": "configure"}) as node:
        with pytest.raises(ExecutionError, match="configure_plugin.*configure broke") as err:
            node(_x())
    assert err.value.method == "configure_plugin"


def test_a_refused_type_says_which_tensor_and_what_the_path_runs():
    with override(device="cpu"), Execution(Scale.creator) as node, \
            pytest.raises(ExecutionError, match=r"refused input 0 as INT32 LINEAR \(pos 0; the "
                                                r"combination is INT32, INT32, all LINEAR\)"):
        node(np.zeros((2, 2), np.int32))


def test_a_reference_disagreeing_with_the_declared_output_and_a_missing_reference():
    with override(device="cpu"), Execution(Scale.creator, {"fail_in": "dtype"}) as node, \
            pytest.raises(ExecutionError, match=r"returned \[\(\(2, 3\), dtype\('float64'\)\)\]"):
        node(_x())
    load_plugin_modules([AXPY])
    creator = trt.get_plugin_registry().get_creator("PPModelNoRef", "1", "")
    with override(device="cpu"), Execution(creator) as node, \
            pytest.raises(ExecutionError, match=r"enqueue did not run \(no usable CUDA GPU "
                                                r"\(PYPLUGINS_DEVICE=cpu asks for none\)\) "
                                                r"and the plugin defines no NumPy"):
        node(_x((3, 4)), _x((3, 4)))


def test_bad_arguments():
    with pytest.raises(ValueError, match="device must be 'auto', 'cpu', 'gpu', 'gpu:N'"):
        Execution(Scale.creator, device="tpu")
    with override(device="cpu"):
        with pytest.raises(ExecutionError, match="device='gpu' was asked for, but there is no "
                                                 "usable CUDA GPU"):
            Execution(Scale.creator, device="gpu")
        with Execution(Scale.creator) as node, pytest.raises(TypeError, match="input 0 must"):
            node([1.0])
        with Execution(Scale.creator) as node, pytest.raises(ExecutionError, match="float64"):
            node(np.zeros(3))
        with Execution(Scale.creator) as node, pytest.raises(ExecutionError, match="IPluginV3"):
            node(_x(), shape_inputs=[(3,)])


# -- GPU -----------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_enqueue_numpy_and_cupy_inputs_and_the_cache(dtype):
    cp = pytest.importorskip("cupy")
    x = _x((7, 129), dtype)
    (want,) = LeakyReLU(neg_slope=0.2).reference(x)
    with Execution(LeakyReLU.creator, {"neg_slope": 0.2}, device="gpu") as node:
        (y,) = node(x)
        assert node.how == "kernel" and node.why is None and isinstance(y, np.ndarray)
        assert_close(y, want, dtype)
        with Calls() as calls:
            (z,) = node(cp.asarray(x))
        assert calls.methods() == ["enqueue"] and isinstance(z, cp.ndarray)
        assert_close(cp.asnumpy(z), want, dtype)


@pytest.mark.gpu
def test_gpu_v3_enqueue():
    from tests.v3_plugins import LeakyReLUInPlace

    x = _x((5, 33))
    with Execution(LeakyReLUInPlace.creator, {"neg_slope": 0.1}, device="gpu") as node:
        (y,) = node(x)
    assert_close(y, LeakyReLU(neg_slope=0.1).reference(x)[0], np.float32)


@pytest.mark.gpu
def test_gpu_a_raising_enqueue_is_named():
    with Execution(Scale.creator, {"fail_in": "enqueue"}, device="gpu") as node, \
            pytest.raises(ExecutionError, match="(?s)enqueue.*RuntimeError: launch broke") as err:
        node(_x())
    assert err.value.method == "enqueue"
