"""Pool plugin: shapes, formats, fields, INT8 scales, serialization, ONNX import, CLI and demo
through the emulator (CPU); results against NumPy, CUDA-graph capture and a fresh process (GPU)."""

from __future__ import annotations

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins._config import override
from pyplugins.checker import lifecycle
from pyplugins.emulator import onnx_import, trampoline
from pyplugins.emulator.specs import TensorSpec
from pyplugins.emulator.descs import DynamicPluginTensorDesc, PluginTensorDesc
from pyplugins.emulator.dims import IExprBuilder
from pyplugins.errors import FieldError, LaunchError, ShapeError
from pyplugins.runtime.formats import combinations
from pyplugins.ops.pool import Pool, output_size
from pyplugins.testing import assert_close

from .support import check_cli, keep_registered, run_demo

TS = TensorSpec
F, H, I8, I32 = trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.INT8, trt.DataType.INT32
LINEAR, CHW4 = trt.TensorFormat.LINEAR, trt.TensorFormat.CHW4


pool_registered = keep_registered(Pool)


def expected_shape(shape, fields):
    p = Pool(**fields)
    kh, kw, sh, sw, ph, pw = p.window()
    return (shape[0], shape[1], max(output_size(shape[2], kh, sh, ph), 0),
            max(output_size(shape[3], kw, sw, pw), 0))


def out_exprs(plugin, shape):
    eb = IExprBuilder()
    return trampoline.get_output_dimensions(plugin, 0, [eb._input(0, shape)], eb)


# -- shape inference ---------------------------------------------------------------------------------

WINDOWS = [
    dict(mode="max", kernel=[2, 2]),                                        # stride = kernel
    dict(mode="avg", kernel=[3, 3], stride=[2, 2], padding=[1, 1]),
    dict(mode="avg", kernel=[5, 4], stride=[1, 3], padding=[2, 1]),
    dict(mode="max", kernel=[1, 7], stride=[3, 1], padding=[0, 3]),
]


@pytest.mark.parametrize("fields", WINDOWS)
@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (1, 1, 16, 16), (4, 2, 11, 8)])
def test_static_output_shape(fields, shape):
    exprs = out_exprs(Pool(**fields), shape)
    assert tuple(e._evaluate({}) for e in exprs) == expected_shape(shape, fields)
    assert all(e.is_constant() for e in exprs)


@pytest.mark.parametrize("fields", WINDOWS)
def test_dynamic_output_shape_is_symbolic(fields):
    exprs = out_exprs(Pool(**fields), (-1, 3, -1, -1))
    assert [e.is_constant() for e in exprs] == [False, True, False, False]
    for shape in [(1, 3, 7, 9), (5, 3, 8, 8), (2, 3, 31, 17), (0, 3, 12, 40)]:
        assert tuple(e._evaluate({0: shape}) for e in exprs) == expected_shape(shape, fields)


def test_output_size_formula():
    assert [output_size(h, 3, 2, 1) for h in (1, 2, 3, 7, 8)] == [1, 1, 2, 4, 4]
    assert output_size(2, 3, 1, 0) == 0 and output_size(1, 3, 3, 0) == 0


def test_lifecycle_dynamic_profile_reports_opt_shapes():
    fields = dict(mode="avg", kernel=[3, 3], stride=[2, 2], padding=[1, 1])
    spec = TS((-1, 3, -1, -1), "float16", min=(1, 3, 4, 4), opt=(2, 3, 9, 13),
              max=(4, 3, 32, 32))
    report = lifecycle.run(Pool.creator, [spec], fields, device="cpu")
    assert report.ok, report.format()
    assert report.output_shapes == [(2, 3, 5, 7)]
    assert report.output_dtypes == [H]


def test_too_small_static_input_is_refused_at_shape_time():
    p = Pool(mode="max", kernel=[3, 3])
    eb = IExprBuilder()
    with pytest.raises(ShapeError, match=r"input H = 2 .* output H = .* = 0.*need H >= 3"):
        p.get_output_dimensions(0, [eb._input(0, (1, 1, 2, 8))], eb)
    report = lifecycle.run(Pool.creator, [TS((1, 1, 8, 2), "float32")],
                           dict(mode="max", kernel=[3, 3]), device="cpu")
    assert not report.ok
    assert any("need W >= 3" in v.message and v.method == "get_output_dimensions"
               for v in report.violations)


