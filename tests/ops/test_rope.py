"""RoPE plugin: shapes with 1 and 2 inputs, formats, fields, serialization, ONNX import, CLI and
demo through the emulator (CPU); results against NumPy, CUDA-graph capture and a fresh process
(GPU)."""

from __future__ import annotations

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins._config import override
from pyplugins.checker import lifecycle
from pyplugins.emulator import onnx_import, trampoline
from pyplugins.emulator.specs import TensorSpec
from pyplugins.emulator.descs import PluginTensorDesc
from pyplugins.emulator.dims import IExprBuilder
from pyplugins.errors import FieldError, LaunchError, ShapeError
from pyplugins.runtime.formats import combinations
from pyplugins.ops.rope import RoPE
from pyplugins.testing import assert_close

from .support import check_cli, dyn, keep_registered, run_demo

TS = TensorSpec
F, H, I8, I32 = trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.INT8, trt.DataType.INT32
LINEAR, HWC8 = trt.TensorFormat.LINEAR, trt.TensorFormat.HWC8


rope_registered = keep_registered(RoPE)


def out_exprs(plugin, *shapes_):
    eb = IExprBuilder()
    return trampoline.get_output_dimensions(plugin, 0, [eb._input(i, s)
                                                        for i, s in enumerate(shapes_)], eb)


# -- shape inference ---------------------------------------------------------------------------------

@pytest.mark.parametrize("inputs", [
    [(2, 7, 4, 64)],
    [(2, 7, 4, 64), (2, 7)],
    [(-1, -1, 8, 128)],
    [(-1, -1, 8, 128), (-1, -1)],
])
def test_output_has_x_shape_static_and_dynamic(inputs):
    exprs = out_exprs(RoPE(), *inputs)
    assert [e.is_constant() for e in exprs] == [d >= 0 for d in inputs[0]]
    static = all(d >= 0 for d in inputs[0])
    for batch, seq in [(1, 1), (3, 33), (0, 5)]:
        x = inputs[0] if static else (batch, seq) + tuple(inputs[0][2:])
        assert tuple(e._evaluate({0: x, 1: x[:2]}) for e in exprs) == x


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("with_positions", [False, True])
def test_cpu_lifecycle_dynamic_batch_and_seq(dtype, with_positions):
    specs = [TS((-1, -1, 4, 64), dtype, min=(1, 1, 4, 64), opt=(2, 9, 4, 64),
                max=(4, 128, 4, 64))]
    if with_positions:
        specs.append(TS((-1, -1), "int32", min=(1, 1), opt=(2, 9), max=(4, 128)))
    report = lifecycle.run(RoPE.creator, specs, {"rotary_dim": 32, "layout": "gptj"},
                           device="cpu")
    assert report.ok, report.format()
    assert report.output_shapes == [(2, 9, 4, 64)]
    assert report.output_dtypes == [F if dtype == "float32" else H]


@pytest.mark.parametrize("fields, inputs, error, match", [
    ({}, [(2, 7, 4, 64)] * 3, ShapeError, r"1 input \(x\) or 2 inputs .*got 3"),
    ({}, [(2, 7, 64)], ShapeError, r"rank 4 \(got rank 3: \[2, 7, 64\]\)"),
    ({"rotary_dim": 96}, [(2, 7, 4, 64)], ShapeError, r"'rotary_dim' = 96 exceeds .* 64"),
    ({}, [(2, 7, 4, 63)], ShapeError, r"head_dim, which is odd \(63\)"),
    ({}, [(2, 7, 4, 64), (2, 8)], ShapeError, r"positions\) must be \[batch, seq\] of x \[2, 7\] "
                                              r"\(got \[2, 8\]\)"),
    ({}, [(2, 7, 4, 64), (14,)], ShapeError, r"must be \[batch, seq\]"),
    ({}, [(-1, -1, 64)], ShapeError, r"rank 4 \(got rank 3: \[\?, \?, 64\]\)"),
    ({"position_offset": 5}, [(2, 7, 4, 64), (2, 7)], FieldError, r"'position_offset' is 5 but "
                                                                 r"a positions input"),
])
def test_shape_time_errors(fields, inputs, error, match):
    eb = IExprBuilder()
    with pytest.raises(error, match=match):
        RoPE(**fields).get_output_dimensions(0, [eb._input(i, s) for i, s in enumerate(inputs)],
                                             eb)


