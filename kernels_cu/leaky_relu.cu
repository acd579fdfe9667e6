// leaky_relu.cu -- y = x if x >= 0 else neg_slope * x, elementwise, computed in float.
//
// Launch contract
//   kernel     leaky_relu<T>(const T* x, T* y, long long n, float neg_slope)
//   args       x, y: device pointers to n contiguous elements each. x == y (in place) is allowed;
//              partial overlap is not. n >= 0 (the host skips the launch when n == 0).
//              neg_slope: float32, by value.
//   block      any multiple of 32 threads (256 recommended), 1-D.
//   grid       any number of blocks >= 1, 1-D: the kernel loops grid-stride over the data.
//              Recommended: LEAKY_RELU_VECS (a compile option, default 1) 16-byte vectors per
//              thread, no loop: min(ceil(n / (V * LEAKY_RELU_VECS * block)), 2^31 - 1),
//              V = 16 / sizeof(T).
//   shared     0 bytes.
//   layout     flat: any shape, any number of elements, any pointer alignment. When x and y
//              share the same offset from 16-byte alignment the body moves in 16-byte vectors
//              (4 floats, 8 halves) with a scalar head and tail; otherwise all of it is scalar.
//   reads      x's bytes, and where x is not 16-byte aligned up to 15 bytes before it in the
//              same aligned 16-byte block (each thread's first load comes before the alignment
//              test; that block lies in x's allocation, which is 256-byte aligned).
//   rounding   the product is rounded once, to T (round to nearest even); NaN stays NaN.
//
// Ahead-of-time entry (a QDP aot_impl: TensorRT passes the input pointers, then 32-bit ints,
// then the output pointers; pyplugins.ops.leaky_relu.LeakyReLU.aot_launch)
//   kernel     leaky_relu_aot<T>(const T* x, int n, int neg_slope_bits, T* y)
//   args       n: elements, 0 <= n < 2^31; neg_slope_bits: the float32 slope's bits
//              (__int_as_float). The body, block and grid are leaky_relu's.
//
// @instantiate leaky_relu<float>
// @instantiate leaky_relu<__half>
// @instantiate leaky_relu<__nv_bfloat16>
// @instantiate leaky_relu_aot<float>
// @instantiate leaky_relu_aot<__half>
#include "common.cuh"

// Tuning knobs (compile options; benchmarks/kernel_variants.py compares them). The defaults are
// the fastest structure of a plain 16-byte copy on an H200 (one vector per thread, a full grid
// of 256-thread blocks, plain loads and stores: copy speed).
#ifndef LEAKY_RELU_VECS
#define LEAKY_RELU_VECS 1  // 16-byte vectors per thread per trip
#endif
#ifndef LEAKY_RELU_LOAD
#define LEAKY_RELU_LOAD 0  // 16-byte loads: 0 plain (read-only path), 1 __ldcs, 2 __ldg
#endif
#ifndef LEAKY_RELU_STORE
#define LEAKY_RELU_STORE 0  // 16-byte stores: 0 plain, 1 __stwb, 2 __stcs (streaming)
#endif
#ifndef LEAKY_RELU_LEAN
#define LEAKY_RELU_LEAN 1  // x and y 16-byte aligned: a path without the head arithmetic (0: off)
#endif

namespace {

// Two 16-bit elements packed in a word <-> float2 (low element first).
template <typename T> __device__ __forceinline__ float2 pair_to_float2(unsigned w);
template <> __device__ __forceinline__ float2 pair_to_float2<__half>(unsigned w) {
    return __half22float2(*reinterpret_cast<const __half2*>(&w));
}
template <> __device__ __forceinline__ float2 pair_to_float2<__nv_bfloat16>(unsigned w) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w));
}
template <typename T> __device__ __forceinline__ unsigned float2_to_pair(float lo, float hi);
template <> __device__ __forceinline__ unsigned float2_to_pair<__half>(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&h);
}
template <> __device__ __forceinline__ unsigned float2_to_pair<__nv_bfloat16>(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&h);
}

template <typename T>
__device__ __forceinline__ T leaky_one(T x, float neg_slope) {
    const float v = pp::to_float(x);
    return v >= 0.0f ? x : pp::from_float<T>(v * neg_slope);
}

template <typename T>
__device__ __forceinline__ pp::Vec16<T> leaky_vec(const pp::Vec16<T>& in, float neg_slope) {
    pp::Vec16<T> out;
    if constexpr (LEAKY_RELU_LEAN && sizeof(T) == 2) {
        // two elements per conversion to float2 and per rounding back: the same float product,
        // rounded once to T, as leaky_one (a non-negative element round-trips to its own bits)
        const unsigned* w = reinterpret_cast<const unsigned*>(&in);
        unsigned* o = reinterpret_cast<unsigned*>(&out);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const float2 f = pair_to_float2<T>(w[k]);
            o[k] = float2_to_pair<T>(f.x >= 0.0f ? f.x : f.x * neg_slope,
                                     f.y >= 0.0f ? f.y : f.y * neg_slope);
        }
    } else {
#pragma unroll
        for (int k = 0; k < pp::Vec16<T>::size; ++k) {
            out.v[k] = leaky_one(in.v[k], neg_slope);
        }
    }
    return out;
}

