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
//   - 1-D grid of any size, 1-D block of at most 512 threads (register use); grid-stride,
//     each thread computes 4 outputs a blockDim.x apart per trip, reading x through the
//     caches. Suggested: 256 threads, grid = clamp(cdiv(nc * ho * wo, 256 * 4), 1, 32 * SMs).
//   - Overlapping windows re-read inputs from L1/L2 (3x3 stride 1 reads each input 9 times
//     from cache); a shared-memory band variant (block stages rows, then computes) measured
//     slower on an H100 (0.50 vs 0.85 of copy bandwidth for fp32 2x2/2) and was dropped.
//   - 2x2 and 3x3 windows are unrolled at compile time; others loop. Index math is 32-bit
//     (multiply-shift division) when numel(x) and numel(y) are below 2^31, 64-bit otherwise.
//
// @instantiate pool2d<float>
// @instantiate pool2d<__half>
// @instantiate pool2d<signed char>

#include "common.cuh"

namespace pp_pool {

// Outputs each thread computes per trip (independent loads in flight).
constexpr int kOutputs = 4;

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

template <typename T, typename Div, bool AVG>
__device__ __forceinline__ void pool_window(const T* __restrict__ x, T* __restrict__ y, const Params& p) {
    if (p.kh == 2 && p.kw == 2) pool_body<T, Div, AVG, 2, 2>(x, y, p);
    else if (p.kh == 3 && p.kw == 3) pool_body<T, Div, AVG, 3, 3>(x, y, p);
    else pool_body<T, Div, AVG, 0, 0>(x, y, p);
}

}  // namespace pp_pool

template <typename T>
__global__ void pool2d(const T* __restrict__ x, T* __restrict__ y, long long nc, int h, int w,
                       int ho, int wo, int kh, int kw, int sh, int sw, int ph, int pw, int mode,
                       float in_scale, float out_scale) {
    using namespace pp_pool;
    if (nc <= 0 || ho <= 0 || wo <= 0) return;
    Params p;
    p.total = nc * ho * wo;
    p.h = h; p.w = w; p.ho = ho; p.wo = wo; p.kh = kh; p.kw = kw;
    p.sh = sh; p.sw = sw; p.ph = ph; p.pw = pw;
    p.ratio = __fdiv_rn(in_scale, out_scale);
    const bool small = p.total < (1ll << 31) && nc * h * static_cast<long long>(w) < (1ll << 31);
    if (small) {
        if (mode == 0) pool_window<T, FastDiv, false>(x, y, p);
        else pool_window<T, FastDiv, true>(x, y, p);
    } else {
        if (mode == 0) pool_body<T, SlowDiv, false, 0, 0>(x, y, p);
        else pool_body<T, SlowDiv, true, 0, 0>(x, y, p);
    }
}
