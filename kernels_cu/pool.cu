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
//   - 1-D grid of any size, 1-D block of at most 256 threads (register use); both paths
//     grid-stride.
//   - Band path (numel(x), numel(y) < 2^31, h, w >= 1, sh <= kh, sw <= kw, and a band of at
//     least min(ho, 4) output rows fits): a block copies the input rows of `band` output rows
//     of one plane into a 32 KiB shared-memory tile with 16-byte loads, then computes them
//     from the tile. With cap = (32768 - 16) / (w * sizeof(T)) input rows and
//     most = (cap - kh) / sh + 1 output rows (0 if cap < kh): the path applies when
//     most >= min(ho, 4); then band = cdiv(ho, cdiv(ho, most)), and the suggested grid is one
//     block per band, nc * cdiv(ho, band), of 256 threads.
//   - Direct path otherwise: each thread computes 4 outputs a blockDim.x apart per trip,
//     reading x through the caches. Suggested: 256 threads, grid = clamp(cdiv(nc * ho * wo,
//     256 * 4), 1, 32 * SMs).
//   - 2x2 and 3x3 windows are unrolled at compile time; others loop. Index math is 32-bit
//     (multiply-shift division) when numel(x) and numel(y) are below 2^31, 64-bit otherwise.
//
// @instantiate pool2d<float>
// @instantiate pool2d<__half>
// @instantiate pool2d<signed char>

#include "common.cuh"

