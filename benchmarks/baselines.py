"""Section 3's roofline: the fastest of several ways of moving a record's bytes, per size, same run.

Three baselines move the bytes a record's op moves, each timed like the op (CUDA events around
replays of captured graphs, rotating over the same number of buffer sets):

- ``memcpy``: ``cudaMemcpyAsync`` device to device of half the bytes (read, then written), in
  pieces of at most 256 MiB: on an H200 one graph memcpy node of >= 512 MiB ran at 2.76 TB/s
  against 4.2 TB/s for the same copy in <= 256 MiB nodes;
- ``copy_kernel``: a 16-byte-vectorized copy kernel moving the same bytes;
- ``shape_copy``: a kernel with the op's own shape: it reads the op's input bytes once and
  writes its output bytes once (when the input is larger, each output vector is the XOR of the
  input vectors that fold onto it; when the output is larger, each input vector is written to
  every output vector it repeats into).

A record's roofline is the fastest baseline (the highest bytes per second).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Tuple

from benchmarks import timing

#: Largest piece of one cudaMemcpyAsync node.
MAX_PIECE = 256 << 20
NAMES = ("memcpy", "copy_kernel", "shape_copy")
_THREADS = 256
_SOURCE = r"""
extern "C" __global__ void pp_copy16(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                     long long n) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += step)
        dst[i] = src[i];
}

extern "C" __global__ void pp_shape16(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                      long long n_in, long long n_out) {
    const long long step = (long long)gridDim.x * blockDim.x;
    const long long first = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (n_in >= n_out) {
        for (long long j = first; j < n_out; j += step) {
            uint4 acc = src[j];
            for (long long k = j + n_out; k < n_in; k += n_out) {
                const uint4 v = src[k];
                acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
            }
            dst[j] = acc;
        }
    } else {
        for (long long i = first; i < n_in; i += step) {
            const uint4 v = src[i];
            for (long long k = i; k < n_out; k += n_in) dst[k] = v;
        }
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


def _grid(n16: int) -> int:
    """Blocks of _THREADS for n16 16-byte vectors, at most 16 per multiprocessor (grid-stride
    beyond)."""
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    sms = int(props["multiProcessorCount"])
    return max(1, min(math.ceil(n16 / _THREADS), sms * 16))


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
    g_copy, g_shape = _grid(n16), _grid(min(n_in, n_out))

    def kernel() -> None:
        for j in range(calls):
            copy16((g_copy,), (_THREADS,), (src[j % sets], dst[j % sets], cp.int64(n16)),
                   stream=cstream)

    def shape() -> None:
        g = g_shape
        for j in range(calls):
            shape16((g,), (_THREADS,), (s_in[j % sets], s_out[j % sets], cp.int64(n_in),
                                        cp.int64(n_out)), stream=cstream)

    keep = (src, dst, s_in, s_out, mod)
    for name, body, nbytes in (("memcpy", memcpy, 2 * half), ("copy_kernel", kernel, 2 * half),
                               ("shape_copy", shape, 16 * (n_in + n_out))):
        graph = timing.capture(stream, body)

        def replay(reps: int, graph: Any = graph, keep: Any = keep) -> List[float]:
            return timing.replay_seconds(graph, stream, reps=reps)
        out[name] = (nbytes, replay)
    return out
