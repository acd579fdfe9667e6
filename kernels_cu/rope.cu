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
// taken in double, reduced in double to t half-turns in [-1, 1], split into float hi + lo, and
// sincospif(hi) (the accurate one: do not compile with --use_fast_math; unlike sincosf it has
// no slow path, and so no stack, for large angles) is corrected to first order by lo. So the
// error stays near 1e-7 at any position, where a float inv_freq and a float product would give
// ~1e-4 for positions in the thousands.
// A thread computes its angles once per item and reuses them for the item's heads; it takes
// one exp2 per column (consecutive inv_freq differ by a constant factor, applied in double),
// issues its first heads' loads before that math, and the next batch's before each batch's.
// Rotation items come before copy items (columns past rotary_dim), so that a warp's threads
// take the same branch.

// Launch contract:
//     rope<T>(const T* x, const int* positions, T* y, long long tokens, int seq, int heads,
//             int head_dim, int rotary_dim, int layout, int position_offset, float theta)
//   - every tensor LINEAR (contiguous row-major); tokens = batch * seq >= 0, seq >= 1, heads
//     >= 0, head_dim >= rotary_dim >= 0, rotary_dim even, layout 0 or 1, theta > 0.
//     positions: null, or int32 [batch, seq]. 0-size work writes nothing. y must not overlap x.
//   - 1-D grid of any size, 1-D block of at most 256 threads (register use); grid-stride
//     over work items. An item is one token, one group of up to H heads (H = 16 for float, 8
//     for half) and one column of 16 bytes (one element / one pair where unaligned): a
//     rotation column (rotate-half: its 16 bytes and their partners rotary_dim / 2 further)
//     or a copy column.
//     Suggested: 256 threads, grid = min(cdiv(items, 256), W * resident blocks) with W = 4
//     for float, 1 for half, items = tokens * cdiv(heads, H) * head_dim * sizeof(T) / 16.
//   - 16-byte accesses when x and y are 16-byte aligned, head_dim is a multiple of
//     16 / sizeof(T), and so is rotary_dim / 2 (rotate-half) or rotary_dim (interleaved);
//     element-wise otherwise.
//
// @instantiate rope<float>
// @instantiate rope<__half>

#include "common.cuh"

namespace pp_rope {

// Heads per work item (they share the item's angles; 16 for float, 8 for half) and heads whose
// loads are issued together, a batch ahead of the math (2 for float, 1 for half: fewer
// registers, more warps in flight). Compile options override them, for tuning
// (-DPP_ROPE_HEADS=16, -DPP_ROPE_BATCH=4; -DPP_ROPE_BATCH=2 is the former half default).
#ifndef PP_ROPE_HEADS
#define PP_ROPE_HEADS 0
#endif
#ifndef PP_ROPE_BATCH
#define PP_ROPE_BATCH 0
#endif

template <typename T>
__host__ __device__ constexpr int batch_heads() {
    return PP_ROPE_BATCH > 0 ? PP_ROPE_BATCH : (sizeof(T) >= 4 ? 2 : 1);
}

template <typename T>
__host__ __device__ constexpr int heads_per_item() {
    return PP_ROPE_HEADS > 0 ? PP_ROPE_HEADS : (sizeof(T) >= 4 ? 16 : 8);
}

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

// cos and sin of pos * inv_freq, inv_freq given in double. The angle is reduced in double to
// t half-turns in [-1, 1] (a = pi t), split into float hi + lo, and sincospif(hi) (accurate to
// an ulp or two, and with no slow path for large arguments, unlike sincosf) is corrected to
// first order by lo.
__device__ __forceinline__ void angle(int pos, double inv_freq, float& c, float& s) {
    const double a = static_cast<double>(pos) * inv_freq;
    double t = a * 0.31830988618379067154;  // 1 / pi
    t -= 2.0 * rint(0.5 * t);
    const float hi = static_cast<float>(t);
    const float lo = static_cast<float>(t - static_cast<double>(hi));
    float sh, ch;
    sincospif(hi, &sh, &ch);
    // sin(pi (hi + lo)) = sin(pi hi) + pi lo cos(pi hi), and likewise cos; |lo| <= ulp(hi) / 2.
    const float d = 3.14159265358979323846f * lo;
    s = fmaf(d, ch, sh);
    c = fmaf(-d, sh, ch);
}

struct Shape {
    long long tokens;
    int seq, heads, head_dim, rotary_dim, position_offset;
    double log2_theta;
};

// A batch of kBatch heads of one column: A at x (+ head offsets), and B `half` further when PAIRED.
template <typename T, int N, bool WIDE, bool PAIRED, int kBatch>
struct Batch {
    Vec<T, N> a[kBatch], b[kBatch];

    __device__ __forceinline__ void load_from(const T* __restrict__ x, long long stride, int half, int j0,
                                              int nh) {
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
            if (j0 + j < nh) {
                a[j] = load<T, N, WIDE>(x + (j0 + j) * stride);
                if (PAIRED) b[j] = load<T, N, WIDE>(x + (j0 + j) * stride + half);
            }
        }
    }

    // Rotates (pairs per column kPairs, cos cs, sin sn) unless COPY, and stores at y.
    template <bool COPY, bool INTERLEAVED, int kPairs>
    __device__ __forceinline__ void store_to(T* __restrict__ y, long long stride, int half, int j0, int nh,
                                             const float (&cs)[kPairs], const float (&sn)[kPairs]) {
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
            if (j0 + j >= nh) continue;
            if constexpr (COPY) {
            } else if constexpr (INTERLEAVED) {
#pragma unroll
                for (int k = 0; k < kPairs; ++k) rotate(a[j].e[2 * k], a[j].e[2 * k + 1], cs[k], sn[k]);
            } else {
#pragma unroll
                for (int k = 0; k < kPairs; ++k) rotate(a[j].e[k], b[j].e[k], cs[k], sn[k]);
            }
            if (PAIRED) store<T, N, WIDE>(y + (j0 + j) * stride + half, b[j]);
            store<T, N, WIDE>(y + (j0 + j) * stride, a[j]);
        }
    }
};

