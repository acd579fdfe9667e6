"""LReLU_TRT (LeakyReLU): what scripts written for TensorRT's removed built-in plugin do, fields
(``neg_slope`` and TensorRT's ``negSlope``), shapes, formats, serialization, ONNX (CPU); results
against the NumPy reference, capture and a fresh process (GPU)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.runtime import formats
from pyplugins._config import override
from pyplugins.checker import lifecycle
from pyplugins.emulator import onnx_import, trampoline
from pyplugins.emulator.specs import TensorSpec
from pyplugins.errors import FieldError, LaunchError
from pyplugins.ops.leaky_relu import BLOCK, NVIDIA_FIELD_NAME, LeakyReLU, grid_size
from pyplugins.testing import assert_close

from .support import check_cli, dyn, run_demo

DT = trt.DataType
LINEAR = trt.TensorFormat.LINEAR
F32 = trt.PluginFieldType.FLOAT32


def desc(data_type, dims=(2, 3, 4), fmt=LINEAR):
    return trt.PluginTensorDesc(dims, data_type, fmt)


def slope_fc(value, name="neg_slope"):
    """What a script builds: a trt.PluginFieldCollection (a list) of one FLOAT32 field."""
    return trt.PluginFieldCollection([trt.PluginField(name, np.array([value], np.float32), F32)])


def cpu_run(spec, fields=None):
    return lifecycle.run(LeakyReLU.creator, [spec], fields, device="cpu")


# -- what scripts written for TensorRT's built-in LReLU_TRT do -------------------------------------

def test_script_get_creator_and_create_plugin_with_a_plain_collection():
    creator = trt.get_plugin_registry().get_creator("LReLU_TRT", "1", "")
    assert creator is LeakyReLU.creator
    fc = slope_fc(0.2)
    plugin = creator.create_plugin("lrelu", fc)       # a list, not a PluginFieldCollection_
    assert isinstance(plugin, trt.IPluginV2DynamicExt)
    assert trampoline.identity(plugin) == ("LReLU_TRT", "1", "")
    assert trampoline.get_nb_outputs(plugin) == 1
    assert plugin.neg_slope == float(np.float32(0.2)) and plugin.layer_name == "lrelu"
    report = lifecycle.run(creator, [TensorSpec((2, 3, 5), np.float32)], fc, device="cpu")
    assert report.ok, report.format()
    assert report.output_shapes == [(2, 3, 5)] and report.output_dtypes == [DT.FLOAT]


def test_script_for_tensorrt_10_uses_get_plugin_creator():
    with override(trt_version="10.16"):
        registry = trt.get_plugin_registry()
        creator = registry.get_plugin_creator("LReLU_TRT", "1", "")
        assert creator is LeakyReLU.creator
        assert creator in registry.plugin_creator_list
        plugin = creator.create_plugin("lrelu", slope_fc(0.2))
        assert plugin.neg_slope == float(np.float32(0.2))
    with override(trt_version="11.1"), pytest.raises(AttributeError, match="11.0 removed it"):
        trt.get_plugin_registry().get_plugin_creator("LReLU_TRT", "1", "")


def test_tensorrt_passes_a_plugin_field_collection_underscore():
    fc = trt.PluginFieldCollection_([trt.PluginField("neg_slope", np.array([0.5], np.float32),
                                                     F32)])
    plugin = trampoline.create_plugin(LeakyReLU.creator, "lrelu", fc)
    assert plugin is not None and plugin.neg_slope == 0.5


def test_tensorrt_field_name_negslope_is_accepted():
    plugin = LeakyReLU.creator.create_plugin("lrelu", slope_fc(0.3, NVIDIA_FIELD_NAME))
    assert plugin.neg_slope == float(np.float32(0.3))
    assert NVIDIA_FIELD_NAME == "negSlope"
    assert [f.name for f in LeakyReLU.creator.field_names] == ["neg_slope", "negSlope"]


def test_both_names_at_once_are_refused():
    fc = trt.PluginFieldCollection(list(slope_fc(0.3)) + list(slope_fc(0.1, "negSlope")))
    with pytest.raises(FieldError, match="both 'neg_slope' and 'negSlope'"):
        LeakyReLU.creator.create_plugin("lrelu", fc)


# TensorRT's binding names create_plugin's parameters (name, field_collection); scripts use them.
def test_script_passing_field_collection_by_keyword():
    plugin = LeakyReLU.creator.create_plugin(name="lrelu", field_collection=slope_fc(0.2))
    assert plugin.neg_slope == float(np.float32(0.2))


# -- fields ----------------------------------------------------------------------------------------

def test_default_and_python_values():
    assert LeakyReLU().neg_slope == 0.01
    assert LeakyReLU(neg_slope=-2).neg_slope == -2.0          # any finite slope, as TensorRT's
    assert trampoline.create_plugin(LeakyReLU.creator, "l", trt.PluginFieldCollection_()
                                    ).neg_slope == 0.01


@pytest.mark.parametrize("value, match", [
    (float("nan"), r"is invalid: the slope must be a finite number \(got nan\)"),
    (float("inf"), r"is invalid: the slope must be a finite number \(got inf\)"),
    ("0.1", r"must be a float \(got '0.1', a str\)"),
    ([0.1], r"must be a float \(got \[0.1\], a list\)"),
])
def test_bad_slopes_name_field_plugin_and_value(value, match):
    with pytest.raises(FieldError, match=r"Field 'neg_slope' of plugin 'LReLU_TRT' " + match):
        LeakyReLU(neg_slope=value)


def test_bad_collection_reaches_stderr_as_tensorrt_prints_it(capfd):
    fc = trt.PluginFieldCollection_([trt.PluginField("neg_slope", np.array([1.0, 2.0],
                                                                           np.float32), F32)])
    assert trampoline.create_plugin(LeakyReLU.creator, "l", fc) is None
    err = capfd.readouterr().err
    assert "[ERROR] Exception caught in create_plugin()" in err and "single value" in err


# -- shapes and formats ----------------------------------------------------------------------------

@pytest.mark.parametrize("spec, opt_out", [
    (TensorSpec((7,), np.float32), (7,)),
    (TensorSpec((2, 0, 3), np.float16), (2, 0, 3)),
    (TensorSpec((-1, 3, -1), np.float16, min=(1, 3, 1), opt=(2, 3, 9), max=(8, 3, 99)),
     (2, 3, 9)),
    (TensorSpec((), np.float32), ()),
])
def test_output_shape_is_the_input_shape(spec, opt_out):
    report = cpu_run(spec, {"neg_slope": 0.1})
    assert report.ok, report.format()
    assert report.output_shapes == [opt_out]


def test_dynamic_dims_stay_symbolic():
    builder = trt.IExprBuilder()
    exprs = trampoline.get_output_dimensions(LeakyReLU(), 0, [builder._input(0, (-1, 4))],
                                             builder)
    assert not exprs[0].is_constant() and exprs[1].get_constant_value() == 4
    assert exprs[0]._evaluate({0: (6, 4)}) == 6
    builder._expire()


def ask(plugin, pos, in_out):
    return trampoline.supports_format_combination(plugin, pos, in_out, 1)


def test_format_table_accepted_and_rejected():
    plugin = LeakyReLU()
    for t in (DT.FLOAT, DT.HALF):
        assert ask(plugin, 0, [desc(t), desc(DT.INT8)])     # in_out[1] is junk at pos 0
        assert ask(plugin, 1, [desc(t), desc(t)])
        other = DT.HALF if t is DT.FLOAT else DT.FLOAT
        assert not ask(plugin, 1, [desc(t), desc(other)])
        assert not ask(plugin, 0, [desc(t, fmt=trt.TensorFormat.CHW32), desc(t)])
    for t in (DT.BF16, DT.INT8, DT.INT32, DT.INT64, DT.BOOL, DT.UINT8, DT.FP8):
        assert not ask(plugin, 0, [desc(t), desc(t)]), t
    candidates = [desc(t, fmt=f) for t in list(DT) for f in (LINEAR, trt.TensorFormat.HWC8)]
    found = formats.combinations(lambda pos, io, n: ask(plugin, pos, io), 1, 1, candidates)
    assert sorted(found, key=str) == sorted([((DT.FLOAT, LINEAR), (DT.FLOAT, LINEAR)),
                                             ((DT.HALF, LINEAR), (DT.HALF, LINEAR))], key=str)


def test_an_int8_network_fails_the_build_with_a_reason():
    report = cpu_run(TensorSpec((2, 3), np.int8))
    assert "format" in report.checks() and not report.ok


# -- configure / enqueue guards, launch sizing -----------------------------------------------------

def test_enqueue_before_configure_says_so():
    with pytest.raises(LaunchError, match="'LReLU_TRT': enqueue found no kernel launch"):
        LeakyReLU().enqueue([], [], [0], [0], 0, 0)


def test_without_a_device_enqueue_explains():
    plugin = LeakyReLU()
    with override(device="cpu"):
        trampoline.configure_plugin(plugin, [dyn((4, 5))], [dyn((4, 5))])
    with pytest.raises(LaunchError, match="enqueue cannot run: there was no usable CUDA GPU"):
        plugin.enqueue([], [], [0], [0], 0, 0)


def test_grid_size_follows_the_kernel_recommendation():
    assert BLOCK == 256
    assert grid_size(0, 4) == 0                        # empty: the launch skips
    assert grid_size(1, 2) == 1
    assert grid_size(4 * 256, 4) == 1                  # V=4 floats x 256 threads, one each
    assert grid_size(4 * 256 + 1, 4) == 2
    assert grid_size(8 * 256 * 3, 2) == 3              # V=8 halves
    assert grid_size(2**30, 4) == 2**30 // (4 * 256)   # no cap short of CUDA's: no loop
    assert grid_size(2**50, 2) == 2**31 - 1            # CUDA's grid limit; the kernel loops
    assert grid_size(10**9, 4, 100) == 100             # any cap works: the kernel loops


# -- serialization and clone -----------------------------------------------------------------------

def test_serialize_round_trip_is_deterministic():
    plugin = LeakyReLU(neg_slope=0.25)
    data = trampoline.serialize(plugin)
    assert data == trampoline.serialize(plugin)
    back = trampoline.deserialize_plugin(LeakyReLU.creator, "lrelu", data)
    assert back.neg_slope == 0.25 and trampoline.identity(back) == ("LReLU_TRT", "1", "")


def test_corrupt_bytes_are_refused(capfd):
    data = bytearray(trampoline.serialize(LeakyReLU()))
    data[0] ^= 0xFF
    assert trampoline.deserialize_plugin(LeakyReLU.creator, "lrelu", bytes(data)) is None
    assert "SerializationError" in capfd.readouterr().err


def test_clone_is_independent():
    plugin = LeakyReLU(neg_slope=0.5)
    twin = trampoline.clone(plugin)
    twin.neg_slope = 0.1
    assert plugin.neg_slope == 0.5 and trampoline.identity(twin) == ("LReLU_TRT", "1", "")


# -- ONNX and the command line ---------------------------------------------------------------------

@pytest.mark.parametrize("attribute", ["neg_slope", "negSlope"])
def test_onnx_node_with_either_name(attribute):
    helper = pytest.importorskip("onnx.helper")
    node = helper.make_node("LReLU_TRT", ["x"], ["y"], name="lrelu_0", **{attribute: 0.3})
    imported = onnx_import.import_node(node)
    assert imported.creator is LeakyReLU.creator
    assert [(f.name, f.type) for f in imported.fc] == [(attribute, F32)]
    other = "negSlope" if attribute == "neg_slope" else "neg_slope"
    assert any(f"Attribute {other} not found" in w for w in imported.warnings)
    plugin = trampoline.create_plugin(imported.creator, imported.name, imported.fc)
    assert plugin.neg_slope == float(np.float32(0.3))
    report = lifecycle.run(imported.creator, [TensorSpec((4, 5), np.float16)], imported.fc,
                           node_name=imported.name, device="cpu")
    assert report.ok, report.format()


def test_cli_check_passes(capsys):
    out = check_cli(capsys, "pyplugins.ops.leaky_relu", "LReLU_TRT", "1-2-4x3x5:float16",
                    attrs=["neg_slope=0.2"])
    assert "LReLU_TRT:1:: OK" in out and "(2, 3, 5)" in out


def test_demo_runs_on_cpu():
    assert "kernels were not run" in run_demo("leaky_relu_demo.py", "--device", "cpu")


# -- GPU -------------------------------------------------------------------------------------------

def data_of(shape, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    if x.size:
        x.reshape(-1)[0] = 0.0                           # the x >= 0 branch at exactly 0
    return x


def gpu_check(spec, slope, fields=None, **kwargs):
    fields = {"neg_slope": slope} if fields is None else fields
    report = lifecycle.run(LeakyReLU.creator, [spec], fields, device="gpu", check_capture=True,
                           **kwargs)
    assert report.ok, report.format()
    assert report.enqueue_ran, report.skipped
    x = np.asarray(spec.data)
    (got,) = report.outputs
    assert_close(got, LeakyReLU(neg_slope=slope).reference(x)[0], x.dtype,
                           what=f"LReLU_TRT {x.shape} {x.dtype}")
    return report


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape", [(2, 3, 16, 20), (1023,), (3, 5, 67), (1, 2, 1, 3, 1, 2, 3, 5),
                                   (0, 7), ()])
def test_gpu_matches_reference(dtype, shape):
    gpu_check(TensorSpec(shape, dtype, data=data_of(shape, dtype)), 0.1)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_dynamic_profile(dtype):
    for i, shape in enumerate([(3, 1000), (8, 4097), (1, 1), (0, 50), (5, 333)]):
        spec = TensorSpec((-1, -1), dtype, min=(0, 1), max=(8, 5000),
                          data=data_of(shape, dtype, i))
        gpu_check(spec, -0.75)


@pytest.mark.gpu
def test_gpu_script_path_result():
    # The plain-collection path a script takes, then a build and run with the same collection.
    creator = trt.get_plugin_registry().get_creator("LReLU_TRT", "1", "")
    fc = slope_fc(0.2, NVIDIA_FIELD_NAME)
    assert creator.create_plugin("lrelu", fc).neg_slope == float(np.float32(0.2))
    x = data_of((4, 3, 33), np.float32)
    gpu_check(TensorSpec(x.shape, x.dtype, data=x), 0.2, fields=fc)


@pytest.mark.gpu
def test_gpu_fresh_process():
    x = data_of((2, 3, 9, 10), np.float16)
    gpu_check(TensorSpec(x.shape, x.dtype, data=x), 0.3, fresh_process=True,
              plugin_module="pyplugins.ops.leaky_relu")


@pytest.mark.gpu
def test_gpu_eager_run_on_cupy_arrays():
    cp = pytest.importorskip("cupy")
    from pyplugins.runtime.eager import run

    x = data_of((5, 77), np.float16)
    y = run(LeakyReLU, cp.asarray(x), neg_slope=0.05)
    assert isinstance(y, cp.ndarray)
    assert_close(cp.asnumpy(y), LeakyReLU(neg_slope=0.05).reference(x)[0], np.float16)


@pytest.mark.gpu
def test_gpu_configured_clone_has_its_own_launch():
    cp = pytest.importorskip("cupy")
    x = data_of((6, 129), np.float32)
    plugin = trampoline.create_plugin(LeakyReLU.creator, "lrelu", slope_fc(0.2))
    trampoline.configure_plugin(plugin, [dyn(x.shape)], [dyn(x.shape)])
    twin = trampoline.clone(plugin)
    assert twin.launch is not plugin.launch
    device_x = cp.asarray(x)
    for p in (plugin, twin):
        y = cp.full(x.shape, np.nan, np.float32)
        stream = cp.cuda.Stream(non_blocking=True)
        args = ([desc(DT.FLOAT, x.shape)], [desc(DT.FLOAT, x.shape)], [device_x.data.ptr],
                [y.data.ptr], 0, stream.ptr)
        if p is plugin:
            assert trampoline.enqueue(p, *args) == 0
        else:
            # TensorRT configures a clone before its enqueue (the binding sizes the pointer
            # lists from that call), rebuilding the launch; the direct call checks the clone's.
            p.enqueue(*args)
        stream.synchronize()
        assert_close(cp.asnumpy(y), LeakyReLU(neg_slope=0.2).reference(x)[0],
                               np.float32)


@pytest.mark.gpu
def test_gpu_demo():
    out = run_demo("leaky_relu_demo.py")
    assert re.search(r"OK: .* match the NumPy reference", out), out


@pytest.mark.gpu
@pytest.mark.parametrize("options", [(), ("-DLEAKY_RELU_LOAD=1", "-DLEAKY_RELU_STORE=2"),
                                     ("-DLEAKY_RELU_LOAD=2", "-DLEAKY_RELU_STORE=1"),
                                     ("-DLEAKY_RELU_VECS=2",),
                                     ("-DLEAKY_RELU_VECS=4", "-DLEAKY_RELU_STORE=2"),
                                     ("-DLEAKY_RELU_LEAN=1",)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_kernel_knobs_and_vector_edges(options, dtype):
    # Every tuning knob kernel_variants compares, at blocks 128/256/512, on sizes one element
    # around a whole grid of vectors, with x and y both off 16-byte alignment by one element
    # (scalar head, vector body, scalar tail) and off by different amounts (all scalar: x
    # off and y aligned, or the reverse, where each thread's first load is made before the
    # alignment test and dropped), and on a grid capped below the need (the grid-stride loop
    # takes the rest).
    cp = pytest.importorskip("cupy")
    from pyplugins.runtime.kernels import Kernel
    from pyplugins.runtime.launch import POINTER, Launch

    ctype = {np.float32: "float", np.float16: "__half"}[dtype]
    fn = Kernel("leaky_relu.cu", "leaky_relu<{T}>", options=options).function(ctype)
    vecs = int(next((o.split("=")[1] for o in options if "VECS" in o), 1))
    v = 16 // np.dtype(dtype).itemsize
    stream = cp.cuda.Stream(non_blocking=True)
    for block in (128, 256, 512):
        per_grid = v * vecs * block * 3
        for n in (per_grid - 1, per_grid, per_grid + 1, 5):
            for x_off, y_off, cap in ((0, 0, None), (1, 1, None), (1, 2, None), (0, 1, None),
                                      (3, 0, None), (0, 0, 1), (1, 0, 1)):
                x = data_of((n + x_off,), dtype, seed=n + block)
                dx = cp.asarray(x)
                dy = cp.full(n + y_off, cp.nan, dtype)
                need = -(-n // (v * vecs * block))
                grid = need if cap is None else min(need, cap)
                launch = Launch(fn, grid=grid, block=block,
                                args=(POINTER, POINTER, np.int64(n), np.float32(-0.3)))
                cp.cuda.Device().synchronize()  # the inputs were filled on the legacy stream
                launch(stream.ptr, dx.data.ptr + x_off * x.itemsize,
                       dy.data.ptr + y_off * x.itemsize)
                stream.synchronize()
                assert_close(cp.asnumpy(dy)[y_off:], LeakyReLU(neg_slope=-0.3).reference(
                    x[x_off:])[0], dtype, what=f"{options} block {block} n {n} "
                                               f"offsets {x_off},{y_off} grid {grid}")
