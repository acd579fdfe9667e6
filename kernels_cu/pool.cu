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
//     pool2d_cols<T>(same arguments): the same function; launch it for 5x5 stride 2 column
//               padding 2 (any ph <= 4), with a block of a multiple of 32 threads, at most
//               PP_POOL_COLS_THREADS (its launch bounds; the host passes its block, 256), and
//               grid = min(cdiv(32 * nc * cdiv(w / V, 32) * cdiv(ho, S), 256), resident blocks)
//               (V = 16 / sizeof(T), S = PP_POOL_COLS_S): at most one wave, whose warps take
//               the work items grid-stride. When x is 16-byte aligned, y 8-byte
//               aligned, w * sizeof(T) % 16 == 0 (so wo = w / 2), ho = (h + 2 ph - 5) / 2 + 1,
//               the indices fit 32 bits and blockDim.x % 32 == 0, it needs no shared memory: a
//               warp owns 32 consecutive 16-byte chunks of one plane's rows (lanes past the
//               row's end idle) and walks a segment of S output rows (odd segments walk up,
//               so that rows two segments share are read while in L2),
//               keeping the pair reduction of its window's first two input rows and the third
//               as converted, so each output row loads and converts two new input rows (512
//               contiguous bytes a warp), the next output row's loads in flight while it
//               computes; the 2 columns left and the 1 right of a chunk come from the
//               neighbouring lanes by warp shuffles (where a row has several column groups,
//               the groups' end lanes load theirs), then the window's reduction on packed words
//               (INT8 in 16-bit lanes: max of sign-extended q with VIMNMX3, sums of q + 128
//               divided by a multiply; half max __hmax2; float and half average in float) and
//               8-byte stores. Elsewhere the generic path, which spills under this kernel's
//               64-register cap.
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
//   - Elsewhere (generic path) each thread computes PP_POOL_OUTPUTS (4) outputs a blockDim.x
//     apart per trip, reading x through the caches; overlapping windows re-read inputs from
//     L1/L2.
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
// @instantiate pool2d_cols<float>
// @instantiate pool2d_cols<__half>
// @instantiate pool2d_cols<signed char>
// @instantiate pool2d_aot<float>
// @instantiate pool2d_aot<__half>
// @instantiate pool2d_aot<signed char>
// @instantiate pool2d_wide_aot<float>
// @instantiate pool2d_wide_aot<__half>
// @instantiate pool2d_wide_aot<signed char>
// @instantiate pool2d_i8_aot<signed char>
// @instantiate pool2d_cols_aot<float>
// @instantiate pool2d_cols_aot<__half>
// @instantiate pool2d_cols_aot<signed char>
//
// Tuning knobs (compile options, defaults in the code below): PP_POOL_UNITS_S2, _UNITS_S1,
// _ROWS_S1, _ROWS_5, _UNITS_5, PP_POOL_VECTOR=0 (generic path only), PP_POOL_MORE_WINDOWS=0
// (pool2d_wide without its extra windows), PP_POOL_UNITS_I8 (pool2d_i8's units per trip),
// PP_POOL_INT8_SIMD=0 (pool2d_i8 without its byte-SIMD path), PP_POOL_COLS_AHEAD / _MINB
// (pool2d_cols's prefetch distance and launch bounds, described where they are defined).
// PP_POOL_COLS_S and PP_POOL_COLS_THREADS have no default: the host sizes its grid by them and
// passes them (pyplugins.ops.pool.DEFINES). pool2d_band, a kernel
// that staged bands of rows in shared memory for the same windows as pool2d_cols, lost to it
// and was removed (docs/ops/pool.md has the figures).

#include "common.cuh"

// Constants the host sizes its grids by: pyplugins.ops.pool.DEFINES passes each as a -D
// option to every compile, so there is no default here.
#ifndef PP_POOL_OUTPUTS
#error "pool.cu needs -DPP_POOL_OUTPUTS (the generic path's outputs per thread per trip)"
#endif
#ifndef PP_POOL_COLS_S
#error "pool.cu needs -DPP_POOL_COLS_S (pool2d_cols: output rows a segment walks)"
#endif
#ifndef PP_POOL_COLS_THREADS
#error "pool.cu needs -DPP_POOL_COLS_THREADS (pool2d_cols: its launch bounds' block)"
#endif

namespace pp_pool {

// Outputs each thread computes per trip (independent loads in flight), generic path.
constexpr int kOutputs = PP_POOL_OUTPUTS;

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

// ---- 5x5 stride 2 on packed words (pool2d_cols's reduction) ---------------------------------

// prmt.b32 (PTX): bytes of {b, a} picked by the selector's nibbles; a nibble's bit 3 replicates
// the picked byte's sign bit instead (sign extension to 16-bit lanes).
__device__ __forceinline__ unsigned prmt(unsigned a, unsigned b, unsigned s) {
    unsigned d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(s));
    return d;
}
// Signed 16-bit lane max of two / three words (VIMNMX / VIMNMX3 on sm_90).
__device__ __forceinline__ unsigned smax2(unsigned a, unsigned b) { return __vmaxs2(a, b); }
__device__ __forceinline__ unsigned smax3(unsigned a, unsigned b, unsigned c) {
#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ >= 12
    return __vimax3_s16x2(a, b, c);
#else
    return __vmaxs2(__vmaxs2(a, b), c);
#endif
}
// Lane max of two half2 words: __hmax2 where it exists (sm_80), else through float (exact).
__device__ __forceinline__ unsigned hmax2w(unsigned a, unsigned b) {
    const __half2 ha = *reinterpret_cast<const __half2*>(&a);
    const __half2 hb = *reinterpret_cast<const __half2*>(&b);
#if PP_POOL_HMAX2
    const __half2 m = __hmax2(ha, hb);
#else
    const float2 fa = __half22float2(ha), fb = __half22float2(hb);
    const __half2 m = __floats2half2_rn(fa.x > fb.x ? fa.x : fb.x, fa.y > fb.y ? fa.y : fb.y);
#endif
    return *reinterpret_cast<const unsigned*>(&m);
}

