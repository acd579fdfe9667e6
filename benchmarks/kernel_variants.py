"""Build, check and time candidate kernel variants (compile options, launch shapes) on one GPU.

For each case (an op, a dtype and a shape of the benchmark suite's kind) and each variant (compile
options for the ``.cu`` file's tuning knobs, a block size, a grid rule), it compiles the kernel,
checks it on fresh random data of a smaller shape of the same row geometry against the op's NumPy
``reference`` (outputs poisoned first, so unwritten outputs fail), then times it with CUDA events
on the full shape: batches of launches over rotating input/output sets larger than L2, the median
batch. The baseline is the faster of ``cudaMemcpyAsync`` and a 16-byte copy kernel moving the
same bytes (half of read + write each way), timed the same way in the same run. The table's
``frac`` is copy time / variant time; torch's equivalent is timed where it has one.

Run on the device machine from the repository root (needs CuPy; torch optional)::

    python3 benchmarks/kernel_variants.py                 # every case at 64 MiB
    python3 benchmarks/kernel_variants.py --only pool --sizes 64M,256M --out $OUT/variants.txt

A variant whose check fails is reported ``FAIL`` with its error and not timed. For the ops with
a variant table (CircPad, Pool, RoPE, RMSNorm: ``VARIANTS`` in their modules) a variant names a
row, whose kernel, ``-D`` options, arguments and grid rule ("default") it starts from, as the
op's ``plan(..., variant=name)`` does; its own options replace the row's defines of the same
name.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import POINTER, Launch
from pyplugins.runtime.device import current_device, multiprocessors, resident_blocks
from pyplugins.ops import bar as bar_op
from pyplugins.ops import rmsnorm as rmsnorm_op
from pyplugins.ops import seq_repeat as seq_repeat_op
from pyplugins.ops import circ_pad as circ_pad_op
from pyplugins.ops.circ_pad import CircPad
from pyplugins.ops.circ_pad import VARIANTS as CIRC_PAD_VARIANTS
from pyplugins.ops.circ_pad import WARP_ROW_BYTES
from pyplugins.runtime.tactics import choose, find, with_options
from pyplugins.ops.leaky_relu import LeakyReLU
from pyplugins.ops.pool import Pool, output_size
from pyplugins.ops.pool import VARIANTS as POOL_VARIANTS
from pyplugins.ops.pool import PoolFacts
from pyplugins.ops.rope import LAYOUTS, RoPE
from pyplugins.ops.rope import VARIANTS as ROPE_VARIANTS
from pyplugins.ops.rope import RopeFacts, table_tiles
from pyplugins.testing import assert_close

CTYPES = {"float32": "float", "float16": "__half", "int8": "signed char"}


class Variant(NamedTuple):
    """One candidate: compile options, block size, and a grid rule (work threads -> blocks)."""

    name: str
    options: Tuple[str, ...] = ()
    block: int = 256
    grid: str = "default"  # the op module's rule, or "<k>x" resident blocks, or "full"
    kernel: str = ""       # kernel expression ("pool2d<{T}>"), if not the case's


class Built(NamedTuple):
    launch: Launch
    out_shape: Tuple[int, ...]


class Case(NamedTuple):
    """An op at one dtype: its plugin (for the reference), a shape rule and a launch builder."""

    name: str
    dtype: str
    plugin: Any
    shape: Callable[[int], Tuple[int, ...]]         # input bytes -> input shape
    check_shape: Tuple[int, ...]                    # smaller shape, same row geometry
    build: Callable[[Variant, Tuple[int, ...]], Built]
    variants: Tuple[Variant, ...]
    torch: Optional[Callable[[Any], Any]] = None    # torch tensor -> torch result
    kernel_of: Optional[Callable[[Variant], Kernel]] = None  # a variant's kernel, its options


def _plain(source: str, expression: str) -> Callable[[Variant], Kernel]:
    """The kernel of a case without a variant table: ``expression`` (or the variant's own)
    compiled with the variant's options only."""
    return lambda v: Kernel(source, v.kernel or expression, options=v.options)


def _grid(rule: str, needed_blocks: int, default: int, fn: Any, block: int) -> int:
    if rule == "default":
        return max(1, default)
    if rule == "full":
        return max(1, min(needed_blocks, 2**31 - 1))
    waves = float(rule.rstrip("x"))
    return max(1, min(needed_blocks, int(waves * resident_blocks(fn, block))))


# -- cases ------------------------------------------------------------------------------------------

def _nchw(nbytes: int, itemsize: int, side: int = 512) -> Tuple[int, ...]:
    n = nbytes // itemsize
    return (1, n // (side * side), side, side)


def _narrow(nbytes: int, itemsize: int) -> Tuple[int, ...]:
    n = nbytes // itemsize
    return (1, n // (8 * 512), 512, 8)


def leaky_case(dtype: str) -> Case:
    plugin = LeakyReLU(neg_slope=0.01)
    itemsize = np.dtype(dtype).itemsize

    def build(v: Variant, shape: Tuple[int, ...]) -> Built:
        vecs = int(next((o.split("=")[1] for o in v.options if "LEAKY_RELU_VECS" in o), 1))
        fn = Kernel("leaky_relu.cu", "leaky_relu<{T}>", options=v.options).function(CTYPES[dtype])
        n = math.prod(shape)
        needed = -(-n // ((16 // itemsize) * v.block * vecs))
        grid = _grid(v.grid, needed, needed, fn, v.block)
        return Built(Launch(fn, grid=grid, block=v.block, args=(POINTER, POINTER, np.int64(n),
                                                               np.float32(0.01))), shape)

    # default: one vector per thread, a full grid of 256 threads, plain loads and stores; "old"
    # is the former default (512 threads, __ldg loads, __stwb stores).
    ld = {"ld": (), "ldcs": ("-DLEAKY_RELU_LOAD=1",), "ldg": ("-DLEAKY_RELU_LOAD=2",)}
    st = {"st": (), "stwb": ("-DLEAKY_RELU_STORE=1",), "stcs": ("-DLEAKY_RELU_STORE=2",)}
    variants = (Variant("default (b256 ld st)", (), 256),
                Variant("old (b512 ldg stwb)", ld["ldg"] + st["stwb"], 512))
    variants += tuple(Variant(f"b256 {a} {b}", ld[a] + st[b], 256)
                      for a in ld for b in st if (a, b) != ("ld", "st"))
    variants += tuple(Variant(f"b{b} {a} {c}", ld[a] + st[c], b)
                      for b in (128, 512) for a, c in (("ld", "st"), ("ldcs", "stcs")))
    variants += tuple(Variant(f"vecs{u} b{b} {c}", (f"-DLEAKY_RELU_VECS={u}",) + st[c], b)
                      for u in (2, 4) for b in (128, 256) for c in ("st", "stcs"))
    variants += (Variant("b256 4x", (), 256, "4x"),
                 Variant("lean b256", ("-DLEAKY_RELU_LEAN=1",), 256),
                 Variant("lean b512", ("-DLEAKY_RELU_LEAN=1",), 512),
                 Variant("lean b128", ("-DLEAKY_RELU_LEAN=1",), 128))

    def torch_fn(t: Any) -> Any:
        import torch.nn.functional as F
        return F.leaky_relu(t, 0.01)

    return Case(f"LeakyReLU {dtype}", dtype, plugin, lambda b: (b // itemsize // 1024, 1024),
                (257, 1024), build, variants, torch_fn, _plain("leaky_relu.cu", "leaky_relu<{T}>"))


def _row_kernel(row: Any, options: Sequence[str]) -> Kernel:
    """A variant table row's kernel with a variant's compile options over the row's own."""
    return Kernel(row.kernel.source, row.kernel.expression,
                  options=with_options(row.kernel.options, options))


def circ_pad_case(dtype: str, narrow: bool) -> Case:
    pads = [1, 1, 1, 1]
    plugin = CircPad(pads=pads)
    itemsize = np.dtype(dtype).itemsize

    def kernel_of(v: Variant) -> Kernel:
        return _row_kernel(find(CIRC_PAD_VARIANTS, v.kernel or "circ_pad_flat"), v.options)

    def build(v: Variant, shape: Tuple[int, ...]) -> Built:
        plan = circ_pad_op.launch_plan(shape, pads, itemsize)
        # the table's row by name, as CircPad.plan(..., variant=...): refused where it cannot pad
        row = choose(CIRC_PAD_VARIANTS, plan, variant=v.kernel or "circ_pad_flat")
        fn = kernel_of(v).function(CTYPES[dtype])
        needed = row.blocks(plan, v.block)
        if row.name == "circ_pad_flat":  # one thread a vector, FLAT_VECS vectors a thread
            vecs = int(next((o.split("=")[1] for o in v.options if "FLAT_VECS" in o), 1))
            needed = -(-needed // vecs)
        default = row.grid(plan, lambda: resident_blocks(fn, v.block), v.block)
        grid = _grid(v.grid, needed, default, fn, v.block)
        return Built(Launch(fn, grid=grid, block=v.block, args=row.args(plan)), plan.out_shape)

    # circ_pad_flat (CircPad's default where pads touch the last two dims only): the full grid
    # of one vector a thread, then grid-stride grids, vectors a thread, register caps, blocks.
    variants = (
        Variant("default (flat full)"),
        Variant("flat 1x", grid="1x"), Variant("flat 2x", grid="2x"),
        Variant("flat 4x", grid="4x"), Variant("flat 8x", grid="8x"),
        Variant("flat vecs2", ("-DCIRC_PAD_FLAT_VECS=2",)),
        Variant("flat vecs4", ("-DCIRC_PAD_FLAT_VECS=4",)),
        Variant("flat minb6", ("-DCIRC_PAD_FLAT_MINB=6",)),
        Variant("flat minb8", ("-DCIRC_PAD_FLAT_MINB=8",)),
        Variant("flat vecs2 minb6", ("-DCIRC_PAD_FLAT_VECS=2", "-DCIRC_PAD_FLAT_MINB=6")),
        Variant("flat block 128", (), 128), Variant("flat block 512", (), 512),
        Variant("flat no table", ("-DCIRC_PAD_FLAT_TABLE=0",)),
    )
    old = "circ_pad"

    def torch_fn(t: Any) -> Any:
        import torch.nn.functional as F
        return F.pad(t, pads, mode="circular")

    if narrow:  # CircPad.plan takes circ_pad_warp_narrow here, on its row's grids
        nk = "circ_pad_narrow"
        wk = "circ_pad_warp_narrow"
        odometer = ("-DCIRC_PAD_NARROW_TABLE=0",)  # the narrow kernel before its table path
        big = ("-DCIRC_PAD_WN_BLOCK=512",)  # static buffers for 16 warps a block
        variants += (
            Variant("warp narrow (plugin)", kernel=wk),
            Variant("warp narrow 1x", grid="1x", kernel=wk),
            Variant("warp narrow 2x", grid="2x", kernel=wk),
            Variant("warp narrow 4x", grid="4x", kernel=wk),
            Variant("warp narrow 8x", grid="8x", kernel=wk),
            Variant("warp narrow full", grid="full", kernel=wk),
            Variant("warp narrow chunks2", ("-DCIRC_PAD_WN_CHUNKS=2",), kernel=wk),
            Variant("warp narrow chunks8", ("-DCIRC_PAD_WN_CHUNKS=8",), kernel=wk),
            Variant("warp narrow inflight2", ("-DCIRC_PAD_WN_INFLIGHT=2",), kernel=wk),
            Variant("warp narrow minb3", ("-DCIRC_PAD_WN_MINB=3",), kernel=wk),
            Variant("warp narrow minb4", ("-DCIRC_PAD_WN_MINB=4",), kernel=wk),
            Variant("warp narrow pad0", ("-DCIRC_PAD_WN_PAD=0",), kernel=wk),
            Variant("warp narrow b128", (), 128, kernel=wk),
            Variant("warp narrow b512", big, 512, kernel=wk),
        )
        variants += (
            Variant("narrow (plugin)", kernel=nk), Variant("narrow 1x", grid="1x", kernel=nk),
            Variant("narrow 4x", grid="4x", kernel=nk),
            Variant("narrow full", grid="full", kernel=nk),
            Variant("narrow b128", (), 128, kernel=nk),
            Variant("narrow b128 1x", (), 128, "1x", kernel=nk),
            Variant("narrow b512", (), 512, kernel=nk),
            Variant("narrow no pipeline", ("-DCIRC_PAD_PIPELINE=0",), kernel=nk),
            Variant("old narrow odometer 2x", odometer, grid="2x", kernel=nk),
            Variant("old narrow odometer 1x", odometer, grid="1x", kernel=nk),
            Variant("old circ_pad (4x)", grid="4x", kernel=old),
        )
        return Case(f"CircPad-narrow {dtype}", dtype, plugin, lambda b: _narrow(b, itemsize),
                    (1, 7, 512, 8), build, variants, torch_fn, kernel_of)
    variants += (
        Variant("old circ_pad (4x)", grid="4x", kernel=old),
        Variant("old grid 1x", grid="1x", kernel=old),
        Variant("old strips only (4x)", grid="4x", kernel="circ_pad_strips"),
    )
    variants += _warp_variants(512 * itemsize)
    return Case(f"CircPad {dtype}", dtype, plugin, lambda b: _nchw(b, itemsize),
                (1, 3, 512, 512), build, variants, torch_fn, kernel_of)


def _warp_variants(row_bytes: int) -> Tuple[Variant, ...]:
    """circ_pad_warp (CircPad's choice for input rows of 16n bytes up to WARP_ROW_BYTES) on
    rows of `row_bytes`: the plugin's launch, grids, slot sizes (CIRC_PAD_WARP_ROW), rows in
    flight (DEPTH), blocks (BLOCK: the most threads, which sizes its static shared memory, at
    most 48 KiB: BLOCK / 32 * (DEPTH + 1) * (ROW + 32) bytes), register caps (MINB: 0, no cap,
    unless named, where these knobs are set) and plain loads (ASYNC=0); only those whose slots
    hold the row."""
    wk = "circ_pad_warp"

    def fits(block: int, depth: int, row: int) -> bool:
        return row >= row_bytes and block // 32 * (depth + 1) * (row + 32) <= 49152

    def opts(block: int, depth: int, row: int, *more: str) -> Tuple[str, ...]:
        minb = next((m for m in more if "MINB" in m), "-DCIRC_PAD_WARP_MINB=0")
        return (f"-DCIRC_PAD_WARP_BLOCK={block}", f"-DCIRC_PAD_WARP_DEPTH={depth}",
                f"-DCIRC_PAD_WARP_ROW={row}", minb)

    out: List[Variant] = []
    if row_bytes <= WARP_ROW_BYTES:  # the kernel as compiled for the plugin
        out += [Variant("warp (plugin)", kernel=wk)]
        out += [Variant(f"warp {g}", grid=g, kernel=wk) for g in ("2x", "4x", "full")]
        out += [Variant("warp minb0", ("-DCIRC_PAD_WARP_MINB=0",), kernel=wk),
                Variant("warp no cp.async", ("-DCIRC_PAD_WARP_ASYNC=0",), kernel=wk)]
    for row in sorted({row_bytes, 2048, 4096}):
        for block in (128, 256, 512):
            for depth in (1, 2, 3):
                if fits(block, depth, row) and (block, depth, row) != (256, 1, 2048):
                    out.append(Variant(f"warp r{row} b{block} d{depth}",
                                       opts(block, depth, row), block, kernel=wk))
    if fits(256, 1, 1024):
        out += [Variant(f"warp r1024 minb{m}", opts(256, 1, 1024, f"-DCIRC_PAD_WARP_MINB={m}"),
                        kernel=wk) for m in (6, 8)]
        out += [Variant("warp r1024 2x", opts(256, 1, 1024), grid="2x", kernel=wk)]
    return tuple(out)


def pool_case(dtype: str, mode: str, kernel: int, stride: int, pad: int) -> Case:
    fields = dict(mode=mode, kernel=[kernel, kernel], stride=[stride, stride],
                  padding=[pad, pad], in_scale=1.0, out_scale=1.0)
    plugin = Pool(**fields)
    itemsize = np.dtype(dtype).itemsize

    def facts(shape: Tuple[int, ...]) -> PoolFacts:
        n, c, h, w = shape
        ho, wo = output_size(h, kernel, stride, pad), output_size(w, kernel, stride, pad)
        return PoolFacts(plugin.window(), n * c, h, w, ho, wo, itemsize, int(mode == "avg"),
                         1.0, 1.0)

    chosen = choose(POOL_VARIANTS, facts(_nchw(64 << 20, itemsize)))  # the op's row at ratio 1
    block = chosen.block

    def kernel_of(v: Variant) -> Kernel:
        return _row_kernel(find(POOL_VARIANTS, v.kernel or chosen.name), v.options)

    def build(v: Variant, shape: Tuple[int, ...]) -> Built:
        row = find(POOL_VARIANTS, v.kernel or chosen.name)  # as Pool.plan(..., variant=...)
        fn = kernel_of(v).function(CTYPES[dtype])
        f = facts(shape)
        needed = row.blocks(f, v.block)
        default = row.grid(f, lambda: resident_blocks(fn, v.block), v.block)
        grid = _grid(v.grid, needed, default, fn, v.block)
        return Built(Launch(fn, grid=grid, block=v.block, args=row.args(f)),
                     shape[:2] + (f.ho, f.wo))

    other = 256 if block == 128 else 128
    if kernel == 5:  # pool2d_cols (the plugin's rows), pool2d_wide's vector path
        wide, cols = "pool2d_wide", "pool2d_cols"
        ahead, seg, minb = "-DPP_POOL_COLS_AHEAD=", "-DPP_POOL_COLS_S=", "-DPP_POOL_COLS_MINB="
        # pool2d_cols's knobs: block, grid, registers, prefetch, segment rows (one wave unless
        # the grid says otherwise)
        cols_variants = (Variant("cols b128", (), 128, kernel=cols),
                         Variant("cols 2x", (), 256, "2x", kernel=cols),
                         Variant("cols full", (), 256, "full", kernel=cols),
                         Variant("cols minb3", (minb + "3",), 256, kernel=cols),
                         Variant("cols ahead2", (ahead + "2",), 256, kernel=cols),
                         Variant("cols ahead2 minb3", (ahead + "2", minb + "3"), 256, kernel=cols),
                         Variant("cols ahead2 minb2", (ahead + "2", minb + "2"), 256, kernel=cols),
                         Variant("cols S2", (seg + "2",), 256, kernel=cols),
                         Variant("cols S8", (seg + "8",), 256, kernel=cols),
                         Variant("cols S16", (seg + "16",), 256, kernel=cols),
                         Variant("cols S64", (seg + "64",), 256, kernel=cols))
        variants = ((Variant(f"default ({chosen.name} b{block})", (), block),
                     Variant("old default (wide b128)", (), 128, kernel=wide))
                    + cols_variants
                    + (Variant("old wide rows1 u2", ("-DPP_POOL_ROWS_5=1", "-DPP_POOL_UNITS_5=2"),
                               128, kernel=wide),))
    elif chosen.name == "pool2d_i8":
        old = "pool2d"
        variants = (Variant(f"default (simd u2 b{block})", (), block),
                    Variant("simd u1", ("-DPP_POOL_UNITS_I8=1",), block),
                    Variant("simd u4", ("-DPP_POOL_UNITS_I8=4",), block),
                    Variant("simd b256", (), 256), Variant("simd b512", (), 512),
                    Variant("simd 2x", (), block, "2x"), Variant("simd 4x", (), block, "4x"),
                    Variant("old pool2d b256", (), 256, kernel=old),
                    Variant("old pool2d b128", (), 128, kernel=old),
                    Variant("i8 no simd (spills)", ("-DPP_POOL_INT8_SIMD=0",), block))
    else:
        variants = (Variant(f"default (b{block})", (), block),
                    Variant("units_s2 1", ("-DPP_POOL_UNITS_S2=1",), block),
                    Variant("units_s2 2", ("-DPP_POOL_UNITS_S2=2",), block),
                    Variant("units_s2 4", ("-DPP_POOL_UNITS_S2=4",), block),
                    Variant("grid 2x", (), block, "2x"), Variant("grid 4x", (), block, "4x"),
                    Variant(f"block {other}", (), other), Variant("block 512", (), 512))

    def torch_fn(t: Any) -> Any:
        import torch.nn.functional as F
        if mode == "max":
            return F.max_pool2d(t, kernel, stride, pad)
        return F.avg_pool2d(t, kernel, stride, pad, count_include_pad=False)

    label = f"Pool-{mode}-{kernel}x{kernel}s{stride} {dtype}"
    # 5x5: rows of 45 / 90 / 180 chunks (int8 / half / float): column groups that end inside a
    # row (lane-edge halos loaded) and ragged last groups; an odd height (a partial segment)
    check_shape = (1, 3, 131, 720) if kernel == 5 else (1, 5, 128, 512)
    return Case(label, dtype, plugin, lambda b: _nchw(b, itemsize), check_shape, build, variants,
                None if dtype == "int8" else torch_fn, kernel_of)


def rope_case(dtype: str) -> Case:
    plugin = RoPE(rotary_dim=128, theta=10000.0, layout="neox", position_offset=0)
    itemsize = np.dtype(dtype).itemsize
    rope_row = "rope" if itemsize == 4 else "rope_1x"  # the rows rope runs on for this type

    def kernel_of(v: Variant) -> Kernel:
        return _row_kernel(find(ROPE_VARIANTS, v.kernel or rope_row), v.options)

    def build(v: Variant, shape: Tuple[int, ...]) -> Built:
        if v.kernel == "rope_table":
            return build_table(v, shape)
        row = find(ROPE_VARIANTS, v.kernel or rope_row)
        fn = kernel_of(v).function(CTYPES[dtype])
        b, s, heads, head_dim = shape
        hp = int(next((o.split("=")[1] for o in v.options if "PP_ROPE_HEADS" in o),
                      16 if itemsize == 4 else 8))
        items = b * s * -(-heads // hp) * -(-head_dim * itemsize // 16)
        needed = -(-items // v.block)
        default = min(needed, row.waves * resident_blocks(fn, v.block))
        grid = _grid(v.grid, needed, default, fn, v.block)
        f = RopeFacts(b * s, s, heads, head_dim, 128, LAYOUTS["neox"], 0, 10000.0, itemsize)
        return Built(Launch(fn, grid=grid, block=v.block, args=row.args(f)), shape)

    def build_table(v: Variant, shape: Tuple[int, ...]) -> Built:  # as RoPE.plan
        fn = kernel_of(v).function(CTYPES[dtype])
        b, s, heads, head_dim = shape
        units = int(next((o.split("=")[1] for o in v.options if "PP_ROPE_TABLE_UNITS" in o), 2))
        tile_units = table_tile_units.get(v.name, 2 * v.block * units)  # as TILE_UNITS
        tt, th, tiles = table_tiles(b * s, heads, head_dim, 128, itemsize, LAYOUTS["neox"],
                                    units=tile_units)
        grid = _grid(v.grid, tiles, tiles, fn, v.block)  # its row: one block per tile
        args = (POINTER, POINTER, POINTER, np.int64(b * s), np.int32(s), np.int32(heads),
                np.int32(head_dim), np.int32(128), np.int32(LAYOUTS["neox"]), np.int32(0),
                np.float32(10000.0), np.int32(tt), np.int32(th))
        return Built(Launch(fn, grid=grid, block=v.block, args=args), shape)

    # rope_table (RoPE's kernel for half): "table" = its row (2 units a thread, 5 blocks/SM
    # bounds, first loads before the table, a tile of block x units, one block per tile), then
    # one change each.
    tk = "rope_table"
    table_tile_units = {"table tile 256": 256, "table tile 1024": 1024, "table tile 2048": 2048}
    table_variants = (
        Variant("table", kernel=tk),
        Variant("table 1x", grid="1x", kernel=tk), Variant("table 2x", grid="2x", kernel=tk),
        Variant("table 4x", grid="4x", kernel=tk), Variant("table full", grid="full", kernel=tk),
        Variant("table tile 256", kernel=tk), Variant("table tile 1024", kernel=tk),
        Variant("table tile 2048", kernel=tk),
        Variant("table units 1 minb6", ("-DPP_ROPE_TABLE_UNITS=1", "-DPP_ROPE_TABLE_MINB=6"),
                kernel=tk),
        Variant("table units 1 minb8", ("-DPP_ROPE_TABLE_UNITS=1", "-DPP_ROPE_TABLE_MINB=8"),
                kernel=tk),
        Variant("table units 4 minb3", ("-DPP_ROPE_TABLE_UNITS=4", "-DPP_ROPE_TABLE_MINB=3"),
                kernel=tk),
        Variant("table minb4", ("-DPP_ROPE_TABLE_MINB=4",), kernel=tk),
        Variant("table no bounds", ("-DPP_ROPE_TABLE_MINB=0",), kernel=tk),
        Variant("table late loads", ("-DPP_ROPE_TABLE_EARLY=0",), kernel=tk),
        Variant("table block 128", (), 128, kernel=tk),
        Variant("table block 128 full", (), 128, "full", kernel=tk),
    )

    # rope (RoPE's kernel before rope_table; its fallback), as it was compared before:
    # default: batch 2 and grid 4x for float, batch 1 and grid 1x for half; "old" = round 1's
    # default (batch 2, grid 1x) for both.
    variants = (Variant("default"), Variant("old (batch 2, 1x)", ("-DPP_ROPE_BATCH=2",), grid="1x"),
                Variant("grid 1x", grid="1x"),
                Variant("grid 2x", grid="2x"), Variant("grid 4x", grid="4x"),
                Variant("grid full", grid="full"),
                Variant("heads 16", ("-DPP_ROPE_HEADS=16",)),
                Variant("heads 4", ("-DPP_ROPE_HEADS=4",)),
                Variant("batch 1", ("-DPP_ROPE_BATCH=1",)),
                Variant("batch 2", ("-DPP_ROPE_BATCH=2",)),
                Variant("batch 4", ("-DPP_ROPE_BATCH=4",)),
                Variant("heads 16 batch 4", ("-DPP_ROPE_HEADS=16", "-DPP_ROPE_BATCH=4")),
                Variant("block 128", (), 128), Variant("block 128 2x", (), 128, "2x"),
                # every head of an item loaded before its math (half: 8 heads, float: 16)
                Variant("batch all", ("-DPP_ROPE_BATCH=16",)),
                Variant("batch all full", ("-DPP_ROPE_BATCH=16",), grid="full"),
                # fewer heads per item, all in flight, one item per thread (full grid)
                Variant("heads 4 batch 4 full", ("-DPP_ROPE_HEADS=4", "-DPP_ROPE_BATCH=4"),
                        grid="full"),
                Variant("heads 2 batch 2 full", ("-DPP_ROPE_HEADS=2", "-DPP_ROPE_BATCH=2"),
                        grid="full"),
                Variant("heads 8 batch 8 full", ("-DPP_ROPE_HEADS=8", "-DPP_ROPE_BATCH=8"),
                        grid="full")) + table_variants
    per_pos = 8 * 128
    return Case(f"RoPE {dtype}", dtype, plugin,
                lambda nb: (1, nb // itemsize // per_pos, 8, 128), (2, 100, 8, 128), build,
                variants, None, kernel_of)


class _Fixed(NamedTuple):
    """A plugin's reference with its other inputs fixed: ``reference(x)``."""

    plugin: Any
    rest: Tuple[Any, ...]

    def reference(self, x: np.ndarray) -> Tuple[np.ndarray, ...]:
        return self.plugin.reference(x, *self.rest)


class _BarStacked(NamedTuple):
    """BarPlugin's reference for x = [A, B] stacked: [out0, out1] stacked, (3, *A.shape)."""

    plugin: Any

    def reference(self, x: np.ndarray) -> Tuple[np.ndarray]:
        out0, out1 = self.plugin.reference(x[0], x[1])
        return (np.concatenate([out0, out1]).reshape((3,) + x.shape[1:]),)


class _Derived(NamedTuple):
    """A Launch given (x, y) whose pointers are byte offsets into x and y (several tensors of
    an op carved from one input and one output buffer)."""

    launch: Launch
    x_offsets: Tuple[int, ...]
    y_offsets: Tuple[int, ...]

    @property
    def grid(self) -> Tuple[int, ...]:
        return self.launch.grid

    def __call__(self, stream: int, x: int, y: int) -> None:
        self.launch(stream, *(x + o for o in self.x_offsets), *(y + o for o in self.y_offsets))


def _stream_grid(rule: str, needed: int, fn: Any, block: int) -> int:
    """A grid rule of the streaming cases: "default"/"full" the full grid (``needed``), "sm32"
    the former 32 blocks per multiprocessor (grid-stride), else as :func:`_grid`."""
    if rule == "sm32":
        return max(1, min(needed, 32 * multiprocessors(current_device())))
    return _grid(rule, needed, needed, fn, block)


def rmsnorm_case(dtype: str) -> Case:
    d = 4096

    def kernel_of(v: Variant) -> Kernel:  # the op's kernel, the variant's options over its own
        return _row_kernel(find(rmsnorm_op.VARIANTS, "rmsnorm"), v.options)

    plugin = rmsnorm_op.RMSNorm(eps=1e-6)
    itemsize = np.dtype(dtype).itemsize
    w_host = (np.random.default_rng(5).standard_normal(d) * 0.5 + 1.0).astype(dtype)
    w_dev: Dict[str, Any] = {}

    def build(v: Variant, shape: Tuple[int, ...]) -> Built:
        import cupy as cp
        if "w" not in w_dev:
            w_dev["w"] = cp.asarray(w_host)
        fn = kernel_of(v).function(CTYPES[dtype])
        rows = math.prod(shape[:-1])
        needed = rmsnorm_op.grid_size(rows, d, itemsize, v.block)
        grid = _stream_grid(v.grid, needed, fn, v.block)
        args = (POINTER, np.uint64(w_dev["w"].data.ptr), POINTER, np.int64(rows), np.int32(d),
                np.float32(1e-6))
        return Built(Launch(fn, grid=grid, block=v.block, args=args), shape)

    late = ("-DPP_RMSNORM_EARLY_WEIGHT=0",)
    variants = (Variant("default (full, early w)"),
                Variant("old (late w, 32/SM)", late, grid="sm32"),
                Variant("late weight", late), Variant("grid 32/SM", grid="sm32"),
                Variant("grid 2x", grid="2x"), Variant("grid 4x", grid="4x"),
                Variant("cached 2", ("-DPP_RMSNORM_CACHED=2",)),
                Variant("cached 2 b512", ("-DPP_RMSNORM_CACHED=2",), 512),
                Variant("block 128", (), 128), Variant("block 512", (), 512),
                Variant("maxrreg 40", ("--maxrregcount=40",)))

    def torch_fn(t: Any) -> Any:
        import torch.nn.functional as F
        return F.rms_norm(t, (d,), eps=1e-6)

    return Case(f"RMSNorm {dtype}", dtype, _Fixed(plugin, (w_host,)),
                lambda b: (b // itemsize // d, d), (37, d), build, variants, torch_fn,
                kernel_of)


def seq_repeat_case(dtype: str) -> Case:
    width, factor = 1024, 2
    plugin = seq_repeat_op.SeqRepeat(factor=factor)
    itemsize = np.dtype(dtype).itemsize

    def kernel_of(v: Variant) -> Kernel:  # the op's kernel, the variant's options over its own
        kernel = seq_repeat_op.SeqRepeat.kernel
        return Kernel(kernel.source, kernel.expression,
                      options=with_options(kernel.options, v.options))

    def build(v: Variant, shape: Tuple[int, ...]) -> Built:
        fn = kernel_of(v).function(CTYPES[dtype])
        d0, length, inner = shape
        unroll = int(next((o.split("=")[1] for o in v.options if "UNROLL" in o), 1))
        needed = -(-d0 * length * inner // (16 // itemsize * v.block * unroll))
        grid = _stream_grid(v.grid, needed, fn, v.block)
        args = (POINTER, POINTER, np.int64(d0), np.int64(length), np.int64(inner),
                np.int32(factor))
        return Built(Launch(fn, grid=grid, block=v.block, args=args),
                     (d0, length * factor, inner))

    u = {k: (f"-DPP_SEQ_REPEAT_UNROLL={k}",) for k in (2, 4)}
    variants = (Variant("default (u1 full)"), Variant("old (u2, 32/SM)", u[2], grid="sm32"),
                Variant("u2 full", u[2]), Variant("u4 full", u[4]),
                Variant("grid 32/SM", grid="sm32"), Variant("grid 4x", grid="4x"),
                Variant("block 128", (), 128), Variant("block 512", (), 512))

    def torch_fn(t: Any) -> Any:
        return t.repeat_interleave(factor, dim=1)

    return Case(f"SeqRepeat {dtype}", dtype, plugin,
                lambda b: (1, b // itemsize // width, width), (2, 100, width), build, variants,
                torch_fn, kernel_of)


def bar_case(dtype: str) -> Case:
    """A and B of the same shape, carved from one input (x[0], x[1]); out0 and out1 from one
    output (y[0:2], y[2])."""
    width = 1024
    plugin = bar_op.BarPlugin()
    itemsize = np.dtype(dtype).itemsize

    def kernel_of(v: Variant) -> Kernel:  # the op's kernel, the variant's options over its own
        kernel = bar_op.BarPlugin.kernel
        return Kernel(kernel.source, kernel.expression,
                      options=with_options(kernel.options, v.options))

    def build(v: Variant, shape: Tuple[int, ...]) -> Built:
        fn = kernel_of(v).function(CTYPES[dtype])
        half = math.prod(shape[1:])
        unroll = int(next((o.split("=")[1] for o in v.options if "UNROLL" in o), bar_op.UNROLL))
        needed = -(-2 * half // (16 // itemsize * v.block * unroll))
        grid = _stream_grid(v.grid, needed, fn, v.block)
        launch = Launch(fn, grid=grid, block=v.block,
                        args=(POINTER, POINTER, POINTER, POINTER, np.int64(half),
                              np.int64(half)))
        step = half * itemsize
        return Built(_Derived(launch, (0, step), (0, 2 * step)), (3,) + tuple(shape[1:]))

    u = {k: (f"-DPP_BAR_UNROLL={k}",) for k in (1, 2, 4)}
    nosplit = ("-DPP_BAR_SPLIT=0",)
    variants = (Variant(f"default (split u{bar_op.UNROLL} full)"),
                Variant("old (no split u4 32/SM)", nosplit + u[4], grid="sm32"),
                Variant("no split", nosplit), Variant("u1", u[1]), Variant("u4", u[4]),
                Variant("grid 32/SM", grid="sm32"), Variant("grid 4x", grid="4x"),
                Variant("block 128", (), 128), Variant("block 512", (), 512))

    def torch_fn(t: Any) -> Any:
        import torch
        return torch.cat([t[0], t[1]]), t[1].clone()

    return Case(f"BarPlugin {dtype}", dtype, _BarStacked(plugin),
                lambda b: (2, b // itemsize // 2 // width, width), (2, 100, width), build,
                variants, torch_fn, kernel_of)


def all_cases() -> List[Case]:
    cases: List[Case] = []
    for dt in ("float32", "float16"):
        cases.append(leaky_case(dt))
    for dt in ("float32", "float16"):
        cases += [circ_pad_case(dt, False), circ_pad_case(dt, True)]
    cases += [rope_case("float16"), rope_case("float32")]
    for dt in ("float32", "float16"):
        cases += [rmsnorm_case(dt), seq_repeat_case(dt), bar_case(dt)]
    for dt in ("int8", "float32", "float16"):
        for mode in ("avg", "max"):
            cases.append(pool_case(dt, mode, 2, 2, 0))
            cases.append(pool_case(dt, mode, 5, 2, 2))
    return cases


def _compile_one(job: Tuple[str, str, Tuple[str, ...], str]) -> str:
    source, expr, options, ctype = job
    try:
        Kernel(source, expr, options=options).function(ctype)
        return ""
    except Exception as exc:  # noqa: BLE001 - reported; the variant then fails its check with the same error
        return f"{source} {expr} {ctype} {options}: {str(exc).splitlines()[0][:120]}"


def precompile(cases: Sequence[Case], workers: int) -> None:
    """Compile every variant's kernel in parallel processes, filling CuPy's on-disk cache, so that
    the timing process only loads them (NVRTC takes seconds per pool.cu variant)."""
    import concurrent.futures
    import multiprocessing
    kernels = [(c.kernel_of(v), CTYPES[c.dtype]) for c in cases for v in c.variants]
    jobs = sorted({(k.source, k.expression, k.options, ctype) for k, ctype in kernels})
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        for err in pool.map(_compile_one, jobs):
            if err:
                print(f"# compile failed: {err}", file=sys.stderr)


# -- running ----------------------------------------------------------------------------------------

def random_input(cp: Any, shape: Tuple[int, ...], dtype: str, seed: int) -> Any:
    rng = cp.random.default_rng(seed)
    if dtype == "int8":
        return rng.integers(-128, 128, size=shape).astype(cp.int8)
    return rng.standard_normal(size=shape, dtype=cp.float32).astype(dtype)


def check(cp: Any, case: Case, v: Variant, seed: int) -> None:
    x = random_input(cp, case.check_shape, case.dtype, seed)
    built = case.build(v, case.check_shape)
    y = cp.empty(built.out_shape, dtype=case.dtype)
    y.view(cp.uint8).fill(0xA5)  # poison
    built.launch(cp.cuda.get_current_stream().ptr, *_ptrs(case, x, y))
    cp.cuda.get_current_stream().synchronize()
    expected = case.plugin.reference(cp.asnumpy(x))[0]
    got = cp.asnumpy(y)
    if case.dtype == "int8":
        bad = np.flatnonzero(got != expected)
        if bad.size:
            raise AssertionError(f"{bad.size} int8 outputs differ, first at {bad[0]}: "
                                 f"{got.flat[bad[0]]} != {expected.flat[bad[0]]}")
    elif "CircPad" in case.name:
        if not np.array_equal(got.view(np.uint8), expected.view(np.uint8)):
            raise AssertionError("CircPad output differs from np.pad(mode='wrap')")
    else:
        assert_close(got, expected, np.dtype(case.dtype), what=case.name)


def _ptrs(case: Case, x: Any, y: Any) -> Tuple[int, ...]:
    if case.name.startswith("RoPE"):
        return (x.data.ptr, 0, y.data.ptr)
    return (x.data.ptr, y.data.ptr)


def time_batches(cp: Any, run: Callable[[int], None], sets: int, reps: int = 30,
                 batch: int = 10) -> float:
    """Median milliseconds per call: `reps` batches of `batch` calls cycling over `sets`."""
    stream = cp.cuda.get_current_stream()
    for i in range(3 * sets):
        run(i % sets)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    k = 0
    for _ in range(reps):
        start.record(stream)
        for _ in range(batch):
            run(k % sets)
            k += 1
        stop.record(stream)
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / batch)
    return float(np.median(times))


_COPY_SRC = r"""
extern "C" __global__ void copy16(const uint4* __restrict__ x, uint4* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long step = (long long)gridDim.x * blockDim.x;
    for (; i < n; i += step) y[i] = x[i];
}
"""


def copy_ms(cp: Any, nbytes: int, sets: int) -> Tuple[float, str]:
    """Fastest of cudaMemcpyAsync and a 16-byte copy kernel moving nbytes (read nbytes, write
    nbytes), over rotating buffers."""
    nbytes = (nbytes + 15) // 16 * 16
    srcs = [cp.empty(nbytes, cp.uint8) for _ in range(sets)]
    dsts = [cp.empty(nbytes, cp.uint8) for _ in range(sets)]
    for s in srcs:
        s.fill(7)
    stream = cp.cuda.get_current_stream()
    kind = cp.cuda.runtime.memcpyDeviceToDevice
    t_memcpy = time_batches(cp, lambda i, srcs=srcs, dsts=dsts: cp.cuda.runtime.memcpyAsync(
        dsts[i].data.ptr, srcs[i].data.ptr, nbytes, kind, stream.ptr), sets)
    fn = cp.RawKernel(_COPY_SRC, "copy16")
    n16 = nbytes // 16
    grid = min(-(-n16 // 256), 2**31 - 1)  # one vector per thread: the fastest copy measured
    t_kernel = time_batches(cp, lambda i, srcs=srcs, dsts=dsts: fn(
        (grid,), (256,), (srcs[i], dsts[i], np.int64(n16))), sets)
    del srcs, dsts
    return (t_memcpy, "memcpy") if t_memcpy <= t_kernel else (t_kernel, "copy kernel")


def run_case(cp: Any, case: Case, nbytes: int, l2: int, torch: Any, log: Any) -> List[str]:
    shape = case.shape(nbytes)
    rows: List[str] = []
    first = case.build(case.variants[0], shape)
    in_bytes = math.prod(shape) * np.dtype(case.dtype).itemsize
    out_bytes = math.prod(first.out_shape) * np.dtype(case.dtype).itemsize
    moved = in_bytes + out_bytes
    sets = max(2, -(-3 * l2 // moved))
    base_ms, base_kind = copy_ms(cp, moved // 2, sets)
    xs = [random_input(cp, shape, case.dtype, 100 + i) for i in range(sets)]
    ys = [cp.empty(first.out_shape, dtype=case.dtype) for _ in range(sets)]
    label = f"{case.name} {nbytes >> 20}MiB"
    print(f"# {label}: input {shape}, output {first.out_shape}, moved {moved / 2**20:.1f} MiB, "
          f"copy {base_ms * 1e3:.1f} us ({base_kind}), {sets} buffer sets", file=log, flush=True)
    for i, v in enumerate(case.variants):
        try:
            check(cp, case, v, seed=int(time.time_ns() % 2**31) + i)
            built = case.build(v, shape)
            stream = cp.cuda.get_current_stream().ptr
            ms = time_batches(cp, lambda k, built=built, stream=stream, xs=xs, ys=ys:
                              built.launch(stream, *_ptrs(case, xs[k], ys[k])), sets)
            grid = built.launch.grid[0]
            rows.append(f"{label:34s} {v.name:22s} {ms * 1e3:9.1f} us  {base_ms / ms:5.2f}"
                        f"  grid {grid}")
        except Exception as exc:  # noqa: BLE001 - a failing variant is reported, the others still run
            rows.append(f"{label:34s} {v.name:22s}      FAIL  {type(exc).__name__}: "
                        f"{str(exc).splitlines()[0][:90]}")
        print(rows[-1], file=log, flush=True)
    if torch is not None and case.torch is not None:
        try:
            ts = [torch.as_tensor(x, device="cuda") for x in xs]
            tms = time_batches(cp, lambda k: case.torch(ts[k]), sets)
            rows.append(f"{label:34s} {'torch':22s} {tms * 1e3:9.1f} us  {base_ms / tms:5.2f}")
        except Exception as exc:  # noqa: BLE001 - a torch failure is reported in its row
            rows.append(f"{label:34s} {'torch':22s}      FAIL  {type(exc).__name__}: {exc}"[:160])
        print(rows[-1], file=log, flush=True)
    del xs, ys
    cp.get_default_memory_pool().free_all_blocks()
    return rows


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64M", help="input sizes, comma separated (64M, 256M)")
    ap.add_argument("--only", default="", help="comma-separated substrings of case names")
    ap.add_argument("--out", default="", help="also write the full log to this file")
    ap.add_argument("--jobs", type=int, default=12, help="parallel compile processes")
    args = ap.parse_args(argv)
    import cupy as cp
    try:
        import torch
        if not torch.cuda.is_available():
            torch = None
    except ImportError:
        torch = None
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    l2 = int(props["l2CacheSize"])
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    log = open(args.out, "w") if args.out else sys.stderr
    print(f"# {name}, {props['multiProcessorCount']} SMs, L2 {l2 >> 20} MiB; frac = copy time "
          f"/ variant time (same bytes)", file=log, flush=True)
    sizes = [int(s.rstrip("M")) << 20 for s in args.sizes.split(",")]
    only = [s.lower() for s in args.only.split(",") if s]
    cases = [c for c in all_cases() if not only or any(s in c.name.lower() for s in only)]
    t0 = time.time()
    precompile(cases, args.jobs)
    print(f"# compiled in {time.time() - t0:.0f} s", file=log, flush=True)
    table: List[str] = []
    for case in cases:
        for nb in sizes:
            table += run_case(cp, case, nb, l2, torch, log)
    print(f"\n# {name}: case, variant, time, fraction of copy bandwidth, grid")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
