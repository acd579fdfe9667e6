"""CircPad's narrow-row kernel (``circ_pad_narrow``): when the plan picks it, a line-by-line model of
its table path against ``np.pad`` (CPU); its output bit for bit against ``np.pad(mode="wrap")``,
table path and odometer, unaligned pointers, crops and small grids (GPU)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyplugins.trt as trt
from pyplugins.dtypes import ctype_from_trt
from pyplugins.emulator.specs import TensorSpec
from pyplugins.runtime.kernels import instantiations
from pyplugins.runtime import tactics as variants
from pyplugins.ops.circ_pad import CircPad, launch_plan
from pyplugins.ops.circ_pad import (FLAT_MIN_ITEMSIZE, NARROW_DATA, NARROW_ROW_BYTES,
                                             VARIANTS)

from .test_circ_pad import (OFFERED, check_direct_launch, check_variant, cp,  # noqa: F401 (cp)
                            ctype_of, gpu_check, padded, random_array, row_name, variant_kernel)

SOURCE = Path(__file__).resolve().parents[2] / "kernels_cu" / "circ_pad.cu"
TABLE = int(re.search(r"^#define CIRC_PAD_NARROW_TABLE (\d+)", SOURCE.read_text(), re.M).group(1))
PHASES = int(re.search(r"kNarrowPhases = (\d+);", SOURCE.read_text()).group(1))


def test_every_offered_type_is_instantiated_for_the_narrow_kernel():
    listed = instantiations("circ_pad.cu")
    for data_type in OFFERED:
        assert f"circ_pad_narrow<{ctype_from_trt(data_type)}>" in listed, data_type


@pytest.mark.parametrize("shape, pads, itemsize, planes", [
    ((1, 64, 512, 8), [1, 1, 1, 1], 4, 64),       # the benchmark's narrow rows: 40-byte rows
    ((1, 64, 512, 8), [1, 1, 1, 1], 2, 64),
    ((3, 5, 7), [2, 3], 8, 3),                    # rank 3: three planes of 5 x 12
    ((9,), [3, 0], 1, 1),                         # rank 1: a plane of one row
    ((4, 3, 6, 1), [5, 4, 0, 0], 4, 12),          # W = 1, pads larger than W
    ((2, 3, 4, 5), [7, 11, 5, 6], 2, 6),
])
def test_narrow_rows_fit_the_narrow_kernel(shape, pads, itemsize, planes):
    plan = launch_plan(shape, pads, itemsize)
    assert plan.stage_planes == planes
    assert plan.out_shape[-1] * itemsize <= NARROW_ROW_BYTES
    assert row_name(shape, pads, itemsize, variant="circ_pad_narrow") == "circ_pad_narrow"


@pytest.mark.parametrize("shape, pads, itemsize, why, unfit", [
    ((1, 4, 512, 512), [1, 1, 1, 1], 4, "wide rows", True),
    ((1, 4, 33), [0, 0], 4, "132-byte rows", False),
    ((2, 4096, 8), [1, 1, 1, 1], 4, "a 128 KiB plane does not fit a stage", True),
    ((2, 2, 3), [0, 0, 20000, 20000], 4, "one block would write too large a plane", True),
    ((0, 3, 4), [1, 1], 4, "empty output", True),
])
def test_other_shapes_keep_other_kernels(shape, pads, itemsize, why, unfit):
    assert row_name(shape, pads, itemsize) != "circ_pad_narrow", why
    assert (launch_plan(shape, pads, itemsize).stage_planes == 0) == unfit, why


@pytest.mark.parametrize("resident, grid", [(10, 10), (100, 64)])
def test_narrow_grid_is_one_wave_of_resident_blocks_at_most(monkeypatch, resident, grid):
    """circ_pad_narrow's row launches min(planes, its waves (1) * resident blocks) blocks."""
    monkeypatch.setattr(variants, "resident_blocks", lambda fn, block, device=0: resident)
    monkeypatch.setitem(vars(CircPad.narrow_kernel), "function", lambda ctype, device=None: 1234)
    desc = trt.PluginTensorDesc((1, 64, 512, 7), trt.DataType.HALF, trt.TensorFormat.LINEAR)
    launch = CircPad(pads=[1, 1, 1, 1]).plan([desc], [], 0)  # 18-byte rows: the table's choice
    assert launch.name == "circ_pad_narrow<__half>" and launch.grid == (grid, 1, 1)
    assert variants.find(VARIANTS, "circ_pad_narrow").waves == 1


