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
// exactly as the NumPy reference does it, in double:
//     q_out = saturate_int8(rne(v * (double(in_scale) / double(out_scale))))
// with v = max q, or v = sum / count (double division); rne rounds half to even. With
// in_scale == out_scale, max is q itself and the average is rne(sum / count) in integers.
//
// Launch contract:
//     pool2d<T>(const T* x, T* y, long long nc, int h, int w, int ho, int wo, int kh, int kw,
//               int sh, int sw, int ph, int pw, int mode, float in_scale, float out_scale)
//     pool2d_wide<T>(same arguments): the same function, with vector paths for more windows
//               (below) at the cost of more registers; launch it for those windows.
//     pool2d_i8<signed char>(same arguments): the same function; launch it for INT8 2x2 stride 2
//               padding 0 at in_scale == out_scale, which it computes four bytes at a time with
//               byte-SIMD (max = __vmaxs4, average = rne(sum / 4) in 16-bit lanes, exact) when x
//               is 16-byte aligned and w % 16 == 0; everything else takes the generic path.
//   - every tensor LINEAR (contiguous row-major); mode 0 = max, 1 = average; kh, kw, sh, sw
//     >= 1; ph, pw >= 0; in_scale, out_scale > 0, read only for INT8. 0-size work writes
//     nothing. y must not overlap x.
//   - 1-D grid of any size, 1-D block of at most 512 threads (register use); every path is
//     grid-stride, so any grid gives every output. Suggested: 256 threads, grid =
//     clamp(cdiv(nc * ho * wo, 256 * 4), 1, 32 * SMs) (or the resident-block count as cap).
//   - Vector path (both kernels: 2x2 stride 2 pad 0, 3x3 stride 2 pad 1, 3x3 stride 1 pad 1;
//     pool2d_wide also: 5x5 stride 2 pad 2, 3x3 stride 2 pad 0, 2x2 stride 1 pad 0; any ph,
//     equal strides) when x is 16-byte aligned and w * sizeof(T) is a multiple of 16: a unit
//     is one 16-byte chunk of input columns (4 float, 8 half, 16 int8) of the input rows that
//     some output rows need, plus the pw columns left of it and kw - sw - pw right of it (one
//     element each, read through the caches); it gives 16 / sw bytes of each of its output
//     rows. A thread does a few units a blockDim.x apart per trip, all their loads issued
//     first, so that each warp load is 512 contiguous bytes; it reduces down the window's rows
//     first, then across. Stride-1 and 5x5 units cover several output rows (sharing their
//     input rows), the others one.
//   - Elsewhere (generic path) each thread computes 4 outputs a blockDim.x apart per trip,
//     reading x through the caches; overlapping windows re-read inputs from L1/L2.
//   - 2x2 and 3x3 windows are unrolled at compile time; others loop. Index math is 32-bit
//     (multiply-shift division) when numel(x) and numel(y) are below 2^31, 64-bit otherwise.
//
// @instantiate pool2d<float>
// @instantiate pool2d<__half>
// @instantiate pool2d<signed char>
// @instantiate pool2d_wide<float>
// @instantiate pool2d_wide<__half>
// @instantiate pool2d_wide<signed char>
// @instantiate pool2d_i8<signed char>
//
// Tuning knobs (compile options, defaults in the code below): PP_POOL_UNITS_S2, _UNITS_S1,
// _ROWS_S1, _ROWS_5, _UNITS_5, PP_POOL_VECTOR=0 (generic path only), PP_POOL_MORE_WINDOWS=0
// (pool2d_wide without its extra windows), PP_POOL_UNITS_I8 (pool2d_i8's units per trip),
// PP_POOL_INT8_SIMD=0 (pool2d_i8 without its byte-SIMD path).

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
// The windows the vector path took on later (5x5 stride 2 pad 2, 3x3 stride 2 pad 0, 2x2
// stride 1 pad 0); 0 sends them to the generic path, for comparison. 5x5 units cover
// PP_POOL_ROWS_5 output rows (sharing their input rows), PP_POOL_UNITS_5 units per trip.
#ifndef PP_POOL_MORE_WINDOWS
#define PP_POOL_MORE_WINDOWS 1
#endif
#ifndef PP_POOL_ROWS_5
#define PP_POOL_ROWS_5 2
#endif
#ifndef PP_POOL_UNITS_5
#define PP_POOL_UNITS_5 1
#endif
// 5x5 stride 2 (pool2d_wide) for half and INT8: reduce down the window's rows on packed words
// (max: __hmax2 / __vmaxs4; INT8 average: biased bytes summed in 16-bit lanes; half average:
// __half22float2 pairs, the same float additions in the same order), widening each column once
// instead of once per row; 0 widens every element first (the old path), for comparison.
#ifndef PP_POOL_PACKED
#define PP_POOL_PACKED 1
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define PP_POOL_HMAX2 0  // __hmax2 needs sm_80: half max keeps the unpacked path before that
#else
#define PP_POOL_HMAX2 1
#endif
// pool2d_i8: its byte-SIMD path (1), or only the generic path (0);
// PP_POOL_UNITS_I8 units (16 input bytes x 2 rows) per thread per trip.
#ifndef PP_POOL_INT8_SIMD
#define PP_POOL_INT8_SIMD 1
#endif
#ifndef PP_POOL_UNITS_I8
#define PP_POOL_UNITS_I8 2
#endif
__host__ __device__ constexpr int units_i8() { return PP_POOL_UNITS_I8; }
// Defaults: one stride-2 unit per trip for half (two take it from 64 to 78 registers, 3 blocks
// of 256 per SM instead of 4), two for float and int8 (no register cost there).
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
    double ratio;     // in_scale / out_scale in double, as the reference takes it (INT8 only)
    bool unit;        // in_scale == out_scale: the ratio is exactly 1
};

