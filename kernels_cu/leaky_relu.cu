// leaky_relu.cu -- y = x if x >= 0 else neg_slope * x, elementwise, computed in float.
//
// Launch contract
//   kernel     leaky_relu<T>(const T* x, T* y, long long n, float neg_slope)
//   args       x, y: device pointers to n contiguous elements each. x == y (in place) is allowed;
//              partial overlap is not. n >= 0 (the host skips the launch when n == 0).
//              neg_slope: float32, by value.
//   block      any multiple of 32 threads (512 recommended), 1-D.
//   grid       any number of blocks >= 1, 1-D: the kernel loops grid-stride over the data.
//              Recommended: one 16-byte vector per thread, no loop:
//              min(ceil(n / (V * block)), 2^31 - 1), V = 16 / sizeof(T).
//   shared     0 bytes.
//   layout     flat: any shape, any number of elements, any pointer alignment. When x and y
//              share the same offset from 16-byte alignment the body moves in 16-byte vectors
//              (4 floats, 8 halves) with a scalar head and tail; otherwise all of it is scalar.
//   rounding   the product is rounded once, to T (round to nearest even); NaN stays NaN.
//
// @instantiate leaky_relu<float>
// @instantiate leaky_relu<__half>
// @instantiate leaky_relu<__nv_bfloat16>
#include "common.cuh"

namespace {

template <typename T>
__device__ __forceinline__ T leaky_one(T x, float neg_slope) {
    const float v = pp::to_float(x);
    return v >= 0.0f ? x : pp::from_float<T>(v * neg_slope);
}

template <typename T>
__device__ __forceinline__ pp::Vec16<T> leaky_vec(const pp::Vec16<T>& in, float neg_slope) {
    pp::Vec16<T> out;
#pragma unroll
    for (int k = 0; k < pp::Vec16<T>::size; ++k) {
        out.v[k] = leaky_one(in.v[k], neg_slope);
    }
    return out;
}

// One 16-byte store, kept whole: built element by element, a Vec16<float> written through a
// plain assignment can be split by the compiler into 4- and 8-byte stores; the __stwb intrinsic
// (the default write-back store) always stays one 16-byte store.
template <typename T>
__device__ __forceinline__ void store16_whole(T* p, const pp::Vec16<T>& v) {
    __stwb(reinterpret_cast<uint4*>(p), *reinterpret_cast<const uint4*>(&v));
}

}  // namespace

template <typename T>
__global__ void leaky_relu(const T* __restrict__ x, T* __restrict__ y, long long n,
                           float neg_slope) {
    constexpr int V = pp::Vec16<T>::size;
    const pp::index_t tid = pp::global_thread_id();
    const pp::index_t nthreads = pp::grid_threads();

    const pp::uindex_t xa = reinterpret_cast<pp::uindex_t>(x);
    const pp::uindex_t ya = reinterpret_cast<pp::uindex_t>(y);
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
    // With the recommended grid each thread moves one vector and the loop runs once.
    for (pp::index_t i = tid; i < nvec; i += nthreads) {
        store16_whole(yv + i * V, leaky_vec(pp::load16(xv + i * V), neg_slope));
    }
    for (pp::index_t i = head + nvec * V + tid; i < n; i += nthreads) {
        y[i] = leaky_one(x[i], neg_slope);
    }
}
