"""GPU checks of the catalogue kernels (bar, pool2d, rope, rmsnorm, seq_repeat) against NumPy.

Each kernel is compiled through :class:`pyplugins.runtime.kernels.Kernel` and launched directly as a
CuPy RawKernel with the argument order of its launch contract (``kernels_cu/*.cu`` headers), on
fresh random inputs, for every instantiated dtype, odd sizes and empty tensors included. Outputs
live inside a larger poisoned buffer (NaN for floats; two runs with 0x7f and 0x80 for integers)
so that an unwritten element, or a write past the end, fails. Cases with ``offset=1`` start the
tensors one element past a 16-byte boundary, which drives the kernels' unaligned paths.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyplugins.runtime.kernels import Kernel
from pyplugins.ops import BarPlugin, Pool, RMSNorm, RoPE, SeqRepeat
from pyplugins.ops.rope import LAYOUTS
from pyplugins.testing import assert_close
from tests.test_kernels_compile import shared_options

pytestmark = pytest.mark.gpu

BLOCK = 256
GUARD = 64  # poisoned elements after each output, to catch writes past the end

CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float16): "__half",
          np.dtype(np.int8): "signed char", np.dtype(np.int32): "int"}


@pytest.fixture
def rng():
    return np.random.default_rng()


def _cp():
    import cupy  # GPU tests only

    return cupy


def _function(source: str, expression: str, dtype) -> object:
    """``expression`` of ``source`` compiled with the -D options every shipped kernel of that
    file gets (the constants it shares with its op)."""
    return Kernel(source, expression, options=shared_options(source)).function(
        CTYPES[np.dtype(dtype)])


def _grid(work_items: int) -> int:
    """Blocks for `work_items` threads, capped at 32 per SM (kernels grid-stride); at least 1,
    so that empty work still launches and the kernels' own bounds checks are exercised."""
    sms = _cp().cuda.Device().attributes["MultiProcessorCount"]
    return max(1, min(math.ceil(work_items / BLOCK), 32 * sms))


def _random(rng, shape, dtype, scale=1.0):
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, size=shape, dtype=dtype)
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _device(x: np.ndarray, offset: int = 0):
    """`x` on the device, starting `offset` elements into a fresh (256-byte aligned) buffer."""
    cp = _cp()
    buf = cp.empty(x.size + offset + 1, dtype=x.dtype)
    view = buf[offset:offset + x.size].reshape(x.shape)
    view[...] = cp.asarray(x)
    return view


def _poisons(dtype):
    dtype = np.dtype(dtype)
    return [np.nan] if dtype.kind == "f" else [0x7f, -0x80]


class _Outputs:
    """Output arrays inside poisoned buffers with a guard after each."""

    def __init__(self, shapes, dtype, offset=0):
        cp = _cp()
        self.dtype = np.dtype(dtype)
        self.buffers, self.arrays = [], []
        for shape in shapes:
            n = math.prod(shape)
            buf = cp.empty(n + offset + GUARD, dtype=self.dtype)
            self.buffers.append((buf, offset, n))
            self.arrays.append(buf[offset:offset + n].reshape(shape))

    def run(self, launch):
        """Launch once per poison; every run must give the same, fully written outputs."""
        cp = _cp()
        results = None
        for poison in _poisons(self.dtype):
            for buf, _, _ in self.buffers:
                buf.fill(poison)
            launch(*self.arrays)
            cp.cuda.runtime.deviceSynchronize()
            for buf, offset, n in self.buffers:
                host = buf.get()
                untouched = np.concatenate([host[:offset], host[offset + n:]])
                poisoned = (np.isnan(untouched) if np.isnan(poison)
                            else untouched == np.asarray(poison).astype(self.dtype))
                assert poisoned.all(), "the kernel wrote outside its output"
            got = [a.get() for a in self.arrays]
            if results is not None:
                for a, b in zip(results, got):
                    np.testing.assert_array_equal(a, b, err_msg="an output element was left unwritten")
            results = got
        return results


# -- bar -----------------------------------------------------------------------------------------

