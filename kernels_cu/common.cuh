// common.cuh -- small helpers shared by the kernels in kernels_cu/.
//
// Compiles under NVRTC (through CuPy, with -I<kernels_cu>) and under nvcc: it includes only
// <cuda_fp16.h> and <cuda_bf16.h>, never a C or C++ standard header (NVRTC has none), and uses
// builtin types only.
//
// Contents (namespace pp):
//   index_t, uindex_t      64-bit signed / unsigned element indices and offsets
//   kMaxRank, Dims8        the rank limit and a by-value array of 8 dims (right-aligned by
//                          convention: a rank-r shape fills slots 8-r..7, leading slots hold 1)
//   Bits<N>::type          an unsigned integer type of N bytes, for moving elements as bits
//   to_float / from_float  float <-> float, __half, __nv_bfloat16 conversions
//   Vec16, load16, store16 16-byte vectors of any element type, and aligned 16-byte access
//   load16_any             16 bytes from any address, as one or two aligned 16-byte loads
//   is_aligned16           whether a pointer is 16-byte aligned
//   global_thread_id, grid_threads   for grid-stride loops (64-bit, so huge tensors are safe)
//   divmod                 an unsigned division that takes the 32-bit path when it can
//   copy16_async, async_commit, async_wait<N>   16-byte global -> shared copies through
//                          cp.async (sm_80+) when the template flag is on, else plain loads
//   wrap_step              one step of a wrapping index odometer: an output index and the
//                          source index it reads, (o + shift) mod n, moved on together
//   WrapOdometer<R>        the outer dims of a wrap-padded tensor as such odometers: a flat
//                          row index split into per-dim output and source indices, the source
//                          row's element offset, and next() moving one row on, carrying
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace pp {

typedef long long index_t;
typedef unsigned long long uindex_t;

constexpr int kMaxRank = 8;

// Eight dims passed by value inside a kernel parameter struct.
struct Dims8 {
    index_t d[kMaxRank];
};

template <int N> struct Bits;
template <> struct Bits<1> { typedef unsigned char type; };
template <> struct Bits<2> { typedef unsigned short type; };
template <> struct Bits<4> { typedef unsigned int type; };
template <> struct Bits<8> { typedef unsigned long long type; };

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) {
    return __float2half_rn(x);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
    return __float2bfloat16_rn(x);
}

// 16 bytes of T (4 floats, 8 halves, ...), aligned so that it moves as one 128-bit access.
template <typename T>
struct alignas(16) Vec16 {
    static constexpr int size = 16 / sizeof(T);
    T v[size];
};

__device__ __forceinline__ bool is_aligned16(const void* p) {
    return (reinterpret_cast<uindex_t>(p) & 15u) == 0;
}

// Read-only 16-byte load through the non-coherent cache; p must be 16-byte aligned.
template <typename T>
__device__ __forceinline__ Vec16<T> load16(const T* p) {
    const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
    Vec16<T> out;
    *reinterpret_cast<uint4*>(&out) = raw;
    return out;
}

// 16-byte store; p must be 16-byte aligned.
template <typename T>
__device__ __forceinline__ void store16(T* p, const Vec16<T>& v) {
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(&v);
}

// Bytes [delta, delta + 16) of the 32 bytes lo:hi (little-endian), delta in [0, 16).
__device__ __forceinline__ uint4 bytes_at(const uint4& lo, const uint4& hi, unsigned int delta) {
    const unsigned int q = delta >> 2;       // whole words to skip
    const unsigned int r = (delta & 3u) * 8;  // then bits to shift
    const bool q2 = (q & 2u) != 0;
    const bool q1 = (q & 1u) != 0;
    const unsigned int t0 = q2 ? lo.z : lo.x, t1 = q2 ? lo.w : lo.y, t2 = q2 ? hi.x : lo.z;
    const unsigned int t3 = q2 ? hi.y : lo.w, t4 = q2 ? hi.z : hi.x, t5 = q2 ? hi.w : hi.y;
    const unsigned int u0 = q1 ? t1 : t0, u1 = q1 ? t2 : t1, u2 = q1 ? t3 : t2;
    const unsigned int u3 = q1 ? t4 : t3, u4 = q1 ? t5 : t4;
    uint4 out;
    out.x = __funnelshift_r(u0, u1, r);
    out.y = __funnelshift_r(u1, u2, r);
    out.z = __funnelshift_r(u2, u3, r);
    out.w = __funnelshift_r(u3, u4, r);
    return out;
}

// 16 bytes starting at any address p, read through the non-coherent cache as the one or two
// aligned 16-byte blocks that hold them. It reads the whole of those blocks: bytes of the same
// aligned block before p or after p + 16, which is safe for device memory (allocations are
// 256-byte aligned and mapped in pages) but reads outside the tensor when p is near its ends.
__device__ __forceinline__ uint4 load16_any(const void* p) {
    const uindex_t addr = reinterpret_cast<uindex_t>(p);
    const unsigned int delta = static_cast<unsigned int>(addr & 15u);
    const uint4* block = reinterpret_cast<const uint4*>(addr - delta);
    const uint4 lo = __ldg(block);
    if (delta == 0) {
        return lo;
    }
    return bytes_at(lo, __ldg(block + 1), delta);
}

