// circ_pad.cu -- circular (wrap) padding of a contiguous tensor of rank 1..8.
//
// Computes y[o_0, ..., o_7] = x[(o_0 - before_0) mod in_0, ..., (o_7 - before_7) mod in_7]
// with a non-negative modulo, which is numpy.pad(x, pads, mode="wrap") exactly, pads larger
// than the input dim included (the input repeats as often as needed). Negative pads crop.
// The element type only sets the element size: elements move as raw bytes.
//
// Launch contract
//   kernel     circ_pad<T>(const T* x, T* y, CircPadParams p)
//   args       x: input, contiguous, row-major; y: output, contiguous, row-major (no overlap
//              with x); any alignment of either (a multiple of sizeof(T)).
//              p: CircPadParams by value (288 bytes, 8-byte aligned, all int64):
//                in_dims[8]     input dims, right-aligned: a rank-r shape fills slots 8-r..7,
//                               leading slots are 1
//                out_dims[8]    output dims (in + before + after), right-aligned the same way
//                shift[8]       (-before[d]) mod in_dims[d], in [0, in_dims[d]); 0 for slots of 1
//                in_strides[8]  element strides of the contiguous input (in_strides[7] == 1)
//                rows           prod(out_dims[0..6]): the number of output rows
//                strips         work units per output row, >= 1
//                strip_vecs     16-byte output vectors per work unit, >= 1; strips * strip_vecs
//                               must be >= out_dims[7] / V, V = 16 / sizeof(T) elements
//                group          lanes that copy one row: 1, 2, 4, 8, 16 or 32
//              Every dim < 2^31; in_dims[d] >= 1 whenever the output is not empty. The host
//              skips the launch when the output is empty.
//   block      1-D, a multiple of 32 threads (256 recommended).
//   grid       1-D, any number of blocks >= 1: the rows * strips work units are split into
//              contiguous chunks, one per group of `group` lanes. Recommended:
//              min(ceil(rows * strips * group / block), 4 * resident blocks).
//   shared     0 bytes.
//   reads      whole aligned 16-byte blocks that contain input bytes, so up to 15 bytes before
//              or after the input tensor when it does not start or end on a 16-byte boundary
//              (device allocations are 256-byte aligned and page-mapped, so this is safe).
//   performance  Each output row is written as aligned 16-byte vectors (a scalar head and tail
//              where the row does not start or end on a 16-byte boundary); each vector is read
//              as one or two aligned 16-byte loads (load16_any), element by element only where
//              it wraps around the input row. Each lane keeps CIRC_PAD_UNROLL (2) vectors in
//              flight. Recommended plan, nvec = out_dims[7] / V:
//                group      = min(32, next power of two >= ceil(nvec / 2)), at least 1
//                strip_vecs = nvec if nvec <= 8 * group, else 8 * group  (at least 1)
//                strips     = ceil(nvec / strip_vecs), at least 1
//              The source row is found once per row (an odometer over the 7 outer dims), the
//              source column by an add and a compare per vector.
//              Measured on H100 (fraction of a D2D copy's bandwidth): long rows 0.85-0.93;
//              128-element rows 0.78 (fp32) and 0.65 (fp16), where the two vectors of each row
//              that wrap around the input row gather element by element (V narrow loads each).
//
// ONNX/sample order of `pads` (the host's business): pads[2i], pads[2i+1] are the before and
// after pads of dim rank-1-i, the last dim first, like torch.nn.functional.pad.
//
// @instantiate circ_pad<float>
// @instantiate circ_pad<__half>
// @instantiate circ_pad<__nv_bfloat16>
// @instantiate circ_pad<signed char>
// @instantiate circ_pad<unsigned char>
// @instantiate circ_pad<bool>
// @instantiate circ_pad<int>
// @instantiate circ_pad<long long>
#include "common.cuh"

#ifndef CIRC_PAD_UNROLL
#define CIRC_PAD_UNROLL 2
#endif

struct CircPadParams {
    pp::Dims8 in_dims;
    pp::Dims8 out_dims;
    pp::Dims8 shift;
    pp::Dims8 in_strides;
    long long rows;
    long long strips;
    long long strip_vecs;
    long long group;
};

namespace {

// (v mod wi) for v < 2^32, cheap when v < 2 * wi (pads smaller than the dim).
__device__ __forceinline__ unsigned int wrap_col(unsigned int v, unsigned int wi) {
    if (v >= wi) {
        v -= wi;
        if (v >= wi) {
            v %= wi;
        }
    }
    return v;
}

// The V elements src[c], src[c+1], ... of an input row of wi elements, wrapping to 0 at wi.
template <typename B>
__device__ __forceinline__ uint4 gather16(const B* src, unsigned int c, unsigned int wi) {
    constexpr unsigned int V = 16 / sizeof(B);
    if (c + V <= wi) {
        return pp::load16_any(src + c);
    }
    pp::Vec16<B> out;
#pragma unroll
    for (unsigned int t = 0; t < V; ++t) {
        out.v[t] = __ldg(src + c);
        c = c + 1 == wi ? 0 : c + 1;
    }
    return *reinterpret_cast<const uint4*>(&out);
}

}  // namespace

