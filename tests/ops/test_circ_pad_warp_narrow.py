"""CircPad's warp-staged narrow-row kernel (``circ_pad_warp_narrow``): when the plan picks it and
a line-by-line model of its groups, staging and offset table against ``np.pad`` (CPU); its output
bit for bit against ``np.pad(mode="wrap")`` through the plugin and launched directly at element
offsets, with small grids and its knobs (GPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyplugins.trt as trt
from pyplugins.dtypes import trt_from_numpy
from pyplugins.emulator.specs import TensorSpec
from pyplugins.runtime import tactics as variants
from pyplugins.ops.circ_pad import CircPad, launch_plan
from pyplugins.ops.circ_pad import (BLOCK, NARROW_ROW_BYTES, VARIANTS, WARP_NARROW_CHUNKS,
                                             WARP_NARROW_TABLE, warp_narrow_groups)

from .test_circ_pad import (NUMPY_TYPES, kernel_define, check_direct_launch, cp, ctype_of,  # noqa: F401
                            gpu_check, padded, random_array, variant_kernel)

PAD = kernel_define("CIRC_PAD_WN_PAD")


def takes_warp_narrow(plan):
    """Whether CircPad's table launches circ_pad_warp_narrow for ``plan`` (a LaunchPlan)."""
    return variants.choose(VARIANTS, plan).name == "circ_pad_warp_narrow"


def test_the_kernel_gets_the_hosts_chunks_table_and_block():
    options = variants.find(VARIANTS, "circ_pad_warp_narrow").kernel.options
    assert f"-DCIRC_PAD_WN_CHUNKS={WARP_NARROW_CHUNKS}" in options
    assert f"-DCIRC_PAD_WN_TABLE={WARP_NARROW_TABLE}" in options
    assert f"-DCIRC_PAD_WN_BLOCK={BLOCK}" in options


@pytest.mark.parametrize("shape, pads, itemsize", [
    ((1, 64, 512, 8), [1, 1, 1, 1], 2),       # the benchmark's narrow rows (16-byte input rows)
    ((1, 64, 512, 8), [1, 1, 1, 1], 4),       # 32-byte input rows
    ((1, 64, 512, 16), [1, 1, 1, 1], 1),
    ((1, 64, 512, 2), [1, 1, 1, 1], 8),
    ((3, 5, 7, 8), [9, 3, 600, 1], 2),        # pads beyond the dims: 40-byte output rows
    ((4, 16), [0, 0], 8),                     # no pads at all: 128-byte rows
])
def test_narrow_rows_of_whole_16_byte_input_rows_take_it(shape, pads, itemsize):
    assert takes_warp_narrow(launch_plan(shape, pads, itemsize))


@pytest.mark.parametrize("shape, pads, itemsize, why", [
    ((1, 64, 512, 7), [1, 1, 1, 1], 2, "14-byte input rows"),
    ((1, 64, 512, 8), [1, 1, 1, 1], 1, "8-byte input rows"),
    ((1, 4, 512, 512), [1, 1, 1, 1], 4, "wide rows"),
    ((1, 4, 8, 16), [1, 0, 0, 0], 8, "136-byte output rows"),
    ((2, 3, 16, 8), [0, 0, 1, 1, 1, 0], 2, "a pad on dim 1"),
])
def test_other_shapes_do_not(shape, pads, itemsize, why):
    assert not takes_warp_narrow(launch_plan(shape, pads, itemsize)), why


def test_asked_by_name_it_runs_wide_rows_too_but_not_unstaged_ones():
    plan = launch_plan((1, 4, 64, 64), [1, 1, 1, 1], 2)  # 132-byte output rows: not its choice
    assert variants.choose(VARIANTS, plan).name == "circ_pad_warp"
    assert variants.choose(VARIANTS, plan, variant="circ_pad_warp_narrow").name == \
        "circ_pad_warp_narrow"
    with pytest.raises(variants.VariantError, match="input rows of 16n bytes"):
        variants.choose(VARIANTS, launch_plan((1, 64, 512, 7), [1, 1, 1, 1], 2),
                        variant="circ_pad_warp_narrow")


