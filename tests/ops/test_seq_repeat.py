"""SeqRepeat: shapes, formats, the factor field, serialization, ONNX import; GPU vs np.repeat."""

from __future__ import annotations

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.dtypes import ctype_from_trt
from pyplugins.checker import lifecycle
from pyplugins.emulator import onnx_import, trampoline
from pyplugins.emulator.specs import TensorSpec
from pyplugins.errors import FieldError, LaunchError, SerializationError, ShapeError
from pyplugins.ops.seq_repeat import SeqRepeat

from .support import Junk, check_cli, dyn, output_dims, random_array, run_demo

DT, FMT = trt.DataType, trt.TensorFormat
SUPPORTED = (DT.FLOAT, DT.HALF, DT.INT8, DT.INT32)


# -- identity, kernel, field ----------------------------------------------------------------------

def test_identity_and_field_names():
    p = SeqRepeat(factor=2)
    assert trampoline.identity(p) == ("SeqRepeat", "1", "")
    assert trampoline.get_nb_outputs(p) == 1
    fields = [(f.name, f.type.name) for f in SeqRepeat.creator.field_names]
    assert fields == [("factor", "INT32")]


def test_every_supported_type_is_a_kernel_instantiation():
    assert tuple(SeqRepeat.dtypes) == SUPPORTED
    for t in SUPPORTED:
        assert SeqRepeat.kernel.supports(ctype_from_trt(t)), t


@pytest.mark.parametrize("bad, expected", [
    (0, "must be >= 1 (got 0)"), (-3, "must be >= 1"), (1.5, "must be an int (got 1.5, a float)"),
    ("2", "must be an int"), (True, "must be an int"), (2**31, "must be <= 2147483647")])
def test_factor_is_validated(bad, expected):
    with pytest.raises(FieldError, match=r"Field 'factor' of plugin 'SeqRepeat' ") as info:
        SeqRepeat(factor=bad)
    assert expected in str(info.value)


def test_factor_is_required():
    with pytest.raises(FieldError, match="needs field\\(s\\) 'factor'"):
        SeqRepeat()
    fc, warnings = onnx_import.fields_from_attributes({}, SeqRepeat.creator.field_names)
    assert warnings and "factor" in warnings[0]
    with pytest.raises(FieldError, match="'factor'"):
        SeqRepeat.from_fields(fc)


# -- shape inference ------------------------------------------------------------------------------

def test_static_shape():
    assert output_dims(SeqRepeat(factor=3), (2, 5, 4)) == ([2, 15, 4], [True, True, True])
    assert output_dims(SeqRepeat(factor=1), (7, 9))[0] == [7, 9]
    assert output_dims(SeqRepeat(factor=4), (2, 0, 3))[0] == [2, 0, 3]


@pytest.mark.parametrize("at", [(1, 1, 4), (2, 5, 4), (8, 33, 4), (3, 0, 4)])
def test_dynamic_length_is_a_symbolic_product(at):
    values, constant = output_dims(SeqRepeat(factor=3), (-1, -1, 4), at={0: at})
    assert constant == [False, False, True]
    assert values == [at[0], at[1] * 3, 4]


def test_lifecycle_dynamic_profile_on_cpu():
    spec = TensorSpec((2, -1, 3, 5), np.float16, min=(2, 1, 3, 5), opt=(2, 6, 3, 5),
                      max=(2, 40, 3, 5))
    report = lifecycle.run(SeqRepeat.creator, [spec], {"factor": 4}, device="cpu")
    assert report.ok, report.format()
    assert report.output_shapes == [(2, 24, 3, 5)]
    assert [t.name for t in report.output_dtypes] == ["HALF"]


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int32"])
def test_lifecycle_ok_for_every_type_on_cpu(dtype):
    report = lifecycle.run(SeqRepeat.creator, [f"1-3-5x2-7-9:{dtype}"], {"factor": 2},
                           device="cpu")
    assert report.ok, report.format()
    assert report.output_shapes == [(3, 14)]


def test_rank_one_fails_at_shape_time():
    eb = trt.IExprBuilder()
    with pytest.raises(ShapeError, match=r"'SeqRepeat' repeats along dim 1, so its input needs "
                                         r"rank >= 2 .*got rank 1 \[\?\]"):
        SeqRepeat(factor=2).get_output_dimensions(0, [eb._input(0, (-1,))], eb)
    with pytest.raises(ShapeError, match="exactly 1 input"):
        SeqRepeat(factor=2).get_output_dimensions(0, [eb._input(0, (2, 3))] * 2, eb)


def test_rank_one_is_reported_by_the_lifecycle(capfd):
    report = lifecycle.run(SeqRepeat.creator, ["6:float32"], {"factor": 2}, device="cpu")
    assert not report.ok
    assert any("rank >= 2" in e and "got rank 1 [6]" in e for e in report.errors), report.errors


