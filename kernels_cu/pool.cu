// pool.cu -- 2-D max and average pooling over NCHW.
//
// Computes, for x of shape [nc, h, w] (nc = N * C) and y of shape [nc, ho, wo]:
//     window(oh, ow) = rows oh * sh - ph + [0, kh) x columns ow * sw - pw + [0, kw),
//                      clipped to the input (padding is never read and never counted)
//     max:     y = max over the window
//     average: y = sum over the window / (number of in-bounds elements in it)
// where ho = floor((h + 2 ph - kh) / sh) + 1 and wo likewise (the host computes them). A
// window with no in-bounds element (only possible when ph >= kh or pw >= kw) gives 0.
// Float types accumulate in float (fp16 too). INT8 (real value = q * scale, per-tensor scales):
// max takes the max of q (exact) and average sums q exactly in int; the result is requantized
//     q_out = saturate_int8(rne(v * (in_scale / out_scale)))     (rne: __float2int_rn)
// with v = max q, or v = sum / count in float; max with in_scale == out_scale is exact int8.
//
// Launch contract:
//     pool2d<T>(const T* x, T* y, long long nc, int h, int w, int ho, int wo, int kh, int kw,
//               int sh, int sw, int ph, int pw, int mode, float in_scale, float out_scale)
//   - every tensor LINEAR (contiguous row-major); mode 0 = max, 1 = average; kh, kw, sh, sw
//     >= 1; ph, pw >= 0; in_scale, out_scale > 0, read only for INT8. 0-size work writes
//     nothing. y must not overlap x.
//   - 1-D grid of any size, 1-D block of at most 512 threads (register use); every path is
//     grid-stride, so any grid gives every output. Suggested: 256 threads, grid =
//     clamp(cdiv(nc * ho * wo, 256 * 4), 1, 32 * SMs) (or the resident-block count as cap).
//   - Vector path, for 2x2 stride 2 pad 0, 3x3 stride 2 pad 1 and 3x3 stride 1 pad 1 (any ph,
//     equal strides) when x is 16-byte aligned and w * sizeof(T) is a multiple of 16: a unit
//     is one 16-byte chunk of input columns (4 float, 8 half, 16 int8) of the input rows that
//     some output rows need, plus the pw columns left of it and kw - sw - pw right of it (one
//     element each, read through the caches); it gives 16 / sw bytes of each of its output
//     rows. A thread does a few units a blockDim.x apart per trip (units_stride2 / _stride1),
//     all their loads issued first, so that each warp load is 512 contiguous bytes; it reduces
//     down the window's rows first, then across. Stride-1 units cover rows_stride1 output rows
//     (sharing their input rows), stride-2 units one.
//   - Elsewhere (generic path) each thread computes 4 outputs a blockDim.x apart per trip,
//     reading x through the caches; overlapping windows re-read inputs from L1/L2.
//   - 2x2 and 3x3 windows are unrolled at compile time; others loop. Index math is 32-bit
//     (multiply-shift division) when numel(x) and numel(y) are below 2^31, 64-bit otherwise.
//
// @instantiate pool2d<float>
// @instantiate pool2d<__half>
// @instantiate pool2d<signed char>

#include "common.cuh"

