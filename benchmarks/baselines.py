"""Section 3's roofline: the fastest of several ways of moving a record's bytes, per size, same run.

Three baselines move the bytes a record's op moves, each timed like the op (CUDA events around
replays of captured graphs, rotating over the same number of buffer sets):

- ``memcpy``: ``cudaMemcpyAsync`` device to device of half the bytes (read, then written), in
  pieces of at most 256 MiB: on an H200 one graph memcpy node of >= 512 MiB ran at 2.76 TB/s
  against 4.2 TB/s for the same copy in <= 256 MiB nodes;
- ``copy_kernel``: a copy kernel moving the same bytes in the fastest structure measured on an
  H200 (one 16-byte vector per thread, a full grid of 256-thread blocks, plain loads and
  stores: cudaMemcpy speed, 4.24 TB/s at 1 GiB, where a grid-stride loop over a grid of 16
  blocks per multiprocessor measured 3.95);
- ``shape_copy``: a kernel with the op's own shape: it reads the op's input bytes once and
  writes its output bytes once (when the input is larger, each output vector is the XOR of the
  input vectors that fold onto it; when the output is larger, each input vector is written to
  every output vector it repeats into), one thread per vector of the smaller side, full grid.

A record's roofline is the fastest baseline (the highest bytes per second).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from benchmarks import timing

#: Largest piece of one cudaMemcpyAsync node.
MAX_PIECE = 256 << 20
NAMES = ("memcpy", "copy_kernel", "shape_copy")
#: Threads per block of both kernels.
THREADS = 256
#: CUDA's limit on a grid's x dimension.
MAX_BLOCKS = 2**31 - 1
_SOURCE = r"""
extern "C" __global__ void pp_copy16(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                     long long n) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

extern "C" __global__ void pp_shape16(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                      long long n_in, long long n_out) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (n_in >= n_out) {
        if (i >= n_out) return;
        uint4 acc = src[i];
        for (long long k = i + n_out; k < n_in; k += n_out) {
            const uint4 v = src[k];
            acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
        }
        dst[i] = acc;
    } else {
        if (i >= n_in) return;
        const uint4 v = src[i];
        for (long long k = i; k < n_out; k += n_in) dst[k] = v;
    }
}
"""


def copy_bytes(moved: int) -> int:
    """Bytes each copy baseline moves (read, and again written): half of ``moved``, rounded down
    to a whole MiB above 2 MiB (else to 4 KiB). On an H100 a copy of 256 MiB + 4 KiB ran at 0.8
    of the speed of 256 MiB; bandwidth is computed from the bytes actually copied."""
    half = moved // 2
    grain = 1 << 20 if half >= 2 << 20 else 4096
    return max(grain, half // grain * grain)


def pieces(nbytes: int, limit: int = MAX_PIECE) -> List[Tuple[int, int]]:
    """(offset, size) pieces of at most ``limit`` bytes covering ``nbytes``."""
    return [(o, min(limit, nbytes - o)) for o in range(0, nbytes, limit)] or [(0, 0)]


def _module() -> Any:
    import cupy as cp

    return cp.RawModule(code=_SOURCE, options=("-std=c++17",))


def full_grid(n16: int) -> int:
    """Blocks of ``THREADS`` threads for one 16-byte vector per thread over ``n16`` vectors (the
    kernels have no loop, so every vector needs its thread).

    Raises:
        ValueError: more vectors than a grid of ``MAX_BLOCKS`` blocks has threads.

    Example:
        >>> full_grid(0), full_grid(1), full_grid(256), full_grid(257), full_grid((1 << 30) // 16)
        (1, 1, 1, 2, 262144)
    """
    blocks = max(1, -(-n16 // THREADS))
    if blocks > MAX_BLOCKS:
        msg = (f"copy baseline: {n16} 16-byte vectors need {blocks} blocks of {THREADS} "
               f"threads, past CUDA's {MAX_BLOCKS}; benchmark a smaller size.")
        raise ValueError(msg)
    return blocks


def copy_launcher(moved: int, stream: Any) -> Callable[[], None]:
    """A launch of the ``copy_kernel`` baseline for a problem moving ``moved`` bytes (its own
    buffers of :func:`copy_bytes`, the full grid) on ``stream``; for a profiler to capture
    beside the op's kernel (``benchmarks/profile_case.py``)."""
    import cupy as cp

    half = copy_bytes(moved)
    src, dst = cp.ones(half, dtype=cp.uint8), cp.empty(half, dtype=cp.uint8)
    copy16 = _module().get_function("pp_copy16")
    n16 = half // 16
    grid = full_grid(n16)

    def launch() -> None:
        copy16((grid,), (THREADS,), (src, dst, cp.int64(n16)), stream=stream)
    return launch


def build(in_bytes: int, out_bytes: int, moved: int, sets: int, calls: int,
          stream: Any) -> Dict[str, Tuple[int, Callable[[int], List[float]]]]:
    """Each baseline as (bytes moved per call, replay(reps) -> seconds per replay of ``calls``
    calls); the buffers and graphs live as long as the returned closures."""
    import cupy as cp

    mod = _module()
    sp = int(stream.ptr)
    out: Dict[str, Tuple[int, Callable[[int], List[float]]]] = {}
    half = copy_bytes(moved)
    src = [cp.ones(half, dtype=cp.uint8) for _ in range(sets)]
    dst = [cp.empty(half, dtype=cp.uint8) for _ in range(sets)]
    n_in, n_out = max(1, in_bytes // 16), max(1, out_bytes // 16)
    s_in = [cp.ones(n_in * 16, dtype=cp.uint8) for _ in range(sets)]
    s_out = [cp.empty(n_out * 16, dtype=cp.uint8) for _ in range(sets)]
    cp.cuda.runtime.deviceSynchronize()
    kind = cp.cuda.runtime.memcpyDeviceToDevice
    copy16, shape16 = mod.get_function("pp_copy16"), mod.get_function("pp_shape16")
    cstream = cp.cuda.ExternalStream(sp)

    def memcpy() -> None:
        for j in range(calls):
            d, s = dst[j % sets].data.ptr, src[j % sets].data.ptr
            for off, size in pieces(half):
                cp.cuda.runtime.memcpyAsync(d + off, s + off, size, kind, sp)

    n16 = half // 16
    g_copy, g_shape = full_grid(n16), full_grid(min(n_in, n_out))

    def kernel() -> None:
        for j in range(calls):
            copy16((g_copy,), (THREADS,), (src[j % sets], dst[j % sets], cp.int64(n16)),
                   stream=cstream)

    def shape() -> None:
        g = g_shape
        for j in range(calls):
            shape16((g,), (THREADS,), (s_in[j % sets], s_out[j % sets], cp.int64(n_in),
                                        cp.int64(n_out)), stream=cstream)

    keep = (src, dst, s_in, s_out, mod)
    for name, body, nbytes in (("memcpy", memcpy, 2 * half), ("copy_kernel", kernel, 2 * half),
                               ("shape_copy", shape, 16 * (n_in + n_out))):
        graph = timing.capture(stream, body)

        def replay(reps: int, graph: Any = graph, keep: Any = keep) -> List[float]:
            return timing.replay_seconds(graph, stream, reps=reps)
        out[name] = (nbytes, replay)
    return out