// One input row as loaded by a lane (pool2d_cols): its chunk c, the 8 bytes before it (l) and
// the 4 after it (r), in memory order, and m, the row's mask for averages (all ones for a row
// of the input, 0 for one outside it). l and r are loaded only where the group has neighbouring
// groups (EDGE), by its end lanes; the other lanes take them from their neighbours after the
// rows are reduced, and a row's ends outside the input take the fill there (BandRow::exchange).
struct ColsIn {
    uint4 c;
    uint2 l;
    unsigned r, m;
};

// One input row's share of a lane: its chunk (V columns) plus the 2 columns left of it and the
// 1 right of it, in the form it is reduced in. set() takes it from a ColsIn (averages mask it;
// without EDGE, l and r are not read), pair() / triple() reduce rows lane by lane (max or sum;
// l and r only with EDGE), exchange() takes l and r from the neighbouring lanes, or the fill at
// the row's ends, and emit() reduces across the 5 columns of each of the V / 2 outputs and
// packs them into 8 bytes. rows: in-bounds rows of the output row's window; first / last: the
// chunk is the row's first / last (its first / last output's window is clipped to 3 / 4
// columns).
template <typename T, bool AVG> struct BandRow;

// K = ceil(2^24 / count) and C = floor(count / 2) * K + 2^31 for an INT8 average of count
// elements (BandRow<signed char>::emit); count in [1, 25].
__device__ __forceinline__ void cols_avg_consts(int count, unsigned& k, unsigned& c) {
    const unsigned n = static_cast<unsigned>(count);
    k = (0x1000000u + n - 1u) / n;
    c = (n / 2u) * k + 0x80000000u;
}

// INT8 outputs from their 16-bit lane values s (outputs 2k, 2k + 1 in word k: the max of q,
// sign-extended, or the sum of q + 128) by the reference's requantization, for what the inline
// paths of BandRow<signed char>::emit do not take (a ratio other than 1, a window clipped by the
// input's rows). A call: its double arithmetic stays out of the walk's registers.
template <bool AVG>
__device__ __noinline__ uint2 cols_emit_q(uint4 s4, int rows, bool first, bool last, const Params p) {
    const unsigned s[4] = {s4.x, s4.y, s4.z, s4.w};
    int q[8];
#pragma unroll
    for (int o = 0; o < 8; ++o) {
        const int v = static_cast<int>((s[o / 2] >> (16 * (o % 2))) & 0xffffu);
        const int cols = 5 - (o == 0 && first ? 2 : 0) - (o == 7 && last ? 1 : 0);
        const int count = rows * cols;
        if (!AVG) {
            const int m = static_cast<short>(v);  // the lane, sign-extended
            q[o] = static_cast<unsigned char>(finish_q<0>(m, count, false, p)) ^ 0x80;
        } else if (p.unit) {
            q[o] = rne_div(v, count);  // rne((S + 128 count) / count) = rne(S / count) + 128
        } else {
            const int sum = v - 128 * count;
            q[o] = static_cast<unsigned char>(finish_q<0>(sum, count, true, p)) ^ 0x80;
        }
    }
    // q holds output + 128 (0..255): pack the bytes, then flip the bias bit back
    uint2 out;
    out.x = prmt(prmt(q[0], q[1], 0x0040u), prmt(q[2], q[3], 0x0040u), 0x5410u) ^ 0x80808080u;
    out.y = prmt(prmt(q[4], q[5], 0x0040u), prmt(q[6], q[7], 0x0040u), 0x5410u) ^ 0x80808080u;
    return out;
}