def test_rank_one_fails_at_configure_time():
    with pytest.raises(ShapeError, match="rank >= 2"):
        SeqRepeat(factor=2).configure_plugin([dyn((6,))], [dyn((12,))])


def test_enqueue_without_configure_names_the_cause():
    with pytest.raises(LaunchError, match="'SeqRepeat': enqueue found no kernel launch"):
        SeqRepeat(factor=2).enqueue([], [], [1], [2], 0, 0)


# -- formats --------------------------------------------------------------------------------------

def test_format_table_reads_nothing_after_pos():
    p = SeqRepeat(factor=2)
    candidates = [(t, f) for t in DT.__members__.values() for f in (FMT.LINEAR, FMT.CHW32)]
    found = []
    for c0 in candidates:
        first = [trt.PluginTensorDesc([2, 3, 4], *c0)]
        if not p.supports_format_combination(0, first + [Junk()], 1):
            continue
        for c1 in candidates:
            if p.supports_format_combination(1, first + [trt.PluginTensorDesc([2, 6, 4], *c1)],
                                             1):
                found.append((c0, c1))
    assert sorted(found, key=str) == sorted([((t, FMT.LINEAR),) * 2 for t in SUPPORTED], key=str)


@pytest.mark.parametrize("types, fmts, ok", [
    ((DT.FLOAT, DT.FLOAT), (FMT.LINEAR, FMT.LINEAR), True),
    ((DT.INT8, DT.INT8), (FMT.LINEAR, FMT.LINEAR), True),
    ((DT.HALF, DT.FLOAT), (FMT.LINEAR, FMT.LINEAR), False),
    ((DT.INT32, DT.INT8), (FMT.LINEAR, FMT.LINEAR), False),
    ((DT.BF16, DT.BF16), (FMT.LINEAR, FMT.LINEAR), False),
    ((DT.FLOAT, DT.FLOAT), (FMT.CHW4, FMT.LINEAR), False),
    ((DT.HALF, DT.HALF), (FMT.LINEAR, FMT.HWC8), False),
])
def test_format_combinations_through_the_trampoline(types, fmts, ok):
    p = SeqRepeat(factor=2)
    in_out = [trt.PluginTensorDesc([1, 8, 4, 4], t, f) for t, f in zip(types, fmts)]
    verdicts = [trampoline.supports_format_combination(p, pos, in_out, 1) for pos in range(2)]
    assert all(verdicts) is ok


# -- serialization, ONNX --------------------------------------------------------------------------

def test_serialization_round_trip_keeps_the_factor():
    p = SeqRepeat(factor=7)
    data = trampoline.serialize(p)
    assert data == trampoline.serialize(p)
    assert data != SeqRepeat(factor=8).serialize()
    q = trampoline.deserialize_plugin(SeqRepeat.creator, "rep", data)
    assert isinstance(q, SeqRepeat) and q.factor == 7 and q.layer_name == "rep"
    for bad in (data[:-1], b"junk"):
        with pytest.raises(SerializationError):
            SeqRepeat.from_bytes(bad)


def test_onnx_node_gives_an_int32_factor():
    onnx = pytest.importorskip("onnx")
    node = onnx.helper.make_node("SeqRepeat", ["x"], ["y"], name="rep_0", factor=4, other=1.5)
    imported = onnx_import.import_node(node)
    assert imported.creator is SeqRepeat.creator and imported.warnings == []
    assert [(f.name, f.type.name, f.data.tolist()) for f in imported.fc] == [
        ("factor", "INT32", [4])]
    p = trampoline.create_plugin(imported.creator, imported.name, imported.fc)
    assert isinstance(p, SeqRepeat) and p.factor == 4 and p.layer_name == "rep_0"


@pytest.mark.parametrize("value, expected", [(0, "must be >= 1"), (2.0, "must be an int")])
def test_onnx_bad_factor_is_named(value, expected, capfd):
    onnx = pytest.importorskip("onnx")
    node = onnx.helper.make_node("SeqRepeat", ["x"], ["y"], name="rep_0", factor=value)
    imported = onnx_import.import_node(node)
    assert trampoline.create_plugin(imported.creator, imported.name, imported.fc) is None
    err = capfd.readouterr().err
    assert "Field 'factor' of plugin 'SeqRepeat'" in err and expected in err


# -- CLI, demo ------------------------------------------------------------------------------------

def test_cli_check_passes(capsys):
    check_cli(capsys, "pyplugins.ops.seq_repeat", "SeqRepeat", "2x1-5-9x3:float32",
              attrs=["factor=3"])


def test_demo_runs_on_cpu():
    assert "not run" in run_demo("seq_repeat_demo.py", "--device", "cpu")


# -- GPU ------------------------------------------------------------------------------------------