template <typename T>
__global__ void circ_pad(const T* __restrict__ x, T* __restrict__ y, CircPadParams p) {
    typedef typename pp::Bits<sizeof(T)>::type B;
    constexpr int V = 16 / static_cast<int>(sizeof(T));
    constexpr int UV = CIRC_PAD_UNROLL;
    constexpr int R = pp::kMaxRank - 1;  // outer (row) dims: slots 0..R-1
    const B* __restrict__ xb = reinterpret_cast<const B*>(x);
    B* __restrict__ yb = reinterpret_cast<B*>(y);

    const int G = static_cast<int>(p.group);
    const int lane = threadIdx.x & (G - 1);
    const pp::index_t gid = pp::global_thread_id() >> (__ffs(G) - 1);
    const pp::index_t ngroups = pp::grid_threads() >> (__ffs(G) - 1);
    const pp::index_t units = p.rows * p.strips;
    const pp::index_t per = (units + ngroups - 1) / ngroups;
    pp::index_t unit = gid * per;
    const pp::index_t unit_end = min(units, unit + per);
    if (unit >= unit_end) {
        return;
    }

    const int wo = static_cast<int>(p.out_dims.d[R]);
    const unsigned int wi = static_cast<unsigned int>(p.in_dims.d[R]);
    const unsigned int s = static_cast<unsigned int>(p.shift.d[R]);
    const int strip_vecs = static_cast<int>(p.strip_vecs);
    const unsigned int step = static_cast<unsigned int>(G * V) % wi;  // column advance per vector

    pp::uindex_t row, strip, quot, rem;
    pp::divmod(unit, p.strips, row, strip);

    // Odometer over the outer dims: o = output index, si = source index, in_off = source row.
    int o[R];
    int si[R];
    pp::index_t in_off = 0;
    {
        pp::uindex_t rest = row;
#pragma unroll
        for (int d = R - 1; d >= 0; --d) {
            pp::uindex_t od = 0;
            if (p.out_dims.d[d] > 1) {
                pp::divmod(rest, p.out_dims.d[d], quot, od);
                rest = quot;
            }
            pp::uindex_t sd = od + p.shift.d[d];
            if (sd >= static_cast<pp::uindex_t>(p.in_dims.d[d])) {
                pp::divmod(sd, p.in_dims.d[d], quot, rem);
                sd = rem;
            }
            o[d] = static_cast<int>(od);
            si[d] = static_cast<int>(sd);
            in_off += static_cast<pp::index_t>(sd) * p.in_strides.d[d];
        }
    }

    for (;;) {
        const B* __restrict__ src = xb + in_off;
        B* __restrict__ dst = yb + static_cast<pp::index_t>(row) * wo;
        // Elements before the row's first 16-byte boundary, then whole vectors, then a tail.
        const int mis = static_cast<int>((reinterpret_cast<pp::uindex_t>(dst) & 15u) / sizeof(B));
        const int head = min((V - mis) & (V - 1), wo);
        const int nvec = (wo - head) / V;
        const int kend = min(nvec, (static_cast<int>(strip) + 1) * strip_vecs);
        int k = static_cast<int>(strip) * strip_vecs + lane;
        if (k < kend) {
            unsigned int c = wrap_col(static_cast<unsigned int>(head + k * V) + s, wi);
            for (; k < kend; k += G * UV) {
                uint4 v[UV];
#pragma unroll
                for (int u = 0; u < UV; ++u) {
                    if (k + u * G < kend) {
                        v[u] = gather16(src, c, wi);
                    }
                    c += step;
                    if (c >= wi) {
                        c -= wi;
                    }
                }
#pragma unroll
                for (int u = 0; u < UV; ++u) {
                    if (k + u * G < kend) {
                        *reinterpret_cast<uint4*>(dst + head + (k + u * G) * V) = v[u];
                    }
                }
            }
        }
        if (strip == 0) {
            for (int e = lane; e < head; e += G) {
                dst[e] = __ldg(src + wrap_col(static_cast<unsigned int>(e) + s, wi));
            }
            for (int e = head + nvec * V + lane; e < wo; e += G) {
                dst[e] = __ldg(src + wrap_col(static_cast<unsigned int>(e) + s, wi));
            }
        }

        if (++unit >= unit_end) {
            break;
        }
        if (++strip < static_cast<pp::uindex_t>(p.strips)) {
            continue;
        }
        // Next row: advance the odometer, carrying into outer dims.
        strip = 0;
        ++row;
        bool carry = true;
#pragma unroll
        for (int d = R - 1; d >= 0; --d) {
            if (carry) {
                const int in_d = static_cast<int>(p.in_dims.d[d]);
                const pp::index_t stride = p.in_strides.d[d];
                carry = ++o[d] == p.out_dims.d[d];
                if (!carry) {
                    in_off += stride;
                    if (++si[d] == in_d) {
                        si[d] = 0;
                        in_off -= static_cast<pp::index_t>(in_d) * stride;
                    }
                } else {
                    const int sh = static_cast<int>(p.shift.d[d]);
                    in_off += static_cast<pp::index_t>(sh - si[d]) * stride;
                    si[d] = sh;
                    o[d] = 0;
                }
            }
        }
    }
}