BAR_CASES = [((1000, 2000), (33,)), ((3, 5), (7,)), ((0, 17), (5,)), ((4, 0), (3,)), ((0, 0), (2,)),
             ((257, 129), (16, 3)), ((2, 3), ())]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32])
@pytest.mark.parametrize("rows, rest", BAR_CASES)
@pytest.mark.parametrize("offset", [0, 1])
def test_bar(rng, dtype, rows, rest, offset):
    a = _random(rng, (rows[0],) + rest, dtype)
    b = _random(rng, (rows[1],) + rest, dtype)
    want0, want1 = BarPlugin().reference(a, b)
    fn = _function("bar.cu", "bar<{T}>", dtype)
    da, db = _device(a, offset), _device(b)
    outs = _Outputs([want0.shape, want1.shape], dtype, offset)
    work = (a.size + b.size) * a.itemsize // 16

    def launch(o0, o1):
        fn((_grid(work),), (BLOCK,), (da, db, o0, o1, np.int64(a.size), np.int64(b.size)))

    got0, got1 = outs.run(launch)
    np.testing.assert_array_equal(got0, want0)
    np.testing.assert_array_equal(got1, want1)


# -- seq_repeat ----------------------------------------------------------------------------------

SEQ_CASES = [((2, 5, 8), 3), ((3, 7), 2), ((2, 3, 5, 3), 4), ((0, 5, 4), 2), ((4, 33, 64), 1),
             ((2, 9, 16), 5), ((3, 0, 8), 3), ((1, 1, 1), 7)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32])
