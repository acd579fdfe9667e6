"""CircPad's ``circ_pad_flat`` kernel: when the host picks it, its struct and magic divisions, a
line-by-line model of its index arithmetic against ``np.pad`` (CPU); the kernel itself on many
shapes, dtypes and unaligned pointers (GPU)."""

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
from pyplugins.ops.circ_pad import (FLAT_PARAMS_DTYPE, CircPad, flat_magic31, flat_magic64,
                                    launch_plan)

from .test_circ_pad import (check_direct_launch, check_variant, cp, ctype_of,  # noqa: F401 (cp)
                            gpu_check, padded, random_array, row_name, variant_kernel)

SOURCE = Path(__file__).resolve().parents[2] / "kernels_cu" / "circ_pad.cu"
TABLE = int(re.search(r"^#define CIRC_PAD_FLAT_TABLE (\d+)", SOURCE.read_text(), re.M).group(1))


def test_every_offered_type_is_instantiated_for_the_flat_kernel():
    listed = instantiations("circ_pad.cu")
    for data_type in CircPad.dtypes:
        assert f"circ_pad_flat<{ctype_from_trt(data_type)}>" in listed, data_type


def test_flat_params_dtype_matches_the_c_struct():
    struct = re.search(r"struct CircPadFlatParams \{(.*?)\};", SOURCE.read_text(), re.S).group(1)
    fields = re.findall(r"(?:unsigned long long|long long)\s+(\w+);", struct)
    assert fields == list(FLAT_PARAMS_DTYPE.names)
    assert FLAT_PARAMS_DTYPE.itemsize == 8 * len(fields) and FLAT_PARAMS_DTYPE.alignment == 8


@pytest.mark.parametrize("d", [1, 2, 3, 5, 7, 10, 514, 5140, 264196, 2**20 + 1, 2**30 - 1,
                               2**30, 2**31 - 1])