// INT8: 16-bit lanes. ev[k] = columns 4k, 4k + 2 and od[k] = 4k + 1, 4k + 3 of word k; l =
// columns -2, -1; r = column 16 (low lane). Max: sign-extended q. Average: q + 128 (0..255), so
// sums of up to 25 stay below 2^16 and never carry between lanes; slots outside the input hold
// the fill (-128: the max identity; 0 once biased).
template <bool AVG> struct BandRow<signed char, AVG> {
    static constexpr unsigned kFill = AVG ? 0u : 0xff80ff80u;
    unsigned ev[4], od[4], l, r;
    template <bool EDGE, bool MASK> __device__ __forceinline__ void set(const ColsIn& in) {
        const unsigned w[4] = {in.c.x, in.c.y, in.c.z, in.c.w};
        const unsigned m = MASK ? in.m : 0xffffffffu;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if (AVG) {  // bias the word (q ^ 0x80 = q + 128) and mask it in one op, then split it
                const unsigned b = (w[k] ^ 0x80808080u) & m;
                ev[k] = prmt(b, 0u, 0x4240u);
                od[k] = prmt(b, 0u, 0x4341u);
            } else {
                ev[k] = prmt(w[k], 0u, 0xA280u);
                od[k] = prmt(w[k], 0u, 0xB391u);
            }
        }
        if (EDGE) {  // l.y bytes 2, 3 = columns -2, -1; r byte 0 = column 16
            l = AVG ? (prmt(in.l.y, 0u, 0x4342u) ^ 0x00800080u) & m : prmt(in.l.y, 0u, 0xB3A2u);
            r = AVG ? ((in.r & 0xffu) ^ 0x80u) & m : prmt(in.r, 0u, 0x8080u);
        } else {
            l = r = kFill;
        }
    }
    // columns -2, -1 from lane - 1's reduced row (its columns 14, 15: the high lanes of ev[3],
    // od[3]) where take_l, column 16 from lane + 1's (its column 0) where take_r; elsewhere its
    // own (own_l / own_r: loaded, EDGE) or the fill.
    template <bool EDGE>
    __device__ __forceinline__ void exchange(bool take_l, bool take_r, bool own_l, bool own_r) {
        const unsigned nl = __shfl_up_sync(0xffffffffu, prmt(ev[3], od[3], 0x7632u), 1);
        const unsigned nr = __shfl_down_sync(0xffffffffu, ev[0], 1);
        l = take_l ? nl : (EDGE && own_l ? l : kFill);
        r = take_r ? nr : (EDGE && own_r ? r : kFill);
    }
    __device__ __forceinline__ static unsigned op2(unsigned a, unsigned b) {
        return AVG ? a + b : smax2(a, b);
    }
    __device__ __forceinline__ static unsigned op3(unsigned a, unsigned b, unsigned c) {
        return AVG ? a + b + c : smax3(a, b, c);
    }
    template <bool EDGE> __device__ __forceinline__ void pair(const BandRow& a, const BandRow& b) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            ev[k] = op2(a.ev[k], b.ev[k]);
            od[k] = op2(a.od[k], b.od[k]);
        }
        l = EDGE ? op2(a.l, b.l) : kFill;
        r = EDGE ? op2(a.r, b.r) : kFill;
    }
    template <bool EDGE>
    __device__ __forceinline__ void triple(const BandRow& a, const BandRow& b, const BandRow& c) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            ev[k] = op3(a.ev[k], b.ev[k], c.ev[k]);
            od[k] = op3(a.od[k], b.od[k], c.od[k]);
        }
        l = EDGE ? op3(a.l, b.l, c.l) : kFill;
        r = EDGE ? op3(a.r, b.r, c.r) : kFill;
    }
    template <bool UNIT>
    __device__ __forceinline__ uint2 emit(int rows, bool first, bool last, const Params& p) const {
        // s[k] = outputs 2k, 2k + 1 (16-bit lanes): columns 4k - 2 .. 4k + 2 and 4k .. 4k + 4.
        unsigned s[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const unsigned a = k == 0 ? prmt(l, ev[0], 0x5410u) : prmt(ev[k - 1], ev[k], 0x5432u);
            const unsigned b = k == 0 ? prmt(l, od[0], 0x5432u) : prmt(od[k - 1], od[k], 0x5432u);
            const unsigned e = prmt(ev[k], k == 3 ? r : ev[k + 1], 0x5432u);
            s[k] = op3(op3(a, b, ev[k]), od[k], e);
        }
        if (!UNIT) return cols_emit_q<AVG>(make_uint4(s[0], s[1], s[2], s[3]), rows, first, last, p);
        uint2 out;
        if (!AVG) {  // the max of q is the output: the lanes' low bytes
            out.x = prmt(s[0], s[1], 0x6420u);
            out.y = prmt(s[2], s[3], 0x6420u);
            return out;
        }
        // u = S + 128 count, count = rows x 5 columns (3 / 4 for the row's first / last output).
        // Each output's byte is the top byte of t = u * K + C (mod 2^32), K = 2^24 / count
        // rounded up and C = floor(count / 2) * K + 2^31: floor((u + floor(count / 2)) / count)
        // + 128 (mod 256), exact for every count <= 25 (the product stays below 2^32, and its
        // error below 1 / count). That is rne(S / count) for an odd count. An even count rounds
        // ties up: a tie leaves t's bits 13..23 zero (count K = 2^24 + e with e < count, and
        // e floor(...) < 2^13; any other remainder leaves at least K >= 2^19 there), and an odd
        // result (bit 24) then steps down one, to the even neighbour.
        // rows < 5 only where the window is clipped by the input's rows (a warp-uniform branch,
        // folded away where rows is the constant 5): the divisions and the tie steps of other
        // row counts stay off the other rows
        return rows == 5 ? avg_bytes(s, 5, first, last) : avg_bytes(s, rows, first, last);
    }
    __device__ __forceinline__ static uint2 avg_bytes(const unsigned (&s)[4], int rows, bool first, bool last) {
        unsigned k5, c5, k0, c0, k7, c7;
        cols_avg_consts(rows * 5, k5, c5);
        cols_avg_consts(rows * 3, k0, c0);
        cols_avg_consts(rows * 4, k7, c7);
        if (!first) k0 = k5, c0 = c5;
        if (!last) k7 = k5, c7 = c5;
        unsigned t[8];
#pragma unroll
        for (int o = 0; o < 8; ++o) {
            const unsigned u = o % 2 ? s[o / 2] >> 16 : s[o / 2] & 0xffffu;
            t[o] = o == 0 ? u * k0 + c0 : (o == 7 ? u * k7 + c7 : u * k5 + c5);
        }
        // count = rows x cols is even where rows is, and for the last output of the row's last chunk
#pragma unroll
        for (int o = 0; o < 8; ++o) {
            const bool even = rows % 2 == 0 || (o == 7 && last);
            if (even && (t[o] & 0x01ffe000u) == 0x01000000u) t[o] -= 0x01000000u;
        }
        uint2 out;
        out.x = prmt(prmt(t[0], t[1], 0x0073u), prmt(t[2], t[3], 0x0073u), 0x5410u);
        out.y = prmt(prmt(t[4], t[5], 0x0073u), prmt(t[6], t[7], 0x0073u), 0x5410u);
        return out;
    }
};