__device__ __forceinline__ float finish(float, float acc, int count, bool avg, const Params&) {
    if (count == 0) return 0.f;
    return avg ? acc / static_cast<float>(count) : acc;
}
__device__ __forceinline__ __half finish(__half, float acc, int count, bool avg, const Params&) {
    if (count == 0) return __float2half_rn(0.f);
    return __float2half_rn(avg ? acc / static_cast<float>(count) : acc);
}

// round-half-to-even(s / c) for c > 0, exactly, in integers (floor division, then the tie rule).
__device__ __forceinline__ int rne_div(int s, int c) {
    int q = s / c;
    int r = s - q * c;
    if (r < 0) {
        q -= 1;
        r += c;
    }
    const int twice = 2 * r;
    return q + ((twice > c || (twice == c && (q & 1))) ? 1 : 0);
}

__device__ __forceinline__ signed char saturate8(int q) {
    return static_cast<signed char>(q < -128 ? -128 : (q > 127 ? 127 : q));
}

// INT8: the reference's requantization, exactly: rne(v * ratio) with v = max q or sum / count,
// taken in double (sum / count and the product each correctly rounded, as NumPy's float64).
// With a unit ratio max is q itself and the average rne(sum / count) in integers, which equals
// the double result (a quotient that is not a tie lies >= 1 / (2 count) from one). FULL: the
// full window's count, known at compile time (0 if not), so that its division is a multiply.
template <int FULL>
__device__ __forceinline__ signed char finish_q(int acc, int count, bool avg, const Params& p) {
    if (count == 0) return 0;
    if (p.unit) {
        if (!avg) return static_cast<signed char>(acc);
        return saturate8(FULL > 0 && count == FULL ? rne_div(acc, FULL) : rne_div(acc, count));
    }
    const double v = avg ? static_cast<double>(acc) / static_cast<double>(count)
                         : static_cast<double>(acc);
    const double scaled = v * p.ratio;
    // saturate in double first: the int conversion of a huge value is not defined to clamp
    return saturate8(__double2int_rn(fmin(fmax(scaled, -256.0), 256.0)));
}
__device__ __forceinline__ signed char finish(signed char, int acc, int count, bool avg,
                                              const Params& p) {
    return finish_q<0>(acc, count, avg, p);
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
            y[base + static_cast<long long>(k) * blockDim.x] = finish(T(), acc[k], count, AVG, p);
        }
    }
}

// ---- vector path ----------------------------------------------------------------------------