def test_too_small_profile_min_is_refused_at_configure():
    spec = TS((1, 1, -1, 8), "float32", min=(1, 1, 2, 8), opt=(1, 1, 6, 8), max=(1, 1, 9, 8))
    report = lifecycle.run(Pool.creator, [spec], dict(mode="avg", kernel=[3, 3], stride=[1, 1]),
                           device="cpu")
    assert not report.ok
    assert any("profile's min shape" in v.message and v.method == "configure_plugin"
               for v in report.violations)


@pytest.mark.parametrize("inputs, match", [
    ([(2, 3, 8)], "rank 4"),
    ([(2, 3, 8, 8, 1)], "rank 4"),
    ([(2, 3, 8, 8), (2, 3, 8, 8)], "exactly 1 input"),
])
def test_bad_inputs_are_refused(inputs, match):
    eb = IExprBuilder()
    with pytest.raises(ShapeError, match=match):
        Pool(mode="max", kernel=[2, 2]).get_output_dimensions(
            0, [eb._input(i, s) for i, s in enumerate(inputs)], eb)


# -- format negotiation ------------------------------------------------------------------------------

def desc(t, fmt=LINEAR, dims=(1, 3, 8, 8)):
    return PluginTensorDesc(dims, t, fmt)


def test_format_table_position_by_position():
    p = Pool(mode="avg", kernel=[2, 2])

    def ask(pos, in_out):
        return trampoline.supports_format_combination(p, pos, in_out, 1)

    junk = desc(trt.DataType.BOOL, CHW4)  # after pos: must not be read
    for t in (F, H, I8):
        assert ask(0, [desc(t), junk])
        assert ask(1, [desc(t), desc(t)])
        assert not ask(0, [desc(t, CHW4), junk])
        assert not ask(1, [desc(t), desc(t, CHW4)])
    for t in (I32, trt.DataType.BOOL, trt.DataType.UINT8):
        assert not ask(0, [desc(t), junk])
    assert not ask(1, [desc(F), desc(H)])
    assert not ask(1, [desc(I8), desc(F)])
    assert not ask(1, [desc(H), desc(I8)])


def test_format_search_finds_exactly_three_combinations():
    p = Pool(mode="max", kernel=[2, 2])
    candidates = [desc(t, f) for t in (F, H, I8, I32) for f in (LINEAR, CHW4)]
    found = combinations(lambda pos, io, n: trampoline.supports_format_combination(p, pos, io, n),
                         1, 1, candidates)
    assert sorted(found, key=str) == sorted([((t, LINEAR), (t, LINEAR)) for t in (F, H, I8)],
                                            key=str)


# -- fields ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fields, match", [
    (dict(mode="min", kernel=[2, 2]), r"'mode' .* must be one of 'max', 'avg' \(got 'min'\)"),
    (dict(kernel=[2, 2]), r"needs field\(s\) 'mode'"),
    (dict(mode="max"), r"needs field\(s\) 'kernel'"),
    (dict(mode="max", kernel=[2]), r"'kernel' .* exactly 2 elements"),
    (dict(mode="max", kernel=[0, 2]), r"'kernel' .* >= 1"),
    (dict(mode="max", kernel=[2, 2], stride=[1]), r"'stride' .* expected \[\] .* or two"),
    (dict(mode="max", kernel=[2, 2], stride=[0, 1]), r"'stride' .* >= 1"),
    (dict(mode="max", kernel=[2, 2], padding=[2, 0]), r"'padding' .* smaller than 'kernel'"),
    (dict(mode="max", kernel=[3, 3], padding=[1, -1]), r"'padding' .* >= 0"),
    (dict(mode="avg", kernel=[2, 2], in_scale=-1.0), r"'in_scale' .* >= 0.0"),
    (dict(mode="avg", kernel=[2, 2], out_scale=float("nan")), r"'out_scale' .* finite"),
    (dict(mode="avg", kernel=[2, 2], out_scale=float("inf")), r"'out_scale' .* finite"),
])
def test_field_validation(fields, match):
    with pytest.raises(FieldError, match=match):
        Pool(**fields)


def test_defaults_and_resolved_window():
    p = Pool(mode="max", kernel=[3, 2])
    assert (p.stride, p.padding, p.in_scale, p.out_scale) == ([], [0, 0], 0.0, 0.0)
    assert p.window() == (3, 2, 3, 2, 0, 0)
    assert Pool(mode="avg", kernel=[3, 3], stride=[1, 2], padding=[1, 0]).window() == \
        (3, 3, 1, 2, 1, 0)


def test_create_plugin_reports_bad_attribute(capfd):
    fc, _ = onnx_import.fields_from_attributes({"mode": "mean", "kernel": [2, 2]},
                                               Pool.creator.field_names)
    assert trampoline.create_plugin(Pool.creator, "pool_0", fc) is None
    err = capfd.readouterr().err
    assert "[ERROR]" in err and "'mode'" in err and "'mean'" in err