// Half max: raw half2 words (w[k] = columns 2k, 2k + 1; l = -2, -1; r = 8, 9), __hmax2.
template <> struct BandRow<__half, false> {
    static constexpr unsigned kFill = 0xfc00fc00u;  // -inf, -inf
    unsigned w[4], l, r;
    template <bool EDGE, bool MASK> __device__ __forceinline__ void set(const ColsIn& in) {
        w[0] = in.c.x; w[1] = in.c.y; w[2] = in.c.z; w[3] = in.c.w;
        l = EDGE ? in.l.y : kFill;
        r = EDGE ? in.r : kFill;
    }
    // columns -2, -1 = lane - 1's word 3 where take_l, column 8 = lane + 1's word 0 where take_r;
    // elsewhere its own (own_l / own_r, EDGE) or the fill.
    template <bool EDGE>
    __device__ __forceinline__ void exchange(bool take_l, bool take_r, bool own_l, bool own_r) {
        const unsigned nl = __shfl_up_sync(0xffffffffu, w[3], 1);
        const unsigned nr = __shfl_down_sync(0xffffffffu, w[0], 1);
        l = take_l ? nl : (EDGE && own_l ? l : kFill);
        r = take_r ? nr : (EDGE && own_r ? r : kFill);
    }
    template <bool EDGE> __device__ __forceinline__ void pair(const BandRow& a, const BandRow& b) {
#pragma unroll
        for (int k = 0; k < 4; ++k) w[k] = hmax2w(a.w[k], b.w[k]);
        l = EDGE ? hmax2w(a.l, b.l) : kFill;
        r = EDGE ? hmax2w(a.r, b.r) : kFill;
    }
    template <bool EDGE>
    __device__ __forceinline__ void triple(const BandRow& a, const BandRow& b, const BandRow& c) {
#pragma unroll
        for (int k = 0; k < 4; ++k) w[k] = hmax2w(hmax2w(a.w[k], b.w[k]), c.w[k]);
        l = EDGE ? hmax2w(hmax2w(a.l, b.l), c.l) : kFill;
        r = EDGE ? hmax2w(hmax2w(a.r, b.r), c.r) : kFill;
    }
    template <bool>
    __device__ __forceinline__ uint2 emit(int, bool, bool, const Params&) const {
        // lo[m] / hi[m]: the low / high halves of words m - 1 and m (word -1 = l, word 4 = r)
        unsigned lo[5], hi[5];
#pragma unroll
        for (int m = 0; m < 5; ++m) {
            const unsigned a = m == 0 ? l : w[m - 1], b = m == 4 ? r : w[m];
            lo[m] = prmt(a, b, 0x5410u);
            hi[m] = prmt(a, b, 0x7632u);
        }
        // outputs 2k, 2k + 1: columns 4k - 2 .. 4k + 2 and 4k .. 4k + 4
        uint2 out;
        out.x = hmax2w(hmax2w(hmax2w(lo[0], hi[0]), hmax2w(lo[1], hi[1])), lo[2]);
        out.y = hmax2w(hmax2w(hmax2w(lo[2], hi[2]), hmax2w(lo[3], hi[3])), lo[4]);
        return out;
    }
};

