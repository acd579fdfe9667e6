// seq_repeat.cu -- nearest-neighbour repeat along dim 1 by an integer factor.
//
// Computes, for x of shape [d0, len, rest...] seen as [d0, len, inner] (inner = prod(rest), 1
// when x is 2-D) and y of shape [d0, len * factor, inner]:
//     y[i, j, c] = x[i, j / factor, c]          (integer division; = np.repeat(x, factor, 1))
// Output row R = i * len * factor + j reads input row R / factor, which is what both paths use.
//
// Launch contract:
//     seq_repeat<T>(const T* x, T* y, long long d0, long long len, long long inner, int factor)
//   - every tensor LINEAR (contiguous row-major); d0, len, inner >= 0; factor >= 1. 0-size work
//     writes nothing.
//   - 1-D grid and 1-D block of any sizes up to 1024 (grid-stride loops). Suggested: 256 threads
//     and a full grid, one unit of work per thread: path "rows" cdiv(numel(x) * sizeof(T) / 16,
//     256 * PP_SEQ_REPEAT_UNROLL) blocks (one 16-byte vector of x each), path "gather"
//     cdiv(numel(y) * sizeof(T) / 16, 256) (16 bytes of y each).
//   - y must not overlap x.
//   - Path "rows" (inner * sizeof(T) a multiple of 16, x and y 16-byte aligned): each 16-byte
//     vector of x is read once and stored `factor` times. Otherwise path "gather": each thread
//     stores 16 bytes of y (element-wise if y is unaligned) gathered element by element from x,
//     which the caches serve. Index math is 32-bit (multiply-shift division) when the sizes
//     fit, 64-bit otherwise.
//
// Ahead-of-time entry (a QDP aot_impl: TensorRT passes the input pointer, then 32-bit ints,
// then the output pointer; pyplugins.ops.seq_repeat.SeqRepeat.aot_launch):
//     seq_repeat_aot<T>(const T* x, int d0, int len, int inner, int factor, T* y)
//   - d0, len, inner each below 2^31 (the sizes are widened to 64 bits inside); the body,
//     grid and block are seq_repeat's.
//
// @instantiate seq_repeat<float>
// @instantiate seq_repeat<__half>
// @instantiate seq_repeat<signed char>
// @instantiate seq_repeat<int>
// @instantiate seq_repeat_aot<float>
// @instantiate seq_repeat_aot<__half>
// @instantiate seq_repeat_aot<signed char>
// @instantiate seq_repeat_aot<int>

#include "common.cuh"