# -- INT8 scales ---------------------------------------------------------------------------------------

def dyn(t, scale=-1.0, out=False):
    dims = (-1, 3, 4, 4) if out else (-1, 3, 8, 8)
    lo = (1, 3, 4, 4) if out else (1, 3, 8, 8)
    hi = (4, 3, 4, 4) if out else (4, 3, 8, 8)
    return DynamicPluginTensorDesc(PluginTensorDesc(dims, t, LINEAR, scale), lo, dims, hi)


@pytest.mark.parametrize("fields, in_desc, out_desc, expected", [
    (dict(in_scale=3.0, out_scale=4.0), 0.5, 0.25, (0.5, 0.25)),    # descriptors win
    (dict(out_scale=0.125), 0.5, -1.0, (0.5, 0.125)),
    (dict(in_scale=2.0, out_scale=0.125), -1.0, -1.0, (2.0, 0.125)),
    (dict(in_scale=2.0), -1.0, 0.75, (2.0, 0.75)),
])
def test_int8_scales_from_descriptors_then_fields(fields, in_desc, out_desc, expected):
    p = Pool(mode="avg", kernel=[2, 2], **fields)
    p.configure_plugin([dyn(I8, in_desc)], [dyn(I8, out_desc, out=True)])
    assert p.scales == pytest.approx(expected)


@pytest.mark.parametrize("fields, in_desc, missing", [
    (dict(), -1.0, "in_scale"),
    (dict(in_scale=1.0), -1.0, "out_scale"),
    (dict(out_scale=1.0), 0.0, "in_scale"),
])
def test_int8_without_scale_is_a_clear_error(fields, in_desc, missing):
    p = Pool(mode="max", kernel=[2, 2], **fields)
    with pytest.raises(FieldError, match=rf"INT8 but has no quantization scale.*'{missing}'"):
        p.configure_plugin([dyn(I8, in_desc)], [dyn(I8, out=True)])


def test_float_types_ignore_scales():
    p = Pool(mode="avg", kernel=[2, 2])
    p.configure_plugin([dyn(H)], [dyn(H, out=True)])
    assert p.scales == (1.0, 1.0)


def test_int8_lifecycle_on_cpu_with_descriptor_and_field_scales():
    fields = dict(mode="avg", kernel=[3, 3], stride=[2, 2], padding=[1, 1], out_scale=0.25)
    assert lifecycle.run(Pool.creator, [TS((2, 3, 9, 9), "int8", scale=0.5)], fields,
                         device="cpu").ok
    fields["in_scale"] = 0.5
    assert lifecycle.run(Pool.creator, [TS((2, 3, 9, 9), "int8")], fields, device="cpu").ok
    del fields["in_scale"]
    report = lifecycle.run(Pool.creator, [TS((2, 3, 9, 9), "int8")], fields, device="cpu")
    assert not report.ok
    assert any("'in_scale'" in v.message for v in report.violations)


# -- lifecycle, serialization, clone -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_cpu_lifecycle_is_clean(dtype):
    spec = TS((-1, 4, -1, -1), dtype, min=(1, 4, 3, 3), opt=(2, 4, 10, 7), max=(8, 4, 64, 64),
              scale=0.1)
    fields = dict(mode="max", kernel=[3, 3], stride=[1, 2], padding=[1, 1], out_scale=0.1)
    report = lifecycle.run(Pool.creator, [spec], fields, device="cpu")
    assert report.ok, report.format()
    assert report.output_shapes == [(2, 4, 10, 4)]
    assert not report.enqueue_ran and "device='cpu'" in report.skipped


def test_serialization_round_trip_and_clone():
    p = Pool(mode="avg", kernel=[3, 2], stride=[2, 1], padding=[1, 0], in_scale=0.5,
             out_scale=0.25)
    data = trampoline.serialize(p)
    assert data == trampoline.serialize(p)  # deterministic: TensorRT calls it several times
    q = trampoline.deserialize_plugin(Pool.creator, "pool_0", data)
    assert q is not None and q.field_values() == p.field_values()
    assert trampoline.identity(q) == ("Pool", "1", "")
    assert trampoline.deserialize_plugin(Pool.creator, "pool_0", data[:-3]) is None
    c = trampoline.clone(p)
    assert c.field_values() == p.field_values() and c.kernel is not p.kernel
    assert trampoline.get_nb_outputs(c) == 1


