"""CircPad: fields, shapes, formats, serialization and ONNX import through the emulator (CPU);
results against ``np.pad(mode="wrap")`` for every offered dtype and several profiles (GPU)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyplugins.trt as trt
from pyplugins.runtime import formats
from pyplugins._config import override
from pyplugins.dtypes import ctype_from_trt, trt_from_numpy
from pyplugins.checker import lifecycle
from pyplugins.emulator import onnx_import, trampoline
from pyplugins.emulator.specs import TensorSpec
from pyplugins.errors import FieldError, LaunchError
from pyplugins.runtime.kernels import Kernel, instantiations
from pyplugins.ops.circ_pad import PARAMS_DTYPE, CircPad, launch_plan, pad_widths
from pyplugins.ops.circ_pad import BLOCK, DEFINES, VARIANTS
from pyplugins.runtime.tactics import VariantError, choose, find, with_options

from .support import check_cli, dyn, run_demo

DT = trt.DataType
LINEAR = trt.TensorFormat.LINEAR
OFFERED = (DT.FLOAT, DT.HALF, DT.BF16, DT.INT8, DT.UINT8, DT.BOOL, DT.INT32, DT.INT64)
#: The offered types NumPy (hence the emulator's lifecycle) can hold.
NUMPY_TYPES = (np.float32, np.float16, np.int8, np.uint8, np.bool_, np.int32, np.int64)


def padded(x, pads):
    """What CircPad's reference makes of ``x`` with ``pads``."""
    return CircPad(pads=list(pads)).reference(x)[0]


def desc(data_type, dims=(2, 3, 4), fmt=LINEAR):
    return trt.PluginTensorDesc(dims, data_type, fmt)


def fc_of(pads):
    field = trt.PluginField("pads", np.array(pads, dtype=np.int32), trt.PluginFieldType.INT32)
    return trt.PluginFieldCollection([field])


def cpu_run(spec, pads, **kwargs):
    fields = fc_of(pads) if not pads else {"pads": list(pads)}
    return lifecycle.run(CircPad.creator, [spec], fields, device="cpu", **kwargs)


def random_array(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True
                     ).astype(dtype)
    if dtype.itemsize == 1:  # 0xA5 is the emulator's "never written" poison byte
        x[x.view(np.uint8) == 0xA5] = 0
    return x


# -- identity and registration ---------------------------------------------------------------------

def test_registered_under_the_contract_key():
    creator = trt.get_plugin_registry().get_creator("CircPad", "1", "")
    assert creator is CircPad.creator
    assert [f.name for f in creator.field_names] == ["pads"]
    plugin = trampoline.create_plugin(creator, "pad0", fc_of([1, 2]))
    assert trampoline.identity(plugin) == ("CircPad", "1", "")
    assert trampoline.get_nb_outputs(plugin) == 1
    assert plugin.pads == [1, 2] and plugin.layer_name == "pad0"


def kernel_define(name):
    """The default of ``#define name <int>`` in kernels_cu/circ_pad.cu (a knob of its own)."""
    source = (Path(__file__).resolve().parents[2] / "kernels_cu" / "circ_pad.cu").read_text()
    return int(re.search(rf"^#define {name} (\d+)", source, re.M).group(1))


def test_the_kernels_walk_indices_with_the_shared_odometer():
    """circ_pad.cu's index odometers (a flat row split into per-dim indices; element and row
    steps that wrap the source index and carry) are common.cuh's, not copies of their own."""
    kernels = Path(__file__).resolve().parents[2] / "kernels_cu"
    source, common = (kernels / "circ_pad.cu").read_text(), (kernels / "common.cuh").read_text()
    assert "struct WrapOdometer" in common and "bool wrap_step(" in common
    assert source.count("pp::wrap_step(") >= 5 and source.count("pp::WrapOdometer<") >= 2
    assert not re.search(r"if \(\+\+\w+ == g\.w[io]\)", source)   # a column step of its own
    assert not re.search(r"\+\+o\[d\] ==|divmod\(rest, p\.out_dims", source)  # an outer-dim one


def row_name(shape, pads, itemsize, variant=None, tactic=None):
    """The name of the row of CircPad's variant table that launches ``shape``."""
    return choose(VARIANTS, launch_plan(shape, pads, itemsize), variant=variant,
                  tactic=tactic).name