// Float types (float max / average, half average): E = V + 3 columns in float (c[0], c[1] =
// columns -2, -1; c[2 + i] = column i), rows added (a + b) + c. Averages mask the raw words (0
// bits are 0.0).
template <typename T, bool AVG> struct BandRow {
    static constexpr int V = 16 / sizeof(T);
    float c[V + 3];
    __device__ __forceinline__ static float fill() { return AVG ? 0.f : lowest(0.f); }
    __device__ __forceinline__ static unsigned masked(unsigned w, unsigned m) { return AVG ? w & m : w; }
    template <bool EDGE, bool MASK> __device__ __forceinline__ void set(const ColsIn& in) {
        const unsigned m = MASK ? in.m : 0xffffffffu;
        if constexpr (sizeof(T) == 4) {
            c[2] = __uint_as_float(masked(in.c.x, m)); c[3] = __uint_as_float(masked(in.c.y, m));
            c[4] = __uint_as_float(masked(in.c.z, m)); c[5] = __uint_as_float(masked(in.c.w, m));
            c[0] = EDGE ? __uint_as_float(masked(in.l.x, m)) : fill();
            c[1] = EDGE ? __uint_as_float(masked(in.l.y, m)) : fill();
            c[6] = EDGE ? __uint_as_float(masked(in.r, m)) : fill();
        } else {
            const unsigned w[6] = {in.l.y, in.c.x, in.c.y, in.c.z, in.c.w, in.r};
#pragma unroll
            for (int k = 0; k < 5; ++k) {
                if (k == 0 && !EDGE) {
                    c[0] = c[1] = fill();
                    continue;
                }
                const unsigned h = masked(w[k], m);
                const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
                c[2 * k] = f.x;
                c[2 * k + 1] = f.y;
            }
            const unsigned h = masked(w[5], m);
            c[10] = EDGE ? __low2float(*reinterpret_cast<const __half2*>(&h)) : fill();
        }
    }
    // columns -2, -1 = lane - 1's columns V - 2, V - 1 where take_l, column V = lane + 1's column
    // 0 where take_r; elsewhere its own (own_l / own_r, EDGE) or the fill.
    template <bool EDGE>
    __device__ __forceinline__ void exchange(bool take_l, bool take_r, bool own_l, bool own_r) {
        const float n0 = __shfl_up_sync(0xffffffffu, c[V], 1);
        const float n1 = __shfl_up_sync(0xffffffffu, c[V + 1], 1);
        const float nr = __shfl_down_sync(0xffffffffu, c[2], 1);
        const bool keep_l = EDGE && own_l, keep_r = EDGE && own_r;
        c[0] = take_l ? n0 : (keep_l ? c[0] : fill());
        c[1] = take_l ? n1 : (keep_l ? c[1] : fill());
        c[V + 2] = take_r ? nr : (keep_r ? c[V + 2] : fill());
    }
    __device__ __forceinline__ static float op2(float a, float b) { return AVG ? a + b : fmaxf(a, b); }
    template <bool EDGE> __device__ __forceinline__ void pair(const BandRow& a, const BandRow& b) {
#pragma unroll
        for (int i = 0; i < V + 3; ++i) {
            const bool side = i < 2 || i == V + 2;
            c[i] = side && !EDGE ? fill() : op2(a.c[i], b.c[i]);
        }
    }
    template <bool EDGE>
    __device__ __forceinline__ void triple(const BandRow& a, const BandRow& b, const BandRow& d) {
#pragma unroll
        for (int i = 0; i < V + 3; ++i) {
            const bool side = i < 2 || i == V + 2;
            c[i] = side && !EDGE ? fill() : op2(op2(a.c[i], b.c[i]), d.c[i]);
        }
    }
    template <bool>
    __device__ __forceinline__ uint2 emit(int rows, bool first, bool last, const Params&) const {
        // pp[m] = columns 2m - 2, 2m - 1; output o = pp[o] + pp[o + 1] + column 2o + 2
        constexpr int OW = V / 2;
        float pp[OW + 1];
#pragma unroll
        for (int m = 0; m <= OW; ++m) pp[m] = op2(c[2 * m], c[2 * m + 1]);
        float v[OW];
#pragma unroll
        for (int o = 0; o < OW; ++o) v[o] = op2(op2(pp[o], pp[o + 1]), c[2 * o + 4]);
        if (AVG) {  // sum / count, count = rows x 5 columns (3 / 4 at the row's first / last)
            const float inv = __fdividef(1.f, static_cast<float>(rows * 5));
#pragma unroll
            for (int o = 1; o < OW - 1; ++o) v[o] *= inv;
            v[0] *= first ? __fdividef(1.f, static_cast<float>(rows * 3)) : inv;
            v[OW - 1] *= last ? __fdividef(1.f, static_cast<float>(rows * 4)) : inv;
        }
        uint2 out;
        if constexpr (sizeof(T) == 4) {
            out.x = __float_as_uint(v[0]);
            out.y = __float_as_uint(v[1]);
        } else {
            const __half2 a = __floats2half2_rn(v[0], v[1]), b = __floats2half2_rn(v[2], v[3]);
            out.x = *reinterpret_cast<const unsigned*>(&a);
            out.y = *reinterpret_cast<const unsigned*>(&b);
        }
        return out;
    }
};

// The generic path as a call (pool2d_cols's fallback): compiled apart, so that its register
// demand does not make the column path's loop spill (a call's cost is paid once per thread).
template <typename T, typename Div, bool AVG>
__device__ __noinline__ void pool_body_call(const T* __restrict__ x, T* __restrict__ y, const Params p) {
    pool_body<T, Div, AVG, 0, 0>(x, y, p);
}

// ---- column path (pool2d_cols): 5x5 stride 2, column padding 2, no shared memory ---------------

// A warp owns 32 consecutive 16-byte chunks of one plane's rows (a column group; lanes past the
// row's last chunk idle but take part in the shuffles) and walks a segment of S output rows
// (down, or up for odd segments: the 3 input rows two neighbouring segments share are then read
// by both at about the same time, while in L2). Output row oh's window is input rows 2 oh - ph
// + [0, 5), taken in the walk's order: a lane keeps P, the pair reduction of the window's first
// two rows, and E, its third row as converted, so each output row loads and converts only its
// last two rows (16 bytes a lane, 512 contiguous bytes a warp), pairs E with the first of them
// (the next output row's P) and reduces P, that pair and the last row; the last row is the next
// E. The 2 columns left of the chunk and the 1 right of it come from the neighbouring lanes'
// reduced rows (warp shuffles), except at the group's ends: where the row has more than one
// group (EDGE: its own compiled walk, chosen per launch), lane 0 loads the 8 bytes before its
// chunk and the group's last lane the 4 after it, per input row, reduced with the rest. A row
// outside the input is read as the nearest row of the input: max keeps it (that row lies in the
// same window, so the max is the same), averages mask it to 0; segments whose windows stay in
// the input take a walk without that clamp. The next PP_POOL_COLS_AHEAD output rows' loads are
// in flight while a row is computed. Work item = (plane, segment,
// group), taken grid-stride by global warp id. Knobs (compile options):
//   PP_POOL_COLS_AHEAD    output rows whose loads are in flight ahead of the one computed (1, 2)
//   PP_POOL_COLS_S        output rows per segment, >= 1 (the host's: 4). Any S is correct;
//                         segments re-read only their 3 boundary input rows (3 / (2 S) extra,
//                         from L2 where neighbours walk towards each other)
//   PP_POOL_COLS_THREADS, _MINB  launch bounds (the host's block, 256, x 4: 64 registers)
#ifndef PP_POOL_COLS_AHEAD
#define PP_POOL_COLS_AHEAD 1
#endif
#ifndef PP_POOL_COLS_MINB
#define PP_POOL_COLS_MINB 4
#endif
static_assert(PP_POOL_COLS_AHEAD >= 1 && PP_POOL_COLS_AHEAD <= 4, "PP_POOL_COLS_AHEAD: 1 to 4");
static_assert(PP_POOL_COLS_S >= 1, "PP_POOL_COLS_S: output rows per segment, at least 1");

