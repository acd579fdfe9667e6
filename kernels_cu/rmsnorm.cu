// rmsnorm.cu -- RMS normalization over the last dimension.
//
// Computes, for x seen as [rows, d] (rows = numel / d) and weight of shape [d]:
//     y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight
// with float accumulation for every T (the sum of squares is a tree reduction in float;
// rsqrtf's error is at most 2 ulp).
//
// Launch contract:
//     rmsnorm<T>(const T* x, const T* weight, T* y, long long rows, int d, float eps)
//   - every tensor LINEAR (contiguous row-major); rows >= 0, d >= 0 (0-size work writes
//     nothing). y must not overlap x or weight.
//   - 1-D grid of any size (rows are grid-strided); 1-D block of a multiple of 32 threads, at
//     most 1024, the same for every block; no dynamic shared memory. Suggested: 256 threads
//     (512 when d * sizeof(T) > 16 KiB), a full grid: cdiv(rows, block / g) blocks (g below),
//     so that every block takes its rows once.
//   - A row is handled by a group of g threads: with n 16-byte vectors per row (n elements
//     when d * sizeof(T) is not a multiple of 16 or a pointer is unaligned), g is the smallest
//     power of two with 4 * g >= n (kCached = 4 vectors per thread, kept in registers between
//     the two passes), capped by the block; a g above 32 that does not divide the block
//     becomes the whole block. Rows past 4 * blockDim.x vectors read the rest a second time
//     (mostly from L1/L2). The weight's vectors for the cached ones are loaded with x, before
//     the reduction (PP_RMSNORM_EARLY_WEIGHT=0 loads them after it, as before), and every
//     vector moves as one 16-byte access.
//
// Ahead-of-time entry (a QDP aot_impl: TensorRT passes the input pointers, then 32-bit ints,
// then the output pointer; pyplugins.ops.rmsnorm.RMSNorm.aot_launch):
//     rmsnorm_aot<T>(const T* x, const T* weight, int rows, int d, int eps_bits, T* y)
//   - rows below 2^31; eps_bits: the float32 eps's bits (__int_as_float). The body, grid and
//     block are rmsnorm's.
//
// @instantiate rmsnorm<float>
// @instantiate rmsnorm<__half>
// @instantiate rmsnorm_aot<float>
// @instantiate rmsnorm_aot<__half>

#include "common.cuh"

namespace pp_rmsnorm {

// Vectors of a row each thread keeps in registers between the two passes. The host sizes its
// grid by it (rows a block takes): pyplugins.ops.rmsnorm.DEFINES passes it, no default here.
#ifndef PP_RMSNORM_CACHED
#error "rmsnorm.cu needs -DPP_RMSNORM_CACHED (16-byte vectors of a row a thread keeps)"
#endif
constexpr int kCached = PP_RMSNORM_CACHED;

// Load the weight vectors of the cached part before the reduction (1), or after it (0).
#ifndef PP_RMSNORM_EARLY_WEIGHT
#define PP_RMSNORM_EARLY_WEIGHT 1
#endif

using pp::from_float;
using pp::to_float;

// N elements loaded and stored together (16 bytes when N * sizeof(T) == 16).
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
    T e[N];
};

// One vector at p (aligned to its size). A 16-byte vector is loaded as a uint4: copied as a
// struct of T, the compiler splits it into one load per element (8 two-byte loads for half).
template <typename T, int N>
__device__ __forceinline__ Vec<T, N> load_vec(const Vec<T, N>* p) {
    Vec<T, N> v;
    if constexpr (sizeof(Vec<T, N>) == 16) {
        *reinterpret_cast<uint4*>(&v) = __ldg(reinterpret_cast<const uint4*>(p));
    } else {
        v = *p;
    }
    return v;
}

template <typename T, int N>
__device__ __forceinline__ float sum_squares(const Vec<T, N>& v) {
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N; ++k) {
        const float f = to_float(v.e[k]);
        s = fmaf(f, f, s);
    }
    return s;
}

template <typename T, int N>
__device__ __forceinline__ Vec<T, N> scaled(const Vec<T, N>& v, const Vec<T, N>& w, float rs) {
    Vec<T, N> out;
#pragma unroll
    for (int k = 0; k < N; ++k) out.e[k] = from_float<T>(to_float(v.e[k]) * rs * to_float(w.e[k]));
    return out;
}

