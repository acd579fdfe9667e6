"""CircPad's ``circ_pad_warp`` kernel (a warp per output row, rows staged per warp): when the host
picks it and how it launches it, a line-by-line model of its slots and index arithmetic against
``np.pad`` (CPU); the kernel itself on every dtype, unaligned pointers, grid-stride grids and its
compile-time knobs (GPU)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyplugins.trt as trt
from pyplugins.emulator.specs import TensorSpec
from pyplugins.runtime import tactics as variants
from pyplugins.ops.circ_pad import CircPad, launch_plan, warp_row_warps
from pyplugins.ops.circ_pad import (AOT_CTYPES, AOT_KERNELS, BLOCK, VARIANTS, WARP_MIN_WARPS,
                                    WARP_ROW_BYTES)
from pyplugins.runtime.kernels import kernels_dir

from .test_circ_pad import (NUMPY_TYPES, kernel_define, check_direct_launch, cp,  # noqa: F401 (cp)
                            ctype_of, gpu_check, padded, random_array, row_name, variant_kernel)
from tests.test_kernels_compile import missing_nvcc

DEPTH = kernel_define("CIRC_PAD_WARP_DEPTH")


def _ptxas_usage(kernel, arch: str, tmp_path) -> dict:
    """{mangled entry: (registers, spill store bytes)} of ``kernel``'s instantiations (one per
    element size) compiled by nvcc for ``sm_<arch>`` with the kernel's own options."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        missing_nvcc()
    exprs = [kernel.expression_for(t) for t in AOT_CTYPES.values()]
    src = tmp_path / f"usage_{arch}.cu"
    src.write_text(f'#include "{kernels_dir() / kernel.source}"\n' + "".join(
        f"const void* pp_take_{i} = reinterpret_cast<const void*>(&{e});\n"
        for i, e in enumerate(exprs)))
    out = subprocess.run([nvcc, "-cubin", f"-arch=sm_{arch}", *kernel.compile_options(), "-ftz=true",
                          "-Xptxas", "-v", str(src), "-o", str(tmp_path / f"usage_{arch}.cubin")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    usage = {}
    for m in re.finditer(r"entry function '(\w+)'.*?(\d+) bytes spill stores.*?Used (\d+) registers",
                         out.stderr, re.S):
        usage[m.group(1)] = (int(m.group(3)), int(m.group(2)))
    assert len(usage) == len(exprs), out.stderr
    return usage


@pytest.mark.parametrize("arch", ["80", "90"])
def test_the_warp_kernel_and_its_aot_entry_use_the_same_registers_and_never_spill(arch, tmp_path):
    # The AOT entry spilled under the old 40-register bound and then ran 1.11x the JIT kernel's
    # time on the H100 (docs/ops/circ_pad.md, "Launch bounds of the warp kernel").
    jit = _ptxas_usage(variants.find(VARIANTS, "circ_pad_warp").kernel, arch, tmp_path)
    aot = _ptxas_usage(AOT_KERNELS["circ_pad_warp"], arch, tmp_path)
    assert all(spill == 0 for _, spill in [*jit.values(), *aot.values()]), (jit, aot)
    assert sorted(r for r, _ in jit.values()) == sorted(r for r, _ in aot.values()), (jit, aot)


def test_the_kernel_gets_the_hosts_row_limit_and_block():
    row = variants.find(VARIANTS, "circ_pad_warp")
    assert f"-DCIRC_PAD_WARP_ROW={WARP_ROW_BYTES}" in row.kernel.options
    assert f"-DCIRC_PAD_WARP_BLOCK={BLOCK}" in row.kernel.options  # its __launch_bounds__
    assert row.block == BLOCK


# -- when the plan takes it ------------------------------------------------------------------------

@pytest.mark.parametrize("shape, pads, itemsize, warp", [
    ((1, 4, 512, 512), [1, 1, 1, 1], 2, True),     # the benchmark: 1 KiB half rows
    ((1, 4, 512, 512), [1, 1, 1, 1], 4, True),     # 2 KiB float rows
    ((1, 4, 512, 512), [1, 1, 1, 1], 8, False),    # 4 KiB rows: beyond WARP_ROW_BYTES
    ((1, 4, 512, 512), [1, 1, 1, 1], 1, True),     # 512-byte rows
    ((1, 4, 512, 510), [1, 1, 1, 1], 2, False),    # 1020-byte rows: not a multiple of 16
    ((3, 7, 16), [3, 4, 0, 0], 4, False),          # 64-byte rows, 92-byte outputs: narrow
    ((3, 7, 16), [30, 4, 0, 0], 4, True),          # 64-byte rows, 200-byte outputs: wide
    ((2, 4096, 8), [1, 1, 1, 1], 4, False),        # 40-byte output rows (plane too big for
                                                   # circ_pad_narrow: still narrow rows)
    ((2, 3, 4, 512), [1, 1, 1, 1, 1, 0], 2, False),  # an outer dim padded
    ((0, 3, 512), [1, 1], 2, False),               # empty output
    ((1, 2, 8, 1024), [0, 0, 0, 0], 2, True),      # no pads: a copy, rows of exactly the limit
    ((1, 2, 8, 1032), [0, 0, 0, 0], 2, False),     # 16 bytes more
    ((512,), [3, 3], 4, True),                     # rank 1: one row
])
def test_which_shapes_take_the_warp_kernel(shape, pads, itemsize, warp):
    assert (row_name(shape, pads, itemsize) == "circ_pad_warp") == warp


@pytest.mark.parametrize("shape, pads, itemsize, why", [
    ((1, 4, 512, 510), [1, 1, 1, 1], 2, "input rows of 16n bytes, at most 2048"),
    ((1, 4, 512, 512), [1, 1, 1, 1], 8, "input rows of 16n bytes, at most 2048"),
    ((2, 3, 4, 512), [1, 1, 1, 1, 1, 0], 2, "pads on the last two dims only"),
])
def test_the_warp_kernel_asked_by_name_refuses_rows_it_cannot_stage(shape, pads, itemsize, why):
    with pytest.raises(variants.VariantError, match=why):
        row_name(shape, pads, itemsize, variant="circ_pad_warp")
    assert row_name((3, 7, 16), [3, 4, 0, 0], 4, variant="circ_pad_warp") == "circ_pad_warp"


def _fake_device(monkeypatch, resident=10):
    monkeypatch.setattr(variants, "resident_blocks", lambda fn, block, device=0: resident)
    for k in ("warp_kernel", "warp_narrow_kernel", "flat_kernel", "kernel", "strips_kernel",
              "narrow_kernel"):
        monkeypatch.setitem(vars(getattr(CircPad, k)), "function", lambda ctype, device=None: 1234)


@pytest.mark.parametrize("shape, data_type, name", [
    ((1, 4, 512, 512), trt.DataType.HALF, "circ_pad_warp<__half>"),
    ((1, 4, 512, 512), trt.DataType.FLOAT, "circ_pad_warp<float>"),   # before circ_pad_flat
    ((1, 4, 512, 512), trt.DataType.INT64, "circ_pad_flat<long long>"),  # 4 KiB rows
    ((1, 4, 512, 510), trt.DataType.HALF, "circ_pad<__half>"),
    ((1, 64, 512, 8), trt.DataType.HALF, "circ_pad_warp_narrow<__half>"),  # narrow rows
    ((1, 64, 512, 7), trt.DataType.HALF, "circ_pad_narrow<__half>"),  # 14-byte input rows
])
def test_plan_launches_the_warp_kernel_first(monkeypatch, shape, data_type, name):
    _fake_device(monkeypatch)
    desc = trt.PluginTensorDesc(shape, data_type, trt.TensorFormat.LINEAR)
    assert CircPad(pads=[1, 1, 1, 1]).plan([desc], [], 0).name == name
    strips = CircPad(pads=[1, 1, 1, 1])
    strips.tactic = "strips"
    assert strips.plan([desc], [], 0).name.startswith("circ_pad<")


@pytest.mark.parametrize("resident", [2, 100])
@pytest.mark.parametrize("planes, warps", [(3, 3 * 514), (128, 32768), (512, 512 * 514 // 4),
                                           (2048, 2048 * 514 // 4)])
def test_warp_grid_spreads_output_bytes_over_warps(monkeypatch, resident, planes, warps):
    """One warp a row up to WARP_MIN_WARPS rows; beyond, cdiv(WARP_SHARE_BYTES, row bytes) rows
    a warp (4 of 1028 bytes) while that keeps WARP_MIN_WARPS warps; never capped by the resident
    blocks (the kernel is grid-stride)."""
    _fake_device(monkeypatch, resident)
    desc = trt.PluginTensorDesc((1, planes, 512, 512), trt.DataType.HALF, trt.TensorFormat.LINEAR)
    launch = CircPad(pads=[1, 1, 1, 1]).plan([desc], [], 0)
    rows = planes * 514
    assert WARP_MIN_WARPS == 32768
    assert launch.name == "circ_pad_warp<__half>" and launch.grid == (-(-warps // 8), 1, 1)
    assert launch.block == (BLOCK, 1, 1)
    assert warp_row_warps(rows, 1028) == warps
    assert variants.find(VARIANTS, "circ_pad_warp").waves is None


# -- a line-by-line model of circ_pad_warp ---------------------------------------------------------

def _wrap_col(v, n):
    return v % n  # wrap_col: (v mod n), exact for every v < 2**32


def _model(x_bytes, f, S, x_mis, y_lead, grid, block, depth, row_limit, rng):
    """y's bytes as circ_pad_warp writes them: x's bytes start x_mis bytes after a 16-byte
    boundary, y's y_lead bytes (a multiple of S); slots start as garbage."""
    wi, wo, hi, ho, sw, sh = (int(f[k]) for k in ("wi", "wo", "hi", "ho", "sw", "sh"))
    plane_in, total = int(f["plane_in"]), int(f["total"])
    V = 16 // S
    row_bytes = wi * S
    assert row_bytes % 16 == 0 and row_bytes <= row_limit
    mem = np.zeros(x_mis + len(x_bytes) + 32, np.uint8)  # whole 16-byte blocks around x
    mem[x_mis:x_mis + len(x_bytes)] = x_bytes
    y = np.full(y_lead + total * S, 0xEE, np.uint8)  # y's own bytes from y_lead on
    written = np.zeros(total, np.int64)
    rows = total // (ho * wo) * ho
    warps = grid * block // 32
    slot_size = row_limit + 32
    nslots = depth + 1
    step, bq, bh = (32 * V) % wi, warps // ho, warps % ho
    lane_col = [(lane * V) % wi for lane in range(32)]
    for w in range(warps):
        row = w
        if row >= rows:
            continue
        slots = [rng.integers(0, 256, slot_size, dtype=np.uint8) for _ in range(nslots)]
        fq, fh, fetch_row = row // ho, row % ho, row

        def fetch_next(slot, slots=slots):
            nonlocal fq, fh, fetch_row
            if fetch_row < rows:
                r = _wrap_col(fh + sh, hi)
                src = (fq * plane_in + r * wi) * S  # from x0 = x - x_mis
                nb = row_bytes // 16
                for b in range(nb + 1):
                    frm = 0 if (b == nb and x_mis == 0) else b
                    slots[slot][b * 16:b * 16 + 16] = mem[src + frm * 16:src + frm * 16 + 16]
            fetch_row += warps
            fq += bq
            fh += bh
            if fh >= ho:
                fh -= ho
                fq += 1

        for d in range(depth):
            fetch_next(d)
        cur = 0
        while row < rows:
            refill = cur + depth
            fetch_next(refill - nslots if refill >= nslots else refill)
            slot = slots[cur]
            if x_mis:
                slot[x_mis + row_bytes:x_mis + row_bytes + 16] = slot[x_mis:x_mis + 16].copy()
            dst = row * wo  # element index in y
            lead = (-(y_lead + dst * S)) % 16
            head = min(lead // S, wo)
            nvec = (wo - head) // V
            body_end = head + nvec * V

            def put(e, data, dst=dst):
                y[y_lead + (dst + e) * S:y_lead + (dst + e) * S + len(data)] = data
                written[dst + e:dst + e + len(data) // S] += 1

            for lane in range(32):
                e = lane if lane < 16 else body_end + lane - 16
                if (lane < head) if lane < 16 else (e < wo):
                    s = _wrap_col(e + sw, wi)
                    put(e, slot[x_mis + s * S:x_mis + s * S + S])
                s = _wrap_col(head + sw + lane_col[lane], wi)
                delta = (x_mis + (head + sw) * S) % 16  # the row's byte offset in a block
                for k in range(lane, nvec, 32):
                    off = x_mis + s * S
                    block = off - delta
                    assert block % 16 == 0 and block + 32 <= slot_size  # two aligned loads
                    assert (y_lead + (dst + head + k * V) * S) % 16 == 0  # an aligned store
                    put(head + k * V, slot[off:off + 16])
                    s += step
                    if s >= wi:
                        s -= wi
            cur = 0 if cur + 1 == nslots else cur + 1
            row += warps
    assert (written == 1).all()  # every output element exactly once
    return y[y_lead:]


@st.composite
def warp_cases(draw):
    S = draw(st.sampled_from([1, 2, 4, 8]))
    wi = draw(st.integers(1, 6)) * 16 // S
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank - 1, max_size=rank - 1))) + (wi,)
    k = draw(st.integers(1, min(2, rank)))
    pads = draw(st.lists(st.integers(0, 40), min_size=2 * k, max_size=2 * k))
    return (shape, pads, S, draw(st.integers(0, 15)) // S * S, draw(st.integers(0, 15)) // S * S,
            draw(st.integers(1, 4)), draw(st.sampled_from([32, 64, 256])),
            draw(st.integers(1, 3)))


def _check_model(shape, pads, S, x_mis, y_lead, grid, block, depth, row_limit=96):
    plan = launch_plan(shape, pads, S)
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[S]
    x = np.random.default_rng(7).integers(0, 2**8 * S - 1, shape, dtype=np.uint64).astype(dtype)
    got = _model(x.reshape(-1).view(np.uint8), plan.flat_params, S, x_mis, y_lead, grid, block,
                 depth, row_limit, np.random.default_rng(1))
    np.testing.assert_array_equal(got.view(dtype), padded(x, pads).reshape(-1))


@settings(max_examples=120, deadline=None)
@given(warp_cases())
def test_model_of_the_warp_kernel_matches_np_pad(case):
    _check_model(*case)


@pytest.mark.parametrize("x_mis, y_lead", [(0, 0), (0, 6), (4, 2), (10, 14)])
@pytest.mark.parametrize("depth", [1, 2])
def test_model_on_the_benchmark_rows(x_mis, y_lead, depth):
    """1 KiB half rows (the benchmark's), pads larger than H and W, a grid-stride grid."""
    _check_model((2, 3, 512), [1, 1, 1, 1], 2, x_mis, y_lead, 1, 64, depth, 1024)
    _check_model((1, 3, 512), [600, 5, 4, 7], 2, x_mis, y_lead, 1, 32, depth, 1024)


# -- GPU -------------------------------------------------------------------------------------------

def _launch_name(shape, dtype, pads):
    from pyplugins.dtypes import trt_from_numpy

    desc = trt.PluginTensorDesc(shape, trt_from_numpy(np.dtype(dtype), trt),
                                trt.TensorFormat.LINEAR)
    return CircPad(pads=list(pads)).plan([desc], [], 0).name


def _width(dtype, row_bytes):
    return row_bytes // np.dtype(dtype).itemsize


def _shapes(dtype):
    """(shape, pads) the plugin sends to circ_pad_warp for `dtype`: the benchmark's geometry,
    rows at the limit, pads beyond the dims, odd counts, one-sided pads."""
    w = min(512, _width(dtype, WARP_ROW_BYTES))  # 512 elements, or the longest row taken
    w16 = _width(dtype, 16)
    return [
        ((1, 3, 512, w), [1, 1, 1, 1]),
        ((2, 3, 5, _width(dtype, WARP_ROW_BYTES)), [1, 2, 1, 1]),   # rows at the limit
        ((1, 2, 9, w), [5, 700, 3, 2]),                             # W pads beyond one wrap
        ((2, 3, 5, w16), [150, 70, 7, 9]),                          # 16-byte rows, H < pads
        ((3, 5, 7, _width(dtype, 48)), [40, 41, 3, 0]),             # odd planes and rows
        ((2, 7, w), [0, 0, 2, 3]),                                  # H pads only
        ((2, 7, w), [3, 4, 0, 0]),                                  # W pads only
        ((1, 24, 256, w), [1, 1, 1, 1]),                            # rows of several waves
        ((w,), [2, 1]),                                             # rank 1: one row
    ]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NUMPY_TYPES)
@pytest.mark.parametrize("case", range(9))
def test_gpu_warp_kernel_matches_np_pad(dtype, case):
    shape, pads = _shapes(dtype)[case]
    assert _launch_name(shape, dtype, pads).startswith("circ_pad_warp"), (shape, pads)
    gpu_check(TensorSpec(shape, dtype, data=random_array(shape, dtype, seed=case)), pads)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NUMPY_TYPES)
def test_gpu_rows_just_past_the_limit_take_another_kernel(dtype):
    shape = (2, 5, _width(dtype, WARP_ROW_BYTES + 16))
    assert not _launch_name(shape, dtype, [1, 1, 1, 1]).startswith("circ_pad_warp")
    gpu_check(TensorSpec(shape, dtype, data=random_array(shape, dtype, seed=3)), [1, 1, 1, 1])


KNOBS = [(), ("-DCIRC_PAD_WARP_DEPTH=2", "-DCIRC_PAD_WARP_ROW=1024"),
         ("-DCIRC_PAD_WARP_DEPTH=3", "-DCIRC_PAD_WARP_ROW=1024"), ("-DCIRC_PAD_WARP_ASYNC=0",),
         ("-DCIRC_PAD_WARP_MINB=8",), ("-DCIRC_PAD_WARP_MINB=0",),
         ("-DCIRC_PAD_WARP_BLOCK=512", "-DCIRC_PAD_WARP_ROW=1024", "-DCIRC_PAD_WARP_MINB=0")]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.float32, np.int64])
@pytest.mark.parametrize("x_off", [0, 1])
@pytest.mark.parametrize("shape, pads", [((3, 7, 64), [3, 40, 1, 2]),
                                         ((2, 9, 128), [1, 1, 1, 1]),
                                         ((5, 64), [0, 1, 2, 0])])
@pytest.mark.parametrize("options", KNOBS)
@pytest.mark.parametrize("grid_cap", [None, 1, 3])
def test_gpu_warp_kernel_pointers_grids_and_knobs(cp, dtype, x_off, shape, pads, options,
                                                   grid_cap):
    """y at every element offset 0..V-1 (the row heads and tails), x aligned and not (the wrap
    copy placed after the row lands), grids of one and three blocks (grid-stride over rows,
    the pipeline's slots reused) and the full grid; the knobs the benchmark variants compile."""
    itemsize = np.dtype(dtype).itemsize
    shape = shape[:-1] + (shape[-1] * 8 // itemsize,)  # 512- or 1024-byte rows, any dtype
    host = random_array(shape, dtype, seed=x_off)
    expected = padded(host, pads).reshape(-1)
    plan = launch_plan(shape, pads, itemsize)
    fn = variant_kernel("circ_pad_warp", *options).function(ctype_of(dtype))
    rows = math.prod(plan.out_shape[:-1])
    grid = min(-(-rows // 8), grid_cap or rows)
    for y_off in range(16 // itemsize):
        check_direct_launch(cp, fn, grid, plan.flat_params, host, expected, x_off, y_off)


@pytest.mark.gpu
def test_gpu_warp_kernel_refuses_rows_beyond_its_slots(cp):
    """Rows longer than CIRC_PAD_WARP_ROW (the host never sends them): nothing is written."""
    from pyplugins.runtime.launch import POINTER, Launch

    host = random_array((4, 1024), np.float32)
    plan = launch_plan(host.shape, [1, 1], 4)  # 4 KiB rows
    fn = variant_kernel("circ_pad_warp").function("float")
    y = cp.full(math.prod(plan.out_shape), -1, dtype=np.float32)
    Launch(fn, 1, 256, (POINTER, POINTER, plan.flat_params))(0, cp.asarray(host).data.ptr,
                                                              y.data.ptr)
    cp.cuda.Device().synchronize()
    assert (cp.asnumpy(y) == -1).all()