def test_dynamic_dims_defer_checks_to_configure():
    # head_dim and the positions' dims unknown at build time: accepted, checked in configure
    exprs = out_exprs(RoPE(rotary_dim=96), (-1, -1, 4, -1), (-1, -1))
    assert len(exprs) == 4
    p = RoPE(rotary_dim=96)
    with pytest.raises(ShapeError, match="exceeds x's head_dim 64"):
        p.configure_plugin(*concrete_io([(2, 7, 4, 64)], F))


def concrete_io(shapes_, t):
    ins = [dyn(shapes_[0], t)] + [dyn(s, I32) for s in shapes_[1:]]
    return ins, [dyn(shapes_[0], t)]


@pytest.mark.parametrize("inputs, fields, match", [
    ([(2, 7, 4, 64), (2, 8)], {}, r"positions\) has shape \(2, 8\), expected .* \(2, 7\)"),
    ([(2, 7, 4, 64), (7, 2)], {}, r"positions\) has shape \(7, 2\)"),
    ([(2, 7, 4, 64)], {"position_offset": 2**31 - 3}, r"passes the int32 position limit"),
    ([(2, 7, 4, 64), (2, 7)], {"position_offset": -1}, r"'position_offset' is -1"),
])
def test_configure_time_errors(inputs, fields, match):
    with pytest.raises((ShapeError, FieldError), match=match):
        RoPE(**fields).configure_plugin(*concrete_io(inputs, H))


def test_enqueue_without_a_configured_launch_says_why():
    p = RoPE()
    with pytest.raises(LaunchError, match="enqueue found no kernel launch"):
        p.enqueue([], [], [1], [2], 0, 0)
    with override(device="cpu"):
        p.configure_plugin(*concrete_io([(2, 7, 4, 64)], F))
    with pytest.raises(LaunchError, match="no usable CUDA GPU"):
        p.enqueue([], [], [1], [2], 0, 0)


@pytest.mark.parametrize("dtype", [F, H])
def test_inherited_enqueue_passes_x_positions_y_or_x_y_with_a_packed_null(monkeypatch, dtype):
    """RoPE has no enqueue of its own: Plugin.enqueue passes the inputs then the output, and
    without a positions input the plan packs the kernel's positions argument as a null pointer
    by value (a bare kernel handle and a recording driver call: no GPU)."""
    from pyplugins.runtime import kernels, tactics

    monkeypatch.setattr(kernels.Kernel, "function", lambda self, ctype, device=None: 0x7000)
    monkeypatch.setattr(tactics, "resident_blocks", lambda *a, **k: 64)
    monkeypatch.setattr(RoPE, "launch_device", lambda self: 0)
    for shapes_, pointers in (([(2, 7, 4, 64)], ([0x100], [0x300])),
                              ([(2, 7, 4, 64), (2, 7)], ([0x100, 0x200], [0x300]))):
        p = RoPE()
        p.configure_plugin(*concrete_io(shapes_, dtype))
        launch, seen = p.launch, []
        launch._go = lambda stream, params, extra, launch=launch, seen=seen: seen.append(
            [launch.param_bytes(i) for i in range(3)])
        p.enqueue([], [], *pointers, 0, 5)
        x, y = (v.to_bytes(8, "little") for v in (0x100, 0x300))
        positions = (0x200 if len(shapes_) == 2 else 0).to_bytes(8, "little")
        assert launch.pointer_count == len(shapes_) + 1
        assert seen == [[x, positions, y]]


# -- format negotiation ------------------------------------------------------------------------------

def desc(t, fmt=LINEAR, dims=(2, 7, 4, 64)):
    return PluginTensorDesc(dims, t, fmt)


JUNK = desc(trt.DataType.BOOL, HWC8)  # entries after pos must not be read


def test_format_table_one_input():
    p = RoPE()

    def ask(pos, in_out):
        return trampoline.supports_format_combination(p, pos, in_out, 1)

    for t in (F, H):
        assert ask(0, [desc(t), JUNK])
        assert ask(1, [desc(t), desc(t)])
        assert not ask(0, [desc(t, HWC8), JUNK])
        assert not ask(1, [desc(t), desc(t, HWC8)])
    for t in (I8, I32, trt.DataType.BOOL):
        assert not ask(0, [desc(t), JUNK])
    assert not ask(1, [desc(F), desc(H)]) and not ask(1, [desc(H), desc(F)])