// finish, with the full window's count known at compile time (INT8 divides by it cheaply).
template <int FULL, typename T, typename A>
__device__ __forceinline__ T finish_v(A acc, int count, bool avg, const Params& p) {
    if constexpr (sizeof(T) == 1) {
        return finish_q<FULL>(acc, count, avg, p);
    } else {
        return finish(T(), acc, count, avg, p);
    }
}

// 4 bytes of the max identity (-inf, or -128 for INT8), to fill chunks outside the input.
__device__ __forceinline__ unsigned max_identity(float) { return 0xff800000u; }
__device__ __forceinline__ unsigned max_identity(__half) { return 0xfc00fc00u; }
__device__ __forceinline__ unsigned max_identity(signed char) { return 0x80808080u; }

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
    T e[N];
};

// The chunk's V columns reduced down rows t0 .. t0 + KH - 1 of raw (max, or sum), widened once
// per column: the same values as widening every element and reducing in A. Max: __hmax2 /
// __vmaxs4 (max of exact values is exact; the rows the unit reads outside the input hold the
// identity). INT8 sum: bytes biased to 0..255 (q ^ 0x80), even and odd bytes summed in 16-bit
// lanes (KH * 255 < 2^16), the bias KH * 128 taken off after. Half sum: __half22float2 pairs,
// added in float in row order as the unpacked path does.
template <typename T, bool AVG, int KH, int NR, int V>
__device__ __forceinline__ void packed_columns(const uint4 (&raw)[NR], int t0,
                                               typename Acc<T>::type (&out)[V]) {
    const unsigned* w0 = reinterpret_cast<const unsigned*>(&raw[t0]);
    if constexpr (sizeof(T) == 1 && !AVG) {
        unsigned m[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) m[i] = w0[i];
#pragma unroll
        for (int dy = 1; dy < KH; ++dy) {
            const unsigned* w = reinterpret_cast<const unsigned*>(&raw[t0 + dy]);
#pragma unroll
            for (int i = 0; i < 4; ++i) m[i] = __vmaxs4(m[i], w[i]);
        }
#pragma unroll
        for (int c = 0; c < V; ++c)
            out[c] = static_cast<int>(static_cast<signed char>((m[c / 4] >> (8 * (c % 4))) & 0xffu));
    } else if constexpr (sizeof(T) == 1) {
        unsigned ev[4] = {0u, 0u, 0u, 0u}, od[4] = {0u, 0u, 0u, 0u};
#pragma unroll
        for (int dy = 0; dy < KH; ++dy) {
            const unsigned* w = reinterpret_cast<const unsigned*>(&raw[t0 + dy]);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const unsigned b = w[i] ^ 0x80808080u;
                ev[i] += b & 0x00ff00ffu;
                od[i] += (b >> 8) & 0x00ff00ffu;
            }
        }
#pragma unroll
        for (int c = 0; c < V; ++c) {
            const unsigned lanes = (c % 2 == 0 ? ev : od)[c / 4];
            out[c] = static_cast<int>((lanes >> (16 * ((c % 4) / 2))) & 0xffffu) - 128 * KH;
        }
    } else if constexpr (!AVG) {
        __half2 m[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) m[i] = *reinterpret_cast<const __half2*>(&w0[i]);
#pragma unroll
        for (int dy = 1; dy < KH; ++dy) {
            const __half2* w = reinterpret_cast<const __half2*>(&raw[t0 + dy]);
#pragma unroll
            for (int i = 0; i < 4; ++i) m[i] = __hmax2(m[i], w[i]);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float2 f = __half22float2(m[i]);
            out[2 * i] = f.x;
            out[2 * i + 1] = f.y;
        }
    } else {
#pragma unroll
        for (int dy = 0; dy < KH; ++dy) {
            const __half2* w = reinterpret_cast<const __half2*>(&raw[t0 + dy]);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float2 f = __half22float2(w[i]);
                out[2 * i] = dy == 0 ? f.x : out[2 * i] + f.x;
                out[2 * i + 1] = dy == 0 ? f.y : out[2 * i + 1] + f.y;
            }
        }
    }
}

