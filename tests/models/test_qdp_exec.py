"""The lean execution path of QDP nodes (pyplugins.models.qdp_exec, qdp_setup): one configured
plugin per input signature, no check lifecycle per inference; AOT baked once per signature and its
kernel launched in-process. CPU tests drive the set-up, the reference and (with a fake CuPy and a
recording kernel) the kernel path; GPU tests the real launches against the known function."""

from __future__ import annotations

import os

import numpy as np
import pytest

from pyplugins import emulator as trt
from pyplugins.checker import lifecycle
from pyplugins.errors import ExecutionError
from pyplugins.models import qdp_setup
from pyplugins.models.qdp_node import qdp_node
from pyplugins.models.runner import ModelRunError, ModelRunner
from pyplugins.ops.leaky_relu import LeakyReLU
from pyplugins.runtime import qdp

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
helper, TensorProto = onnx.helper, onnx.TensorProto

MODULE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins", "qdp_add_k.py")
R = trt.QuickPluginCreationRequest


def _model(node):
    """One plugin node, ``x`` of shape (n, 8) -> ``y``."""
    return helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8])]))


def _add_k(op="add_k", **attrs):
    return _model(helper.make_node(op, ["x"], ["y"], name="addk", plugin_namespace="qdp_models",
                                   **attrs))


def _x(rows, seed=0):
    return np.random.default_rng(seed).standard_normal((rows, 8)).astype(np.float32)


def _lrelu(x, slope=0.25):
    return np.where(x > 0, x, np.float32(slope) * x)


@pytest.fixture
def lrelu_qdp():
    qdp.define(LeakyReLU)
    yield LeakyReLU
    qdp.forget(LeakyReLU)


@pytest.fixture
def counted(monkeypatch):
    """Counts QDPSetup.configure calls; the check lifecycle must not run at all."""
    calls = []
    configure = qdp_setup.QDPSetup.configure

    def counting(self, shapes, np_dtypes, **kw):
        calls.append([tuple(s) for s in shapes])
        return configure(self, shapes, np_dtypes, **kw)

    def no_lifecycle(*args, **kw):
        raise AssertionError("the check lifecycle ran on the execution path")

    monkeypatch.setattr(qdp_setup.QDPSetup, "configure", counting)
    monkeypatch.setattr(lifecycle, "run", no_lifecycle)
    return calls


# -- CPU: the set-up, the cache, the reference ------------------------------------------------------

@pytest.mark.parametrize("aot", [True, False])
def test_a_signature_is_configured_once_and_a_new_shape_again(lrelu_qdp, counted, aot):
    node = qdp_node(LeakyReLU, ["x"], ["y"], name="lrelu", aot=aot, neg_slope=0.25)
    runner = ModelRunner(_model(node), device="cpu")
    for seed in range(3):
        x = _x(2, seed)
        np.testing.assert_array_equal(runner.infer({"x": x})["y"], _lrelu(x))
    assert counted == [[(2, 8)]]
    x = _x(5)
    np.testing.assert_array_equal(runner.infer({"x": x})["y"], _lrelu(x))
    runner.infer({"x": _x(2)})
    assert counted == [[(2, 8)], [(5, 8)]]


def test_the_reference_must_give_what_the_register_function_declares(lrelu_qdp, monkeypatch):
    node = qdp_node(LeakyReLU, ["x"], ["y"], name="lrelu", aot=False, neg_slope=0.25)
    monkeypatch.setattr(LeakyReLU, "reference", lambda self, x: (x[:1],))
    with pytest.raises(ModelRunError, match=r"'lrelu'.*reference\(\) returned \[\(\(1, 8\).*"
                                            r"declares \[\(\(2, 8\)"):
        ModelRunner(_model(node), device="cpu").infer({"x": _x(2)})


K3 = (("k", np.int32([3]), trt.PluginFieldType.INT32),)


def _setup(request, fields=K3):
    from pyplugins.checker._fresh import import_module

    import_module(MODULE)
    creator = trt.get_plugin_registry().get_creator("add_k", "1", "qdp_models")
    return qdp_setup.QDPSetup(creator, "addk", [trt.PluginField(*f) for f in fields], request)


