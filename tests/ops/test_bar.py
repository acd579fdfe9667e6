"""BarPlugin: shapes, formats, errors, serialization, ONNX import and lifecycle; GPU vs NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.dtypes import ctype_from_trt
from pyplugins.checker import lifecycle
from pyplugins.emulator import onnx_import, trampoline
from pyplugins.emulator.specs import TensorSpec
from pyplugins.errors import LaunchError, SerializationError, ShapeError
from pyplugins.ops.bar import BarPlugin

from .support import Junk, check_cli, dyn, output_dims, random_array, run_demo

DT, FMT = trt.DataType, trt.TensorFormat
SUPPORTED = (DT.FLOAT, DT.HALF, DT.INT8, DT.INT32)
NP_TYPES = {DT.FLOAT: np.float32, DT.HALF: np.float16, DT.INT8: np.int8, DT.INT32: np.int32}


def desc(t, fmt=FMT.LINEAR, dims=(4, 3)):
    return trt.PluginTensorDesc(list(dims), t, fmt)


# -- identity, kernel ------------------------------------------------------------------------------

def test_identity_and_outputs():
    p = BarPlugin()
    assert trampoline.identity(p) == ("BarPlugin", "1", "")
    assert trampoline.get_nb_outputs(p) == 2
    c = BarPlugin.creator
    assert (c.name, c.plugin_version, c.plugin_namespace) == ("BarPlugin", "1", "")
    assert len(c.field_names) == 0
    assert trampoline.get_output_data_type(p, 1, [DT.INT8, DT.INT8]) == DT.INT8


def test_every_supported_type_is_a_kernel_instantiation():
    assert tuple(BarPlugin.dtypes) == SUPPORTED
    for t in SUPPORTED:
        assert BarPlugin.kernel.supports(ctype_from_trt(t)), t


# -- shape inference ------------------------------------------------------------------------------

def test_static_shapes():
    p = BarPlugin()
    assert output_dims(p, (2, 3, 4), (5, 3, 4)) == ([7, 3, 4], [True] * 3)
    assert output_dims(p, (2, 3, 4), (5, 3, 4), index=1) == ([5, 3, 4], [True] * 3)
    assert output_dims(p, (0, 6), (1, 6))[0] == [1, 6]


@pytest.mark.parametrize("profile", ["min", "opt", "max"])
def test_dynamic_dim0_is_a_symbolic_sum(profile):
    a = {"min": (1, 3), "opt": (2, 3), "max": (4, 3)}[profile]
    b = {"min": (0, 3), "opt": (5, 3), "max": (9, 3)}[profile]
    p = BarPlugin()
    values, constant = output_dims(p, (-1, 3), (-1, 3), at={0: a, 1: b})
    assert constant == [False, True]
    assert values == [a[0] + b[0], 3]
    values, constant = output_dims(p, (-1, 3), (-1, 3), index=1, at={0: a, 1: b})
    assert constant == [False, True] and values == [b[0], 3]


def test_trailing_dim_prefers_the_constant():
    p = BarPlugin()
    values, constant = output_dims(p, (2, -1), (3, 8), at={0: (2, 8), 1: (3, 8)})
    assert constant == [True, True] and values == [5, 8]
    assert output_dims(p, (2, -1), (3, 8), index=1)[1] == [True, True]


def test_lifecycle_dynamic_profile_on_cpu():
    a = TensorSpec((-1, 3, 5), np.float32, min=(1, 3, 5), opt=(2, 3, 5), max=(4, 3, 5))
    b = TensorSpec((-1, 3, 5), np.float32, min=(0, 3, 5), opt=(3, 3, 5), max=(6, 3, 5))
    report = lifecycle.run(BarPlugin.creator, [a, b], device="cpu")
    assert report.ok, report.format()
    assert report.output_shapes == [(5, 3, 5), (3, 3, 5)]
    assert [t.name for t in report.output_dtypes] == ["FLOAT", "FLOAT"]
    assert not report.enqueue_ran


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int32"])
def test_lifecycle_ok_for_every_type_on_cpu(dtype):
    report = lifecycle.run(BarPlugin.creator, [f"2x7:{dtype}", f"1-5-9x7:{dtype}"], device="cpu")
    assert report.ok, report.format()
    assert [t.name for t in report.output_dtypes] == [trt_name(dtype)] * 2


def trt_name(dtype):
    return {"float32": "FLOAT", "float16": "HALF", "int8": "INT8", "int32": "INT32"}[dtype]


# -- shape errors ---------------------------------------------------------------------------------

def shape_error(plugin, *shapes):
    eb = trt.IExprBuilder()
    with pytest.raises(ShapeError) as info:
        plugin.get_output_dimensions(0, [eb._input(k, s) for k, s in enumerate(shapes)], eb)
    return str(info.value)


def test_mismatched_trailing_constants_fail_at_shape_time():
    text = shape_error(BarPlugin(), (2, 3, 4), (5, 3, 5))
    assert "'BarPlugin'" in text
    assert "dim 2 of B is 5 but dim 2 of A is 4" in text
    assert "A [2, 3, 4], B [5, 3, 5]" in text and "[3, 4]" in text


@pytest.mark.parametrize("a, b, ranks", [((2, 3), (2, 3, 1), "ranks 2 and 3"),
                                         ((), (), "ranks 0 and 0"),
                                         ((-1, 4), (4,), "ranks 2 and 1")])
def test_bad_ranks_fail_at_shape_time(a, b, ranks):
    text = shape_error(BarPlugin(), a, b)
    assert ranks in text and "same rank, at least 1" in text


def test_wrong_input_count_fails_at_shape_time():
    assert "exactly 2 inputs" in shape_error(BarPlugin(), (2, 3))


def test_shape_error_reaches_the_lifecycle_report(capfd):
    report = lifecycle.run(BarPlugin.creator, ["2x3:float32", "2x4:float32"], device="cpu")
    assert not report.ok
    assert any("dim 1 of B is 4 but dim 1 of A is 3" in e for e in report.errors)
    assert "get_output_dimensions" in report.format()


def test_symbolic_mismatch_fails_at_configure_time():
    p = BarPlugin()
    # Network time: dim 1 is symbolic in A, so get_output_dimensions cannot tell.
    output_dims(p, (2, -1), (3, 4))
    # Build phase: -1 still unknown, no error.
    p.configure_plugin([dyn((2, -1), lo=(2, 1), hi=(2, 8)), dyn((3, 4))],
                       [dyn((5, 4)), dyn((3, 4))])
    with pytest.raises(ShapeError, match=r"dim 1 of B is 4 but dim 1 of A is 3 \(at configure"):
        p.configure_plugin([dyn((2, 3)), dyn((3, 4))], [dyn((5, 3)), dyn((3, 4))])


def test_symbolic_mismatch_is_reported_by_the_lifecycle(capfd):
    report = lifecycle.run(BarPlugin.creator, ["2x1-3-5:float32", "3x1-4-5:float32"],
                           device="cpu")
    assert not report.ok
    assert any("dim 1 of B is 4 but dim 1 of A is 3" in e for e in report.errors), report.errors
    assert any(v.method == "configure_plugin" for v in report.violations)


def test_enqueue_without_configure_names_the_cause():
    p = BarPlugin()
    with pytest.raises(LaunchError, match="'BarPlugin': enqueue found no kernel launch"):
        p.enqueue([], [], [1, 2], [3, 4], 0, 0)


# -- formats --------------------------------------------------------------------------------------

def accepts(pos, chosen):
    """supports_format_combination at ``pos`` with ``chosen[:pos+1]`` and junk after."""
    in_out = [desc(t, f) for t, f in chosen[:pos + 1]] + [Junk()] * (3 - pos)
    return BarPlugin().supports_format_combination(pos, in_out, 2)


def test_format_table_reads_nothing_after_pos():
    candidates = [(t, f) for t in DT.__members__.values() for f in (FMT.LINEAR, FMT.CHW4)]
    found = []

    def search(prefix):
        if len(prefix) == 4:
            found.append(tuple(prefix))
            return
        for cand in candidates:
            if accepts(len(prefix), prefix + [cand]):
                search(prefix + [cand])

    search([])
    assert sorted(found, key=str) == sorted([((t, FMT.LINEAR),) * 4 for t in SUPPORTED], key=str)


@pytest.mark.parametrize("types, fmts, ok", [
    ((DT.FLOAT,) * 4, (FMT.LINEAR,) * 4, True),
    ((DT.HALF,) * 4, (FMT.LINEAR,) * 4, True),
    ((DT.INT8,) * 4, (FMT.LINEAR,) * 4, True),
    ((DT.INT32,) * 4, (FMT.LINEAR,) * 4, True),
    ((DT.FLOAT, DT.HALF, DT.FLOAT, DT.FLOAT), (FMT.LINEAR,) * 4, False),
    ((DT.FLOAT, DT.FLOAT, DT.FLOAT, DT.INT32), (FMT.LINEAR,) * 4, False),
    ((DT.HALF, DT.HALF, DT.FLOAT, DT.HALF), (FMT.LINEAR,) * 4, False),
    ((DT.INT64,) * 4, (FMT.LINEAR,) * 4, False),
    ((DT.BOOL,) * 4, (FMT.LINEAR,) * 4, False),
    ((DT.FLOAT,) * 4, (FMT.LINEAR, FMT.LINEAR, FMT.CHW4, FMT.LINEAR), False),
    ((DT.FLOAT,) * 4, (FMT.HWC8,) + (FMT.LINEAR,) * 3, False),
])
def test_format_combinations_through_the_trampoline(types, fmts, ok):
    p = BarPlugin()
    in_out = [trt.PluginTensorDesc([2, 4, 4, 4], t, f) for t, f in zip(types, fmts)]
    verdicts = [trampoline.supports_format_combination(p, pos, in_out, 2) for pos in range(4)]
    assert all(verdicts) is ok
    if not ok:  # the first refused position is the first one that breaks a rule
        first = verdicts.index(False)
        assert first == next(i for i in range(4)
                             if fmts[i] != FMT.LINEAR or types[i] != types[0]
                             or types[0] not in SUPPORTED)


# -- serialization, ONNX --------------------------------------------------------------------------

def test_serialization_round_trip():
    p = BarPlugin()
    data = trampoline.serialize(p)
    assert data == trampoline.serialize(p) == p.serialize()
    q = trampoline.deserialize_plugin(BarPlugin.creator, "bar_0", data)
    assert isinstance(q, BarPlugin) and q.layer_name == "bar_0"
    assert q.serialize() == data and trampoline.get_nb_outputs(q) == 2
    for bad in (data[:-1], b"junk", data + b"\0"):
        with pytest.raises(SerializationError):
            BarPlugin.from_bytes(bad)
    assert trampoline.deserialize_plugin(BarPlugin.creator, "bar_0", b"junk") is None


def test_onnx_node_imports_with_no_fields():
    onnx = pytest.importorskip("onnx")
    node = onnx.helper.make_node("BarPlugin", ["a", "b"], ["cat", "b_copy"], name="bar_0",
                                 plugin_version="1", plugin_namespace="", unrelated=3)
    imported = onnx_import.import_node(node)
    assert imported.creator is BarPlugin.creator
    assert imported.name == "bar_0" and imported.key == ("BarPlugin", "1", "")
    assert len(imported.fc) == 0 and imported.warnings == []  # 'unrelated' is not a field
    p = trampoline.create_plugin(imported.creator, imported.name, imported.fc)
    assert isinstance(p, BarPlugin) and p.layer_name == "bar_0"


# -- CLI, demo ------------------------------------------------------------------------------------

def test_cli_check_passes(capsys):
    check_cli(capsys, "pyplugins.ops.bar", "BarPlugin", "2x3x5:float16", "1-4-8x3x5:float16")


def test_demo_runs_on_cpu():
    assert "not run" in run_demo("bar_demo.py", "--device", "cpu")


# -- GPU ------------------------------------------------------------------------------------------

# (a0, b0) at opt; trailing dims (3, 7) make every row 21 elements, so out0 + na is rarely
# 16-byte aligned (the kernel's element-wise store path) and sizes are not block multiples.
CASES = [(1, 1), (17, 33), (0, 5), (6, 0), (0, 0), (300, 211)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32])
def test_gpu_matches_reference_over_a_dynamic_profile(dtype):
    rng = np.random.default_rng(7)
    for a0, b0 in CASES:
        a = random_array((a0, 3, 7), dtype, rng)
        b = random_array((b0, 3, 7), dtype, rng)
        specs = [TensorSpec((-1, 3, 7), dtype, min=(0, 3, 7), max=(320, 3, 7), data=a),
                 TensorSpec((-1, 3, 7), dtype, min=(0, 3, 7), max=(320, 3, 7), data=b)]
        report = lifecycle.run(BarPlugin.creator, specs, device="gpu", check_capture=True)
        assert report.ok, report.format()
        assert report.enqueue_ran
        cat, copy = BarPlugin().reference(a, b)
        out0, out1 = report.outputs
        assert out0.dtype == dtype and out1.dtype == dtype
        assert np.array_equal(out0.view(np.uint8), cat.view(np.uint8)), (a0, b0)
        assert np.array_equal(out1.view(np.uint8), copy.view(np.uint8)), (a0, b0)


@pytest.mark.gpu
def test_gpu_large_rank1_inputs():
    rng = np.random.default_rng(3)
    a = random_array((1_000_003,), np.float16, rng)
    b = random_array((77_777,), np.float16, rng)
    report = lifecycle.run(BarPlugin.creator, [a, b], device="gpu", check_capture=True)
    assert report.ok, report.format()
    cat, copy = BarPlugin().reference(a, b)
    assert np.array_equal(report.outputs[0].view(np.uint16), cat.view(np.uint16))
    assert np.array_equal(report.outputs[1].view(np.uint16), copy.view(np.uint16))


@pytest.mark.gpu
def test_gpu_fresh_process():
    rng = np.random.default_rng(5)
    a, b = random_array((5, 9), np.int32, rng), random_array((4, 9), np.int32, rng)
    report = lifecycle.run(BarPlugin.creator, [a, b], device="gpu", fresh_process=True,
                           plugin_module="pyplugins.ops.bar")
    assert report.ok, report.format()
    assert np.array_equal(report.outputs[0], np.concatenate([a, b]))


@pytest.mark.gpu
def test_gpu_demo_checks_its_result():
    assert "OK" in run_demo("bar_demo.py")


@pytest.mark.gpu
@pytest.mark.parametrize("options", [(), ("-DPP_BAR_UNROLL=4",), ("-DPP_BAR_SPLIT=0",),
                                     ("-DPP_BAR_SPLIT=0", "-DPP_BAR_UNROLL=4")])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_gpu_knobs_thread_split_and_grids(options, dtype):
    # The knobs kernel_variants compares, on the plan's full grid (grid_size), on one block and
    # on one thread (no split: it copies both), with A or B empty, na and nb far apart (the
    # split gives A one thread), and na off a whole vector (out0 + na unaligned).
    cp = pytest.importorskip("cupy")
    from pyplugins.runtime.kernels import Kernel
    from pyplugins.runtime.launch import POINTER, Launch
    from pyplugins.ops.bar import BLOCK, grid_size

    ctype = {np.float32: "float", np.float16: "__half", np.int8: "signed char"}[dtype]
    from pyplugins.ops.bar import DEFINES
    from pyplugins.runtime.tactics import define_options

    knobs = {k: int(v) for k, v in (o[2:].split("=") for o in options)}  # "-DNAME=V"
    fn = Kernel("bar.cu", "bar<{T}>",
                options=define_options({**DEFINES, **knobs})).function(ctype)
    stream = cp.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(len(options))
    for na, nb in ((4096, 4096), (1000, 3), (3, 5000), (0, 777), (777, 0), (33, 4099)):
        a = (rng.integers(-60, 60, na)).astype(dtype)
        b = (rng.integers(-60, 60, nb)).astype(dtype)
        exp0, exp1 = np.concatenate([a, b]), b
        for grid, block in ((grid_size(na, nb, np.dtype(dtype).itemsize), BLOCK), (1, BLOCK),
                            (1, 1)):
            da, db = cp.asarray(a), cp.asarray(b)
            o0 = cp.full(na + nb, 99, dtype)  # never a value of A or B
            o1 = cp.full(max(nb, 1), 99, dtype)
            launch = Launch(fn, grid=max(grid, 1), block=block,
                            args=(POINTER, POINTER, POINTER, POINTER, np.int64(na),
                                  np.int64(nb)))
            cp.cuda.Device().synchronize()  # the inputs were filled on the legacy stream
            launch(stream.ptr, da.data.ptr, db.data.ptr, o0.data.ptr, o1.data.ptr)
            stream.synchronize()
            what = f"{options} na {na} nb {nb} grid {grid} block {block}"
            np.testing.assert_array_equal(cp.asnumpy(o0), exp0, err_msg=what)
            np.testing.assert_array_equal(cp.asnumpy(o1)[:nb], exp1, err_msg=what)