__device__ __forceinline__ index_t global_thread_id() {
    return static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ index_t grid_threads() {
    return static_cast<index_t>(gridDim.x) * blockDim.x;
}

// q = a / b, r = a % b for unsigned a, b > 0; 32-bit division (far cheaper) when both fit.
__device__ __forceinline__ void divmod(uindex_t a, uindex_t b, uindex_t& q, uindex_t& r) {
    if ((a | b) <= 0xffffffffull) {
        const unsigned int a32 = static_cast<unsigned int>(a);
        const unsigned int b32 = static_cast<unsigned int>(b);
        const unsigned int q32 = a32 / b32;
        q = q32;
        r = a32 - q32 * b32;
    } else {
        q = a / b;
        r = a - q * b;
    }
}

// 16 bytes from global `src` to shared `dst` (both 16-byte aligned): asynchronous (cp.async)
// when `Async` and the GPU is sm_80 or later, landing after async_wait; else a plain load and
// store, complete at once. Each kernel passes its own compile-time switch as `Async`.
template <bool Async>
__device__ __forceinline__ void copy16_async(void* dst, const void* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (Async) {
        const unsigned int sa = static_cast<unsigned int>(__cvta_generic_to_shared(dst));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(src) : "memory");
        return;
    }
#endif
    *reinterpret_cast<uint4*>(dst) = __ldg(reinterpret_cast<const uint4*>(src));
}

// Closes this thread's batch of copy16_async<Async> calls.
template <bool Async>
__device__ __forceinline__ void async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (Async) asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most N of this thread's committed batches are still in flight.
template <bool Async, int N>
__device__ __forceinline__ void async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (Async) asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// One step of a wrapping odometer digit: output index o of a dim of `out` and the source index
// s = (o + shift) mod `in` it reads move on by one; at the dim's end both restart (o = 0,
// s = shift) and it returns true: carry into the next digit. The padding kernels walk rows
// (o: output column, s: source column) and planes (o: output row, s: source row) with it.
__device__ __forceinline__ bool wrap_step(unsigned int& o, unsigned int& s, unsigned int out,
                                          unsigned int in, unsigned int shift) {
    if (++s == in) {
        s = 0;
    }
    if (++o == out) {
        o = 0;
        s = shift;
        return true;
    }
    return false;
}

// The outer dims 0..R-1 of a wrap-padded tensor (every dim but the last, right-aligned in arrays
// of kMaxRank as Dims8 holds them) as one odometer: o[d] the output index, s[d] = (o[d] +
// shift[d]) mod in[d] the source index, off the source row's element offset, sum s[d] * stride[d].
// start(row) splits a flat output row index (dims of 1 cost nothing); next() moves one row on,
// carrying, with additions only; split() is start's arithmetic for a caller that needs only the
// offset.
template <int R>
struct WrapOdometer {
    int o[R];
    int s[R];
    index_t off;

    __device__ __forceinline__ void start(uindex_t row, const Dims8& out, const Dims8& in,
                                          const Dims8& shift, const Dims8& stride) {
        off = split(row, out, in, shift, stride, [&](int d, uindex_t od, uindex_t sd) {
            o[d] = static_cast<int>(od);
            s[d] = static_cast<int>(sd);
        });
    }

    // The source row offset of flat output row `row`, handing each dim's (d, o, s) to `digit`
    // (start() keeps them; a caller that needs only the offset passes a no-op).
    template <typename Digit>
    static __device__ __forceinline__ index_t split(uindex_t row, const Dims8& out,
                                                    const Dims8& in, const Dims8& shift,
                                                    const Dims8& stride, Digit digit) {
        index_t offset = 0;
        uindex_t quot, rem;
#pragma unroll
        for (int d = R - 1; d >= 0; --d) {
            uindex_t od = 0;
            if (out.d[d] > 1) {
                divmod(row, out.d[d], quot, od);
                row = quot;
            }
            uindex_t sd = od + shift.d[d];
            if (sd >= static_cast<uindex_t>(in.d[d])) {
                divmod(sd, in.d[d], quot, rem);
                sd = rem;
            }
            digit(d, od, sd);
            offset += static_cast<index_t>(sd) * stride.d[d];
        }
        return offset;
    }

    __device__ __forceinline__ void next(const Dims8& out, const Dims8& in, const Dims8& shift,
                                         const Dims8& stride) {
        bool carry = true;
#pragma unroll
        for (int d = R - 1; d >= 0; --d) {
            if (carry) {
                const int in_d = static_cast<int>(in.d[d]);
                carry = ++o[d] == out.d[d];
                if (!carry) {
                    off += stride.d[d];
                    if (++s[d] == in_d) {
                        s[d] = 0;
                        off -= static_cast<index_t>(in_d) * stride.d[d];
                    }
                } else {
                    const int sh = static_cast<int>(shift.d[d]);
                    off += static_cast<index_t>(sh - s[d]) * stride.d[d];
                    s[d] = sh;
                    o[d] = 0;
                }
            }
        }
    }
};

}  // namespace pp