namespace pp_pool {

// Outputs each thread computes per trip (independent loads in flight), generic path.
constexpr int kOutputs = 4;

// Vector path: units per thread per trip (stride 2 / stride 1), and output rows per stride-1
// unit (stride-2 units cover one). 0 = the per-type default below; compile options override
// them, for tuning (-DPP_POOL_UNITS_S2=1); -DPP_POOL_VECTOR=0 turns the vector path off.
#ifndef PP_POOL_UNITS_S2
#define PP_POOL_UNITS_S2 0
#endif
#ifndef PP_POOL_UNITS_S1
#define PP_POOL_UNITS_S1 0
#endif
#ifndef PP_POOL_ROWS_S1
#define PP_POOL_ROWS_S1 0
#endif
#ifndef PP_POOL_VECTOR
#define PP_POOL_VECTOR 1
#endif
// Stride-2 units per thread: 1 for half, 2 otherwise (docs/ops/pool.md says why).
template <typename T> __host__ __device__ constexpr int units_stride2() {
    return PP_POOL_UNITS_S2 > 0 ? PP_POOL_UNITS_S2 : (sizeof(T) == 2 ? 1 : 2);
}
template <typename T> __host__ __device__ constexpr int units_stride1() {
    return PP_POOL_UNITS_S1 > 0 ? PP_POOL_UNITS_S1 : 1;
}
template <typename T> __host__ __device__ constexpr int rows_stride1() {
    return PP_POOL_ROWS_S1 > 0 ? PP_POOL_ROWS_S1 : 2;
}

// Division by a run-time constant: multiply-high and shift (valid for n, d < 2^31).
struct FastDiv {
    unsigned m, s;
    __device__ explicit FastDiv(long long d) {
        const unsigned d32 = static_cast<unsigned>(d);
        s = d32 > 1 ? 32 - __clz(d32 - 1) : 0;
        m = static_cast<unsigned>((((1ull << 32) * ((1ull << s) - d32)) / d32) + 1);
    }
    __device__ long long operator()(long long n) const {
        const unsigned n32 = static_cast<unsigned>(n);
        return static_cast<long long>((__umulhi(n32, m) + n32) >> s);
    }
};

// Plain division, for sizes past 2^31.
struct SlowDiv {
    long long d;
    __device__ explicit SlowDiv(long long d_) : d(d_) {}
    __device__ long long operator()(long long n) const { return n / d; }
};

// Accumulator: float for float types, exact int for INT8.
template <typename T> struct Acc { typedef float type; };
template <> struct Acc<signed char> { typedef int type; };

template <typename T> __device__ __forceinline__ float widen(T v) { return pp::to_float(v); }
__device__ __forceinline__ int widen(signed char v) { return v; }

__device__ __forceinline__ float lowest(float) { return -__int_as_float(0x7f800000); }
__device__ __forceinline__ int lowest(int) { return -128; }

struct Params {
    long long nc;
    long long total;  // nc * ho * wo
    int h, w, ho, wo, kh, kw, sh, sw, ph, pw;
    float ratio;      // in_scale / out_scale (INT8 only)
};

__device__ __forceinline__ float finish(float, float acc, int count, bool avg, float) {
    if (count == 0) return 0.f;
    return avg ? acc / static_cast<float>(count) : acc;
}
__device__ __forceinline__ __half finish(__half, float acc, int count, bool avg, float) {
    if (count == 0) return __float2half_rn(0.f);
    return __float2half_rn(avg ? acc / static_cast<float>(count) : acc);
}
__device__ __forceinline__ signed char finish(signed char, int acc, int count, bool avg, float ratio) {
    if (count == 0) return 0;
    if (!avg && ratio == 1.0f) return static_cast<signed char>(acc);
    const float v = avg ? __fdiv_rn(static_cast<float>(acc), static_cast<float>(count)) * ratio
                        : static_cast<float>(acc) * ratio;
    const int q = __float2int_rn(v);
    return static_cast<signed char>(q < -128 ? -128 : (q > 127 ? 127 : q));
}

// In-bounds extent of a window [start, start + k) within [0, n).
__device__ __forceinline__ int extent(int start, int k, int n) {
    const int lo = start > 0 ? start : 0;
    const int hi = start + k < n ? start + k : n;
    return hi > lo ? hi - lo : 0;
}

// KH, KW: compile-time window, or 0 for the run-time one in p.
template <typename T, typename Div, bool AVG, int KH, int KW>
__device__ __forceinline__ void pool_body(const T* __restrict__ x, T* __restrict__ y, const Params& p) {
    typedef typename Acc<T>::type A;
    const Div by_wo(p.wo), by_ho(p.ho);
    const int kh = KH ? KH : p.kh;
    const int kw = KW ? KW : p.kw;
    const long long plane_size = static_cast<long long>(p.h) * p.w;
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x * kOutputs;
    for (long long base = static_cast<long long>(blockIdx.x) * blockDim.x * kOutputs + threadIdx.x;
         base < p.total; base += step) {
        const T* plane[kOutputs];
        int ih0[kOutputs], iw0[kOutputs];
        bool valid[kOutputs];
        A acc[kOutputs];
#pragma unroll
        for (int k = 0; k < kOutputs; ++k) {
            const long long o = base + static_cast<long long>(k) * blockDim.x;
            valid[k] = o < p.total;
            const long long oo = valid[k] ? o : 0;
            const long long q = by_wo(oo);
            const long long nc = by_ho(q);
            ih0[k] = static_cast<int>(q - nc * p.ho) * p.sh - p.ph;
            iw0[k] = static_cast<int>(oo - q * p.wo) * p.sw - p.pw;
            plane[k] = x + nc * plane_size;
            acc[k] = AVG ? A(0) : lowest(A(0));
        }
#pragma unroll
        for (int dy = 0; dy < (KH ? KH : kh); ++dy) {
#pragma unroll
            for (int dx = 0; dx < (KW ? KW : kw); ++dx) {
#pragma unroll
                for (int k = 0; k < kOutputs; ++k) {
                    const int ih = ih0[k] + dy, iw = iw0[k] + dx;
                    if (valid[k] && static_cast<unsigned>(ih) < static_cast<unsigned>(p.h) &&
                        static_cast<unsigned>(iw) < static_cast<unsigned>(p.w)) {
                        const A v = widen(plane[k][static_cast<long long>(ih) * p.w + iw]);
                        acc[k] = AVG ? acc[k] + v : (v > acc[k] ? v : acc[k]);
                    }
                }
            }
        }
#pragma unroll
        for (int k = 0; k < kOutputs; ++k) {
            if (!valid[k]) continue;
            const int count = extent(ih0[k], kh, p.h) * extent(iw0[k], kw, p.w);
            y[base + static_cast<long long>(k) * blockDim.x] = finish(T(), acc[k], count, AVG, p.ratio);
        }
    }
}

// ---- vector path ----------------------------------------------------------------------------

// 4 bytes of the max identity (-inf, or -128 for INT8), to fill chunks outside the input.
__device__ __forceinline__ unsigned max_identity(float) { return 0xff800000u; }
__device__ __forceinline__ unsigned max_identity(__half) { return 0xfc00fc00u; }
__device__ __forceinline__ unsigned max_identity(signed char) { return 0x80808080u; }

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
    T e[N];
};