def test_an_aot_plugin_is_baked_with_its_launch_evaluated_for_the_signature():
    setup = _setup(R.STRICT_AOT)
    for rows, grid in ((2, 1), (100, 4)):
        ready = setup.configure([(rows, 8)], [np.dtype(np.float32)], bake=True)
        try:
            assert (ready.made, ready.enqueue, ready.combination) == (
                "aot", None, "FLOAT LINEAR -> FLOAT LINEAR")
            assert ready.artifact.kernel_name == "add_k"
            assert ready.plan == {"grid": (grid, 1, 1), "block": (256, 1, 1), "shared_mem": 0,
                                  "extra": [rows * 8, 3], "outputs": [(rows, 8)]}
        finally:
            ready.teardown()
    jit = _setup(R.STRICT_JIT).configure([(2, 8)], [np.dtype(np.float32)], bake=True)
    assert (jit.made, jit.artifact, callable(jit.enqueue)) == ("jit", None, True)
    jit.teardown()


def test_the_setup_names_the_plugin_and_the_callback_that_refuses(lrelu_qdp):
    creator = trt.get_plugin_registry().get_creator("LReLU_TRT", "1", "pyplugins")
    slope = trt.PluginField("neg_slope", np.float32([0.25]), trt.PluginFieldType.FLOAT32)
    setup = qdp_setup.QDPSetup(creator, "lrelu", [slope], R.STRICT_JIT)
    with pytest.raises(ExecutionError, match=r"'lrelu' \(LReLU_TRT\).*no combination with the "
                                             r"network's types \(INT8, INT8\).*offered: FLOAT "
                                             r"LINEAR -> FLOAT LINEAR"):
        setup.configure([(2, 8)], [np.dtype(np.int8)])
    with pytest.raises(ExecutionError, match=r"'addk' \(add_k\): get_output_data_types\(\) failed"
                                             r"(.|\n)*\[ERROR\].*argument: 'k'"):
        _setup(R.STRICT_JIT, fields=()).configure([(2, 8)], [np.dtype(np.float32)])


class _FakeCupy:
    """What QDPExecution's kernel path uses of CuPy, on host arrays (``data.ptr``: an id)."""

    class _Array:
        def __init__(self, a):
            self.a = np.array(a)
            self.data = type("Pointer", (), {"ptr": id(self)})()

    class _Stream:
        ptr = 1234

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def synchronize(self):
            pass

    cuda = type("cuda", (), {"Stream": _Stream})

    def asarray(self, a):
        return self._Array(a)

    def empty(self, shape, dtype):
        return self._Array(np.full(shape, 7, dtype))

    def asnumpy(self, o, stream=None):
        return o.a


@pytest.fixture
def fake_gpu(monkeypatch):
    """The kernel path without a GPU: fake CuPy, and an AOT kernel that records its launches."""
    from pyplugins.checker import aot_launch
    from pyplugins.models import qdp_exec

    launches = []

    class Kernel:
        def __init__(self, art):
            launches.append(("load", art.kernel_name))

        def launch(self, plan, in_ptrs, out_ptrs, stream):
            launches.append((plan["grid"], plan["extra"], len(in_ptrs), len(out_ptrs), stream))

    monkeypatch.setattr(qdp_exec, "pick_device", lambda device: (_FakeCupy(), None, None))
    monkeypatch.setattr(aot_launch, "LoadedKernel", Kernel)
    return launches


def test_an_aot_node_is_baked_and_loaded_once_per_signature_then_only_launched(counted,
                                                                              fake_gpu):
    runner = ModelRunner(_add_k(k=3, aot=1), plugins=[MODULE], device="gpu")
    for rows in (2, 2, 2, 300):
        assert runner.infer({"x": _x(rows)})["y"].shape == (rows, 8)
    assert runner.node_runs[0].how == "kernel"
    assert counted == [[(2, 8)], [(300, 8)]]
    once = ((1, 1, 1), [16, 3], 1, 1, 1234)
    assert fake_gpu == [("load", "add_k"), once, once, once, ("load", "add_k"),
                        ((10, 1, 1), [2400, 3], 1, 1, 1234)]