// nh heads of one column, from x to y, a batch of loads ahead of the math. The angles are
// computed (by `angles`) while the first batch's loads are in flight.
template <typename T, int N, bool WIDE, bool PAIRED, bool COPY, bool INTERLEAVED, int kPairs, int kBatch,
          typename F>
__device__ __forceinline__ void heads_loop(const T* __restrict__ x, T* __restrict__ y, long long stride,
                                           int half, int nh, F angles) {
    float cs[kPairs], sn[kPairs];
    Batch<T, N, WIDE, PAIRED, kBatch> b0, b1;
    b0.load_from(x, stride, half, 0, nh);
    angles(cs, sn);
#pragma unroll 1
    for (int j0 = 0; j0 < nh; j0 += 2 * kBatch) {
        b1.load_from(x, stride, half, j0 + kBatch, nh);
        b0.template store_to<COPY, INTERLEAVED, kPairs>(y, stride, half, j0, nh, cs, sn);
        b0.load_from(x, stride, half, j0 + 2 * kBatch, nh);
        b1.template store_to<COPY, INTERLEAVED, kPairs>(y, stride, half, j0 + kBatch, nh, cs, sn);
    }
}

// WIDE: 16-byte columns; else one element (rotate-half) or one pair (interleaved) per column.
template <typename T, bool WIDE, bool INTERLEAVED>
__device__ __forceinline__ void rope_body(const T* __restrict__ x, const int* __restrict__ positions,
                                          T* __restrict__ y, const Shape& p) {
    constexpr int kN = WIDE ? 16 / sizeof(T) : (INTERLEAVED ? 2 : 1);  // rotary column width
    constexpr int kPairs = INTERLEAVED ? kN / 2 : kN;                   // pairs per column
    constexpr int kCopyN = WIDE ? 16 / sizeof(T) : 1;                   // copy column width
    constexpr int kB = batch_heads<T>();                                // heads per load batch
    const int half = p.rotary_dim / 2;
    const int rot_cols = INTERLEAVED ? p.rotary_dim / kN : half / kN;
    const int cols = rot_cols + (p.head_dim - p.rotary_dim) / kCopyN;
    const int hp = heads_per_item<T>() < p.heads ? heads_per_item<T>() : p.heads;
    const int groups = (p.heads + hp - 1) / hp;
    const int copy_cols = cols - rot_cols;
    // Rotation items (token, group, column) first, then copy items: a warp's threads take one
    // branch (mixed, the copy threads would wait out the rotation threads' loads and math).
    const pp::uindex_t rows = static_cast<pp::uindex_t>(p.tokens) * groups;
    const long long rot_items = static_cast<long long>(rows) * rot_cols;
    const long long items = static_cast<long long>(rows) * cols;
    const long long nthreads = pp::grid_threads();
    const long long head_stride = p.head_dim;
    // inv_freq(i + 1) = inv_freq(i) * step: one exp2 per column, exact enough in double.
    const double step = p.rotary_dim > 0 ? exp2(-2.0 / p.rotary_dim * p.log2_theta) : 1.0;
    for (long long item = pp::global_thread_id(); item < items; item += nthreads) {
        const bool rot = item < rot_items;
        pp::uindex_t r, col, token, g;
        pp::divmod(static_cast<pp::uindex_t>(rot ? item : item - rot_items),
                   static_cast<pp::uindex_t>(rot ? rot_cols : copy_cols), r, col);
        pp::divmod(r, static_cast<pp::uindex_t>(groups), token, g);
        const int h0 = static_cast<int>(g) * hp;
        const int nh = p.heads - h0 < hp ? p.heads - h0 : hp;
        const long long first = (static_cast<long long>(token) * p.heads + h0) * head_stride;
        if (rot) {
            const int i0 = static_cast<int>(col) * kPairs;
            // rotate-half: a at [i0, i0 + kN), b at half + that; interleaved: both in one column.
            const long long off = first + (INTERLEAVED ? static_cast<long long>(col) * kN : i0);
            auto angles = [&](float (&cs)[kPairs], float (&sn)[kPairs]) {
                const int pos = positions ? positions[token]
                                          : p.position_offset + static_cast<int>(token % p.seq);
                double inv_freq = exp2(-static_cast<double>(2 * i0) / p.rotary_dim * p.log2_theta);
#pragma unroll
                for (int k = 0; k < kPairs; ++k) {
                    angle(pos, inv_freq, cs[k], sn[k]);
                    inv_freq *= step;
                }
            };
            heads_loop<T, kN, WIDE, !INTERLEAVED, false, INTERLEAVED, kPairs, kB>(x + off, y + off, head_stride,
                                                                          half, nh, angles);
        } else {
            const long long off = first + p.rotary_dim + static_cast<long long>(col) * kCopyN;
            auto none = [](float (&)[1], float (&)[1]) {};
            if constexpr (WIDE) {  // moved as uint4: copied structs of T can be split into narrow stores
                heads_loop<uint4, 1, true, false, true, false, 1, kB>(
                    reinterpret_cast<const uint4*>(x + off), reinterpret_cast<uint4*>(y + off),
                    head_stride * static_cast<long long>(sizeof(T)) / 16, 0, nh, none);
            } else {
                heads_loop<T, 1, false, false, true, false, 1, kB>(x + off, y + off, head_stride, 0, nh, none);
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