def test_the_shared_constants_are_not_defaults_of_the_kernel():
    """circ_pad.cu gets them from DEFINES (as -D options) only; the C++ floor defines the same."""
    source = (Path(__file__).resolve().parents[2] / "kernels_cu" / "circ_pad.cu").read_text()
    floor = (Path(__file__).resolve().parents[2] / "benchmarks" / "cpp" / "launch_floor.cu"
             ).read_text()
    for name, value in DEFINES.items():
        assert not re.search(rf"^#define {name} ", source, re.M), name
        assert f"#error \"circ_pad.cu needs -D{name} " in source, name
        assert re.search(rf"^#define {name} {value}$", floor, re.M), name
    for row in VARIANTS:
        assert row.kernel.options[:len(DEFINES)] == tuple(f"-D{k}={v}" for k, v in DEFINES.items())


def test_the_table_names_each_row_once_and_ends_with_a_catch_all():
    names = [row.name for row in VARIANTS]
    assert len(set(names)) == len(names)
    default_rows = [row for row in VARIANTS if row.tactic is None]
    assert default_rows[-1].name == "circ_pad" and default_rows[-1].fits(None)
    assert CircPad.tactics == ("staged", "strips")
    assert row_name((2, 3, 8, 8), [1, 1], 4, tactic="strips") == "circ_pad_strips"
    assert row_name((1, 64, 512, 8), [1, 1, 1, 1], 2, tactic="staged") == "circ_pad_warp_narrow"


def test_a_variant_asked_by_name_runs_where_its_kernel_fits():
    # 2-byte elements: the flat kernel loses but fits; pads on dim 0: only the row kernels fit
    assert row_name((1, 4, 512, 510), [1, 1, 1, 1], 2) == "circ_pad"
    assert row_name((1, 4, 512, 510), [1, 1, 1, 1], 2, variant="circ_pad_flat") == \
        "circ_pad_flat"
    with pytest.raises(VariantError, match=r"variant 'circ_pad_flat' cannot run this input: "
                                           r"its kernel needs pads on the last two dims only"):
        row_name((3, 4, 5), [0, 0, 0, 0, 1, 1], 4, variant="circ_pad_flat")
    with pytest.raises(VariantError, match=r"no launch variant 'flat'; its variants are "
                                           r"'circ_pad_warp_narrow', "):
        row_name((3, 4, 5), [1, 1], 4, variant="flat")


@pytest.mark.parametrize("kernel", sorted({row.kernel.expression.split("<")[0]
                                           for row in VARIANTS}))
def test_every_offered_type_is_instantiated_by_every_kernel(kernel):
    listed = instantiations("circ_pad.cu")
    assert set(CircPad.dtypes) == set(OFFERED)
    for data_type in OFFERED:
        assert f"{kernel}<{ctype_from_trt(data_type)}>" in listed, data_type


# -- fields ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("pads, match", [
    ([1, 1, 2], r"is invalid: .*an even number of values, but has 3.* \(got \[1, 1, 2\]\)"),
    ([1, -1], r"must have every element >= 0 \(got \[1, -1\]\)"),
    ([0, 1] * 9, r"must have at most 16 elements \(got 18"),
    ([1.5, 1], r"must be a list of ints \(got \[1.5, 1\], whose element 1.5, a float\)"),
    ("11", r"must be a list of ints \(got '11', a str\)"),
])
def test_bad_pads_name_field_plugin_and_value(pads, match):
    with pytest.raises(FieldError, match=r"Field 'pads' of plugin 'CircPad' " + match):
        CircPad(pads=pads)


def test_pads_are_required_and_failures_reach_stderr_as_tensorrt_prints_them(capfd):
    with pytest.raises(FieldError, match=r"needs field\(s\) 'pads'"):
        CircPad()
    assert trampoline.create_plugin(CircPad.creator, "pad0", fc_of([2, 1, 0])) is None
    err = capfd.readouterr().err
    assert "[ERROR] Exception caught in create_plugin()" in err and "has 3" in err


