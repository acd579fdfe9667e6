"""RMSNorm: shapes, the weight check, formats, eps, serialization, ONNX import; GPU vs NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.dtypes import ctype_from_trt
from pyplugins.checker import lifecycle
from pyplugins.emulator import onnx_import, trampoline
from pyplugins.emulator.specs import TensorSpec
from pyplugins.errors import FieldError, LaunchError, SerializationError, ShapeError
from pyplugins.ops.rmsnorm import RMSNorm
from pyplugins.testing import assert_close

from .support import Junk, check_cli, dyn, output_dims, run_demo

DT, FMT = trt.DataType, trt.TensorFormat
SUPPORTED = (DT.FLOAT, DT.HALF)


# -- identity, kernel, eps ------------------------------------------------------------------------

def test_identity_and_field_names():
    p = RMSNorm()
    assert trampoline.identity(p) == ("RMSNorm", "1", "")
    assert trampoline.get_nb_outputs(p) == 1
    assert [(f.name, f.type.name) for f in RMSNorm.creator.field_names] == [("eps", "FLOAT32")]
    assert trampoline.get_output_data_type(p, 0, [DT.HALF, DT.HALF]) == DT.HALF


def test_every_supported_type_is_a_kernel_instantiation():
    assert tuple(RMSNorm.dtypes) == SUPPORTED
    for t in SUPPORTED:
        assert RMSNorm.kernel.supports(ctype_from_trt(t)), t


def test_eps_default_and_value():
    assert RMSNorm().eps == 1e-6
    assert RMSNorm(eps=3).eps == 3.0 and isinstance(RMSNorm(eps=3).eps, float)


@pytest.mark.parametrize("bad, expected", [
    (0.0, "must be finite and > 0"), (-1e-6, "must be finite and > 0"),
    (math.nan, "must be finite and > 0"), (math.inf, "must be finite and > 0"),
    ("1e-6", "must be a float"), ([1e-6], "must be a float")])
def test_eps_is_validated(bad, expected):
    with pytest.raises(FieldError, match="Field 'eps' of plugin 'RMSNorm'") as info:
        RMSNorm(eps=bad)
    assert expected in str(info.value)


# -- shape inference ------------------------------------------------------------------------------

def test_static_shape():
    assert output_dims(RMSNorm(), (2, 5, 64), (64,)) == ([2, 5, 64], [True] * 3)
    assert output_dims(RMSNorm(), (7,), (7,))[0] == [7]


@pytest.mark.parametrize("at", [(1, 1, 64), (3, 17, 64), (8, 128, 64), (0, 5, 64)])
def test_dynamic_leading_dims_stay_symbolic(at):
    values, constant = output_dims(RMSNorm(), (-1, -1, 64), (64,), at={0: at, 1: (64,)})
    assert constant == [False, False, True]
    assert values == list(at)


def test_lifecycle_dynamic_profile_on_cpu():
    x = TensorSpec((-1, -1, 96), np.float16, min=(1, 1, 96), opt=(2, 9, 96), max=(4, 64, 96))
    report = lifecycle.run(RMSNorm.creator, [x, "96:float16"], {"eps": 1e-5}, device="cpu")
    assert report.ok, report.format()
    assert report.output_shapes == [(2, 9, 96)]
    assert [t.name for t in report.output_dtypes] == ["HALF"]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_lifecycle_ok_for_every_type_on_cpu(dtype):
    report = lifecycle.run(RMSNorm.creator, [f"1-3-5x33:{dtype}", f"33:{dtype}"], device="cpu")
    assert report.ok, report.format()


def shape_error(x, w, n_inputs=2):
    eb = trt.IExprBuilder()
    exprs = [eb._input(0, x), eb._input(1, w)][:n_inputs]
    with pytest.raises(ShapeError) as info:
        RMSNorm().get_output_dimensions(0, exprs, eb)
    return str(info.value)


def test_weight_length_mismatch_fails_at_shape_time():
    text = shape_error((2, 5, 64), (32,))
    assert "'RMSNorm'" in text
    assert "the weight has 32 elements but the last dim of x is 64" in text
    assert "x [2, 5, 64], weight [32]" in text and "must be [64]" in text


@pytest.mark.parametrize("x, w", [((2, 8), (1, 8)), ((), (1,)), ((4, 8), ())])
def test_bad_ranks_fail_at_shape_time(x, w):
    assert "x of rank >= 1 and weight of rank 1" in shape_error(x, w)


def test_one_input_fails_at_shape_time():
    assert "exactly 2 inputs (x, weight)" in shape_error((2, 8), (8,), n_inputs=1)


def test_shape_error_reaches_the_lifecycle_report(capfd):
    report = lifecycle.run(RMSNorm.creator, ["4x16:float32", "8:float32"], device="cpu")
    assert not report.ok
    assert any("the weight has 8 elements but the last dim of x is 16" in e
               for e in report.errors), report.errors


def test_symbolic_weight_length_is_checked_at_configure_time():
    p = RMSNorm()
    output_dims(p, (4, -1), (16,))  # D symbolic at network time: nothing to compare yet
    p.configure_plugin([dyn((4, -1), lo=(4, 1), hi=(4, 64)), dyn((16,))], [dyn((4, -1))])
    with pytest.raises(ShapeError, match=r"the weight has 16 elements but the last dim of x is "
                                         r"12 \(at configure_plugin"):
        p.configure_plugin([dyn((4, 12)), dyn((16,))], [dyn((4, 12))])


def test_symbolic_weight_length_is_reported_by_the_lifecycle(capfd):
    report = lifecycle.run(RMSNorm.creator, ["4x8-12-16:float32", "16:float32"], device="cpu")
    assert not report.ok
    assert any("the weight has 16 elements but the last dim of x is 12" in e
               for e in report.errors), report.errors
    assert any(v.method == "configure_plugin" for v in report.violations)


def test_enqueue_without_configure_names_the_cause():
    with pytest.raises(LaunchError, match="'RMSNorm': enqueue found no kernel launch"):
        RMSNorm().enqueue([], [], [1, 2], [3], 0, 0)


# -- formats --------------------------------------------------------------------------------------

def test_format_table_reads_nothing_after_pos():
    p = RMSNorm()
    candidates = [(t, f) for t in DT.__members__.values() for f in (FMT.LINEAR, FMT.HWC8)]
    found = []

    def search(prefix):
        if len(prefix) == 3:
            found.append(tuple(prefix))
            return
        for cand in candidates:
            chosen = prefix + [cand]
            in_out = [trt.PluginTensorDesc([2, 8], t, f) for t, f in chosen]
            if p.supports_format_combination(len(prefix), in_out + [Junk()] * (2 - len(prefix)),
                                             2):
                search(chosen)

    search([])
    assert sorted(found, key=str) == sorted([((t, FMT.LINEAR),) * 3 for t in SUPPORTED], key=str)


@pytest.mark.parametrize("types, ok", [
    ((DT.FLOAT, DT.FLOAT, DT.FLOAT), True),
    ((DT.HALF, DT.HALF, DT.HALF), True),
    ((DT.HALF, DT.FLOAT, DT.HALF), False),   # a float32 weight for half x
    ((DT.FLOAT, DT.FLOAT, DT.HALF), False),
    ((DT.INT8, DT.INT8, DT.INT8), False),
    ((DT.BF16, DT.BF16, DT.BF16), False),
])
def test_format_combinations_through_the_trampoline(types, ok):
    p = RMSNorm()
    in_out = [trt.PluginTensorDesc([2, 8], t, FMT.LINEAR) for t in types]
    assert all(trampoline.supports_format_combination(p, pos, in_out, 2)
               for pos in range(3)) is ok


# -- serialization, ONNX --------------------------------------------------------------------------

def test_serialization_round_trip_keeps_eps():
    p = RMSNorm(eps=2.5e-4)
    data = trampoline.serialize(p)
    assert data == trampoline.serialize(p) and data != RMSNorm().serialize()
    q = trampoline.deserialize_plugin(RMSNorm.creator, "norm", data)
    assert isinstance(q, RMSNorm) and q.eps == 2.5e-4 and q.layer_name == "norm"
    for bad in (data[:-1], b"junk"):
        with pytest.raises(SerializationError):
            RMSNorm.from_bytes(bad)


def test_onnx_eps_arrives_as_float32():
    onnx = pytest.importorskip("onnx")
    node = onnx.helper.make_node("RMSNorm", ["x", "w"], ["y"], name="norm_0", eps=1e-5)
    imported = onnx_import.import_node(node)
    assert imported.creator is RMSNorm.creator and imported.warnings == []
    (field,) = list(imported.fc)
    assert (field.name, field.type.name) == ("eps", "FLOAT32")
    p = trampoline.create_plugin(imported.creator, imported.name, imported.fc)
    assert p.eps == float(np.float32(1e-5)) and p.layer_name == "norm_0"


def test_onnx_node_without_eps_takes_the_default():
    onnx = pytest.importorskip("onnx")
    node = onnx.helper.make_node("RMSNorm", ["x", "w"], ["y"], name="norm_0")
    imported = onnx_import.import_node(node)
    assert len(imported.fc) == 0 and "eps" in imported.warnings[0]
    assert trampoline.create_plugin(imported.creator, imported.name, imported.fc).eps == 1e-6


def test_onnx_bad_eps_is_named(capfd):
    onnx = pytest.importorskip("onnx")
    node = onnx.helper.make_node("RMSNorm", ["x", "w"], ["y"], name="norm_0", eps=-1.0)
    imported = onnx_import.import_node(node)
    assert trampoline.create_plugin(imported.creator, imported.name, imported.fc) is None
    assert "Field 'eps' of plugin 'RMSNorm' is invalid" in capfd.readouterr().err


# -- CLI, demo ------------------------------------------------------------------------------------

def test_cli_check_passes(capsys):
    check_cli(capsys, "pyplugins.ops.rmsnorm", "RMSNorm", "1-2-4x7x48:float16", "48:float16",
              attrs=["eps=0.00001"])


def test_demo_runs_on_cpu():
    assert "not run" in run_demo("rmsnorm_demo.py", "--device", "cpu")


# -- GPU ------------------------------------------------------------------------------------------

# Row lengths: 64 and 1000 take the 16-byte vector path (for float32 1000 * 4 is a multiple of
# 16), 1001 the element path; 5000 float32 (20 000 B) uses 512-thread blocks, and both 5000 and
# 8192 are longer than 4 cached vectors per thread, so the kernel's second pass runs.
ROW_LENGTHS = [64, 1000, 1001, 5000, 8192]
# Leading dims (batch, seq) at opt: singletons, non-multiples, an empty batch, many rows.
CASES = [(1, 1), (3, 7), (0, 4), (5, 333)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("d", ROW_LENGTHS)
def test_gpu_matches_reference_over_a_dynamic_profile(dtype, d):
    rng = np.random.default_rng(d)
    w = (rng.standard_normal(d) * 0.5 + 1.0).astype(dtype)
    for lead in CASES:
        x = (rng.standard_normal((*lead, d)) * 3.0).astype(dtype)
        specs = [TensorSpec((-1, -1, d), dtype, min=(0, 1, d), max=(8, 400, d), data=x),
                 TensorSpec((d,), dtype, data=w)]
        report = lifecycle.run(RMSNorm.creator, specs, {"eps": 1e-5}, device="gpu",
                               check_capture=True)
        assert report.ok, report.format()
        assert report.enqueue_ran
        assert_close(report.outputs[0], RMSNorm(eps=1e-5).reference(x, w)[0], dtype,
                               what=f"RMSNorm {np.dtype(dtype)} x{x.shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_eps_keeps_zero_rows_finite(dtype):
    x = np.zeros((3, 40), dtype)
    x[1] = 1.0  # rms 1: y = w / sqrt(1 + eps)
    w = np.linspace(-2, 2, 40).astype(dtype)
    report = lifecycle.run(RMSNorm.creator, [x, w], {"eps": 0.5}, device="gpu")
    assert report.ok, report.format()
    y = report.outputs[0]
    assert np.all(y[0] == 0) and np.all(y[2] == 0)
    assert_close(y, RMSNorm(eps=0.5).reference(x, w)[0], dtype)
    assert not np.allclose(y[1].astype(np.float32), w.astype(np.float32), atol=1e-2)


@pytest.mark.gpu
def test_gpu_fresh_process():
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((4, 6, 128)).astype(np.float16), np.ones(128, np.float16)
    report = lifecycle.run(RMSNorm.creator, [x, w], {"eps": 1e-6}, device="gpu",
                           fresh_process=True, plugin_module="pyplugins.ops.rmsnorm")
    assert report.ok, report.format()
    assert_close(report.outputs[0], RMSNorm(eps=1e-6).reference(x, w)[0], np.float16)


@pytest.mark.gpu
def test_gpu_demo_checks_its_result():
    assert "OK" in run_demo("rmsnorm_demo.py")


@pytest.mark.gpu
@pytest.mark.parametrize("options", [(), ("-DPP_RMSNORM_EARLY_WEIGHT=0",),
                                     ("-DPP_RMSNORM_CACHED=2",)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_kernel_knobs_grids_and_alignment(options, dtype):
    # The knobs kernel_variants compares, on the plan's full grid (grid_size), on one block
    # (every row a grid-stride trip) and with x, weight and y one element off 16-byte alignment
    # (the element path, whose rows take more threads than grid_size assumed: the kernel's
    # row loop covers the rest).
    cp = pytest.importorskip("cupy")
    from pyplugins.runtime.kernels import Kernel
    from pyplugins.runtime.launch import POINTER, Launch
    from pyplugins.ops.rmsnorm import grid_size

    ctype = {np.float32: "float", np.float16: "__half"}[dtype]
    from pyplugins.ops.rmsnorm import DEFINES
    from pyplugins.runtime.tactics import define_options

    knobs = {k: int(v) for k, v in (o[2:].split("=") for o in options)}  # "-DNAME=V"
    fn = Kernel("rmsnorm.cu", "rmsnorm<{T}>",
                options=define_options({**DEFINES, **knobs})).function(ctype)
    item = np.dtype(dtype).itemsize
    stream = cp.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(len(options))
    for d in (8, 64, 1001, 4096, 8192 + 8):
        rows = 37
        x = (rng.standard_normal((rows, d)) * 3.0).astype(dtype)
        w = (rng.standard_normal(d) * 0.5 + 1.0).astype(dtype)
        expected = RMSNorm(eps=1e-5).reference(x, w)[0]
        for block in (256, 512):
            for off, one_block in ((0, False), (0, True), (1, False)):
                dx = cp.zeros(rows * d + 1, dtype)
                dw = cp.zeros(d + 1, dtype)
                dy = cp.full(rows * d + 1, cp.nan, dtype)
                dx[off:off + rows * d] = cp.asarray(x.reshape(-1))
                dw[off:off + d] = cp.asarray(w)
                grid = 1 if one_block else grid_size(rows, d, item, block)
                launch = Launch(fn, grid=grid, block=block,
                                args=(POINTER, POINTER, POINTER, np.int64(rows), np.int32(d),
                                      np.float32(1e-5)))
                cp.cuda.Device().synchronize()  # the inputs were filled on the legacy stream
                launch(stream.ptr, dx.data.ptr + off * item, dw.data.ptr + off * item,
                       dy.data.ptr + off * item)
                stream.synchronize()
                got = cp.asnumpy(dy[off:off + rows * d]).reshape(rows, d)
                assert_close(got, expected, dtype, what=f"RMSNorm {options} d {d} block "
                                                         f"{block} grid {grid} offset {off}")