// Window KH x KW, stride S both ways, left padding PW (all compile time; ph at run time); each
// unit gives RO output rows of 16 / S bytes; U units per thread per trip. PK: reduce down the
// rows on packed words (packed_columns; half and INT8 only).
template <typename T, bool AVG, int KH, int KW, int S, int PW, int RO, int U, bool PK = false>
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
                if constexpr (PK && sizeof(T) < 4 && (sizeof(T) == 1 || AVG || PP_POOL_HMAX2)) {
                    A mid[V];
                    packed_columns<T, AVG, KH, NR, V>(raw[k], r * S, mid);
#pragma unroll
                    for (int j = 0; j < E; ++j) {
                        if (j >= LH && j < LH + V) {
                            col[j] = mid[j - LH];
                            continue;
                        }
                        const int hj = j < LH ? j : j - V;
#pragma unroll
                        for (int dy = 0; dy < KH; ++dy) {
                            const A v = halo[k][r * S + dy][hj];
                            col[j] = dy == 0 ? v : (AVG ? col[j] + v : (v > col[j] ? v : col[j]));
                        }
                    }
                } else
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
                    out.e[o] = finish_v<KH * KW, T>(acc, AVG ? rows * cols : rows, AVG, p);
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

// ---- INT8 2x2 stride 2, unit ratio: four bytes at a time ----------------------------------------

// Bytes 0 and 2 of each word, a then b: [a0, a2, b0, b2].
__device__ __forceinline__ unsigned even_bytes(unsigned a, unsigned b) { return __byte_perm(a, b, 0x6420); }

// Max of each adjacent byte pair of rows a and b (signed): bytes 0 and 2 hold the pairs' results.
__device__ __forceinline__ unsigned max_2x2(unsigned a, unsigned b) {
    const unsigned m = __vmaxs4(a, b);
    return __vmaxs4(m, __byte_perm(m, 0, 0x2301));
}

// rne(sum / 4) of each adjacent byte pair of rows a and b (signed), in bytes 0 and 2 as signed
// bytes again. Biased (q + 128, 0..255) values summed in 16-bit lanes: U = S + 512 <= 1020, and
// rne(S / 4) = rne(U / 4) - 128 = ((U + 1 + ((U >> 2) & 1)) >> 2) - 128 (half to even: a
// remainder of 2 rounds up only from an odd quotient); no saturation is needed (|S / 4| <= 128).
__device__ __forceinline__ unsigned avg_2x2(unsigned a, unsigned b) {
    const unsigned ea = a ^ 0x80808080u, eb = b ^ 0x80808080u;
    const unsigned u = (ea & 0x00ff00ffu) + ((ea >> 8) & 0x00ff00ffu) + (eb & 0x00ff00ffu) +
                       ((eb >> 8) & 0x00ff00ffu);
    const unsigned v = u + 0x00010001u + ((u >> 2) & 0x00010001u);
    return ((v >> 2) & 0x00ff00ffu) ^ 0x00800080u;
}