# -- shape inference -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, pads", [
    ((5,), [2, 3]),
    ((2, 3, 4, 5), [1, 2, 3, 4]),
    ((2, 3, 4, 5), [9, 0]),                       # pads larger than the dim
    ((1, 2, 1, 1, 1, 1, 2, 3), [1, 1] * 8),       # rank 8, every dim padded
    ((4, 0, 3), [1, 1]),                          # an empty unpadded dim: empty output
])
def test_static_output_shapes_match_np_pad(shape, pads):
    report = cpu_run(TensorSpec(shape, np.float32), pads)
    assert report.ok, report.format()
    assert report.output_shapes == [padded(np.zeros(shape), pads).shape]


def test_rank_zero_with_no_pads_is_an_identity_shape():
    report = cpu_run(TensorSpec((), np.float32), [])
    assert report.ok, report.format()
    assert report.output_shapes == [()]


def test_dynamic_dims_stay_symbolic_and_evaluate_per_profile():
    pads = [1, 2, 3, 4]
    builder = trt.IExprBuilder()
    exprs = trampoline.get_output_dimensions(CircPad(pads=pads), 0,
                                             [builder._input(0, (-1, 3, -1, 7))], builder)
    assert [e.is_constant() for e in exprs] == [False, True, False, True]
    for shape in [(1, 3, 1, 7), (2, 3, 5, 7), (4, 3, 9, 7)]:
        got = tuple(e._evaluate({0: shape}) for e in exprs)
        assert got == padded(np.zeros(shape), pads).shape
    builder._expire()


def test_dynamic_profile_lifecycle_reports_opt_shape():
    spec = TensorSpec((-1, 3, -1, 7), np.float16, min=(1, 3, 1, 7), opt=(2, 3, 5, 7),
                      max=(4, 3, 9, 7))
    report = cpu_run(spec, [1, 2, 3, 4])
    assert report.ok, report.format()
    assert report.output_shapes == [(2, 3, 12, 10)]
    assert report.output_dtypes == [DT.HALF]


@pytest.mark.parametrize("spec, pads, match", [
    (TensorSpec((2, 3), np.float32), [1, 1] * 3, r"pads the last 3 dims but input 0 has rank 2"),
    (TensorSpec((2, 0), np.float32), [1, 1], r"dim 1 of input 0 is 0 in the network's input"),
    (TensorSpec((-1, 3), np.float32, min=(0, 3), opt=(1, 3), max=(2, 3)), [1, 1, 1, 1],
     r"dim 0 of input 0 is 0 in the profile's min shape \(0, 3\)"),
])
def test_shape_errors_are_reported_with_the_cause(spec, pads, match):
    report = cpu_run(spec, pads)
    assert not report.ok
    assert any(re.search(match, line) for line in report.errors), report.format()


# -- formats ---------------------------------------------------------------------------------------

def ask(plugin, pos, in_out):
    return trampoline.supports_format_combination(plugin, pos, in_out, 1)


def test_format_table_accepted_and_rejected():
    plugin = CircPad(pads=[1, 1])
    for t in OFFERED:
        assert ask(plugin, 0, [desc(t), desc(DT.FLOAT)]), t   # in_out[1] is junk at pos 0
        assert ask(plugin, 1, [desc(t), desc(t)]), t
        for other in OFFERED:
            if other is not t:
                assert not ask(plugin, 1, [desc(t), desc(other)]), (t, other)
        assert not ask(plugin, 0, [desc(t, fmt=trt.TensorFormat.CHW4), desc(t)])
        assert not ask(plugin, 1, [desc(t), desc(t, fmt=trt.TensorFormat.HWC8)])
    for t in (DT.FP8, DT.INT4, DT.FP4):
        assert not ask(plugin, 0, [desc(t), desc(t)]), t


def test_format_search_finds_exactly_one_combination_per_type():
    plugin = CircPad(pads=[1, 1])
    candidates = [desc(t, fmt=f) for t in list(DT) for f in (LINEAR, trt.TensorFormat.CHW4)]
    found = formats.combinations(lambda pos, io, n: ask(plugin, pos, io), 1, 1, candidates)
    assert sorted(found, key=str) == sorted((((t, LINEAR), (t, LINEAR)) for t in OFFERED),
                                            key=str)


# -- configure / enqueue guards --------------------------------------------------------------------