// Sum over each group of g threads (g a multiple of 32 dividing blockDim.x); every thread of a
// group gets the same value (same order everywhere).
__device__ __forceinline__ float group_sum(float v, int g) {
    __shared__ float partial[32];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    __syncthreads();  // the previous row's readers are done with `partial`
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
    __syncthreads();
    const int warps = g >> 5;
    const int first = static_cast<int>(threadIdx.x) / g * warps;
    float total = 0.f;
    for (int i = 0; i < warps; ++i) total += partial[first + i];
    return total;
}

template <typename T, int N>
__device__ __forceinline__ void rmsnorm_rows(const T* __restrict__ x, const T* __restrict__ w,
                                             T* __restrict__ y, long long rows, int d, float eps) {
    typedef Vec<T, N> V;
    const int n = d / N;  // vectors per row
    const int block = static_cast<int>(blockDim.x);
    // Threads per row: the fewest (a power of two) that hold at most kCached vectors each,
    // capped by the block; past 32 it must divide the block, else the whole block takes a row.
    int g = 1;
    while (g < block && g * kCached < n) g <<= 1;
    if (g > block || (g > 32 && block % g != 0)) g = block;
    const int lane = static_cast<int>(threadIdx.x) % g;
    const int rows_per_block = block / g;
    const int slot = static_cast<int>(threadIdx.x) / g;
    const V* __restrict__ wv = reinterpret_cast<const V*>(w);
    const float inv_d = 1.0f / static_cast<float>(d);

    // Every thread of the block runs the same number of trips, so that shuffles and barriers
    // see all their threads; threads past the last row only take part in them.
    for (long long first = static_cast<long long>(blockIdx.x) * rows_per_block; first < rows;
         first += static_cast<long long>(gridDim.x) * rows_per_block) {
        const long long row = first + slot;
        const bool active = row < rows;
        const V* __restrict__ xr = reinterpret_cast<const V*>(x + (active ? row : 0) * d);
        V* yr = reinterpret_cast<V*>(y + (active ? row : 0) * d);

        V cache[kCached], wc[kCached];
        float ss = 0.f;
#pragma unroll
        for (int j = 0; j < kCached; ++j) {
            const int i = lane + j * g;
            if (active && i < n) {
                cache[j] = load_vec(xr + i);
                if (PP_RMSNORM_EARLY_WEIGHT) wc[j] = load_vec(wv + i);
            }
        }
#pragma unroll
        for (int j = 0; j < kCached; ++j) {
            const int i = lane + j * g;
            if (active && i < n) ss += sum_squares(cache[j]);
        }
        for (int i = lane + kCached * g; active && i < n; i += g) ss += sum_squares(load_vec(xr + i));

        if (g > 32) {
            ss = group_sum(ss, g);
        } else {
            for (int off = g >> 1; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
        }
        if (!active) continue;
        const float rs = rsqrtf(fmaf(ss, inv_d, eps));

#pragma unroll
        for (int j = 0; j < kCached; ++j) {
            const int i = lane + j * g;
            if (i < n) yr[i] = scaled(cache[j], PP_RMSNORM_EARLY_WEIGHT ? wc[j] : load_vec(wv + i), rs);
        }
        for (int i = lane + kCached * g; i < n; i += g) yr[i] = scaled(load_vec(xr + i), load_vec(wv + i), rs);
    }
}

// The whole kernel body, shared by the two entries below.
template <typename T>
__device__ __forceinline__ void rmsnorm_body(const T* __restrict__ x, const T* __restrict__ weight,
                                             T* __restrict__ y, long long rows, int d, float eps) {
    constexpr int kVec = 16 / sizeof(T);
    if (rows <= 0 || d <= 0) return;
    if (d % kVec == 0 && pp::is_aligned16(x) && pp::is_aligned16(weight) && pp::is_aligned16(y)) {
        rmsnorm_rows<T, kVec>(x, weight, y, rows, d, eps);
    } else {
        rmsnorm_rows<T, 1>(x, weight, y, rows, d, eps);
    }
}

}  // namespace pp_rmsnorm

template <typename T>
__global__ void __launch_bounds__(1024) rmsnorm(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y, long long rows,
                        int d, float eps) {
    pp_rmsnorm::rmsnorm_body(x, weight, y, rows, d, eps);
}

template <typename T>
__global__ void __launch_bounds__(1024) rmsnorm_aot(const T* __restrict__ x,
                                                    const T* __restrict__ weight, int rows, int d,
                                                    int eps_bits, T* __restrict__ y) {
    pp_rmsnorm::rmsnorm_body(x, weight, y, static_cast<long long>(rows), d,
                             __int_as_float(eps_bits));
}