// INT8 2x2 stride 2 with padding 0 and in_scale == out_scale (every window full, max = q and the
// average rne(sum / 4)): a unit is 16 input bytes of two input rows -> 8 output bytes, computed
// four bytes at a time with byte-SIMD (no widening per element); U units per thread per trip,
// all loads first. Needs x 16-byte aligned and w % 16 == 0 (so wo = w / 2, a multiple of 8).
template <bool AVG, int U>
__device__ __forceinline__ void pool_i8_2x2(const signed char* __restrict__ x, signed char* __restrict__ y,
                                            const Params& p) {
    const int chunks = p.w / 16;
    const long long units = static_cast<long long>(p.nc) * p.ho * chunks;
    const FastDiv by_chunks(chunks), by_ho(p.ho);
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x * U;
    for (long long base = static_cast<long long>(blockIdx.x) * blockDim.x * U + threadIdx.x;
         base < units; base += step) {
        uint4 r0[U], r1[U];
        int row[U], chunk[U];
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const long long g = base + static_cast<long long>(k) * blockDim.x;
            const int gg = g < units ? static_cast<int>(g) : 0;
            row[k] = static_cast<int>(by_chunks(gg));  // plane * ho + oh
            chunk[k] = gg - row[k] * chunks;
            const int plane = static_cast<int>(by_ho(row[k]));
            const int oh = row[k] - plane * p.ho;
            const signed char* src = x + (plane * p.h + 2 * oh) * p.w + chunk[k] * 16;
            r0[k] = __ldg(reinterpret_cast<const uint4*>(src));
            r1[k] = __ldg(reinterpret_cast<const uint4*>(src + p.w));
        }
#pragma unroll
        for (int k = 0; k < U; ++k) {
            if (base + static_cast<long long>(k) * blockDim.x >= units) continue;
            uint2 out;
            if (AVG) {
                out.x = even_bytes(avg_2x2(r0[k].x, r1[k].x), avg_2x2(r0[k].y, r1[k].y));
                out.y = even_bytes(avg_2x2(r0[k].z, r1[k].z), avg_2x2(r0[k].w, r1[k].w));
            } else {
                out.x = even_bytes(max_2x2(r0[k].x, r1[k].x), max_2x2(r0[k].y, r1[k].y));
                out.y = even_bytes(max_2x2(r0[k].z, r1[k].z), max_2x2(r0[k].w, r1[k].w));
            }
            signed char* dst = y + row[k] * p.wo + chunk[k] * 8;
            if ((reinterpret_cast<unsigned long long>(dst) & 7u) == 0) {
                *reinterpret_cast<uint2*>(dst) = out;
            } else {
#pragma unroll
                for (int o = 0; o < 8; ++o)
                    dst[o] = static_cast<signed char>(((o < 4 ? out.x : out.y) >> (8 * (o & 3))) & 0xffu);
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
template <typename T, bool AVG, bool WIDE>
__device__ __forceinline__ void pool_small(const T* __restrict__ x, T* __restrict__ y, const Params& p) {
    constexpr int V = 16 / sizeof(T);
    constexpr int U2 = units_stride2<T>(), U1 = units_stride1<T>(), R1 = rows_stride1<T>();
    const bool vec = PP_POOL_VECTOR && pp::is_aligned16(x) && p.w % V == 0 && p.sh == p.sw;
    const bool more = WIDE && vec && PP_POOL_MORE_WINDOWS;
    if (vec && p.kh == 2 && p.kw == 2 && p.sh == 2 && p.pw == 0)
        pool_vec<T, AVG, 2, 2, 2, 0, 1, U2>(x, y, p);
    else if (vec && p.kh == 3 && p.kw == 3 && p.sh == 2 && p.pw == 1)
        pool_vec<T, AVG, 3, 3, 2, 1, 1, U2>(x, y, p);
    else if (vec && p.kh == 3 && p.kw == 3 && p.sh == 1 && p.pw == 1)
        pool_vec<T, AVG, 3, 3, 1, 1, R1, U1>(x, y, p);
    else if (more && p.kh == 5 && p.kw == 5 && p.sh == 2 && p.pw == 2)
        pool_vec<T, AVG, 5, 5, 2, 2, PP_POOL_ROWS_5, PP_POOL_UNITS_5, PP_POOL_PACKED != 0>(x, y, p);
    else if (more && p.kh == 3 && p.kw == 3 && p.sh == 2 && p.pw == 0)
        pool_vec<T, AVG, 3, 3, 2, 0, 1, U2>(x, y, p);
    else if (more && p.kh == 2 && p.kw == 2 && p.sh == 1 && p.pw == 0)
        pool_vec<T, AVG, 2, 2, 1, 0, R1, U1>(x, y, p);
    else
        pool_window<T, FastDiv, AVG>(x, y, p);
}

// pool2d_i8's body: the byte-SIMD path where it applies, the generic path elsewhere (so that the
// kernel keeps the generic path's few registers).
template <bool AVG>
__device__ __forceinline__ void pool_i8_entry(const signed char* __restrict__ x, signed char* __restrict__ y,
                                              const Params& p) {
    const bool small = p.total < (1ll << 31) && p.nc * p.h * static_cast<long long>(p.w) < (1ll << 31);
    if (PP_POOL_INT8_SIMD && small && pp::is_aligned16(x) && p.w % 16 == 0 && p.unit && p.kh == 2 && p.kw == 2 &&
        p.sh == 2 && p.sw == 2 && p.ph == 0 && p.pw == 0)
        pool_i8_2x2<AVG, units_i8()>(x, y, p);
    else if (small)
        pool_window<signed char, FastDiv, AVG>(x, y, p);
    else
        pool_body<signed char, SlowDiv, AVG, 0, 0>(x, y, p);
}

__device__ __forceinline__ bool fill_params(Params& p, long long nc, int h, int w, int ho, int wo, int kh,
                                            int kw, int sh, int sw, int ph, int pw, float in_scale,
                                            float out_scale) {
    if (nc <= 0 || ho <= 0 || wo <= 0) return false;
    p.nc = nc;
    p.total = nc * ho * wo;
    p.h = h; p.w = w; p.ho = ho; p.wo = wo; p.kh = kh; p.kw = kw;
    p.sh = sh; p.sw = sw; p.ph = ph; p.pw = pw;
    p.ratio = static_cast<double>(in_scale) / static_cast<double>(out_scale);
    p.unit = in_scale == out_scale;
    return true;
}

// Both kernels' body: WIDE adds the later vector windows (more registers, so a kernel of its own:
// a kernel's register count is its most demanding path's, and it sets every path's occupancy).
template <typename T, bool WIDE>
__device__ __forceinline__ void pool_entry(const T* __restrict__ x, T* __restrict__ y, long long nc,
                                           int h, int w, int ho, int wo, int kh, int kw, int sh,
                                           int sw, int ph, int pw, int mode, float in_scale,
                                           float out_scale) {
    Params p;
    if (!fill_params(p, nc, h, w, ho, wo, kh, kw, sh, sw, ph, pw, in_scale, out_scale)) return;
    const bool small = p.total < (1ll << 31) && nc * h * static_cast<long long>(w) < (1ll << 31);
    if (small) {
        if (mode == 0) pool_small<T, false, WIDE>(x, y, p);
        else pool_small<T, true, WIDE>(x, y, p);
    } else {
        if (mode == 0) pool_body<T, SlowDiv, false, 0, 0>(x, y, p);
        else pool_body<T, SlowDiv, true, 0, 0>(x, y, p);
    }
}

}  // namespace pp_pool

template <typename T>
__global__ void pool2d(const T* __restrict__ x, T* __restrict__ y, long long nc, int h, int w,
                       int ho, int wo, int kh, int kw, int sh, int sw, int ph, int pw, int mode,
                       float in_scale, float out_scale) {
    pp_pool::pool_entry<T, false>(x, y, nc, h, w, ho, wo, kh, kw, sh, sw, ph, pw, mode, in_scale,
                                  out_scale);
}

template <typename T>
__global__ void pool2d_wide(const T* __restrict__ x, T* __restrict__ y, long long nc, int h,
                            int w, int ho, int wo, int kh, int kw, int sh, int sw, int ph, int pw,
                            int mode, float in_scale, float out_scale) {
    pp_pool::pool_entry<T, true>(x, y, nc, h, w, ho, wo, kh, kw, sh, sw, ph, pw, mode, in_scale,
                                 out_scale);
}

// INT8 only (instantiated for signed char): launch it for 2x2 stride 2 padding 0 at in_scale ==
// out_scale. Any window and ratio is still computed (generic path), but the register cap that
// keeps the byte-SIMD path at full occupancy (40; it needs 32) makes the generic path spill.
template <typename T>
__global__ void __launch_bounds__(512, 3) pool2d_i8(const T* __restrict__ x, T* __restrict__ y, long long nc, int h, int w,
                          int ho, int wo, int kh, int kw, int sh, int sw, int ph, int pw, int mode,
                          float in_scale, float out_scale) {
    static_assert(sizeof(T) == 1, "pool2d_i8 is INT8 only");
    pp_pool::Params p;
    if (!pp_pool::fill_params(p, nc, h, w, ho, wo, kh, kw, sh, sw, ph, pw, in_scale, out_scale)) return;
    if (mode == 0) pp_pool::pool_i8_entry<false>(x, y, p);
    else pp_pool::pool_i8_entry<true>(x, y, p);
}