def test_enqueue_before_configure_says_so():
    with pytest.raises(LaunchError, match="'CircPad': enqueue found no kernel launch"):
        CircPad(pads=[1, 1]).enqueue([], [], [0], [0], 0, 0)


def test_without_a_device_configure_checks_shapes_but_enqueue_explains(capfd):
    plugin = CircPad(pads=[1, 1])
    with override(device="cpu"):
        trampoline.configure_plugin(plugin, [dyn((2, 3))], [dyn((2, 5))])
        with pytest.raises(LaunchError, match="enqueue cannot run: there was no usable CUDA GPU"):
            plugin.enqueue([], [], [0], [0], 0, 0)
        trampoline.configure_plugin(plugin, [dyn((2, 0))], [dyn((2, 2))])
    assert "dim 1 of input 0 is 0" in capfd.readouterr().err
    with pytest.raises(LaunchError, match="no kernel launch .the last configure_plugin saw -1"):
        plugin.enqueue([], [], [0], [0], 0, 0)  # the failed configure cleared the old launch


# -- serialization and clone -----------------------------------------------------------------------

def test_serialize_round_trip_is_deterministic():
    plugin = CircPad(pads=[3, 0, 1, 2])
    data = trampoline.serialize(plugin)
    assert data == trampoline.serialize(plugin) and len(data) == \
        trampoline.get_serialization_size(plugin)
    back = trampoline.deserialize_plugin(CircPad.creator, "pad0", data)
    assert back.pads == [3, 0, 1, 2] and trampoline.identity(back) == ("CircPad", "1", "")


def test_corrupt_bytes_are_refused(capfd):
    data = trampoline.serialize(CircPad(pads=[1, 1]))
    assert trampoline.deserialize_plugin(CircPad.creator, "pad0", data[:-3]) is None
    assert "SerializationError" in capfd.readouterr().err


def test_clone_owns_its_fields():
    plugin = CircPad(pads=[1, 2])
    twin = trampoline.clone(plugin)
    assert twin is not plugin and twin.pads == [1, 2] and twin.pads is not plugin.pads
    twin.pads = [5, 5]
    assert plugin.pads == [1, 2]
    assert trampoline.identity(twin) == ("CircPad", "1", "")


# -- the kernel parameters -------------------------------------------------------------------------

def gather(x, plan):
    """circ_pad.cu's addressing, vectorized: y[o] = x[sum((o_d + shift_d) % in_d * stride_d)]."""
    p = plan.params
    out8 = [int(v) for v in p["out_dims"]]
    idx = np.indices(out8).reshape(8, -1)
    src = np.zeros(idx.shape[1], dtype=np.int64)
    for d in range(8):
        src += ((idx[d] + int(p["shift"][d])) % int(p["in_dims"][d])) * int(p["in_strides"][d])
    return x.reshape(-1)[src].reshape(plan.out_shape)


@st.composite
def shapes_and_pads(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=6)))
    k = draw(st.integers(0, len(shape)))
    return shape, draw(st.lists(st.integers(0, 9), min_size=2 * k, max_size=2 * k))


@settings(max_examples=60, deadline=None)
@given(shapes_and_pads(), st.sampled_from([1, 2, 4, 8]))
def test_launch_plan_addresses_np_pad(case, itemsize):
    shape, pads = case
    x = np.arange(math.prod(shape)).reshape(shape)
    plan = launch_plan(shape, pads, itemsize)
    np.testing.assert_array_equal(gather(x, plan), padded(x, pads))
    p = plan.params
    vectors = int(p["out_dims"][7]) // (16 // itemsize)
    assert int(p["in_strides"][7]) == 1 and int(p["group"]) in (1, 2, 4, 8, 16, 32)
    assert int(p["strips"]) * int(p["strip_vecs"]) >= vectors >= 0
    assert int(p["rows"]) == math.prod(plan.out_shape[:-1])
    assert plan.threads == int(p["rows"]) * int(p["strips"]) * int(p["group"])