// What a lane of a work item knows for the whole walk: its chunk's place in the row and which
// of its neighbours' columns it takes.
struct ColsLane {
    int lane, last_lane;   // lane in the warp; the group's last lane with a chunk
    bool active;           // the lane has a chunk (lanes past the row's end only shuffle)
    bool need_l, need_r;   // EDGE: the lane loads the columns before / after its chunk
    bool first, last;      // the chunk is the row's first / last
};

// Loads input row ih into in; CLAMP: ih may lie outside the input, and the nearest row of the
// input is read instead (m says which). Nothing waits for the loads here: set() takes them when
// the row is reduced.
template <typename T, bool AVG, bool EDGE, bool CLAMP>
__device__ __forceinline__ void cols_fetch(ColsIn& in, const T* __restrict__ x, unsigned src, int ih,
                                           const Params& p, const ColsLane& ln) {
    constexpr int V = 16 / sizeof(T);
    const int hc = !CLAMP ? ih : (ih < 0 ? 0 : (ih < p.h ? ih : p.h - 1));
    const T* row = x + (src + static_cast<unsigned>(hc) * static_cast<unsigned>(p.w));
    if (AVG) in.m = !CLAMP || hc == ih ? 0xffffffffu : 0u;
    // every field is assigned on every path (a field kept from an earlier row would make the
    // compiler keep the struct in local memory)
    in.c = __ldg(reinterpret_cast<const uint4*>(row));
    if (EDGE) {
        if constexpr (sizeof(T) == 4) {
            in.l = ln.need_l ? __ldg(reinterpret_cast<const uint2*>(row) - 1) : make_uint2(0u, 0u);
        } else {
            in.l.y = ln.need_l ? __ldg(reinterpret_cast<const unsigned*>(row) - 1) : 0u;
        }
        in.r = ln.need_r ? __ldg(reinterpret_cast<const unsigned*>(row + V)) : 0u;
    }
}

// One work item's walk down output rows [o0, o1) of its column group: src = the offset of its
// chunk's column in input row 0 of the plane, dst = that of its chunk's place in output row 0
// (32-bit: a register each). CLAMP: some window of the segment reaches outside the input (the
// plane's first and last segments). UNIT: INT8 outputs need no requantization (float: always).
template <typename T, bool AVG, bool EDGE, bool CLAMP, bool UNIT>
__device__ __forceinline__ void cols_walk(const T* __restrict__ x, T* __restrict__ y, unsigned src, unsigned dst,
                                          int o0, int o1, bool up, const Params& p, const ColsLane& ln) {
    constexpr int A = PP_POOL_COLS_AHEAD;
    typedef BandRow<T, AVG> Row;
    // The walk's i-th output row is oh = first + dir i; it consumes its window's rows in the
    // order 2 oh - ph + 2 + dir (j - 2), j = 0 .. 4 (top down, or bottom up), so that slot 2 of
    // one output row is slot 0 of the next either way.
    const int dir = up ? -1 : 1;
    const int first = up ? o1 - 1 : o0;
    const int n = o1 - o0;
    const int mid = 2 * first - p.ph + 2;  // slot 2 of the walk's first output row
    // Prologue: slots 0, 1 (P) and 2 (E); the first A output rows' two new rows (slots 3, 4).
    ColsIn in[A][2];
    Row P, E;
    {
        ColsIn r0, r1, r2;
        cols_fetch<T, AVG, EDGE, CLAMP>(r0, x, src, mid - 2 * dir, p, ln);
        cols_fetch<T, AVG, EDGE, CLAMP>(r1, x, src, mid - dir, p, ln);
        cols_fetch<T, AVG, EDGE, CLAMP>(r2, x, src, mid, p, ln);
#pragma unroll
        for (int k = 0; k < A; ++k) {
            if (k < n) {
                cols_fetch<T, AVG, EDGE, CLAMP>(in[k][0], x, src, mid + (2 * k + 1) * dir, p, ln);
                cols_fetch<T, AVG, EDGE, CLAMP>(in[k][1], x, src, mid + (2 * k + 2) * dir, p, ln);
            }
        }
        Row a, b;
        a.template set<EDGE, CLAMP>(r0);
        b.template set<EDGE, CLAMP>(r1);
        P.template pair<EDGE>(a, b);
        E.template set<EDGE, CLAMP>(r2);
    }
    for (int i0 = 0; i0 < n; i0 += A) {
#pragma unroll
        for (int k = 0; k < A; ++k) {
            const int i = i0 + k;
            if (i >= n) break;
            const int oh = first + dir * i;
            // slots 3, 4 (in[k]), then in[k] refills for output row i + A
            Row a, b, q, v;
            a.template set<EDGE, CLAMP>(in[k][0]);
            b.template set<EDGE, CLAMP>(in[k][1]);
            if (i + A < n) {
                const int ahead = mid + 2 * (i + A) * dir;  // slot 2 of output row i + A
                cols_fetch<T, AVG, EDGE, CLAMP>(in[k][0], x, src, ahead + dir, p, ln);
                cols_fetch<T, AVG, EDGE, CLAMP>(in[k][1], x, src, ahead + 2 * dir, p, ln);
            }
            q.template pair<EDGE>(E, a);  // slots 2, 3: the next output row's P
            v.template triple<EDGE>(P, q, b);
            P = q;
            E = b;
            v.template exchange<EDGE>(ln.lane != 0, ln.lane != ln.last_lane, ln.need_l, ln.need_r);
            const int rows = CLAMP ? extent(2 * oh - p.ph, 5, p.h) : 5;
            const uint2 out = v.template emit<UNIT>(rows, ln.first, ln.last, p);
            if (ln.active) *reinterpret_cast<uint2*>(y + (dst + static_cast<unsigned>(oh) * static_cast<unsigned>(p.wo))) = out;
        }
    }
}