// Window KH x KW, stride S both ways, left padding PW (all compile time; ph at run time); each
// unit gives RO output rows of 16 / S bytes; U units per thread per trip.
template <typename T, bool AVG, int KH, int KW, int S, int PW, int RO, int U>
__device__ __forceinline__ void pool_vec(const T* __restrict__ x, T* __restrict__ y, const Params& p) {
    typedef typename Acc<T>::type A;
    constexpr int V = 16 / sizeof(T);                      // input columns per chunk
    constexpr int OW = V / S;                              // output columns per unit
    constexpr int LH = PW;                                 // halo columns left of the chunk
    constexpr int RH = KW - S - PW > 0 ? KW - S - PW : 0;  // and right of it
    constexpr int E = LH + V + RH;                         // columns a unit reads
    constexpr int NR = (RO - 1) * S + KH;                  // input rows per unit
    // Only the first / last output of a unit can have its window clipped at the row's ends.
    static_assert(PW <= S && RH <= S && V % S == 0, "pool_vec: unsupported window");
    const unsigned fill = AVG ? 0u : max_identity(T());
    const A none = AVG ? A(0) : lowest(A(0));
    const int chunks = p.w / V;
    const int ucols = (p.wo + OW - 1) / OW;
    const int groups = (p.ho + RO - 1) / RO;
    const long long units = p.nc * groups * ucols;
    const FastDiv by_ucols(ucols), by_groups(groups);
    const int plane_in = p.h * p.w;
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x * U;
    for (long long base = static_cast<long long>(blockIdx.x) * blockDim.x * U + threadIdx.x;
         base < units; base += step) {
        int plane[U], oh0[U], col0[U];
        bool valid[U];
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const long long g = base + static_cast<long long>(k) * blockDim.x;
            valid[k] = g < units;
            const int gg = valid[k] ? static_cast<int>(g) : 0;
            const int q = static_cast<int>(by_ucols(gg));
            plane[k] = static_cast<int>(by_groups(q));
            oh0[k] = (q - plane[k] * groups) * RO;
            col0[k] = (gg - q * ucols) * V;
        }
        // All loads first: the chunk and halo columns of every input row of every unit;
        // what lies outside the input reads as the identity (-inf / -128 for max, 0 for sum).
        uint4 raw[U][NR];
        A halo[U][NR][LH + RH > 0 ? LH + RH : 1];
#pragma unroll
        for (int t = 0; t < NR; ++t) {
#pragma unroll
            for (int k = 0; k < U; ++k) {
                const int ih = oh0[k] * S - p.ph + t;
                const bool row_ok = valid[k] && static_cast<unsigned>(ih) < static_cast<unsigned>(p.h);
                const int row = plane[k] * plane_in + ih * p.w;
                raw[k][t] = make_uint4(fill, fill, fill, fill);
                if (row_ok && col0[k] < chunks * V)
                    raw[k][t] = __ldg(reinterpret_cast<const uint4*>(x + row + col0[k]));
#pragma unroll
                for (int j = 0; j < LH + RH; ++j) {
                    const int c = j < LH ? col0[k] - LH + j : col0[k] + V + (j - LH);
                    halo[k][t][j] = row_ok && static_cast<unsigned>(c) < static_cast<unsigned>(p.w)
                                        ? widen(__ldg(x + row + c)) : none;
                }
            }
        }
#pragma unroll
        for (int k = 0; k < U; ++k) {
            if (!valid[k]) continue;
            const int ow0 = col0[k] / S;
            // Columns clipped off the first and the last output's window (average only).
            const int lclip = PW - col0[k] > 0 ? PW - col0[k] : 0;
            const int rclip = col0[k] + V + RH - p.w > 0 ? col0[k] + V + RH - p.w : 0;
#pragma unroll
            for (int r = 0; r < RO; ++r) {
                const int oh = oh0[k] + r;
                if (oh >= p.ho) continue;
                // Down the window's rows first (column by column), then across.
                A col[E];
#pragma unroll
                for (int dy = 0; dy < KH; ++dy) {
                    const int t = r * S + dy;
                    const Pack<T, V> chunk = *reinterpret_cast<const Pack<T, V>*>(&raw[k][t]);
#pragma unroll
                    for (int j = 0; j < E; ++j) {
                        const A v = j < LH ? halo[k][t][j]
                                           : (j < LH + V ? widen(chunk.e[j - LH]) : halo[k][t][j - V]);
                        col[j] = dy == 0 ? v : (AVG ? col[j] + v : (v > col[j] ? v : col[j]));
                    }
                }
                const int rows = extent(oh * S - p.ph, KH, p.h);
                Pack<T, OW> out;
#pragma unroll
                for (int o = 0; o < OW; ++o) {
                    A acc = col[o * S];
#pragma unroll
                    for (int dx = 1; dx < KW; ++dx) {
                        const A v = col[o * S + dx];
                        acc = AVG ? acc + v : (v > acc ? v : acc);
                    }
                    // max needs the count only to tell an empty window (rows == 0)
                    const int cols = KW - (o == 0 ? lclip : 0) - (o == OW - 1 ? rclip : 0);
                    out.e[o] = finish(T(), acc, AVG ? rows * cols : rows, AVG, p.ratio);
                }
                T* dst = y + (plane[k] * p.ho + oh) * p.wo + ow0;
                if (ow0 + OW <= p.wo && (reinterpret_cast<unsigned long long>(dst) % sizeof(out)) == 0) {
                    *reinterpret_cast<Pack<T, OW>*>(dst) = out;
                } else {
#pragma unroll
                    for (int o = 0; o < OW; ++o)
                        if (ow0 + o < p.wo) dst[o] = out.e[o];
                }
            }
        }
    }
}