def test_launch_plan_struct_layout_and_edge_cases():
    assert PARAMS_DTYPE.itemsize == 288 and PARAMS_DTYPE.alignment == 8
    assert launch_plan((4, 0, 3), [1, 1], 4).threads == 0   # empty output: the launch skips
    wide = launch_plan((2, 3000), [700, 1300], 2)            # long rows: several strips
    assert int(wide.params["strips"]) > 1 and wide.out_shape == (2, 5000)
    assert pad_widths(2, [1, 2, 3, 4]) == [(3, 4), (1, 2)]
    assert BLOCK % 32 == 0


# -- ONNX import and the command line --------------------------------------------------------------

def test_onnx_node_fields_arrive_as_int32():
    helper = pytest.importorskip("onnx.helper")
    node = helper.make_node("CircPad", ["x"], ["y"], name="pad0", pads=[1, 2, 3, 4],
                            plugin_version="1", plugin_namespace="", ignored=7)
    imported = onnx_import.import_node(node)
    assert imported.creator is CircPad.creator and imported.key == ("CircPad", "1", "")
    assert [(f.name, f.type, f.data.dtype) for f in imported.fc] == \
        [("pads", trt.PluginFieldType.INT32, np.dtype(np.int32))]
    report = lifecycle.run(imported.creator, [TensorSpec((2, 3, 4, 5), np.float32)],
                           imported.fc, node_name=imported.name, device="cpu")
    assert report.ok, report.format()
    assert report.output_shapes == [(2, 3, 11, 8)]


def test_onnx_node_without_pads_fails_to_create(capfd):
    helper = pytest.importorskip("onnx.helper")
    imported = onnx_import.import_node(helper.make_node("CircPad", ["x"], ["y"]))
    assert any("Attribute pads not found" in w for w in imported.warnings)
    assert trampoline.create_plugin(imported.creator, imported.name, imported.fc) is None
    assert "needs field(s) 'pads'" in capfd.readouterr().err


def test_cli_check_passes(capsys):
    out = check_cli(capsys, "pyplugins.ops.circ_pad", "CircPad", "1-2-3x3x8x8:float32",
                    attrs=["pads=1,1,2,2"])
    assert "CircPad:1:: OK" in out and "(2, 3, 12, 10)" in out


def test_demo_runs_on_cpu():
    assert "kernels were not run" in run_demo("circ_pad_demo.py", "--device", "cpu")


# -- GPU -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cp():
    """CuPy, for the GPU tests of this module and of the circ_pad_flat / _narrow kernel tests."""
    return pytest.importorskip("cupy")


def ctype_of(dtype) -> str:
    """The kernel's C type of a NumPy dtype (its @instantiate spelling): "float", "__half"..."""
    return ctype_from_trt(trt_from_numpy(np.dtype(dtype), trt))


def check_direct_launch(cp, fn, grid, params, host, expected, x_off, y_off):
    """Launches ``fn(x, y, params)`` (256 threads a block): :func:`check_launch`."""
    from pyplugins.runtime.launch import POINTER, Launch

    check_launch(cp, Launch(fn, grid, 256, (POINTER, POINTER, params)), host, expected, x_off,
                 y_off)


def check_launch(cp, launch, host, expected, x_off=0, y_off=0):
    """Runs ``launch(x, y)`` on a non-blocking stream with x and y at element offsets ``x_off``
    / ``y_off`` into their buffers, y's poisoned (NaN for half, else -1) with 9 spare elements
    past its end, then asserts that y holds ``expected`` (flat) and that every other element of
    its buffer kept the poison."""
    xbuf = cp.asarray(np.concatenate([host.reshape(-1)[:x_off], host.reshape(-1)]))
    half = host.dtype == np.float16
    poison = np.array(np.nan if half else -1).astype(host.dtype)  # -1 wraps for uint8, bool
    ybuf = cp.full(expected.size + y_off + 9, poison, dtype=host.dtype)
    stream = cp.cuda.Stream(non_blocking=True)
    cp.cuda.Device().synchronize()  # the buffers were filled on the legacy stream
    launch(stream.ptr, xbuf.data.ptr + x_off * host.itemsize, ybuf.data.ptr + y_off * host.itemsize)
    stream.synchronize()
    got = cp.asnumpy(ybuf)
    np.testing.assert_array_equal(got[y_off:y_off + expected.size], expected.reshape(-1))
    rest = np.concatenate([got[:y_off], got[y_off + expected.size:]])
    assert (np.isnan(rest) if half else rest == poison).all()