def test_enqueue_without_a_configured_launch_says_why():
    p = Pool(mode="max", kernel=[2, 2])
    with pytest.raises(LaunchError, match="enqueue found no kernel launch"):
        p.enqueue([], [], [1], [2], 0, 0)
    concrete = DynamicPluginTensorDesc(PluginTensorDesc((1, 3, 8, 8), F), (1, 3, 8, 8),
                                       (1, 3, 8, 8), (1, 3, 8, 8))
    out = DynamicPluginTensorDesc(PluginTensorDesc((1, 3, 4, 4), F), (1, 3, 4, 4),
                                  (1, 3, 4, 4), (1, 3, 4, 4))
    with override(device="cpu"):
        p.configure_plugin([concrete], [out])
    with pytest.raises(LaunchError, match="no usable CUDA GPU"):
        p.enqueue([], [], [1], [2], 0, 0)


# -- ONNX, CLI, demo ---------------------------------------------------------------------------------

def test_onnx_node_import():
    onnx = pytest.importorskip("onnx")
    node = onnx.helper.make_node("Pool", ["x"], ["y"], name="pool_0", mode="avg", kernel=[3, 3],
                                 stride=[2, 2], padding=[1, 1], out_scale=0.25)
    imported = onnx_import.import_node(node)
    assert imported.creator is Pool.creator
    assert (imported.name, imported.key) == ("pool_0", ("Pool", "1", ""))
    fields = {f.name: f for f in imported.fc}
    assert fields["mode"].type.name == "CHAR"
    assert np.asarray(fields["mode"].data).astype(np.int8).tobytes() == b"avg\0"
    assert fields["kernel"].type.name == "INT32" and fields["out_scale"].type.name == "FLOAT32"
    assert any("in_scale" in w for w in imported.warnings)  # missing: the default is used
    p = trampoline.create_plugin(imported.creator, imported.name, imported.fc)
    assert (p.mode, p.kernel, p.stride, p.padding) == ("avg", [3, 3], [2, 2], [1, 1])
    assert (p.in_scale, p.out_scale, p.layer_name) == (0.0, 0.25, "pool_0")


def test_cli_check_passes(capsys):
    check_cli(capsys, "pyplugins.ops.pool", "Pool", "1-2-4x3x9-12-16x9-9-16:float16",
              attrs=["mode=avg", "kernel=3,3", "stride=2,2", "padding=1,1"])


def test_demo_runs_on_cpu():
    assert "not run" in run_demo("pool_demo.py", "--device", "cpu")


# -- GPU ---------------------------------------------------------------------------------------------

def int8_data(shape, seed):
    """INT8 input whose pooled outputs never equal -91 (0xA5, the emulator's INT8 poison byte,
    which its unwritten-output check cannot tell from a real -91) at the ratios used below
    (1, 4 and 0.5): even channels hold [-128, -33] (after x4 they saturate to -128), odd ones
    [-20, 127]; the input value -91 itself is avoided."""
    rng = np.random.default_rng(seed)
    x = np.empty(shape, np.int8)
    x[:, 0::2] = rng.integers(-128, -32, x[:, 0::2].shape)
    x[:, 1::2] = rng.integers(-20, 128, x[:, 1::2].shape)
    x[x == -91] = -90
    return x


def data(shape, dtype, seed=0):
    if np.dtype(dtype) == np.int8:
        return int8_data(shape, seed)
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def run_gpu(x, fields, *, shape=None, lo=None, hi=None, scale=-1.0, **kwargs):
    spec = TS(shape or x.shape, x.dtype, min=lo, opt=x.shape, max=hi, data=x, scale=scale)
    report = lifecycle.run(Pool.creator, [spec], fields, device="gpu", check_capture=True,
                           **kwargs)
    assert report.ok, report.format()
    assert report.enqueue_ran
    return report.outputs[0]


def ref(x, fields, in_scale=None, out_scale=None):
    scales = {} if in_scale is None else dict(in_scale=in_scale, out_scale=out_scale)
    return Pool(**dict(fields, **scales)).reference(x)[0]


def assert_int8(y, expected, in_scale, out_scale, what=""):
    """INT8 outputs equal exactly where the float32 ratio in_scale / out_scale is a power of two:
    then v * ratio is exact and a float32 quotient sum / count cannot cross a rounding tie (a
    non-tie lies >= 1 / (2 * count) from one), so only a kernel that rounds differently (e.g.
    truncates) differs. Other ratios keep the +-1 LSB tolerance of near-ties."""
    ratio = np.float32(in_scale) / np.float32(out_scale)
    if np.frexp(ratio)[0] == 0.5:  # a power of two
        bad = np.flatnonzero(np.asarray(y) != np.asarray(expected))
        assert bad.size == 0, (f"{what}: {bad.size} of {np.asarray(y).size} int8 outputs differ "
                               f"at the exact ratio {ratio}; first at flat index {bad[0]}: "
                               f"{np.asarray(y).flat[bad[0]]} != {np.asarray(expected).flat[bad[0]]}")
    else:
        assert_close(y, expected, np.int8, what=what)