# -- a line-by-line model of circ_pad_narrow's table path ------------------------------------------

def _period(wo, itemsize):
    """(table on, nv, G) as narrow_geom computes them."""
    if not TABLE or wo > TABLE:
        return False, 1, 1
    rb = wo * itemsize
    gcd16 = 1 << min(4, (rb & -rb).bit_length() - 1)
    nv, rows = rb // gcd16, 16 // gcd16
    return nv * (16 // itemsize) <= TABLE and nv <= PHASES, nv, rows


def _source_row(row, p):
    off = 0
    for d in range(6, -1, -1):
        row, od = divmod(row, int(p["out_dims"][d]))
        off += (od + int(p["shift"][d])) % int(p["in_dims"][d]) * int(p["in_strides"][d])
    return off


def _model(p, itemsize, x_mis, y_mis, grid, paths):
    """Element ids of y as circ_pad_narrow's table path writes them (-1: written by the
    odometer, not modelled here), x's elements at byte x_mis + i * itemsize on, y at y_mis."""
    S, V = itemsize, 16 // itemsize
    wi, wo, hi, ho = (int(p[k][d]) for k, d in (("in_dims", 7), ("out_dims", 7),
                                                ("in_dims", 6), ("out_dims", 6)))
    sw, sh = int(p["shift"][7]), int(p["shift"][6])
    planes = math.prod(int(d) for d in p["out_dims"][:6])
    row_bytes, plane_out = wi * S, ho * wo
    slot = (hi * row_bytes + 30) & ~15
    pk = min(64, NARROW_DATA // slot, -(-planes // grid))
    table, nv, rows = _period(wo, S)
    # narrow_table
    length, lead_y = nv * V, y_mis // S
    off, phase = [0] * length, [None] * nv
    for i in range(length if table else 0):
        ph, t = divmod(i, V)
        u0 = ph * V + length - lead_y
        first, (row, col) = u0 // wo, divmod(u0 + t, wo)
        off[i] = (row - first) * row_bytes + (col + sw) % wi * S
        if t == 0:
            phase[ph] = (first - rows, (u0 + V - 1) // wo - first)
    y = np.full(planes * plane_out, -1, np.int64)
    for tile in range(-(-planes // pk)):
        q0, n = tile * pk, min(pk, planes - tile * pk)
        # narrow_locate and narrow_fetch: data byte -> (x element, byte of it)
        data, at = {}, []
        for t in range(n):
            a = x_mis + (_source_row((q0 + t) * ho, p) - sh * wi) * S
            at.append(t * slot + a % 16)
            for b in range(slot // 16):
                if b * 16 < a % 16 + hi * row_bytes:
                    for c in range(16):
                        byte = a - a % 16 + b * 16 + c - x_mis
                        data[t * slot + b * 16 + c] = (byte // S, byte % S)
        k0 = (y_mis + q0 * plane_out * S) // 16
        p0, r0 = k0 % nv, k0 // nv * rows - q0 * ho
        lead = (y_mis + q0 * plane_out * S) % 16 // S
        ne = n * plane_out
        for k in range((lead + ne + V - 1) // V):  # narrow_emit
            rel = k * V - lead
            if not (table and rel >= 0 and rel + V <= ne):
                continue
            q, ph = divmod(p0 + k, nv)
            first, d = r0 + q * rows + phase[ph][0], phase[ph][1]
            assert 0 <= first < 2**31  # the kernel's unsigned int
            j, h = divmod(first, ho)
            r = (h + sh) % hi
            if h + d < ho and r + d < hi:
                paths.add("table")
                for t in range(V):
                    o = at[j] + r * row_bytes + off[ph * V + t]
                    got = [data[o + b] for b in range(S)]  # KeyError: a byte never copied
                    assert [b for _, b in got] == list(range(S)) and len({e for e, _ in got}) == 1
                    assert o + S <= NARROW_DATA
                    y[q0 * plane_out + rel + t] = got[0][0]
            else:
                paths.add("odometer")
    return y


@st.composite
def narrow_cases(draw):
    itemsize = draw(st.sampled_from([1, 2, 4, 8]))
    rank = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, 6)) for _ in range(rank - 1)]
    shape.append(draw(st.integers(1, 128 // itemsize)))
    k = draw(st.integers(0, min(2, rank)))
    pads = draw(st.lists(st.integers(0, 9), min_size=2 * k, max_size=2 * k))
    x_mis = draw(st.integers(0, 15 // itemsize)) * itemsize
    y_mis = draw(st.integers(0, 15 // itemsize)) * itemsize
    return tuple(shape), pads, itemsize, x_mis, y_mis, draw(st.integers(1, 5))


@settings(max_examples=200, deadline=None)
@given(narrow_cases())
def test_model_of_the_narrow_table_path_matches_np_pad(case):
    shape, pads, itemsize, x_mis, y_mis, grid = case
    plan = launch_plan(shape, pads, itemsize)
    if not plan.stage_planes:
        return
    x = np.arange(math.prod(shape), dtype=np.int64)
    got = _model(plan.params, itemsize, x_mis, y_mis, grid, set())
    expected = padded(x.reshape(shape), pads).reshape(-1)
    written = got != -1
    np.testing.assert_array_equal(got[written], expected[written])


@pytest.mark.parametrize("shape, pads, itemsize, share", [
    ((1, 3, 512, 8), [1, 1, 1, 1], 2, 0.99),     # the narrow benchmark: nearly all on the table
    ((1, 3, 512, 8), [1, 1, 1, 1], 4, 0.99),
    ((2, 3, 40, 9), [1, 2, 3, 0], 1, 0.9),       # odd widths of bytes: periods of 16 rows
    ((4, 5, 30, 3), [2, 1, 0, 0], 8, 0.98),      # W padded only
    ((2, 2, 3, 2), [5, 7, 9, 4], 2, 0.8),        # tiny planes, pads beyond the dims
])
@pytest.mark.parametrize("x_mis, y_mis", [(0, 0), (8, 0), (0, 8), (8, 8)])
def test_model_takes_the_table_path_for_most_vectors(shape, pads, itemsize, share, x_mis, y_mis):
    paths = set()
    plan = launch_plan(shape, pads, itemsize)
    got = _model(plan.params, itemsize, x_mis, y_mis, 2, paths)
    expected = padded(np.arange(math.prod(shape)).reshape(shape), pads).reshape(-1)
    written = got != -1
    np.testing.assert_array_equal(got[written], expected[written])
    assert written.mean() >= share and "table" in paths  # the rest: the odometer's vectors


@pytest.mark.parametrize("wo, itemsize, table", [
    (10, 2, True), (10, 4, True), (64, 2, True), (32, 4, True), (16, 8, True),
    (32, 1, True),    # lcm(32, 16) = 32 entries, 2 vectors a period
    (31, 1, True),    # 16 rows of 31 bytes: 496 entries
    (33, 1, False),   # 528 entries: more than the table holds, the odometer writes it all
    (127, 1, False),
])
def test_which_row_widths_get_a_table(wo, itemsize, table):
    assert _period(wo, itemsize)[0] == table


# -- GPU -------------------------------------------------------------------------------------------

NARROW_TYPES = (np.float32, np.float16, np.int8, np.int64)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NARROW_TYPES)
@pytest.mark.parametrize("shape, pads", [
    ((2, 3, 16, 8), [1, 1, 1, 1]),                 # rank 4, the benchmark's geometry, small
    ((3, 7, 9), [2, 3, 1, 2]),                     # odd W, odd H: unaligned planes and rows
    ((5, 4, 6, 1), [3, 4, 2, 0]),                  # W = 1, pads larger than W
    ((2, 2, 3, 2), [5, 7, 9, 4]),                  # pads larger than H and W, several wraps
    ((11, 5), [1, 2, 3, 0]),                       # rank 2: a single plane
    ((64, 300, 7, 3), [1, 1, 2, 1]),               # many small planes: tiles of many planes,
                                                   # several tiles per block (the pipeline)
    ((3, 40, 120, 5), [0, 2, 1, 0]),               # planes of 600 elements, pads on one side
])
def test_gpu_narrow_kernel_matches_np_pad(cp, dtype, shape, pads):
    check_variant(cp, random_array(shape, dtype, seed=len(shape)), pads, "circ_pad_narrow")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NARROW_TYPES)
def test_gpu_narrow_plane_that_fills_a_stage(cp, dtype):
    """A plane of about NARROW_DATA bytes: one plane a tile, slots at the stage's end."""
    itemsize = np.dtype(dtype).itemsize
    h = (NARROW_DATA - 32) // (8 * itemsize)
    shape = (3, 5, h, 8)
    check_variant(cp, random_array(shape, dtype, seed=3), [1, 1, 1, 1], "circ_pad_narrow")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NARROW_TYPES)
def test_gpu_narrow_empty_tensor(dtype):
    gpu_check(TensorSpec((0, 3, 4, 5), dtype, data=np.zeros((0, 3, 4, 5), dtype)), [1, 1, 1, 1])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NARROW_TYPES)
@pytest.mark.parametrize("pads", [[1, 1, 1, 1], [0, 3, 2, 0], [3, 2, 1, 3], [0, 0, 1, 1]])
def test_gpu_narrow_table_path_every_width(cp, dtype, pads):
    """Input rows of 1 to 12 elements (periods of 1 to 16 output rows, groups crossing planes
    and the H wrap) through circ_pad_narrow where the rows are narrow, and through the plugin's
    own choice for every width."""
    for w in range(1, 13):
        shape = (2, 3, 9, w)
        x = random_array(shape, dtype, seed=w)
        if (w + pads[0] + pads[1]) * np.dtype(dtype).itemsize <= NARROW_ROW_BYTES:
            check_variant(cp, x, pads, "circ_pad_narrow")
        gpu_check(TensorSpec(shape, dtype, data=x), pads)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NARROW_TYPES)
def test_gpu_narrow_rows_at_the_128_byte_boundary(cp, dtype):
    """Output rows of exactly NARROW_ROW_BYTES (circ_pad_narrow; for int8 the table's last
    fit) and one element more (the plugin's wide-row kernel), odd heights."""
    itemsize = np.dtype(dtype).itemsize
    w = NARROW_ROW_BYTES // itemsize - 2
    wide = "circ_pad_flat" if itemsize >= FLAT_MIN_ITEMSIZE else "circ_pad"
    check_variant(cp, random_array((3, 13, w), dtype, seed=0), [1, 1, 2, 1], "circ_pad_narrow")
    shape = (3, 13, w + 1)
    assert row_name(shape, [1, 1, 2, 1], itemsize) == wide
    gpu_check(TensorSpec(shape, dtype, data=random_array(shape, dtype, seed=1)), [1, 1, 2, 1])


def _wrap_reference(x, widths):
    """y[o] = x[(o - before) mod in] on every dim, crops (negative pads) included."""
    for axis, (before, after) in enumerate(widths):
        n = x.shape[axis]
        x = np.take(x, (np.arange(n + before + after) - before) % n, axis=axis)
    return x


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int8, np.int64])
@pytest.mark.parametrize("x_off, y_off", [(0, 0), (1, 0), (0, 3), (5, 7)])
@pytest.mark.parametrize("shape, pads", [
    ((3, 20, 8), [1, 1, 1, 1]),              # the benchmark's rows, planes of 22 x 10
    ((7, 2, 8), [1, 1, 1, 0]),               # periods of 4 rows longer than a plane of 3
    ((5, 4, 6), [-1, -2, 1, 1]),             # W cropped to 3, H padded
    ((4, 9, 11), [2, -3, -2, 4]),            # W and H: one end cropped, the other padded
    ((6, 3, 2), [5, 9, 4, 7]),               # pads several times the dims
    ((2, 5, 40, 5), [0, 2, 1, 0]),           # rank 4, one-sided pads
])
@pytest.mark.parametrize("options, grid_cap", [((), None), ((), 1), ((), 3),
                                               (("-DCIRC_PAD_NARROW_TABLE=0",), 2),
                                               (("-DCIRC_PAD_NARROW_TABLE=16",), None)])
def test_gpu_narrow_kernel_unaligned_pointers_crops_and_knobs(cp, dtype, x_off, y_off, shape,
                                                              pads, options, grid_cap):
    """circ_pad_narrow launched directly: input and output at odd element offsets, negative pads
    (crops, which the plugin's field refuses but the kernel pads), grids smaller than the planes
    (several tiles a block: the pipeline), the table off and a table too small for most widths."""
    from pyplugins.ops.circ_pad import pad_widths

    host = random_array(shape, dtype, seed=x_off + 3 * y_off)
    wrapped = _wrap_reference(host, pad_widths(host.ndim, pads))
    plan = launch_plan(shape, pads, host.itemsize)
    assert plan.stage_planes and plan.out_shape == wrapped.shape
    fn = variant_kernel("circ_pad_narrow", *options).function(ctype_of(dtype))
    grid = min(plan.stage_planes, grid_cap or plan.stage_planes)
    check_direct_launch(cp, fn, grid, plan.params, host, wrapped.reshape(-1), x_off, y_off)