def variant_kernel(name, *extra):
    """The kernel of CircPad's table row ``name``, with ``extra`` compile options over its own
    (a knob the benchmark varies replaces the row's define of the same name)."""
    kernel = find(VARIANTS, name).kernel
    return Kernel(kernel.source, kernel.expression, options=with_options(kernel.options, extra))


def check_variant(cp, host, pads, variant, x_off=0, y_off=0):
    """CircPad's launch of the table row ``variant`` for ``host`` (as ``plan`` builds it, with
    that row asked for by name), run by :func:`check_launch` against ``np.pad``."""
    plugin = CircPad(pads=list(pads))
    desc = trt.PluginTensorDesc(host.shape, trt_from_numpy(host.dtype, trt), LINEAR)
    launch = plugin.plan([desc], [], cp.cuda.Device().id, variant=variant)
    assert launch.name.startswith(find(VARIANTS, variant).kernel.expression.split("<")[0] + "<")
    check_launch(cp, launch, host, padded(host, pads), x_off, y_off)


def gpu_check(spec, pads, **kwargs):
    # BOOL and UINT8: TensorRT gives them to IPluginV3 plugins only (a V2 plugin on them is
    # refused, tested on the CPU below), so CircPad runs as V3 for them.
    from pyplugins.runtime.creator import register

    v3 = np.dtype(spec.dtype) in (np.dtype(np.bool_), np.dtype(np.uint8))
    try:
        if v3:
            register(CircPad, replace=True, interface="v3")
        report = lifecycle.run(CircPad.creator, [spec], {"pads": list(pads)}, device="gpu",
                               check_capture=True, **kwargs)
    finally:
        if v3:
            register(CircPad, replace=True, interface="v2")
    assert report.ok, report.format()
    assert report.enqueue_ran, report.skipped
    expected = padded(np.asarray(spec.data), pads)
    (got,) = report.outputs
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.array_equal(got, expected), f"{spec.opt} {pads}"
    return report


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8])
def test_bool_and_uint8_are_accepted_as_v3(dtype):
    from pyplugins.runtime.creator import register

    try:
        register(CircPad, replace=True, interface="v3")
        report = lifecycle.run(CircPad.creator, [TensorSpec((2, 3), dtype)], {"pads": [1, 1]},
                               device="cpu")
    finally:
        register(CircPad, replace=True, interface="v2")
    assert report.ok, report.format()
    assert report.output_shapes == [(2, 5)]


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8])
def test_bool_and_uint8_are_refused_to_the_v2_plugin(dtype):
    report = lifecycle.run(CircPad.creator, [TensorSpec((2, 3), dtype)], {"pads": [1, 1]},
                           device="cpu")
    assert not report.ok and "pybind" in report.checks()
    assert "IPluginV2DynamicExt plugins cannot have BOOL or UINT8" in report.format()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NUMPY_TYPES)
@pytest.mark.parametrize("shape, pads", [
    ((2, 3, 16, 20), [1, 2, 2, 1]),
    ((3, 5, 67), [4, 9]),                         # odd row length, not a vector multiple
    ((2, 3, 4, 5), [7, 11, 5, 6]),                # pads wrap more than once
    ((1, 2, 1, 3, 1, 2, 3, 5), [1, 2] * 8),       # rank 8
    ((9,), [3, 0]),                               # rank 1
])
def test_gpu_matches_np_pad_for_every_dtype(dtype, shape, pads):
    gpu_check(TensorSpec(shape, dtype, data=random_array(shape, dtype)), pads)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, net, lo, hi, pads, shapes", [
    (np.float32, (-1, 3, -1, 37), (0, 3, 1, 37), (4, 3, 70, 37), [5, 40, 2, 3],
     [(2, 3, 5, 37), (4, 3, 70, 37), (1, 3, 1, 37), (0, 3, 9, 37)]),
    (np.float16, (-1, -1), (1, 1), (8, 5000), [700, 1300],
     [(3, 4099), (8, 5000), (1, 1), (5, 17)]),
    (np.int8, (2, -1, 3, -1, 5), (2, 0, 3, 1, 5), (2, 6, 3, 300, 5), [1, 1, 2, 0, 0, 3],
     [(2, 6, 3, 300, 5), (2, 0, 3, 7, 5), (2, 1, 3, 1, 5)]),
])
def test_gpu_dynamic_profiles(dtype, net, lo, hi, pads, shapes):
    for i, shape in enumerate(shapes):
        spec = TensorSpec(net, dtype, min=lo, max=hi, data=random_array(shape, dtype, seed=i))
        gpu_check(spec, pads)