// pool_cols's walk over its work items, EDGE: the rows have more than one column group.
template <typename T, bool AVG, bool EDGE>
__device__ __forceinline__ void cols_items(const T* __restrict__ x, T* __restrict__ y, const Params& p,
                                           int groups, int segs, int S, unsigned first_item,
                                           unsigned items, unsigned step) {
    constexpr int V = 16 / sizeof(T);
    constexpr int OW = V / 2;
    const int ch = p.w / V;
    const FastDiv by_groups(groups), by_segs(segs);
    ColsLane ln;
    ln.lane = static_cast<int>(threadIdx.x & 31u);
    for (unsigned it = first_item; it < items; it += step) {
        const int item = static_cast<int>(it);
        const int q = static_cast<int>(by_groups(item));
        const int group = item - q * groups;
        const int plane = static_cast<int>(by_segs(q));
        const int seg = q - plane * segs;
        const int chunk = group * 32 + ln.lane;
        ln.last_lane = ch - 1 - group * 32 < 31 ? ch - 1 - group * 32 : 31;
        ln.active = chunk < ch;
        ln.need_l = EDGE && ln.lane == 0 && chunk > 0;
        ln.need_r = EDGE && ln.lane == ln.last_lane && chunk + 1 < ch;
        ln.first = chunk == 0;
        ln.last = chunk == ch - 1;
        // lanes past the row's end read its last chunk (their results are neither kept nor shuffled
        // into a kept one)
        const int read_chunk = ln.active ? chunk : ch - 1;
        const unsigned src = static_cast<unsigned>(plane * (p.h * p.w) + read_chunk * V);
        const unsigned dst = static_cast<unsigned>(plane * (p.ho * p.wo) + chunk * OW);
        const int o0 = seg * S;
        const int o1 = o0 + S < p.ho ? o0 + S : p.ho;
        // odd segments walk up: the rows two neighbouring segments both read are then read at about
        // the same time (both walks' ends, or both starts), while they are still in L2
        const bool up = (seg & 1) != 0;
        // the segment's windows read input rows 2 o0 - ph .. 2 (o1 - 1) - ph + 4
        if (sizeof(T) == 1 && !p.unit) {  // requantized outputs: one walk, every row clamped
            cols_walk<T, AVG, EDGE, true, false>(x, y, src, dst, o0, o1, up, p, ln);
        } else if (2 * o0 - p.ph >= 0 && 2 * (o1 - 1) - p.ph + 4 < p.h) {
            cols_walk<T, AVG, EDGE, false, true>(x, y, src, dst, o0, o1, up, p, ln);
        } else {
            cols_walk<T, AVG, EDGE, true, true>(x, y, src, dst, o0, o1, up, p, ln);
        }
    }
}