template <typename T, typename Div, bool AVG>
__device__ __forceinline__ void pool_window(const T* __restrict__ x, T* __restrict__ y, const Params& p) {
    if (p.kh == 2 && p.kw == 2) pool_body<T, Div, AVG, 2, 2>(x, y, p);
    else if (p.kh == 3 && p.kw == 3) pool_body<T, Div, AVG, 3, 3>(x, y, p);
    else pool_body<T, Div, AVG, 0, 0>(x, y, p);
}

// The vector path where it applies (32-bit indices only), else the generic one.
template <typename T, bool AVG>
__device__ __forceinline__ void pool_small(const T* __restrict__ x, T* __restrict__ y, const Params& p) {
    constexpr int V = 16 / sizeof(T);
    constexpr int U2 = units_stride2<T>(), U1 = units_stride1<T>(), R1 = rows_stride1<T>();
    const bool vec = PP_POOL_VECTOR && pp::is_aligned16(x) && p.w % V == 0 && p.sh == p.sw;
    if (vec && p.kh == 2 && p.kw == 2 && p.sh == 2 && p.pw == 0)
        pool_vec<T, AVG, 2, 2, 2, 0, 1, U2>(x, y, p);
    else if (vec && p.kh == 3 && p.kw == 3 && p.sh == 2 && p.pw == 1)
        pool_vec<T, AVG, 3, 3, 2, 1, 1, U2>(x, y, p);
    else if (vec && p.kh == 3 && p.kw == 3 && p.sh == 1 && p.pw == 1)
        pool_vec<T, AVG, 3, 3, 1, 1, R1, U1>(x, y, p);
    else
        pool_window<T, FastDiv, AVG>(x, y, p);
}

}  // namespace pp_pool

template <typename T>
__global__ void pool2d(const T* __restrict__ x, T* __restrict__ y, long long nc, int h, int w,
                       int ho, int wo, int kh, int kw, int sh, int sw, int ph, int pw, int mode,
                       float in_scale, float out_scale) {
    using namespace pp_pool;
    if (nc <= 0 || ho <= 0 || wo <= 0) return;
    Params p;
    p.nc = nc;
    p.total = nc * ho * wo;
    p.h = h; p.w = w; p.ho = ho; p.wo = wo; p.kh = kh; p.kw = kw;
    p.sh = sh; p.sw = sw; p.ph = ph; p.pw = pw;
    p.ratio = __fdiv_rn(in_scale, out_scale);
    const bool small = p.total < (1ll << 31) && nc * h * static_cast<long long>(w) < (1ll << 31);
    if (small) {
        if (mode == 0) pool_small<T, false>(x, y, p);
        else pool_small<T, true>(x, y, p);
    } else {
        if (mode == 0) pool_body<T, SlowDiv, false, 0, 0>(x, y, p);
        else pool_body<T, SlowDiv, true, 0, 0>(x, y, p);
    }
}