@pytest.mark.gpu
def test_gpu_fresh_process():
    x = random_array((2, 3, 9, 10), np.float16)
    gpu_check(TensorSpec(x.shape, x.dtype, data=x), [2, 1, 1, 3], fresh_process=True,
              plugin_module="pyplugins.ops.circ_pad")


@pytest.mark.gpu
def test_gpu_eager_run_on_cupy_arrays():
    cp = pytest.importorskip("cupy")
    from pyplugins.runtime.eager import run

    x = random_array((2, 3, 33), np.float32)
    y = run(CircPad, cp.asarray(x), pads=[3, 4, 1, 1])
    assert isinstance(y, cp.ndarray)
    assert np.array_equal(cp.asnumpy(y), padded(x, [3, 4, 1, 1]))


def _enqueue_once(cp, plugin, data_type, x, out_shape, poison, *, direct=False):
    """Enqueue on a poisoned output; ``direct`` calls the Python method, not the trampoline."""
    y = cp.full(out_shape, poison, dtype=x.dtype)
    stream = cp.cuda.Stream(non_blocking=True)
    args = ([desc(data_type, x.shape)], [desc(data_type, out_shape)], [x.data.ptr],
            [y.data.ptr], 0, stream.ptr)
    if direct:
        plugin.enqueue(*args)
    else:
        assert trampoline.enqueue(plugin, *args) == 0
    stream.synchronize()
    return cp.asnumpy(y)


@pytest.mark.gpu
def test_gpu_bf16_moves_bits():
    # NumPy has no bfloat16, so the emulator's lifecycle cannot run it: drive the calls directly
    # on the raw 16-bit patterns (CircPad only moves bits).
    cp = pytest.importorskip("cupy")
    bits = np.random.default_rng(3).integers(0, 0x7F00, (3, 5, 33)).astype(np.uint16)
    pads = [2, 3, 1, 0]
    expected = padded(bits, pads)
    plugin = trampoline.create_plugin(CircPad.creator, "bf16", fc_of(pads))
    assert ask(plugin, 0, [desc(DT.BF16), desc(DT.FLOAT)]) and ask(
        plugin, 1, [desc(DT.BF16), desc(DT.BF16)])
    trampoline.configure_plugin(plugin, [dyn(bits.shape, DT.BF16)],
                                [dyn(expected.shape, DT.BF16)])
    got = _enqueue_once(cp, plugin, DT.BF16, cp.asarray(bits), expected.shape, 0xFFFF)
    assert np.array_equal(got, expected)


@pytest.mark.gpu
def test_gpu_configured_clone_has_its_own_launch_and_works():
    cp = pytest.importorskip("cupy")
    x = random_array((4, 7, 19), np.float32)
    pads = [5, 2, 0, 3]
    expected = padded(x, pads)
    plugin = trampoline.create_plugin(CircPad.creator, "pad0", fc_of(pads))
    trampoline.configure_plugin(plugin, [dyn(x.shape)], [dyn(expected.shape)])
    twin = trampoline.clone(plugin)
    assert twin.launch is not plugin.launch
    assert twin.launch.param_bytes(2) == plugin.launch.param_bytes(2)
    device_x = cp.asarray(x)
    assert np.array_equal(_enqueue_once(cp, plugin, DT.FLOAT, device_x, expected.shape, np.nan),
                          expected)
    # TensorRT configures a clone before its enqueue (the binding sizes the pointer lists from
    # that call), which would rebuild the launch; calling the method checks the one it brought.
    assert np.array_equal(_enqueue_once(cp, twin, DT.FLOAT, device_x, expected.shape, np.nan,
                                        direct=True), expected)


@pytest.mark.gpu
def test_gpu_demo():
    assert "matches np.pad" in run_demo("circ_pad_demo.py")