def test_format_table_two_inputs():
    p = RoPE()

    def ask(pos, in_out):
        return trampoline.supports_format_combination(p, pos, in_out, 2)

    for t in (F, H):
        assert ask(0, [desc(t), JUNK, JUNK])
        assert ask(1, [desc(t), desc(I32, dims=(2, 7)), JUNK])
        assert ask(2, [desc(t), desc(I32, dims=(2, 7)), desc(t)])  # output: x's type
        assert not ask(2, [desc(t), desc(I32, dims=(2, 7)), desc(I32)])
        for bad in (F, H, I8, trt.DataType.INT64):
            assert not ask(1, [desc(t), desc(bad, dims=(2, 7)), JUNK])
        assert not ask(1, [desc(t), desc(I32, HWC8, dims=(2, 7)), JUNK])
    assert not ask(2, [desc(F), desc(I32, dims=(2, 7)), desc(H)])


def test_format_search_finds_exactly_the_expected_combinations():
    p = RoPE()
    candidates = [desc(t, f) for t in (F, H, I8, I32) for f in (LINEAR, HWC8)]

    def rule(pos, io, n):
        return trampoline.supports_format_combination(p, pos, io, n)

    def typed(*types):
        return tuple((t, LINEAR) for t in types)

    assert sorted(combinations(rule, 1, 1, candidates), key=str) == \
        sorted([typed(F, F), typed(H, H)], key=str)
    assert sorted(combinations(rule, 2, 1, candidates), key=str) == \
        sorted([typed(F, I32, F), typed(H, I32, H)], key=str)


def test_unsupported_input_count_in_format_query():
    with pytest.raises(ShapeError, match="got 3 in supports_format_combination"):
        RoPE().supports_format_combination(0, [desc(F)] * 4, 3)


# -- fields ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fields, match", [
    ({"rotary_dim": 3}, r"'rotary_dim' .* must be even"),
    ({"rotary_dim": -2}, r"'rotary_dim' .* >= 0"),
    ({"theta": 0.0}, r"'theta' .* finite number > 0"),
    ({"theta": -10000.0}, r"'theta' .* finite number > 0"),
    ({"theta": float("inf")}, r"'theta' .* finite number > 0"),
    ({"layout": "llama"}, r"'layout' .* one of 'neox', 'gptj'"),
    ({"position_offset": 2**31}, r"'position_offset' .* <= 2147483647"),
    ({"position_offset": 1.5}, r"'position_offset' .* must be an int"),
])
def test_field_validation(fields, match):
    with pytest.raises(FieldError, match=match):
        RoPE(**fields)


def test_defaults():
    p = RoPE()
    assert (p.rotary_dim, p.theta, p.layout, p.position_offset) == (0, 10000.0, "neox", 0)
    assert p.rotary_for(128) == 128 and RoPE(rotary_dim=32).rotary_for(128) == 32


# -- serialization, ONNX, CLI, demo ------------------------------------------------------------------

def test_serialization_round_trip_and_clone():
    p = RoPE(rotary_dim=48, theta=500000.0, layout="gptj", position_offset=-7)
    data = trampoline.serialize(p)
    assert data == trampoline.serialize(p)
    q = trampoline.deserialize_plugin(RoPE.creator, "rope_0", data)
    assert q is not None and q.field_values() == p.field_values()
    assert trampoline.identity(q) == ("RoPE", "1", "")
    assert trampoline.deserialize_plugin(RoPE.creator, "rope_0", data[:5]) is None
    c = trampoline.clone(p)
    assert c.field_values() == p.field_values() and trampoline.get_nb_outputs(c) == 1


def test_onnx_node_import():
    onnx = pytest.importorskip("onnx")
    node = onnx.helper.make_node("RoPE", ["x", "positions"], ["y"], name="rope_0",
                                 rotary_dim=64, theta=500000.0, layout="gptj")
    imported = onnx_import.import_node(node)
    assert imported.creator is RoPE.creator and imported.key == ("RoPE", "1", "")
    fields = {f.name: f for f in imported.fc}
    assert np.asarray(fields["layout"].data).astype(np.int8).tobytes() == b"gptj\0"
    assert fields["rotary_dim"].type.name == "INT32" and fields["theta"].type.name == "FLOAT32"
    assert any("position_offset" in w for w in imported.warnings)
    p = trampoline.create_plugin(imported.creator, imported.name, imported.fc)
    assert (p.rotary_dim, p.theta, p.layout, p.position_offset) == (64, 500000.0, "gptj", 0)