// 5x5 stride 2, column padding 2, row padding ph in [0, 4], ho = (h + 2 ph - 5) / 2 + 1 (every
// window holds a row of the input); x 16-byte aligned, w % V == 0, blockDim.x % 32 == 0 and
// 32-bit indices (the caller checks).
template <typename T, bool AVG>
__device__ __forceinline__ void pool_cols(const T* __restrict__ x, T* __restrict__ y, const Params& p) {
    constexpr int V = 16 / sizeof(T);
    const int ch = p.w / V;
    const int groups = (ch + 31) >> 5;
    // counts fit 32 bits: items <= nc * ho * ch <= numel(y) < 2^31; the grid's warps are taken
    // at most items (the others have nothing to do), so item + warps < 2^32 (unsigned)
    const int columns = static_cast<int>(p.nc) * groups;
    const long long grid_warps = static_cast<long long>(gridDim.x) * (blockDim.x >> 5);
    const long long warp_id = static_cast<long long>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int warps = static_cast<int>(grid_warps < 0x7fffffff ? grid_warps : 0x7fffffff);
    constexpr int S = PP_POOL_COLS_S;
    const int segs = (p.ho + S - 1) / S;
    const int items = columns * segs;
    if (warp_id >= items) return;
    const unsigned step = static_cast<unsigned>(warps < items ? warps : items);
    if (groups > 1) {
        cols_items<T, AVG, true>(x, y, p, groups, segs, S, static_cast<unsigned>(warp_id), items, step);
    } else {
        cols_items<T, AVG, false>(x, y, p, groups, segs, S, static_cast<unsigned>(warp_id), items, step);
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

namespace pp_pool {

// pool2d_i8's body (its kernel and pool2d_i8_aot call it).
template <typename T>
__device__ __forceinline__ void pool_i8_kernel(const T* __restrict__ x, T* __restrict__ y,
                                               long long nc, int h, int w, int ho, int wo, int kh,
                                               int kw, int sh, int sw, int ph, int pw, int mode,
                                               float in_scale, float out_scale) {
    static_assert(sizeof(T) == 1, "pool2d_i8 is INT8 only");
    Params p;
    if (!fill_params(p, nc, h, w, ho, wo, kh, kw, sh, sw, ph, pw, in_scale, out_scale)) return;
    if (mode == 0) pool_i8_entry<false>(x, y, p);
    else pool_i8_entry<true>(x, y, p);
}

// pool2d_cols's body (its kernel and pool2d_cols_aot call it).
template <typename T>
__device__ __forceinline__ void pool_cols_kernel(const T* __restrict__ x, T* __restrict__ y,
                                                 long long nc, int h, int w, int ho, int wo,
                                                 int kh, int kw, int sh, int sw, int ph, int pw,
                                                 int mode, float in_scale, float out_scale) {
    Params p;
    if (!fill_params(p, nc, h, w, ho, wo, kh, kw, sh, sw, ph, pw, in_scale, out_scale)) return;
    const bool small = p.total < (1ll << 31) && nc * h * static_cast<long long>(w) < (1ll << 31);
    const bool cols = small && pp::is_aligned16(x) && w % (16 / static_cast<int>(sizeof(T))) == 0 &&
                      wo == w / 2 && kh == 5 && kw == 5 && sh == 2 && sw == 2 && pw == 2 &&
                      ph >= 0 && ph <= 4 && h + 2 * ph >= 5 && ho == (h + 2 * ph - 5) / 2 + 1 &&
                      (reinterpret_cast<unsigned long long>(y) & 7u) == 0 && blockDim.x % 32 == 0;
    if (cols) {
        if (mode == 0) pool_cols<T, false>(x, y, p);
        else pool_cols<T, true>(x, y, p);
    } else if (small) {  // the run-time window loop, called (its registers apart)
        if (mode == 0) pool_body_call<T, FastDiv, false>(x, y, p);
        else pool_body_call<T, FastDiv, true>(x, y, p);
    } else {
        if (mode == 0) pool_body_call<T, SlowDiv, false>(x, y, p);
        else pool_body_call<T, SlowDiv, true>(x, y, p);
    }
}

}  // namespace pp_pool

// INT8 only (instantiated for signed char): launch it for 2x2 stride 2 padding 0 at in_scale ==
// out_scale. Any window and ratio is still computed (generic path), but the register cap that
// keeps the byte-SIMD path at full occupancy (40; it needs 32) makes the generic path spill.
template <typename T>
__global__ void __launch_bounds__(512, 3) pool2d_i8(const T* __restrict__ x, T* __restrict__ y, long long nc, int h, int w,
                          int ho, int wo, int kh, int kw, int sh, int sw, int ph, int pw, int mode,
                          float in_scale, float out_scale) {
    pp_pool::pool_i8_kernel(x, y, nc, h, w, ho, wo, kh, kw, sh, sw, ph, pw, mode, in_scale,
                            out_scale);
}

// 5x5 stride 2, column padding 2, row padding 0..4 (launch it for that window with a block of a
// multiple of 32 threads, at most PP_POOL_COLS_THREADS): the column path (no shared memory) when
// x is 16-byte aligned, w * sizeof(T) % 16 == 0 and the indices fit 32 bits; the generic path
// for everything else (it spills under this kernel's register cap).
template <typename T>
__global__ void __launch_bounds__(PP_POOL_COLS_THREADS, PP_POOL_COLS_MINB)
pool2d_cols(const T* __restrict__ x, T* __restrict__ y, long long nc, int h, int w, int ho, int wo,
            int kh, int kw, int sh, int sw, int ph, int pw, int mode, float in_scale, float out_scale) {
    pp_pool::pool_cols_kernel(x, y, nc, h, w, ho, wo, kh, kw, sh, sw, ph, pw, mode, in_scale,
                              out_scale);
}

// Ahead-of-time entries (QDP aot_impl; pyplugins.ops.pool.Pool.aot_launch), in TensorRT's order
// (the input pointer, 32-bit ints, the output pointer), each with its kernel's launch bounds and
// calling its kernel's body:
//     <kernel>_aot<T>(const T* x, int nc, int h, int w, int ho, int wo, int kh, int kw, int sh,
//                     int sw, int ph, int pw, int mode, int in_scale_bits, int out_scale_bits, T* y)
// nc = N * C < 2^31; the scales travel as their float32 bits (__int_as_float).
#define PP_POOL_AOT_PARAMS                                                                         \
    const T* __restrict__ x, int nc, int h, int w, int ho, int wo, int kh, int kw, int sh, int sw, \
        int ph, int pw, int mode, int in_scale_bits, int out_scale_bits, T* __restrict__ y
#define PP_POOL_AOT_ARGS                                                                           \
    x, y, static_cast<long long>(nc), h, w, ho, wo, kh, kw, sh, sw, ph, pw, mode,                  \
        __int_as_float(in_scale_bits), __int_as_float(out_scale_bits)

template <typename T>
__global__ void pool2d_aot(PP_POOL_AOT_PARAMS) {
    pp_pool::pool_entry<T, false>(PP_POOL_AOT_ARGS);
}

template <typename T>
__global__ void pool2d_wide_aot(PP_POOL_AOT_PARAMS) {
    pp_pool::pool_entry<T, true>(PP_POOL_AOT_ARGS);
}

template <typename T>
__global__ void __launch_bounds__(512, 3) pool2d_i8_aot(PP_POOL_AOT_PARAMS) {
    pp_pool::pool_i8_kernel(PP_POOL_AOT_ARGS);
}

template <typename T>
__global__ void __launch_bounds__(PP_POOL_COLS_THREADS, PP_POOL_COLS_MINB)
pool2d_cols_aot(PP_POOL_AOT_PARAMS) {
    pp_pool::pool_cols_kernel(PP_POOL_AOT_ARGS);
}