def test_magic_divisions_are_exact_at_their_limits(d):
    rng = np.random.default_rng(d)
    m64, s64 = flat_magic64(d)
    m31, sh31 = flat_magic31(d)
    assert 0 <= m64 < 2**64 and 0 <= m31 < 2**32
    ns = [0, 1, d - 1, d, d + 1, 2**31 - 1, 2**31 - 1 - (2**31 - 1) % d, 2**62, 2**63 - 1]
    ns += [int(v) for v in rng.integers(0, 2**63 - 1, 200, dtype=np.int64)]
    ns += [k * d + r for k in (1, 2**20, (2**63 - 1) // d - 1) for r in (0, d - 1)]
    for n in ns:
        q = n if s64 == 0 else ((n * m64) >> 64) >> (s64 - 1)
        assert q == n // d, (n, d)
        if n < 2**31:
            assert (n * m31) >> sh31 == n // d, (n, d)


@pytest.mark.parametrize("shape, pads, flat", [
    ((1, 64, 512, 8), [1, 1, 1, 1], True),       # the benchmark's narrow rows
    ((1, 4, 512, 512), [1, 1, 1, 1], True),      # wide rows
    ((3, 5, 7), [2, 3], True),                   # pads on the last dim only
    ((9,), [3, 0], True),                        # rank 1
    ((2, 3, 4, 5), [7, 11, 5, 6], True),         # pads larger than the dims
    ((2, 3, 4, 5), [1, 1, 1, 1, 1, 0], False),   # an outer dim padded
    ((1, 50000, 50000), [0, 0, 1, 0], False),    # a plane of 2**31 elements or more
    ((0, 3, 4), [1, 1], False),                  # empty output
])
def test_which_shapes_take_the_flat_kernel(shape, pads, flat):
    plan = launch_plan(shape, pads, 4)
    assert (plan.flat_params is not None) == flat
    if flat:
        assert plan.flat_threads == -(-(math.prod(plan.out_shape) + 3) // 4)
        assert int(plan.flat_params["total"]) == math.prod(plan.out_shape)


# -- a line-by-line model of circ_pad_flat -----------------------------------------------------

def _wrap(v, n):
    return v % n  # wrap_col: (v mod n), exact for every v


def _locate(e, f):
    q = e if int(f["shift_plane"]) == 0 else \
        ((e * int(f["magic_plane"])) >> 64) >> (int(f["shift_plane"]) - 1)
    local = (e - q * int(f["plane_out"])) & 0xFFFFFFFF  # 32-bit arithmetic in the kernel
    assert local < 2**31
    h = (local * int(f["magic_wo"])) >> int(f["shift_wo"])
    w = local - h * int(f["wo"])
    return q, h, w, _wrap(h + int(f["sh"]), int(f["hi"])), _wrap(w + int(f["sw"]), int(f["wi"]))


def _gather_any(x, e, f, V, out):
    wi, wo, hi, ho = (int(f[k]) for k in ("wi", "wo", "hi", "ho"))
    q, h, w, r, c = _locate(max(e, 0), f)
    plane = q * int(f["plane_in"])
    for t in range(V):
        if 0 <= e + t < int(f["total"]):
            out[t] = x[plane + r * wi + c]
            c = 0 if c + 1 == wi else c + 1
            w += 1
            if w == wo:
                w, c = 0, int(f["sw"])
                r = 0 if r + 1 == hi else r + 1
                h += 1
                if h == ho:
                    h, r = 0, int(f["sh"])
                    plane += int(f["plane_in"])


def _model(x, f, itemsize, lead, paths):
    """y (with ``lead`` elements before it, as the kernel's aligned vectors see them)."""
    V = 16 // itemsize
    total, wi, wo, hi, ho = (int(f[k]) for k in ("total", "wi", "wo", "hi", "ho"))
    tab = None
    if TABLE and wo * V <= TABLE:
        tab = []
        for i in range(wo * V):
            u = i // V + i % V
            dt = u // wo
            tab.append(dt * wi + _wrap(u - dt * wo + int(f["sw"]), wi))
    nv = (total + lead + V - 1) // V
    y = np.full(nv * V, -1, dtype=np.int64)
    for k in range(nv):
        e = k * V - lead
        v = [None] * V
        if e >= 0 and e + V <= total:
            q, h, w, r, c = _locate(e, f)
            row = q * int(f["plane_in"]) + r * wi
            d = ((w + V - 1) * int(f["magic_wo"])) >> int(f["shift_wo"])
            if w + V <= wo and c + V <= wi:
                paths.add("contiguous")
                v = list(x[row + c:row + c + V])
            elif tab is not None and h + d < ho and r + d < hi:
                paths.add("table")
                v = [x[row + tab[w * V + t]] for t in range(V)]
            else:
                paths.add("any")
                _gather_any(x, e, f, V, v)
        else:
            paths.add("ends")
            _gather_any(x, e, f, V, v)
        for t in range(V):
            if 0 <= e + t < total:
                y[k * V + t] = v[t]
    return y[lead:lead + total]


@st.composite
def flat_cases(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    k = draw(st.integers(0, min(2, rank)))
    pads = draw(st.lists(st.integers(0, 12), min_size=2 * k, max_size=2 * k))
    return shape, pads, draw(st.sampled_from([1, 2, 4, 8])), draw(st.integers(0, 15))


@settings(max_examples=150, deadline=None)
@given(flat_cases())
def test_model_of_the_flat_kernel_matches_np_pad(case):
    shape, pads, itemsize, lead_bytes = case
    plan = launch_plan(shape, pads, itemsize)
    if plan.flat_params is None:
        return
    x = np.arange(math.prod(shape), dtype=np.int64)
    got = _model(x, plan.flat_params, itemsize, lead_bytes // itemsize, set())
    np.testing.assert_array_equal(got, padded(x.reshape(shape), pads).reshape(-1))


@pytest.mark.parametrize("shape, pads, itemsize, expected", [
    ((2, 3, 40, 8), [1, 1, 1, 1], 2, {"table", "any"}),   # the narrow benchmark's rows, small
    ((2, 3, 40, 8), [1, 1, 1, 1], 4, {"contiguous", "table", "any"}),
    ((1, 2, 30, 69), [1, 1, 1, 1], 4, {"contiguous", "table", "any"}),  # rows of 71
    ((1, 2, 30, 300), [1, 1, 1, 1], 4, {"contiguous", "any"}),  # too wide for the table
    ((3, 9, 5), [4, 3, 2, 2], 1, {"table", "any"}),         # pads near the dims
])
@pytest.mark.parametrize("lead", [0, 1, 3])
def test_model_takes_every_path(shape, pads, itemsize, expected, lead):
    paths = set()
    plan = launch_plan(shape, pads, itemsize)
    x = np.arange(math.prod(shape), dtype=np.int64)
    got = _model(x, plan.flat_params, itemsize, lead, paths)
    np.testing.assert_array_equal(got, padded(x.reshape(shape), pads).reshape(-1))
    assert expected <= paths  # values all right above, and each way of the kernel taken
    assert ("table" in paths) == (plan.out_shape[-1] * 16 // itemsize <= TABLE)


# -- GPU -------------------------------------------------------------------------------------------

FLAT_TYPES = (np.float32, np.float16, np.int8, np.uint8, np.bool_, np.int32, np.int64)


def _launch_name(shape, dtype, pads):
    data_type = {np.dtype(np.float32): trt.DataType.FLOAT, np.dtype(np.float16): trt.DataType.HALF,
                 np.dtype(np.int8): trt.DataType.INT8, np.dtype(np.uint8): trt.DataType.UINT8,
                 np.dtype(np.bool_): trt.DataType.BOOL, np.dtype(np.int32): trt.DataType.INT32,
                 np.dtype(np.int64): trt.DataType.INT64}[np.dtype(dtype)]
    desc = trt.PluginTensorDesc(shape, data_type, trt.TensorFormat.LINEAR)
    return CircPad(pads=list(pads)).plan([desc], [], 0).name


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLAT_TYPES)
@pytest.mark.parametrize("shape, pads", [
    ((2, 3, 16, 8), [1, 1, 1, 1]),               # narrow rows: table path
    ((2, 5, 33, 61), [1, 1, 1, 1]),              # odd widths: rows not a vector multiple
    ((1, 3, 40, 512), [1, 1, 1, 1]),             # wide rows: contiguous vectors
    ((3, 7, 9), [2, 3, 1, 2]),                   # odd W, odd H
    ((5, 4, 6, 1), [3, 4, 2, 0]),                # W = 1, pads larger than W
    ((2, 2, 3, 2), [5, 7, 9, 4]),                # pads larger than H and W, several wraps
    ((4, 3, 2), [0, 0, 5, 6]),                   # H < the H pads, W unpadded
    ((11, 5), [1, 2, 3, 0]),                     # rank 2: a single plane
    ((9,), [3, 0]),                              # rank 1
    ((17,), [20, 33]),                           # rank 1, pads beyond one wrap
    ((64, 300, 7, 3), [1, 1, 2, 1]),             # many tiny planes
    ((2, 3, 700, 9), [1, 2, 0, 0]),              # pads on W only
    ((1, 1, 3, 1000), [300, 900, 1, 0]),         # long rows, pads wider than the input row
])
def test_gpu_flat_kernel_matches_np_pad(cp, dtype, shape, pads):
    # Every shape the kernel can pad, of every type, asked of the table by name (the plugin's
    # own choice sends 2-byte types and narrow rows to other kernels:
    # test_the_plugin_picks_...).
    check_variant(cp, random_array(shape, dtype, seed=len(shape)), pads, "circ_pad_flat")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gpu_flat_kernel_on_the_benchmark_geometry(cp, dtype):
    """A few whole planes of the benchmarks' narrow and wide shapes (several blocks a plane),
    through the flat kernel and through the plugin's own choice."""
    for shape in ((1, 5, 512, 8), (1, 2, 512, 512)):
        x = random_array(shape, dtype, seed=1)
        check_variant(cp, x, [1, 1, 1, 1], "circ_pad_flat")
        gpu_check(TensorSpec(shape, dtype, data=x), [1, 1, 1, 1])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.float32, np.int64])
@pytest.mark.parametrize("x_off, y_off", [(1, 0), (0, 3), (5, 7), (2, 2)])
@pytest.mark.parametrize("shape, pads", [((4, 5, 37), [3, 40, 1, 2]),
                                         ((3, 20, 8), [1, 1, 1, 1]),
                                         ((2, 6, 130), [1, 2, 2, 1])])
@pytest.mark.parametrize("options, grid_cap", [((), None), (("-DCIRC_PAD_FLAT_VECS=4",), 2),
                                               (("-DCIRC_PAD_FLAT_TABLE=0",), 3),
                                               (("-DCIRC_PAD_FLAT_MINB=8",), None)])
def test_gpu_flat_kernel_unaligned_pointers_and_knobs(cp, dtype, x_off, y_off, shape, pads,
                                                      options, grid_cap):
    """Input and output at odd element offsets; a grid smaller than the work (the kernel's
    grid-stride loop); the knobs the benchmark variants compile."""
    host = random_array(shape, dtype, seed=x_off + y_off)
    expected = padded(host, pads).reshape(-1)
    plan = launch_plan(shape, pads, host.itemsize)
    fn = variant_kernel("circ_pad_flat", *options).function(ctype_of(dtype))
    vecs = 4 if options and "VECS" in options[0] else 1
    grid = -(-plan.flat_threads // (256 * vecs))
    check_direct_launch(cp, fn, min(grid, grid_cap or grid), plan.flat_params, host, expected,
                        x_off, y_off)


@pytest.mark.parametrize("shape, itemsize, kernel", [
    ((1, 4, 512, 510), 4, "circ_pad_flat"),    # wide rows of 4-byte elements (not 16n bytes)
    ((1, 4, 512, 200), 8, "circ_pad_warp"),    # 16n-byte rows: the warp kernel comes first
    ((1, 4, 512, 511), 8, "circ_pad_flat"),
    ((1, 4, 512, 510), 2, "circ_pad"),         # 2-byte elements: the older kernel measured faster
    ((1, 4, 512, 511), 1, "circ_pad"),
    ((1, 64, 512, 7), 4, "circ_pad_narrow"),   # narrow rows: circ_pad_narrow measured faster
])
def test_the_plugin_picks_the_flat_kernel_where_it_measured_faster(shape, itemsize, kernel):
    plan = launch_plan(shape, [1, 1, 1, 1], itemsize)
    assert plan.flat_params is not None  # the flat kernel could pad each of them
    assert row_name(shape, [1, 1, 1, 1], itemsize) == kernel
    assert row_name(shape, [1, 1, 1, 1], itemsize, variant="circ_pad_flat") == "circ_pad_flat"
