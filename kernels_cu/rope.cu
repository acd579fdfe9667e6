// rope.cu -- rotary position embedding (RoPE).
//
// Computes, for x and y of shape [batch, seq, heads, head_dim] and each (b, s, h):
//     pos         = positions[b, s]             when positions is not null (offset not added)
//                 = position_offset + s         otherwise
//     inv_freq[i] = theta^(-2 i / rotary_dim),  i in [0, rotary_dim / 2)
//     (a, b)      = the i-th pair of x[b, s, h, :rotary_dim]:
//                   layout 0, rotate-half / GPT-NeoX: (x[i], x[i + rotary_dim / 2])
//                   layout 1, interleaved / GPT-J:    (x[2 i], x[2 i + 1])
//     y pair      = (a cos(pos inv_freq[i]) - b sin(...), b cos(...) + a sin(...))
//     y[b, s, h, rotary_dim:] = x[b, s, h, rotary_dim:]       (copied)
// Math is float for every T. The angle is made accurate to float rounding of the angle
// itself, not of its factors: inv_freq comes from exp2 in double, the product pos * inv_freq is
// taken in double and split into float hi + lo, sincosf(hi) (the accurate one: do not compile
// with --use_fast_math) is corrected to first order by lo. So the error stays near 1e-7 for
// positions in the thousands, where a float inv_freq and a float product would give ~1e-4.
// A thread computes its angles once per token and reuses them for up to 16 heads (8 for half);
// it takes one exp2 per column (consecutive inv_freq differ by a constant factor, applied in
// double) and issues its first heads' loads before that math.
//
// Launch contract:
//     rope<T>(const T* x, const int* positions, T* y, long long tokens, int seq, int heads,
//             int head_dim, int rotary_dim, int layout, int position_offset, float theta)
//   - every tensor LINEAR (contiguous row-major); tokens = batch * seq >= 0, seq >= 1, heads
//     >= 0, head_dim >= rotary_dim >= 0, rotary_dim even, layout 0 or 1, theta > 0.
//     positions: null, or int32 [batch, seq]. 0-size work writes nothing. y must not overlap x.
//   - 1-D grid of any size, 1-D block of at most 256 threads (register use); grid-stride
//     over work items. An item is one token, one group of up to H heads (H = 16 for float, 8
//     for half) and one column of 16 bytes (one element / one pair where unaligned).
//     Suggested: 256 threads, grid = clamp(cdiv(items, 256), 1, 32 * SMs), items = tokens *
//     cdiv(heads, H) * head_dim * sizeof(T) / 16.
//   - 16-byte accesses when x and y are 16-byte aligned, head_dim is a multiple of
//     16 / sizeof(T), and so is rotary_dim / 2 (rotate-half) or rotary_dim (interleaved);
//     element-wise otherwise.
//
// @instantiate rope<float>
// @instantiate rope<__half>

#include "common.cuh"

namespace pp_rope {

// Heads that share one thread's angles (16 for float, 8 for half), and heads whose loads are
// issued together, the first batch before the angle math. Picked on an H100 among 4, 8 and 16
// heads and batches of 2 and 4.
template <typename T>
__host__ __device__ constexpr int heads_per_item() {
    return sizeof(T) >= 4 ? 16 : 8;
}
constexpr int kBatch = 4;

using pp::from_float;
using pp::to_float;

template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
    T e[N];
};

// N elements at p: one N * sizeof(T)-byte access when WIDE, else element by element.
template <typename T, int N, bool WIDE>
__device__ __forceinline__ Vec<T, N> load(const T* __restrict__ p) {
    Vec<T, N> v;
    if (WIDE) {
        v = *reinterpret_cast<const Vec<T, N>*>(p);
    } else {
#pragma unroll
        for (int k = 0; k < N; ++k) v.e[k] = p[k];
    }
    return v;
}

template <typename T, int N, bool WIDE>
__device__ __forceinline__ void store(T* __restrict__ p, const Vec<T, N>& v) {
    if (WIDE) {
        *reinterpret_cast<Vec<T, N>*>(p) = v;
    } else {
#pragma unroll
        for (int k = 0; k < N; ++k) p[k] = v.e[k];
    }
}

// (a, b) -> (a c - b s, b c + a s) in float.
template <typename T>
__device__ __forceinline__ void rotate(T& a, T& b, float c, float s) {
    const float fa = to_float(a), fb = to_float(b);
    a = from_float<T>(fa * c - fb * s);
    b = from_float<T>(fb * c + fa * s);
}

// cos and sin of pos * inv_freq, inv_freq given in double.
__device__ __forceinline__ void angle(int pos, double inv_freq, float& c, float& s) {
    const double a = static_cast<double>(pos) * inv_freq;
    const float hi = static_cast<float>(a);
    const float lo = static_cast<float>(a - static_cast<double>(hi));
    float sh, ch;
    sincosf(hi, &sh, &ch);
    // sin(hi + lo) = sin(hi) + lo cos(hi), cos(hi + lo) = cos(hi) - lo sin(hi), |lo| <= ulp(hi)/2.
    s = fmaf(lo, ch, sh);
    c = fmaf(-lo, sh, ch);
}

struct Shape {
    long long tokens;
    int seq, heads, head_dim, rotary_dim, position_offset;
    double log2_theta;
};