def test_a_jit_node_runs_impl_per_inference_on_the_configured_plugin(counted, fake_gpu,
                                                                     monkeypatch):
    from pyplugins.checker._fresh import import_module

    seen = []
    monkeypatch.setattr(import_module(MODULE), "_impl", lambda x, k, outs, stream: seen.append(
        (tuple(x.shape), int(k[0]), tuple(outs[0].shape), stream)))
    runner = ModelRunner(_add_k(k=3, aot=0), plugins=[MODULE], device="gpu")
    for rows in (2, 2, 5):
        runner.infer({"x": _x(rows)})
    assert seen == [((2, 8), 3, (2, 8), 1234), ((2, 8), 3, (2, 8), 1234),
                    ((5, 8), 3, (5, 8), 1234)]
    assert counted == [[(2, 8)], [(5, 8)]]

    def broken(*args):
        raise RuntimeError("impl broke")

    monkeypatch.setattr(import_module(MODULE), "_impl", broken)
    with pytest.raises(ModelRunError, match=r"'addk'.*enqueue \(impl\) failed(.|\n)*\[ERROR\]"
                                            r".*impl broke"):
        runner.infer({"x": _x(2)})


# -- on a GPU: JIT enqueue and the in-process AOT launch, set up once -------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("flag", ["jit", "aot"])
def test_the_runner_runs_a_qdp_node_many_times_with_one_setup(counted, monkeypatch, flag):
    from pyplugins.checker import aot_launch

    loads = []
    real = aot_launch.LoadedKernel.__init__

    def loading(self, art):
        loads.append(art.kernel_name)
        real(self, art)

    monkeypatch.setattr(aot_launch.LoadedKernel, "__init__", loading)
    runner = ModelRunner(_add_k(k=3), plugins=[MODULE], device="gpu", qdp=flag)
    for seed in range(4):
        x = _x(2, seed)
        np.testing.assert_array_equal(runner.infer({"x": x})["y"], x + 3)
    assert runner.node_runs[0].how == "kernel"
    assert counted == [[(2, 8)]]
    assert loads == (["add_k"] if flag == "aot" else [])
    x = _x(33)
    np.testing.assert_array_equal(runner.infer({"x": x})["y"], x + 3)
    assert counted == [[(2, 8)], [(33, 8)]]


@pytest.mark.gpu
@pytest.mark.parametrize("aot", [True, False])
def test_a_pp_plugins_qdp_node_runs_its_kernel_as_its_reference_says(lrelu_qdp, counted, aot):
    node = qdp_node(LeakyReLU, ["x"], ["y"], name="lrelu", aot=aot, neg_slope=0.25)
    runner = ModelRunner(_model(node), device="gpu")
    for seed in range(3):
        x = _x(4, seed)
        np.testing.assert_allclose(runner.infer({"x": x})["y"], _lrelu(x), rtol=1e-6)
    assert counted == [[(4, 8)]]


@pytest.mark.gpu
@pytest.mark.multi_gpu
@pytest.mark.parametrize("flag", ["jit", "aot"])
def test_two_runners_on_two_gpus_at_once_run_a_qdp_node(monkeypatch, flag):
    """Two execution contexts on two devices at once: one runner per GPU ('gpu:0', 'gpu:1'), each
    in its own thread, JIT (impl) or AOT (the artifact's kernel, loaded on that GPU); every
    inference of both equals the known result, and each set-up ran with its GPU current."""
    from concurrent.futures import ThreadPoolExecutor

    import cupy

    set_up_on = []
    configure = qdp_setup.QDPSetup.configure

    def recording(self, *args, **kw):
        set_up_on.append(cupy.cuda.runtime.getDevice())
        return configure(self, *args, **kw)

    monkeypatch.setattr(qdp_setup.QDPSetup, "configure", recording)

    runners = [ModelRunner(_add_k(k=3), plugins=[MODULE], device=f"gpu:{g}", qdp=flag)
               for g in (0, 1)]

    def work(g):
        wrong = []
        for seed in range(25):
            x = _x(3 + seed % 4, seed + 100 * g)
            y = runners[g].infer({"x": x})["y"]
            if not np.array_equal(np.asarray(y), x + 3):
                wrong.append(seed)
        return wrong, cupy.cuda.runtime.getDevice()

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(work, (0, 1)))
    assert [r[0] for r in results] == [[], []], results
    assert [r.node_runs[0].how for r in runners] == ["kernel", "kernel"]
    assert sorted(set(set_up_on)) == [0, 1], set_up_on
