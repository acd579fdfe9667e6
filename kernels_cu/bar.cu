// bar.cu -- BarPlugin: out0 = concatenate([A, B], axis=0), out1 = a copy of B.
//
// Computes (every tensor LINEAR, i.e. contiguous row-major, so concatenation along axis 0 is a
// flat concatenation of the two buffers):
//     out0[0 : na]       = a[0 : na]
//     out0[na : na + nb] = b[0 : nb]
//     out1[0 : nb]       = b[0 : nb]
// B is read once and stored twice. The copy moves bytes only, so T matters by its size alone.
//
// Launch contract:
//     bar<T>(const T* a, const T* b, T* out0, T* out1, long long na, long long nb)
//   - na = numel(A), nb = numel(B), in elements, each >= 0 (0-size work writes nothing).
//   - 1-D grid of any size, 1-D block of at most 512 threads (register use): the kernel
//     strides over the whole grid. The grid's threads are split between A and B in proportion
//     to na and nb (a grid of one thread does both), so with the suggested full grid each
//     thread moves PP_BAR_UNROLL (default 2) 16-byte vectors: 256 threads,
//     grid = cdiv(cdiv(na, V) + cdiv(nb, V), 256 * PP_BAR_UNROLL), V = 16 / sizeof(T).
//     PP_BAR_SPLIT=0 (a compile option, for tuning) gives every thread a share of both.
//   - The outputs must not overlap the inputs.
//   - Copies move 16 bytes per access where source and destination share their alignment
//     modulo 16 (always so for TensorRT's 256-byte aligned buffers, except out0 + na when
//     na * sizeof(T) is not a multiple of 16: there the loads stay 16 bytes wide and the
//     stores go element by element). Unaligned heads and tails are copied element-wise.
//
// Ahead-of-time entry (a QDP aot_impl: TensorRT passes the input pointers, then 32-bit ints,
// then the output pointers; pyplugins.ops.bar.BarPlugin.aot_launch):
//     bar_aot<T>(const T* a, const T* b, int na, int nb, T* out0, T* out1)
//   - na, nb below 2^31 (widened to 64 bits inside); the body, grid and block are bar's.
//
// @instantiate bar<float>
// @instantiate bar<__half>
// @instantiate bar<signed char>
// @instantiate bar<int>
// @instantiate bar_aot<float>
// @instantiate bar_aot<__half>
// @instantiate bar_aot<signed char>
// @instantiate bar_aot<int>

#include "common.cuh"

namespace pp_bar {

// Independent 16-byte loads each thread issues before its stores, per loop trip (tuning knob;
// 1 with a full grid is the fastest copy structure measured). The host sizes its grid by it:
// pyplugins.ops.bar.DEFINES passes it, so there is no default here.
#ifndef PP_BAR_UNROLL
#error "bar.cu needs -DPP_BAR_UNROLL (16-byte vectors a thread loads per trip)"
#endif
constexpr int kUnroll = PP_BAR_UNROLL;

// Split the grid's threads between A and B (1), or stride every thread over both (0).
#ifndef PP_BAR_SPLIT
#define PP_BAR_SPLIT 1
#endif

template <typename W>
union Pack {
    uint4 v;
    W e[16 / sizeof(W)];
};

template <typename W>
__device__ __forceinline__ void store_pack(W* dst, const uint4& v, bool aligned) {
    if (aligned) {
        *reinterpret_cast<uint4*>(dst) = v;
    } else {
        Pack<W> p;
        p.v = v;
#pragma unroll
        for (int k = 0; k < int(16 / sizeof(W)); ++k) dst[k] = p.e[k];
    }
}

// Copies src[0:n] to d0[0:n] and, when d1 is not null, to d1[0:n]; thread `tid` of `nthreads`.
template <typename W>
__device__ __forceinline__ void copy_span(const W* __restrict__ src, W* __restrict__ d0,
                                          W* __restrict__ d1, long long n, long long tid,
                                          long long nthreads) {
    constexpr int V = 16 / sizeof(W);
    if (n <= 0) return;
    // Elements before src reaches a 16-byte boundary.
    const unsigned misaligned = static_cast<unsigned>(reinterpret_cast<pp::uindex_t>(src) & 15u);
    long long head = static_cast<long long>(((16u - misaligned) & 15u) / sizeof(W));
    if (head > n) head = n;
    for (long long i = tid; i < head; i += nthreads) {
        const W v = src[i];
        d0[i] = v;
        if (d1) d1[i] = v;
    }
    const long long nv = (n - head) / V;
    const uint4* __restrict__ s4 = reinterpret_cast<const uint4*>(src + head);
    W* const o0 = d0 + head;
    W* const o1 = d1 ? d1 + head : d1;
    const bool a0 = pp::is_aligned16(o0);
    const bool a1 = o1 == nullptr || pp::is_aligned16(o1);
    for (long long base = tid; base < nv; base += kUnroll * nthreads) {
        uint4 v[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const long long i = base + k * nthreads;
            if (i < nv) v[k] = s4[i];
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const long long i = base + k * nthreads;
            if (i < nv) {
                store_pack(o0 + i * V, v[k], a0);
                if (o1) store_pack(o1 + i * V, v[k], a1);
            }
        }
    }
    for (long long i = head + nv * V + tid; i < n; i += nthreads) {
        const W v = src[i];
        d0[i] = v;
        if (d1) d1[i] = v;
    }
}

// The whole kernel body, shared by the two entries below.
template <typename T>
__device__ __forceinline__ void bar_body(const T* __restrict__ a, const T* __restrict__ b,
                                         T* __restrict__ out0, T* __restrict__ out1,
                                         long long na, long long nb) {
    // The copy never interprets elements: move them as unsigned integers of their size.
    typedef typename pp::Bits<sizeof(T)>::type W;
    const long long tid = pp::global_thread_id();
    const long long nthreads = pp::grid_threads();
    W* const o0 = reinterpret_cast<W*>(out0);
    const W* const wa = reinterpret_cast<const W*>(a);
    const W* const wb = reinterpret_cast<const W*>(b);
    W* const o0b = o0 + (na > 0 ? na : 0);
    W* const o1 = reinterpret_cast<W*>(out1);
    if (PP_BAR_SPLIT && nthreads >= 2 && na > 0 && nb > 0) {
        // Threads [0, ta) copy A, the rest B: ta in [1, nthreads - 1], in proportion to na.
        long long ta = static_cast<long long>(static_cast<double>(nthreads) *
                                              (static_cast<double>(na) / (static_cast<double>(na) + nb)));
        ta = ta < 1 ? 1 : (ta > nthreads - 1 ? nthreads - 1 : ta);
        if (tid < ta) {
            copy_span<W>(wa, o0, nullptr, na, tid, ta);
        } else {
            copy_span<W>(wb, o0b, o1, nb, tid - ta, nthreads - ta);
        }
        return;
    }
    copy_span<W>(wa, o0, nullptr, na, tid, nthreads);
    copy_span<W>(wb, o0b, o1, nb, tid, nthreads);
}

}  // namespace pp_bar

template <typename T>
__global__ void bar(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out0,
                    T* __restrict__ out1, long long na, long long nb) {
    pp_bar::bar_body(a, b, out0, out1, na, nb);
}

template <typename T>
__global__ void bar_aot(const T* __restrict__ a, const T* __restrict__ b, int na, int nb,
                        T* __restrict__ out0, T* __restrict__ out1) {
    pp_bar::bar_body(a, b, out0, out1, static_cast<long long>(na), static_cast<long long>(nb));
}