// WIDE: 16-byte columns; else one element (rotate-half) or one pair (interleaved) per column.
template <typename T, bool WIDE, bool INTERLEAVED>
__device__ __forceinline__ void rope_body(const T* __restrict__ x, const int* __restrict__ positions,
                                          T* __restrict__ y, const Shape& p) {
    constexpr int kN = WIDE ? 16 / sizeof(T) : (INTERLEAVED ? 2 : 1);  // rotary column width
    constexpr int kPairs = INTERLEAVED ? kN / 2 : kN;                   // pairs per column
    constexpr int kCopyN = WIDE ? 16 / sizeof(T) : 1;                   // copy column width
    constexpr int kHeads = heads_per_item<T>();
    typedef Vec<T, kN> V;
    const int half = p.rotary_dim / 2;
    const int rot_cols = INTERLEAVED ? p.rotary_dim / kN : half / kN;
    const int cols = rot_cols + (p.head_dim - p.rotary_dim) / kCopyN;
    const int groups = (p.heads + kHeads - 1) / kHeads;
    const long long items = p.tokens * groups * cols;
    const long long nthreads = pp::grid_threads();
    const long long head_stride = p.head_dim;
    // inv_freq(i + 1) = inv_freq(i) * step: one exp2 per column, exact enough in double.
    const double step = p.rotary_dim > 0 ? exp2(-2.0 / p.rotary_dim * p.log2_theta) : 1.0;
    for (long long item = pp::global_thread_id(); item < items; item += nthreads) {
        const long long r = item / cols;
        const int col = static_cast<int>(item - r * cols);
        const long long token = r / groups;
        const int h0 = static_cast<int>(r - token * groups) * kHeads;
        const int nh = p.heads - h0 < kHeads ? p.heads - h0 : kHeads;
        const long long first = (token * p.heads + h0) * head_stride;
        if (col < rot_cols) {
            const int i0 = col * kPairs;
            // rotate-half: a at [i0, i0 + kN), b at half + that; interleaved: both in one column.
            const T* xa = x + first + (INTERLEAVED ? static_cast<long long>(col) * kN : i0);
            T* ya = y + first + (INTERLEAVED ? static_cast<long long>(col) * kN : i0);
            float cs[kPairs], sn[kPairs];
            for (int j0 = 0; j0 < nh; j0 += kBatch) {
                V va[kBatch], vb[kBatch];
#pragma unroll
                for (int j = 0; j < kBatch; ++j) {
                    if (j0 + j < nh) {
                        va[j] = load<T, kN, WIDE>(xa + (j0 + j) * head_stride);
                        if (!INTERLEAVED) vb[j] = load<T, kN, WIDE>(xa + (j0 + j) * head_stride + half);
                    }
                }
                if (j0 == 0) {  // while the first loads are in flight
                    const int pos = positions ? positions[token]
                                              : p.position_offset + static_cast<int>(token % p.seq);
                    double inv_freq = exp2(-static_cast<double>(2 * i0) / p.rotary_dim * p.log2_theta);
#pragma unroll
                    for (int k = 0; k < kPairs; ++k) {
                        angle(pos, inv_freq, cs[k], sn[k]);
                        inv_freq *= step;
                    }
                }
#pragma unroll
                for (int j = 0; j < kBatch; ++j) {
                    if (j0 + j >= nh) continue;
                    if (INTERLEAVED) {
#pragma unroll
                        for (int k = 0; k < kPairs; ++k) rotate(va[j].e[2 * k], va[j].e[2 * k + 1], cs[k], sn[k]);
                    } else {
#pragma unroll
                        for (int k = 0; k < kPairs; ++k) rotate(va[j].e[k], vb[j].e[k], cs[k], sn[k]);
                        store<T, kN, WIDE>(ya + (j0 + j) * head_stride + half, vb[j]);
                    }
                    store<T, kN, WIDE>(ya + (j0 + j) * head_stride, va[j]);
                }
            }
        } else {
            typedef Vec<T, kCopyN> C;
            const long long off = first + p.rotary_dim + static_cast<long long>(col - rot_cols) * kCopyN;
            for (int j0 = 0; j0 < nh; j0 += kBatch) {
                C v[kBatch];
#pragma unroll
                for (int j = 0; j < kBatch; ++j)
                    if (j0 + j < nh) v[j] = load<T, kCopyN, WIDE>(x + off + (j0 + j) * head_stride);
#pragma unroll
                for (int j = 0; j < kBatch; ++j)
                    if (j0 + j < nh) store<T, kCopyN, WIDE>(y + off + (j0 + j) * head_stride, v[j]);
            }
        }
    }
}

}  // namespace pp_rope

template <typename T>
__global__ void rope(const T* __restrict__ x, const int* __restrict__ positions, T* __restrict__ y,
                     long long tokens, int seq, int heads, int head_dim, int rotary_dim, int layout,
                     int position_offset, float theta) {
    using namespace pp_rope;
    constexpr int kVec = 16 / sizeof(T);
    if (tokens <= 0 || seq <= 0 || heads <= 0 || head_dim <= 0) return;
    Shape p;
    p.tokens = tokens;
    p.seq = seq;
    p.heads = heads;
    p.head_dim = head_dim;
    p.rotary_dim = rotary_dim;
    p.position_offset = position_offset;
    p.log2_theta = log2(static_cast<double>(theta));
    const bool aligned = pp::is_aligned16(x) && pp::is_aligned16(y) && head_dim % kVec == 0;
    if (layout == 1) {
        if (aligned && rotary_dim % kVec == 0) rope_body<T, true, true>(x, positions, y, p);
        else rope_body<T, false, true>(x, positions, y, p);
    } else {
        if (aligned && (rotary_dim / 2) % kVec == 0) rope_body<T, true, false>(x, positions, y, p);
        else rope_body<T, false, false>(x, positions, y, p);
    }
}