def test_exact_int8_comparison_catches_truncation():
    """A kernel that truncated instead of rounding half to even would differ on a large share of
    outputs at ratio 0.5, and +-1 LSB would let it pass; the exact comparison does not."""
    fields = dict(mode="avg", kernel=[3, 3], stride=[2, 2], padding=[1, 1])
    x = int8_data((2, 4, 19, 21), seed=7)
    exact = ref(x, fields, 0.25, 0.5)
    v = ref(x.astype(np.float32), fields) * np.float32(0.5)
    truncated = np.clip(np.trunc(v), -128, 127).astype(np.int8)
    assert np.mean(truncated != exact) > 0.2
    assert np.abs(truncated.astype(int) - exact).max() <= 1  # what +-1 LSB would accept
    with pytest.raises(AssertionError, match="int8 outputs differ at the exact ratio 0.5"):
        assert_int8(truncated, exact, 0.25, 0.5, what="truncating")
    assert_int8(exact, exact, 0.25, 0.5)


PROFILE = dict(shape=(-1, 6, -1, -1), lo=(0, 6, 5, 5), hi=(4, 6, 48, 48))
SHAPES = [(1, 6, 5, 5), (2, 6, 17, 23), (3, 6, 48, 37), (0, 6, 9, 9)]  # min, odd sizes, empty


@pytest.mark.gpu
@pytest.mark.parametrize("fields", [dict(f, mode=m) for f in WINDOWS for m in ("max", "avg")])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_float_matches_reference_across_a_dynamic_profile(fields, dtype):
    for i, shape in enumerate(SHAPES):
        x = data(shape, dtype, seed=i)
        y = run_gpu(x, fields, **PROFILE)
        assert_close(y, ref(x, fields), dtype, what=f"{fields} {shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("fields", [dict(f, mode=m) for f in WINDOWS for m in ("max", "avg")])
@pytest.mark.parametrize("scales", [(0.5, 0.125), (0.25, 0.5)])
def test_gpu_int8_descriptor_scales(fields, scales):
    for i, shape in enumerate(SHAPES):
        x = data(shape, np.int8, seed=i)
        # in_scale from the descriptor (a different field value must be ignored), out from field
        y = run_gpu(x, dict(fields, in_scale=9.0, out_scale=scales[1]), scale=scales[0],
                    **PROFILE)
        assert_int8(y, ref(x, fields, *scales), *scales, what=f"{fields} {shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_gpu_int8_field_scales_and_saturation(mode):
    fields = dict(mode=mode, kernel=[3, 3], stride=[2, 2], padding=[1, 1])
    x = data((2, 4, 19, 21), np.int8, seed=7)
    y = run_gpu(x, dict(fields, in_scale=0.5, out_scale=0.125))
    expected = ref(x, fields, 0.5, 0.125)
    assert_int8(y, expected, 0.5, 0.125, what=mode)
    assert (y[:, 0::2] == -128).all() and (y[:, 1::2] == 127).any()  # saturated both ways


@pytest.mark.gpu
def test_gpu_int8_max_with_equal_scales_is_exact():
    fields = dict(mode="max", kernel=[5, 4], stride=[1, 3], padding=[2, 1])
    x = data((2, 3, 20, 30), np.int8, seed=3)
    y = run_gpu(x, dict(fields, out_scale=0.3), scale=0.3)
    assert np.array_equal(y, ref(x, fields, 0.3, 0.3))


@pytest.mark.gpu
def test_gpu_grid_stride_loop_on_a_large_tensor():
    fields = dict(mode="avg", kernel=[2, 2], stride=[1, 1])
    x = data((4, 64, 130, 129), np.float32, seed=5)  # ~4.2M outputs: several grid-stride trips
    assert_close(run_gpu(x, fields), ref(x, fields), np.float32)


@pytest.mark.gpu
def test_gpu_fresh_process():
    fields = dict(mode="avg", kernel=[3, 3], stride=[2, 2], padding=[1, 1])
    x = data((2, 3, 16, 16), np.float16, seed=11)
    y = run_gpu(x, fields, fresh_process=True, plugin_module="pyplugins.ops.pool")
    assert_close(y, ref(x, fields), np.float16)