namespace pp_seq_repeat {

template <typename W>
union Pack {
    uint4 v;
    W e[16 / sizeof(W)];
};

// Division by a run-time constant: multiply-high and shift (valid for n, d < 2^31).
struct FastDiv {
    unsigned m, s;
    __device__ explicit FastDiv(unsigned long long d) {
        const unsigned d32 = static_cast<unsigned>(d);
        s = d32 > 1 ? 32 - __clz(d32 - 1) : 0;
        m = static_cast<unsigned>((((1ull << 32) * ((1ull << s) - d32)) / d32) + 1);
    }
    __device__ unsigned long long operator()(unsigned long long n) const {
        const unsigned n32 = static_cast<unsigned>(n);
        return (__umulhi(n32, m) + n32) >> s;
    }
};

// Plain division, for sizes past 2^31.
struct SlowDiv {
    unsigned long long d;
    __device__ explicit SlowDiv(unsigned long long d_) : d(d_) {}
    __device__ unsigned long long operator()(unsigned long long n) const { return n / d; }
};

// 16-byte vectors of x each thread loads before its stores, per trip of path "rows" (a
// compile option, for tuning; 1 with a full grid is the fastest copy structure measured). The
// host sizes its grid by it: pyplugins.ops.seq_repeat.DEFINES passes it, no default here.
#ifndef PP_SEQ_REPEAT_UNROLL
#error "seq_repeat.cu needs -DPP_SEQ_REPEAT_UNROLL (16-byte vectors a thread loads per trip)"
#endif
constexpr int kUnroll = PP_SEQ_REPEAT_UNROLL;

// Path "rows": x vector v sits in input row v / inner_v; input row r feeds output rows
// r * factor ... r * factor + factor - 1.
template <typename Div>
__device__ __forceinline__ void repeat_rows(const uint4* __restrict__ x, uint4* __restrict__ y,
                                            unsigned long long nvec, unsigned long long inner_v,
                                            int factor) {
    const Div by_inner(inner_v);
    const unsigned long long tid = pp::global_thread_id();
    const unsigned long long nthreads = pp::grid_threads();
    for (unsigned long long base = tid; base < nvec; base += kUnroll * nthreads) {
        uint4 v[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const unsigned long long i = base + k * nthreads;
            if (i < nvec) v[k] = x[i];
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const unsigned long long i = base + k * nthreads;
            if (i < nvec) {
                const unsigned long long row = by_inner(i);
                uint4* out = y + (row * factor) * inner_v + (i - row * inner_v);
                for (int r = 0; r < factor; ++r) out[r * inner_v] = v[k];
            }
        }
    }
}

// Path "gather": thread stores outputs [q * V, q * V + V) for its chunks q.
template <typename W, typename Div>
__device__ __forceinline__ void repeat_gather(const W* __restrict__ x, W* __restrict__ y,
                                              unsigned long long total, unsigned long long inner,
                                              int factor) {
    constexpr int V = 16 / sizeof(W);
    const Div by_inner(inner);
    const Div by_factor(static_cast<unsigned long long>(factor));
    const bool aligned = pp::is_aligned16(y);
    const unsigned long long nchunks = (total + V - 1) / V;
    const unsigned long long tid = pp::global_thread_id();
    const unsigned long long nthreads = pp::grid_threads();
    for (unsigned long long q = tid; q < nchunks; q += nthreads) {
        const unsigned long long o = q * V;
        const unsigned long long out_row = by_inner(o);
        unsigned long long c = o - out_row * inner;        // column within the row
        const unsigned long long in_row = by_factor(out_row);
        int rep = static_cast<int>(out_row - in_row * factor);  // which repeat of in_row
        unsigned long long src = in_row * inner + c;
        Pack<W> p;
#pragma unroll
        for (int k = 0; k < V; ++k) {
            if (o + k < total) p.e[k] = x[src];
            ++src;
            if (++c == inner) {  // next output row: the same input row again, or the next one
                c = 0;
                if (++rep == factor) rep = 0;
                else src -= inner;
            }
        }
        if (aligned && o + V <= total) {
            *reinterpret_cast<uint4*>(y + o) = p.v;
        } else {
#pragma unroll
            for (int k = 0; k < V; ++k)
                if (o + k < total) y[o + k] = p.e[k];
        }
    }
}

// The whole kernel body, shared by the two entries below.
template <typename T>
__device__ __forceinline__ void seq_repeat_body(const T* __restrict__ x, T* __restrict__ y,
                                                long long d0, long long len, long long inner,
                                                int factor) {
    typedef typename pp::Bits<sizeof(T)>::type W;
    constexpr int V = 16 / sizeof(T);
    if (d0 <= 0 || len <= 0 || inner <= 0 || factor <= 0) return;
    const unsigned long long total =
        static_cast<unsigned long long>(d0) * len * inner * static_cast<unsigned long long>(factor);
    const bool small = total < (1ull << 31) - 16;
    const bool rows = inner % V == 0 && pp::is_aligned16(x) && pp::is_aligned16(y);
    if (rows) {
        const unsigned long long nvec = static_cast<unsigned long long>(d0) * len * (inner / V);
        const uint4* x4 = reinterpret_cast<const uint4*>(x);
        uint4* y4 = reinterpret_cast<uint4*>(y);
        if (small) repeat_rows<FastDiv>(x4, y4, nvec, inner / V, factor);
        else repeat_rows<SlowDiv>(x4, y4, nvec, inner / V, factor);
    } else {
        const W* xw = reinterpret_cast<const W*>(x);
        W* yw = reinterpret_cast<W*>(y);
        if (small) repeat_gather<W, FastDiv>(xw, yw, total, inner, factor);
        else repeat_gather<W, SlowDiv>(xw, yw, total, inner, factor);
    }
}

}  // namespace pp_seq_repeat

template <typename T>
__global__ void __launch_bounds__(1024) seq_repeat(const T* __restrict__ x, T* __restrict__ y, long long d0, long long len,
                           long long inner, int factor) {
    pp_seq_repeat::seq_repeat_body(x, y, d0, len, inner, factor);
}

template <typename T>
__global__ void __launch_bounds__(1024) seq_repeat_aot(const T* __restrict__ x, int d0, int len,
                                                       int inner, int factor,
                                                       T* __restrict__ y) {
    pp_seq_repeat::seq_repeat_body(x, y, static_cast<long long>(d0), static_cast<long long>(len),
                                   static_cast<long long>(inner), factor);
}
