// circ_pad.cu -- circular (wrap) padding of a contiguous tensor of rank 1..8.
//
// Computes y[o_0, ..., o_7] = x[(o_0 - before_0) mod in_0, ..., (o_7 - before_7) mod in_7]
// with a non-negative modulo, which is numpy.pad(x, pads, mode="wrap") exactly, pads larger
// than the input dim included (the input repeats as often as needed). Negative pads crop.
// The element type only sets the element size: elements move as raw bits.
//
// Launch contract
//   kernel     circ_pad<T>(const T* x, T* y, CircPadParams p)
//   args       x: input, contiguous, row-major; y: output, contiguous, row-major (no overlap
//              with x); p: CircPadParams by value (288 bytes, 8-byte aligned, all int64):
//                in_dims[8]     input dims, right-aligned: a rank-r shape fills slots 8-r..7,
//                               leading slots are 1
//                out_dims[8]    output dims (in + before + after), right-aligned the same way
//                shift[8]       (-before[d]) mod in_dims[d], in [0, in_dims[d]); 0 for slots of 1
//                in_strides[8]  element strides of the contiguous input (in_strides[7] == 1)
//                rows           prod(out_dims[0..6]): the number of output rows
//                strips         ceil(out_dims[7] / strip_len): work units per output row
//                strip_len      output elements per work unit, >= 1 (see below)
//                group          lanes that copy one row: 1, 2, 4, 8, 16 or 32
//              Every dim < 2^31; in_dims[d] >= 1 whenever the output is not empty. The host
//              skips the launch when the output is empty.
//   block      1-D, a multiple of 32 threads (256 recommended).
//   grid       1-D, any number of blocks >= 1: the rows * strips work units are split into
//              contiguous chunks, one per group of `group` lanes. Recommended:
//              min(ceil(rows * strips * group / block), resident blocks).
//   shared     0 bytes.
//   performance  group = 32 when out_dims[7] >= 32, else the next power of two >= out_dims[7];
//              strip_len = out_dims[7] when it is <= 8 * group * U, else 8 * group * U, where
//              U = 32 / sizeof(T) (4 for 8-byte types) is the number of loads each lane keeps
//              in flight. Writes are contiguous along each row; the source row is found once
//              per row (an odometer over the 7 outer dims), the source column by an add and a
//              compare per element.
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

struct CircPadParams {
    pp::Dims8 in_dims;
    pp::Dims8 out_dims;
    pp::Dims8 shift;
    pp::Dims8 in_strides;
    long long rows;
    long long strips;
    long long strip_len;
    long long group;
};

template <typename T>
__global__ void circ_pad(const T* __restrict__ x, T* __restrict__ y, CircPadParams p) {
    typedef typename pp::Bits<sizeof(T)>::type B;
    constexpr int U = sizeof(T) >= 8 ? 4 : 32 / static_cast<int>(sizeof(T));
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

    const pp::index_t wo = p.out_dims.d[R];
    const unsigned int wi = static_cast<unsigned int>(p.in_dims.d[R]);
    const int strip_len = static_cast<int>(p.strip_len);
    // Source column bookkeeping: every value below stays in [0, wi).
    const unsigned int lane_c = static_cast<unsigned int>(lane + p.shift.d[R]) % wi;
    const unsigned int step = static_cast<unsigned int>(G) % wi;
    const unsigned int strip_step = static_cast<unsigned int>(p.strip_len % wi);

    pp::uindex_t row, strip, quot, rem;
    pp::divmod(unit, p.strips, row, strip);
    pp::divmod(strip * p.strip_len, wi, quot, rem);
    unsigned int strip_c = static_cast<unsigned int>(rem);

    // Odometer over the outer dims: o = output index, s = source index, in_off = source row.
    int o[R];
    int s[R];
    pp::index_t in_off = 0;
    {
        pp::uindex_t rest = row;
#pragma unroll
        for (int d = R - 1; d >= 0; --d) {
            pp::uindex_t od = 0;
            if (p.out_dims.d[d] > 1) {
                pp::uindex_t q;
                pp::divmod(rest, p.out_dims.d[d], q, od);
                rest = q;
            }
            pp::uindex_t sd = od + p.shift.d[d];
            if (sd >= static_cast<pp::uindex_t>(p.in_dims.d[d])) {
                pp::divmod(sd, p.in_dims.d[d], quot, rem);
                sd = rem;
            }
            o[d] = static_cast<int>(od);
            s[d] = static_cast<int>(sd);
            in_off += static_cast<pp::index_t>(sd) * p.in_strides.d[d];
        }
    }

    for (;;) {
        const B* __restrict__ src = xb + in_off;
        const pp::index_t col0 = static_cast<pp::index_t>(strip) * strip_len;
        B* __restrict__ dst = yb + static_cast<pp::index_t>(row) * wo + col0;
        const int ncols = static_cast<int>(min(static_cast<pp::index_t>(strip_len), wo - col0));
        unsigned int c = lane_c + strip_c;
        if (c >= wi) {
            c -= wi;
        }
        for (int jb = lane; jb < ncols; jb += G * U) {
            B v[U];
#pragma unroll
            for (int k = 0; k < U; ++k) {
                if (jb + k * G < ncols) {
                    v[k] = __ldg(src + c);
                }
                c += step;
                if (c >= wi) {
                    c -= wi;
                }
            }
#pragma unroll
            for (int k = 0; k < U; ++k) {
                if (jb + k * G < ncols) {
                    dst[jb + k * G] = v[k];
                }
            }
        }

        if (++unit >= unit_end) {
            break;
        }
        if (++strip < static_cast<pp::uindex_t>(p.strips)) {
            strip_c += strip_step;
            if (strip_c >= wi) {
                strip_c -= wi;
            }
            continue;
        }
        // Next row: advance the odometer, carrying into outer dims.
        strip = 0;
        strip_c = 0;
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
                    if (++s[d] == in_d) {
                        s[d] = 0;
                        in_off -= static_cast<pp::index_t>(in_d) * stride;
                    }
                } else {
                    const int sh = static_cast<int>(p.shift.d[d]);
                    in_off += static_cast<pp::index_t>(sh - s[d]) * stride;
                    s[d] = sh;
                    o[d] = 0;
                }
            }
        }
    }
}