template <typename T>
__device__ __forceinline__ pp::Vec16<T> load_vec(const T* __restrict__ p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    uint4 raw;
    if (LEAKY_RELU_LOAD == 1) {
        raw = __ldcs(q);
    } else if (LEAKY_RELU_LOAD == 2) {
        raw = __ldg(q);
    } else {
        raw = *q;
    }
    pp::Vec16<T> out;
    *reinterpret_cast<uint4*>(&out) = raw;
    return out;
}

// One 16-byte store. A plain store of the vector moved as a uint4 stays one 16-byte store at
// LEAKY_RELU_VECS=1 (checked in the PTX for float, half and bfloat16); at VECS=4 for float the
// compiler splits two of the four into 4- and 8-byte stores, which __stwb and __stcs (inline
// assembly) never are.
template <typename T>
__device__ __forceinline__ void store_vec(T* p, const pp::Vec16<T>& v) {
    uint4* q = reinterpret_cast<uint4*>(p);
    const uint4 raw = *reinterpret_cast<const uint4*>(&v);
    if (LEAKY_RELU_STORE == 1) {
        __stwb(q, raw);
    } else if (LEAKY_RELU_STORE == 2) {
        __stcs(q, raw);
    } else {
        *q = raw;
    }
}

// The whole kernel body, shared by the two entries below.
template <typename T>
__device__ __forceinline__ void leaky_relu_body(const T* __restrict__ x, T* __restrict__ y,
                                                long long n, float neg_slope) {
    constexpr int V = pp::Vec16<T>::size;
    const pp::index_t tid = pp::global_thread_id();
    const pp::index_t nthreads = pp::grid_threads();

    const pp::uindex_t xa = reinterpret_cast<pp::uindex_t>(x);
    const pp::uindex_t ya = reinterpret_cast<pp::uindex_t>(y);
    if (LEAKY_RELU_LEAN && LEAKY_RELU_VECS == 1) {
        // The common case first, shaped like a copy: the thread's first vector is loaded before
        // anything else is decided, from the 16-byte block grid x lies on (x rounded down to 16
        // bytes: a block of x's own bytes, and at most 15 bytes of the same aligned block before
        // x), and kept where x and y are both 16-byte aligned: vectors from element 0 (with the
        // recommended grid one per thread and no second trip), then the scalar tail.
        const pp::index_t nvec = n / V;
        pp::Vec16<T> first;
        if (tid < nvec) {
            const char* block0 = reinterpret_cast<const char*>(x) - (xa & 15u);  // derived from x: a read-only global load
            first = load_vec(reinterpret_cast<const T*>(block0) + tid * V);
        }
        if (((xa | ya) & 15u) == 0) {
            if (tid < nvec) {
                store_vec(y + tid * V, leaky_vec(first, neg_slope));
            }
            for (pp::index_t i = tid + nthreads; i < nvec; i += nthreads) {
                store_vec(y + i * V, leaky_vec(load_vec(x + i * V), neg_slope));
            }
            for (pp::index_t i = nvec * V + tid; i < n; i += nthreads) {
                y[i] = leaky_one(x[i], neg_slope);
            }
            return;
        }
    }
    const bool vectorizable = ((xa ^ ya) & 15u) == 0 && (xa % sizeof(T)) == 0;
    if (!vectorizable) {
        for (pp::index_t i = tid; i < n; i += nthreads) {
            y[i] = leaky_one(x[i], neg_slope);
        }
        return;
    }
    // Scalar head up to the first 16-byte boundary, vector body, scalar tail.
    pp::index_t head = static_cast<pp::index_t>(((16u - (xa & 15u)) & 15u) / sizeof(T));
    if (head > n) {
        head = n;
    }
    const pp::index_t nvec = (n - head) / V;
    const T* xv = x + head;
    T* yv = y + head;

    for (pp::index_t i = tid; i < head; i += nthreads) {
        y[i] = leaky_one(x[i], neg_slope);
    }
    // With the recommended grid each thread moves LEAKY_RELU_VECS vectors (a grid's width
    // apart, all loads first) and the loop runs once.
    constexpr int U = LEAKY_RELU_VECS;
    for (pp::index_t i0 = tid; i0 < nvec; i0 += U * nthreads) {
        if (U == 1 || i0 + (U - 1) * nthreads < nvec) {
            pp::Vec16<T> v[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                v[u] = load_vec(xv + (i0 + u * nthreads) * V);
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                store_vec(yv + (i0 + u * nthreads) * V, leaky_vec(v[u], neg_slope));
            }
        } else {
            for (pp::index_t i = i0; i < nvec; i += nthreads) {
                store_vec(yv + i * V, leaky_vec(load_vec(xv + i * V), neg_slope));
            }
        }
    }
    for (pp::index_t i = head + nvec * V + tid; i < n; i += nthreads) {
        y[i] = leaky_one(x[i], neg_slope);
    }
}

}  // namespace

template <typename T>
__global__ void leaky_relu(const T* __restrict__ x, T* __restrict__ y, long long n,
                           float neg_slope) {
    leaky_relu_body(x, y, n, neg_slope);
}

template <typename T>
__global__ void leaky_relu_aot(const T* __restrict__ x, int n, int neg_slope_bits,
                               T* __restrict__ y) {
    leaky_relu_body(x, y, static_cast<long long>(n), __int_as_float(neg_slope_bits));
}