@pytest.mark.parametrize("inputs", [
    ["1-2-4x1-9-64x4x64:float16"],
    ["1-2-4x1-9-64x4x64:float32", "1-2-4x1-9-64:int32"],
])
def test_cli_check_passes(capsys, inputs):
    check_cli(capsys, "pyplugins.ops.rope", "RoPE", *inputs,
              attrs=["rotary_dim=32", "layout=gptj"])


def test_demo_runs_on_cpu():
    assert "not run" in run_demo("rope_demo.py", "--device", "cpu")


# -- GPU ---------------------------------------------------------------------------------------------

def run_gpu(x, fields, positions=None, *, lo=None, hi=None, **kwargs):
    dynamic = lo is not None
    specs = [TS((-1, -1) + x.shape[2:] if dynamic else x.shape, x.dtype,
                min=lo and lo + x.shape[2:], opt=x.shape, max=hi and hi + x.shape[2:], data=x)]
    if positions is not None:
        specs.append(TS((-1, -1) if dynamic else positions.shape, np.int32, min=lo,
                        opt=positions.shape, max=hi, data=positions))
    report = lifecycle.run(RoPE.creator, specs, fields, device="gpu", check_capture=True,
                           **kwargs)
    assert report.ok, report.format()
    assert report.enqueue_ran
    return report.outputs[0]


def ref(x, fields, positions=None):
    return RoPE(**fields).reference(x, positions)[0]


SEQS = [(1, 1), (2, 7), (3, 33), (0, 5)]  # the profile's min, odd lengths, an empty batch
# (heads, head_dim, rotary_dim): full, partial aligned (16-byte path), unaligned, odd heads
GEOMETRIES = [(4, 64, 0), (8, 128, 64), (3, 10, 6), (11, 40, 24)]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["neox", "gptj"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_gpu_matches_reference_across_a_dynamic_profile(layout, dtype, geometry):
    heads, head_dim, rotary_dim = geometry
    fields = dict(rotary_dim=rotary_dim, layout=layout, position_offset=3)
    rng = np.random.default_rng(heads)
    for batch, seq in SEQS:
        x = rng.standard_normal((batch, seq, heads, head_dim)).astype(dtype)
        y = run_gpu(x, fields, lo=(0, 1), hi=(4, 64))
        assert_close(y, ref(x, fields), dtype, what=f"{layout} {geometry} {x.shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["neox", "gptj"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_positions_input(layout, dtype):
    fields = dict(rotary_dim=32, layout=layout, theta=500000.0)
    rng = np.random.default_rng(1)
    for batch, seq in SEQS:
        x = rng.standard_normal((batch, seq, 6, 48)).astype(dtype)
        positions = rng.integers(-50, 8192, (batch, seq)).astype(np.int32)
        y = run_gpu(x, fields, positions, lo=(0, 1), hi=(4, 64))
        assert_close(y, ref(x, fields, positions), dtype, what=f"{layout} {x.shape}")


@pytest.mark.gpu
def test_gpu_large_offset_keeps_float32_accuracy():
    fields = dict(layout="neox", position_offset=100000)
    x = np.random.default_rng(2).standard_normal((2, 40, 8, 128)).astype(np.float32)
    assert_close(run_gpu(x, fields), ref(x, fields), np.float32)


@pytest.mark.gpu
def test_gpu_many_tokens_grid_stride():
    fields = dict(rotary_dim=64, layout="gptj")
    x = np.random.default_rng(4).standard_normal((8, 1024, 32, 128)).astype(np.float16)
    assert_close(run_gpu(x, fields), ref(x, fields), np.float16)


@pytest.mark.gpu
def test_gpu_fresh_process():
    fields = dict(rotary_dim=32, layout="gptj")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 9, 4, 64)).astype(np.float16)
    positions = rng.integers(0, 4096, (2, 9)).astype(np.int32)
    y = run_gpu(x, fields, positions, fresh_process=True, plugin_module="pyplugins.ops.rope")
    assert_close(y, ref(x, fields, positions), np.float16)