@pytest.mark.parametrize("shape, factor", SEQ_CASES)
@pytest.mark.parametrize("offset", [0, 1])
def test_seq_repeat(rng, dtype, shape, factor, offset):
    x = _random(rng, shape, dtype)
    (want,) = SeqRepeat(factor=factor).reference(x)
    fn = _function("seq_repeat.cu", "seq_repeat<{T}>", dtype)
    dx = _device(x, offset)
    outs = _Outputs([want.shape], dtype, offset)
    inner = math.prod(shape[2:])

    def launch(y):
        fn((_grid(want.size * x.itemsize // 16),), (BLOCK,),
           (dx, y, np.int64(shape[0]), np.int64(shape[1]), np.int64(inner), np.int32(factor)))

    (got,) = outs.run(launch)
    np.testing.assert_array_equal(got, want)


# -- rmsnorm -------------------------------------------------------------------------------------

RMS_SHAPES = [(7, 64), (3, 5, 1000), (13, 4096), (9, 3), (0, 128), (4, 20000), (1, 1), (6, 520),
              (33, 8), (2, 12289)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape", RMS_SHAPES)
@pytest.mark.parametrize("offset", [0, 1])
def test_rmsnorm(rng, dtype, shape, offset):
    x = _random(rng, shape, dtype)
    w = _random(rng, shape[-1:], dtype)
    eps = 1e-5
    (want,) = RMSNorm(eps=eps).reference(x, w)
    fn = _function("rmsnorm.cu", "rmsnorm<{T}>", dtype)
    dx, dw = _device(x, offset), _device(w)
    outs = _Outputs([want.shape], dtype, offset)
    d = shape[-1]
    rows = x.size // d

    def launch(y):
        fn((max(1, min(rows, 64)),), (BLOCK,), (dx, dw, y, np.int64(rows), np.int32(d), np.float32(eps)))

    (got,) = outs.run(launch)
    assert_close(got, want, dtype, what=f"rmsnorm {shape} offset {offset}")


def test_rmsnorm_other_block_sizes(rng):
    x = _random(rng, (37, 4104), np.float32)
    w = _random(rng, (4104,), np.float32)
    (want,) = RMSNorm(eps=1e-6).reference(x, w)
    fn = _function("rmsnorm.cu", "rmsnorm<{T}>", np.float32)
    dx, dw = _device(x), _device(w)
    for block in (32, 96, 1024):
        outs = _Outputs([x.shape], np.float32)

        def launch(y, block=block):
            fn((5,), (block,), (dx, dw, y, np.int64(37), np.int32(4104), np.float32(1e-6)))

        (got,) = outs.run(launch)
        assert_close(got, want, np.float32, what=f"block {block}")


# -- rope ----------------------------------------------------------------------------------------

# (batch, seq, heads, head_dim, rotary_dim, position_offset)
ROPE_CASES = [(2, 7, 3, 64, 64, 0), (1, 5, 9, 80, 32, 17), (3, 4, 2, 10, 6, 1), (0, 4, 2, 8, 8, 0),
              (2, 600, 2, 16, 16, 3000), (1, 3, 17, 128, 128, 5), (2, 3, 1, 7, 4, 2),
              (2, 5, 40, 64, 32, 9),            # many heads, more than two batches per item
              (1, 2, 3, 32, 32, 200000)]        # angles past sincosf's fast range (1e5 rad)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", ROPE_CASES)
@pytest.mark.parametrize("layout", ["neox", "gptj"])
@pytest.mark.parametrize("positions_input", [False, True])
@pytest.mark.parametrize("grid", ["suggested", "one"])
def test_rope(rng, dtype, case, layout, positions_input, grid):
    batch, seq, heads, head_dim, rotary_dim, offset = case
    x = _random(rng, (batch, seq, heads, head_dim), dtype)
    positions = None
    if positions_input:
        positions = rng.integers(0, 4096, size=(batch, seq), dtype=np.int32)
    theta = 10000.0 if head_dim % 2 else 500000.0
    # With a positions input the kernel ignores the offset; the plugin (and its reference)
    # refuse one, so the reference gets 0.
    plugin = RoPE(rotary_dim=rotary_dim, theta=theta, layout=layout,
                  position_offset=0 if positions_input else offset)
    (want,) = plugin.reference(x, positions)
    fn = _function("rope.cu", "rope<{T}>", dtype)
    dx = _device(x, offset % 2)
    dpos = _device(positions) if positions is not None else None
    outs = _Outputs([want.shape], dtype, offset % 2)
    items = batch * seq * math.ceil(heads / 8) * head_dim
    blocks = 1 if grid == "one" else _grid(items)  # one block: many items per thread

    def launch(y):
        fn((blocks,), (BLOCK,),
           (dx, dpos if dpos is not None else np.uint64(0), y, np.int64(batch * seq), np.int32(seq),
            np.int32(heads), np.int32(head_dim), np.int32(rotary_dim),
            np.int32(LAYOUTS[layout]), np.int32(offset), np.float32(theta)))

    (got,) = outs.run(launch)
    assert_close(got, want, dtype, what=f"rope {case} {layout}")


# -- pool2d --------------------------------------------------------------------------------------

# (shape, kernel, stride, padding)
POOL_CASES = [((2, 3, 8, 8), (2, 2), (2, 2), (0, 0)),
              ((2, 5, 17, 23), (3, 3), (2, 2), (1, 1)),
              ((1, 3, 9, 10), (3, 2), (1, 2), (2, 1)),
              ((0, 3, 8, 8), (2, 2), (2, 2), (0, 0)),
              ((1, 1, 2, 2), (3, 3), (1, 1), (0, 0)),     # window larger than the input: empty
              ((4, 16, 33, 31), (2, 2), (1, 1), (1, 1)),
              ((1, 2, 5, 40), (1, 7), (1, 3), (0, 6)),
              ((1, 2, 37, 2000), (2, 2), (2, 2), (0, 0)),
              ((1, 2, 6, 8191), (2, 2), (2, 2), (0, 0)),
              ((2, 2, 9, 7), (1, 2), (3, 3), (0, 1)),      # stride > kernel
              # vector paths (x 16-byte aligned, W * itemsize a multiple of 16):
              ((2, 3, 19, 48), (3, 3), (2, 2), (1, 1)),    # 3x3/2 pad 1, odd H
              ((2, 3, 13, 64), (3, 3), (1, 1), (1, 1)),    # 3x3/1 pad 1, odd H (row groups)
              ((1, 2, 7, 16), (3, 3), (1, 1), (1, 1)),     # one chunk per row (int8)
              ((3, 2, 10, 32), (2, 2), (2, 2), (1, 0)),    # 2x2/2, rows padded
              ((2, 2, 11, 80), (3, 3), (2, 2), (2, 1))]    # 3x3/2, ph 2



def _pool(mode, kernel, stride, padding, in_scale, out_scale):
    """The Pool plugin whose reference states what pool2d computes for these arguments."""
    return Pool(mode=mode, kernel=list(kernel), stride=list(stride), padding=list(padding),
                in_scale=in_scale, out_scale=out_scale)

@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("scales", [(1.0, 1.0), (0.05, 0.1)])
@pytest.mark.parametrize("grid", ["suggested", "three"])
def test_pool2d(rng, dtype, case, mode, scales, grid):
    shape, kernel, stride, padding = case
    if np.dtype(dtype) == np.int8:
        x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    else:
        x = _random(rng, shape, dtype)
        if scales != (1.0, 1.0):
            pytest.skip("scales apply to int8 only")
    (want,) = _pool(mode, kernel, stride, padding, *scales).reference(x)
    fn = _function("pool.cu", "pool2d<{T}>", dtype)
    dx = _device(x)
    outs = _Outputs([want.shape], dtype)
    nc = math.prod(shape[:-2])
    h, w = shape[-2:]
    ho, wo = want.shape[-2:]
    blocks = 3 if grid == "three" else _grid(math.ceil(want.size / 4))

    def launch(y):
        fn((blocks,), (BLOCK,),
           (dx, y, np.int64(nc), np.int32(h), np.int32(w), np.int32(ho), np.int32(wo),
            np.int32(kernel[0]), np.int32(kernel[1]), np.int32(stride[0]), np.int32(stride[1]),
            np.int32(padding[0]), np.int32(padding[1]), np.int32(0 if mode == "max" else 1),
            np.float32(scales[0]), np.float32(scales[1])))

    (got,) = outs.run(launch)
    if np.dtype(dtype) == np.int8 and mode == "max" and scales[0] == scales[1]:
        np.testing.assert_array_equal(got, want)  # exact in int8
    else:
        assert_close(got, want, dtype, what=f"pool2d {mode} {case}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
@pytest.mark.parametrize("x_offset, y_offset", [(0, 1), (1, 0)])
@pytest.mark.parametrize("kernel, stride, padding", [((2, 2), (2, 2), (0, 0)), ((3, 3), (2, 2), (1, 1)),
                                                     ((3, 3), (1, 1), (1, 1))])
def test_pool2d_unaligned(rng, dtype, x_offset, y_offset, kernel, stride, padding):
    """A misaligned y makes the vector path store element-wise; a misaligned x takes the
    generic path. Both must still give every output."""
    shape = (2, 3, 9, 64)
    if np.dtype(dtype) == np.int8:
        x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    else:
        x = _random(rng, shape, dtype)
    fn = _function("pool.cu", "pool2d<{T}>", dtype)
    dx = _device(x, x_offset)
    for mode in ("max", "avg"):
        (want,) = _pool(mode, kernel, stride, padding, 0.05, 0.1).reference(x)
        outs = _Outputs([want.shape], dtype, y_offset)
        ho, wo = want.shape[-2:]

        def launch(y, mode=mode, ho=ho, wo=wo, want=want):
            fn((_grid(math.ceil(want.size / 4)),), (BLOCK,),
               (dx, y, np.int64(6), np.int32(9), np.int32(64), np.int32(ho), np.int32(wo),
                np.int32(kernel[0]), np.int32(kernel[1]), np.int32(stride[0]), np.int32(stride[1]),
                np.int32(padding[0]), np.int32(padding[1]), np.int32(0 if mode == "max" else 1),
                np.float32(0.05), np.float32(0.1)))

        (got,) = outs.run(launch)
        assert_close(got, want, dtype, what=f"pool2d {mode} {kernel} offsets {x_offset}, {y_offset}")