def _plan_launch(monkeypatch, shape, data_type, tactic=None, resident=10):
    monkeypatch.setattr(variants, "resident_blocks", lambda fn, block, device=0: resident)
    for kernel in (CircPad.warp_narrow_kernel, CircPad.narrow_kernel, CircPad.flat_kernel,
                   CircPad.kernel, CircPad.strips_kernel):
        monkeypatch.setitem(vars(kernel), "function", lambda ctype, device=None: 1234)
    desc = trt.PluginTensorDesc(shape, data_type, trt.TensorFormat.LINEAR)
    plugin = CircPad(pads=[1, 1, 1, 1])
    plugin.tactic = tactic
    return plugin.plan([desc], [], 0)


def test_plan_launches_it_on_its_rows_grid_rule(monkeypatch):
    """min(blocks its groups need, the row's waves (4) * resident blocks), 8 warps a block."""
    shape = (1, 64, 512, 8)
    needed = -(-warp_narrow_groups(launch_plan(shape, [1, 1, 1, 1], 2)) // 8)
    for resident, grid in ((2, 8), (5, 20), (10**6, needed)):
        launch = _plan_launch(monkeypatch, shape, trt.DataType.HALF, resident=resident)
        assert launch.name == "circ_pad_warp_narrow<__half>" and launch.grid == (grid, 1, 1)
    assert 20 < needed < 4 * 10**6


def test_plan_keeps_the_strips_tactic_and_other_shapes(monkeypatch):
    assert _plan_launch(monkeypatch, (1, 64, 512, 8), trt.DataType.HALF,
                        "strips").name == "circ_pad<__half>"
    assert _plan_launch(monkeypatch, (1, 64, 512, 7), trt.DataType.HALF).name == \
        "circ_pad_narrow<__half>"


# -- a line-by-line model of circ_pad_warp_narrow --------------------------------------------------

def _model(f, itemsize, lead):
    """Element ids of y as circ_pad_warp_narrow writes them (-1: never written), for y at
    element offset ``lead`` from a 16-byte boundary; asserts every read byte was staged, from
    one element, inside the warp's buffer."""
    S, V = itemsize, 16 // itemsize
    wi, wo, hi, ho, sw, sh = (int(f[k]) for k in ("wi", "wo", "hi", "ho", "sw", "sh"))
    total, plane_in = int(f["total"]), int(f["plane_in"])
    # warp_narrow_geom
    rb = wi * S
    rv, pad = rb // 16, -(-PAD // S) * S
    stride, warp_bytes = rb + pad, 32 * WARP_NARROW_CHUNKS * (16 + pad)
    magic_rv = (65535 + rv) // rv
    pre = -(-lead // wo)
    period = 16 // min(16, (wo * S) & -(wo * S))
    staged = 32 * WARP_NARROW_CHUNKS // rv
    rows_g = (staged - pre) // period * period if staged > pre else 0
    rows_g = min(rows_g, WARP_NARROW_TABLE // wo // period * period)
    assert rows_g > 0 and rb % 16 == 0
    nv, nch, rows = rows_g * wo // V, (rows_g + pre) * rv, total // wo
    nvec = (total + lead + V - 1) // V
    groups, kfull = -(-nvec // nv), (total + lead) // V
    # warp_narrow_table
    tab = []
    for u in range(rows_g * wo):
        j, c = divmod(u + pre * wo - lead, wo)
        tab.append(j * stride + (c + sw) % wi * S)
        assert tab[-1] < 2**16
    y = np.full(total, -1, np.int64)
    for n in range(groups):
        # warp_narrow_load and warp_narrow_stage: buffer byte -> (x element, byte of it)
        buf, r0 = {}, n * rows_g - pre
        span = nch // rv - 1
        straight = r0 >= 0 and r0 + span < rows
        if straight:
            q, h = divmod(r0, ho)
            sr = (h + sh) % hi
            straight = h + span < ho and sr + span < hi
            first = (q * plane_in + sr * wi) * S
        for c in range(nch):
            j = (c * magic_rv) >> 16
            assert j == c // rv
            row = r0 + j
            if not 0 <= row < rows:
                continue
            q, h = divmod(row, ho)
            src = (q * plane_in + (h + sh) % hi * wi) * S + (c - j * rv) * 16
            if straight:
                assert first + 16 * c == src  # the straight path's shortcut
            at = j * stride + (c - j * rv) * 16
            assert at + 16 <= warp_bytes
            for b in range(16):
                buf[at + b] = divmod(src + b, S)
        # warp_narrow_emit
        k0 = n * nv
        vend = min(nv, nvec - k0)
        vlo, vhi = max(0, (1 if lead else 0) - k0), max(0, min(kfull - k0, nv))
        for v in range(vend):
            e0 = (k0 + v) * V - lead
            assert (vlo <= v < vhi) == (e0 >= 0 and e0 + V <= total)
            for t in range(V):
                if 0 <= e0 + t < total:
                    got = [buf[tab[v * V + t] + b] for b in range(S)]  # KeyError: not staged
                    assert [b for _, b in got] == list(range(S)) and len({e for e, _ in got}) == 1
                    assert y[e0 + t] == -1
                    y[e0 + t] = got[0][0]
    return y


@st.composite
def warp_narrow_cases(draw):
    itemsize = draw(st.sampled_from([1, 2, 4, 8]))
    rank = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, 5)) for _ in range(rank - 2)]
    if rank >= 2:
        shape.append(draw(st.integers(1, 40)))
    shape.append(16 // itemsize * draw(st.integers(1, 3)))
    k = draw(st.integers(0, min(2, rank)))
    pads = draw(st.lists(st.integers(0, 9), min_size=2 * k, max_size=2 * k))
    if k == 2 and draw(st.booleans()):
        pads[2] += draw(st.integers(0, 700))  # H pads beyond H
    return tuple(shape), pads, itemsize, draw(st.integers(0, 16 // itemsize - 1))


@settings(max_examples=150, deadline=None)
@given(warp_narrow_cases())
def test_model_matches_np_pad(case):
    shape, pads, itemsize, lead = case
    plan = launch_plan(shape, pads, itemsize)
    if not takes_warp_narrow(plan):
        return
    got = _model(plan.flat_params, itemsize, lead)
    expected = padded(np.arange(math.prod(shape)).reshape(shape), pads).reshape(-1)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("shape, pads, itemsize", [
    ((1, 3, 512, 8), [1, 1, 1, 1], 2),       # the benchmark's geometry
    ((1, 3, 512, 8), [1, 1, 1, 1], 4),
    ((2, 3, 9, 16), [9, 3, 600, 1], 1),      # pads beyond the dims, many periods a plane
    ((5, 7, 2), [3, 2, 0, 0], 8),            # W pads only, planes shorter than a group
    ((3, 7, 33, 16), [0, 0, 2, 5], 2),       # H pads only
])
@pytest.mark.parametrize("lead", range(16))
def test_model_at_every_misalignment_of_y(shape, pads, itemsize, lead):
    if lead >= 16 // itemsize:
        return
    plan = launch_plan(shape, pads, itemsize)
    assert takes_warp_narrow(plan)
    expected = padded(np.arange(math.prod(shape)).reshape(shape), pads).reshape(-1)
    np.testing.assert_array_equal(_model(plan.flat_params, itemsize, lead), expected)


def test_model_with_crops_and_rows_shorter_than_a_vector():
    """Negative pads (the kernel pads them; the plugin's field refuses them): int8 rows of 16
    elements cropped to 8, so y's misalignment pulls up to 2 rows in before each group."""
    shape, pads = (4, 9, 16), [-3, -5, 2, 1]
    plan = launch_plan(shape, pads, 1)
    x = np.arange(math.prod(shape)).reshape(shape)
    expected = x[:, (np.arange(12) - 2) % 9][:, :, (np.arange(8) + 3) % 16].reshape(-1)
    for lead in range(16):
        np.testing.assert_array_equal(_model(plan.flat_params, 1, lead), expected)


# -- GPU -------------------------------------------------------------------------------------------

def _launch_name(shape, dtype, pads):
    desc = trt.PluginTensorDesc(shape, trt_from_numpy(np.dtype(dtype), trt),
                                trt.TensorFormat.LINEAR)
    return CircPad(pads=list(pads)).plan([desc], [], 0).name


def _shapes(itemsize):
    w = 16 // itemsize  # 16-byte input rows
    return [
        ((1, 7, 512, w), [1, 1, 1, 1]),            # the benchmark's rows, an odd number of planes
        ((1, 7, 512, 8), [1, 1, 1, 1]),            # W = 8 whatever the type (where rows fit)
        ((3, 5, 40, 2 * w), [1, 1, 1, 1]),         # 32-byte input rows
        ((2, 3, 9, w), [9, 3, 600, 1]),            # pads larger than the dims
        ((3, 7, 33, w), [0, 0, 2, 5]),             # H pads only
        ((5, 3, 21, w), [3, 2, 0, 0]),             # W pads only
        ((1, 300, 512, w), [1, 1, 1, 1]),          # more groups than one grid wave
    ]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NUMPY_TYPES)
@pytest.mark.parametrize("case", range(7))
def test_gpu_warp_narrow_matches_np_pad(dtype, case):
    shape, pads = _shapes(np.dtype(dtype).itemsize)[case]
    itemsize = np.dtype(dtype).itemsize
    takes = takes_warp_narrow(launch_plan(shape, pads, itemsize))
    assert takes or (shape[-1] * itemsize) % 16  # only W = 8 of 1-byte types misses it
    assert _launch_name(shape, dtype, pads).startswith("circ_pad_warp_narrow") == takes
    gpu_check(TensorSpec(shape, dtype, data=random_array(shape, dtype, seed=case)), pads)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int64])
@pytest.mark.parametrize("x_off", [0, 3])
@pytest.mark.parametrize("case", [0, 2, 3, 4, 5])
@pytest.mark.parametrize("options, grid_cap", [((), None), ((), 1), ((), 3),
                                               (("-DCIRC_PAD_WN_INFLIGHT=2",), 2),
                                               (("-DCIRC_PAD_WN_CHUNKS=2",), None),
                                               (("-DCIRC_PAD_WN_PAD=0",), 1),
                                               (("-DCIRC_PAD_WN_MINB=4",), None)])
def test_gpu_warp_narrow_at_every_y_offset(cp, dtype, x_off, case, options, grid_cap):
    """Launched directly: y at element offsets 0..V-1 (groups defined on y's aligned vectors, the
    output's partial end vectors), x aligned or not, a grid of 1 block and other small grids
    (the warps' grid-stride loop), the knobs the benchmark variants compile."""
    itemsize = np.dtype(dtype).itemsize
    shape, pads = _shapes(itemsize)[case]
    host = random_array(shape, dtype, seed=case + x_off)
    expected = padded(host, pads).reshape(-1)
    plan = launch_plan(shape, pads, itemsize)
    assert takes_warp_narrow(plan)
    fn = variant_kernel("circ_pad_warp_narrow", *options).function(ctype_of(dtype))
    needed = -(-warp_narrow_groups(plan) // 8)
    for y_off in range(16 // itemsize):
        check_direct_launch(cp, fn, min(needed, grid_cap or needed), plan.flat_params, host,
                            expected, x_off, y_off)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int64])
def test_gpu_warp_narrow_rows_at_the_128_byte_boundary(dtype):
    itemsize = np.dtype(dtype).itemsize
    w = NARROW_ROW_BYTES // itemsize - 16 // itemsize  # 16-byte multiple input rows
    shape, pads = (3, 13, w), [16 // itemsize // 2, 16 // itemsize // 2, 2, 1]
    assert _launch_name(shape, dtype, pads).startswith("circ_pad_warp_narrow")
    gpu_check(TensorSpec(shape, dtype, data=random_array(shape, dtype, seed=5)), pads)