# (d0, len) at opt: singletons, non-multiples of the block, empty batch, empty sequence, long.
CASES = [(1, 1), (3, 17), (0, 5), (4, 0), (5, 129)]
# Trailing dims: (6,) takes the kernel's "gather" path (rows not 16-byte multiples), (2, 8) its
# "rows" path for every type (16 elements per row), () the rank-2 case (inner = 1).
TRAILING = [(6,), (2, 8), ()]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32])
@pytest.mark.parametrize("trailing", TRAILING, ids=str)
@pytest.mark.parametrize("factor", [1, 3])
def test_gpu_matches_np_repeat_over_a_dynamic_profile(dtype, trailing, factor):
    rng = np.random.default_rng(11)
    for d0, length in CASES:
        x = random_array((d0, length, *trailing), dtype, rng)
        spec = TensorSpec((-1, -1, *trailing), dtype, min=(0, 0, *trailing),
                          max=(8, 160, *trailing), data=x)
        report = lifecycle.run(SeqRepeat.creator, [spec], {"factor": factor}, device="gpu",
                               check_capture=True)
        assert report.ok, report.format()
        assert report.enqueue_ran
        (y,) = report.outputs
        (want,) = SeqRepeat(factor=factor).reference(x)
        assert y.shape == want.shape and y.dtype == want.dtype
        assert np.array_equal(y.view(np.uint8), want.view(np.uint8)), (d0, length)


@pytest.mark.gpu
def test_gpu_large_factor_and_sequence():
    x = random_array((2, 4099, 3), np.float16, np.random.default_rng(2))
    report = lifecycle.run(SeqRepeat.creator, [x], {"factor": 37}, device="gpu")
    assert report.ok, report.format()
    assert np.array_equal(report.outputs[0].view(np.uint16),
                          np.repeat(x, 37, axis=1).view(np.uint16))


@pytest.mark.gpu
def test_gpu_fresh_process():
    x = random_array((3, 10, 4), np.float32, np.random.default_rng(4))
    report = lifecycle.run(SeqRepeat.creator, [x], {"factor": 2}, device="gpu",
                           fresh_process=True, plugin_module="pyplugins.ops.seq_repeat")
    assert report.ok, report.format()
    assert np.array_equal(report.outputs[0], np.repeat(x, 2, axis=1))


@pytest.mark.gpu
def test_gpu_demo_checks_its_result():
    assert "OK" in run_demo("seq_repeat_demo.py")


@pytest.mark.gpu
@pytest.mark.parametrize("unroll", [1, 2, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_gpu_unroll_knob_grids_and_alignment(unroll, dtype):
    # PP_SEQ_REPEAT_UNROLL as kernel_variants compares it, on the plan's full grid (grid_size),
    # on one block (every unit a grid-stride trip), and with x and y one element off 16-byte
    # alignment (path "gather" on a grid sized for path "rows").
    cp = pytest.importorskip("cupy")
    from pyplugins.runtime.kernels import Kernel
    from pyplugins.runtime.launch import POINTER, Launch
    from pyplugins.ops.seq_repeat import BLOCK, grid_size

    ctype = {np.float32: "float", np.float16: "__half", np.int8: "signed char"}[dtype]
    fn = Kernel("seq_repeat.cu", "seq_repeat<{T}>",
                options=(f"-DPP_SEQ_REPEAT_UNROLL={unroll}",)).function(ctype)
    item = np.dtype(dtype).itemsize
    stream = cp.cuda.Stream(non_blocking=True)
    for d0, length, inner, factor in ((2, 513, 64, 2), (3, 7, 5, 3), (1, 1000, 16, 1)):
        x = (np.arange(d0 * length * inner) % 97 - 40).astype(dtype).reshape(d0, length, inner)
        expected = np.repeat(x, factor, axis=1)
        for off, one_block in ((0, False), (0, True), (1, False)):
            dx = cp.zeros(x.size + 1, dtype)
            dx[off:off + x.size] = cp.asarray(x.reshape(-1))
            dy = cp.full(expected.size + 1, 77, dtype)  # never a value of x
            grid = 1 if one_block else grid_size(d0, length, inner, factor, item)
            launch = Launch(fn, grid=grid, block=BLOCK,
                            args=(POINTER, POINTER, np.int64(d0), np.int64(length),
                                  np.int64(inner), np.int32(factor)))
            cp.cuda.Device().synchronize()  # the inputs were filled on the legacy stream
            launch(stream.ptr, dx.data.ptr + off * item, dy.data.ptr + off * item)
            stream.synchronize()
            got = cp.asnumpy(dy[off:off + expected.size]).reshape(expected.shape)
            np.testing.assert_array_equal(got, expected, err_msg=f"{(d0, length, inner, factor)}"
                                                                 f" offset {off} grid {grid}")