namespace pp_pool {

// Outputs each thread of the direct path computes per trip (independent loads in flight);
// -D overrides it for benchmarks.
#ifndef PP_POOL_OUTPUTS
#define PP_POOL_OUTPUTS 4
#endif
constexpr int kOutputs = PP_POOL_OUTPUTS;

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

// Band path: one block stages the input rows of `band` consecutive output rows of one plane
// in shared memory (16-byte copies), then computes those outputs from there. Used when the
// rows fit (band_rows() > 0), so each input byte leaves DRAM about once even when windows
// overlap.
constexpr int kTileBytes = 32768;
#ifndef PP_POOL_BAND
#define PP_POOL_BAND 1
#endif

// The one tile of a kernel (declared once, not per instantiation of pool_band).
__device__ __forceinline__ unsigned char* band_tile() {
    __shared__ __align__(16) unsigned char tile[kTileBytes];
    return tile;
}

// Output rows per band, or 0 when the band path does not apply (see the header comment).
__device__ __forceinline__ int band_rows(const Params& p, int elem_size) {
    if (!PP_POOL_BAND || p.h <= 0 || p.w <= 0 || p.sh > p.kh || p.sw > p.kw) return 0;
    const long long cap = (kTileBytes - 16) / (static_cast<long long>(p.w) * elem_size);
    if (cap < p.kh) return 0;
    const int most = static_cast<int>((cap - p.kh) / p.sh + 1);
    if (most < (p.ho < 4 ? p.ho : 4)) return 0;
    const int bands = (p.ho + most - 1) / most;
    return (p.ho + bands - 1) / bands;
}

template <typename T, bool AVG, int KH, int KW>
__device__ __forceinline__ void pool_band(const T* __restrict__ x, T* __restrict__ y, const Params& p,
                                          long long nc, int band) {
    typedef typename Acc<T>::type A;
    constexpr int kVec = 16 / sizeof(T);
    unsigned char* const smem = band_tile();
    const int kh = KH ? KH : p.kh;
    const int kw = KW ? KW : p.kw;
    const int bands_per_plane = (p.ho + band - 1) / band;
    const long long nbands = nc * bands_per_plane;
    const long long plane_size = static_cast<long long>(p.h) * p.w;
    const FastDiv by_wo(p.wo);
    const int tid = static_cast<int>(threadIdx.x), nthreads = static_cast<int>(blockDim.x);
    for (long long b = blockIdx.x; b < nbands; b += gridDim.x) {
        const long long plane = b / bands_per_plane;
        const int oh0 = static_cast<int>(b - plane * bands_per_plane) * band;
        const int oh1 = oh0 + band < p.ho ? oh0 + band : p.ho;
        const int lo = oh0 * p.sh - p.ph > 0 ? oh0 * p.sh - p.ph : 0;
        const int hi_end = (oh1 - 1) * p.sh - p.ph + kh;
        const int hi = hi_end < p.h ? hi_end : p.h;
        const int count = hi > lo ? (hi - lo) * p.w : 0;
        const T* src = x + plane * plane_size + static_cast<long long>(lo) * p.w;
        // The tile starts as far past a 16-byte boundary as src does, so 16-byte copies line up.
        const int shift = static_cast<int>((reinterpret_cast<pp::uindex_t>(src) & 15u) / sizeof(T));
        T* tile = reinterpret_cast<T*>(smem) + shift;
        int head = (kVec - shift) % kVec;
        if (head > count) head = count;
        const int nvec = (count - head) / kVec;
        const uint4* s4 = reinterpret_cast<const uint4*>(src + head);
        uint4* t4 = reinterpret_cast<uint4*>(tile + head);
        __syncthreads();  // the previous band's readers are done with the tile
        for (int i = tid; i < head; i += nthreads) tile[i] = src[i];
        for (int i = tid; i < nvec; i += 4 * nthreads) {
            uint4 v[4];
#pragma unroll
            for (int k = 0; k < 4; ++k)
                if (i + k * nthreads < nvec) v[k] = s4[i + k * nthreads];
#pragma unroll
            for (int k = 0; k < 4; ++k)
                if (i + k * nthreads < nvec) t4[i + k * nthreads] = v[k];
        }
        for (int i = head + nvec * kVec + tid; i < count; i += nthreads) tile[i] = src[i];
        __syncthreads();

        const int outputs = (oh1 - oh0) * p.wo;
        T* out = y + (plane * p.ho + oh0) * static_cast<long long>(p.wo);
        for (int i = tid; i < outputs; i += nthreads) {
            const int r = static_cast<int>(by_wo(i));
            const int ih0 = (oh0 + r) * p.sh - p.ph;
            const int iw0 = (i - r * p.wo) * p.sw - p.pw;
            A acc = AVG ? A(0) : lowest(A(0));
#pragma unroll
            for (int dy = 0; dy < (KH ? KH : kh); ++dy) {
                const int ih = ih0 + dy;
                if (static_cast<unsigned>(ih) >= static_cast<unsigned>(p.h)) continue;
                const T* row = tile + (ih - lo) * p.w;
#pragma unroll
                for (int dx = 0; dx < (KW ? KW : kw); ++dx) {
                    const int iw = iw0 + dx;
                    if (static_cast<unsigned>(iw) < static_cast<unsigned>(p.w)) {
                        const A v = widen(row[iw]);
                        acc = AVG ? acc + v : (v > acc ? v : acc);
                    }
                }
            }
            out[i] = finish(T(), acc, extent(ih0, kh, p.h) * extent(iw0, kw, p.w), AVG, p.ratio);
        }
    }
}

template <typename T, bool AVG>
__device__ __forceinline__ void pool_band_window(const T* __restrict__ x, T* __restrict__ y,
                                                 const Params& p, long long nc, int band) {
    if (p.kh == 2 && p.kw == 2) pool_band<T, AVG, 2, 2>(x, y, p, nc, band);
    else if (p.kh == 3 && p.kw == 3) pool_band<T, AVG, 3, 3>(x, y, p, nc, band);
    else pool_band<T, AVG, 0, 0>(x, y, p, nc, band);
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
    const int band = small ? band_rows(p, sizeof(T)) : 0;
    if (band > 0) {
        if (mode == 0) pool_band_window<T, false>(x, y, p, nc, band);
        else pool_band_window<T, true>(x, y, p, nc, band);
    } else if (small) {
        if (mode == 0) pool_window<T, FastDiv, false>(x, y, p);
        else pool_window<T, FastDiv, true>(x, y, p);
    } else {
        if (mode == 0) pool_body<T, SlowDiv, false, 0, 0>(x, y, p);
        else pool_body<T, SlowDiv, true, 0, 0>(x, y, p);
    }
}
