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
// A second kernel, rope_table (rope.py's variant table picks it for half; it applies where
// rotary_dim / 2 <= PP_ROPE_TABLE_PAIRS):
// the same y, to the bit (same angle, inv_freq and rotation code), with the angle math taken
// out of the data stream. A block works on tiles of consecutive tokens; per tile it first
// fills a shared-memory table of the tile's (token, pair) cos and sin (one angle per entry,
// from a per-block table of inv_freq), then streams the tile's data like a copy: each thread
// loads PP_ROPE_TABLE_UNITS units before it rotates and stores any (its first ones before the
// table is made, so they are in flight during the math). A unit is a rotation column (16
// bytes and, rotate-half, their partner) or a copy column, as in rope; element-wise where rope
// is. Few registers (48 half, 45 float on sm_90), so 5 blocks of 256 threads fit on an SM.
//     rope_table<T>(x, positions, y, tokens, seq, heads, head_dim, rotary_dim, layout,
//                   position_offset, theta, int tile_tokens, int tile_heads)
//   - the first 11 arguments and their rules as rope's; rotary_dim / 2 <= PP_ROPE_TABLE_PAIRS
//     (1024), else it writes nothing.
//   - a tile is tile_tokens tokens x all heads, or, when tile_heads < heads, one token x
//     tile_heads heads; the kernel clamps tile_heads to [1, heads] and tile_tokens to [1,
//     PP_ROPE_TABLE_PAIRS / (rotary_dim / 2)] and to < 2^31 units a tile. Any values work;
//     suggested (rope.py's table_tiles): tile_tokens * heads * units per head ~ block *
//     PP_ROPE_TABLE_UNITS, units per head = rotary columns + copy columns.
//   - 1-D grid of any size (grid-stride over tiles), 1-D block of at most 256 threads.
//     Suggested: 256 threads, grid = min(tiles, 2 * resident blocks).
//   - shared: 24 KiB static (two table buffers of PP_ROPE_TABLE_PAIRS float2, and as many
//     doubles of inv_freq), 0 dynamic.
//
// @instantiate rope<float>
// @instantiate rope<__half>
// @instantiate rope_table<float>
// @instantiate rope_table<__half>
// @instantiate rope_aot<float>
// @instantiate rope_aot<__half>
// @instantiate rope_table_aot<float>
// @instantiate rope_table_aot<__half>

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
    // Spelled out (what the compiler made of a * c - b * s and b * c + a * s), so that rope
    // and rope_table, and every inlining of this, round alike.
    a = from_float<T>(__fmaf_rn(fa, c, -__fmul_rn(fb, s)));
    b = from_float<T>(__fmaf_rn(fa, s, __fmul_rn(fb, c)));
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

// Both kernels' arguments, as one struct.
__device__ __forceinline__ void fill_shape(Shape& p, long long tokens, int seq, int heads, int head_dim,
                                           int rotary_dim, int position_offset, float theta) {
    p.tokens = tokens;
    p.seq = seq;
    p.heads = heads;
    p.head_dim = head_dim;
    p.rotary_dim = rotary_dim;
    p.position_offset = position_offset;
    p.log2_theta = log2(static_cast<double>(theta));
}

// inv_freq(i + 1) = inv_freq(i) * step: one exp2 per column, exact enough in double. Both
// kernels take inv_freq of pair i0 + k (k < the pairs of a column) as column_freq(i0) times
// step, k times, in this order, so that they agree to the bit.
__device__ __forceinline__ double freq_step(const Shape& p) {
    return p.rotary_dim > 0 ? exp2(-2.0 / p.rotary_dim * p.log2_theta) : 1.0;
}

__device__ __forceinline__ double column_freq(int i0, const Shape& p) {
    return exp2(-static_cast<double>(2 * i0) / p.rotary_dim * p.log2_theta);
}

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
    const double step = freq_step(p);
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
                double inv_freq = column_freq(i0, p);
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

// -- rope_table ---------------------------------------------------------------------------------

// rope_table's constants the host sizes its tiles by: pyplugins.ops.rope.DEFINES
// passes each as a -D option to every compile, so there is no default here.
#ifndef PP_ROPE_TABLE_PAIRS
#error "rope.cu needs -DPP_ROPE_TABLE_PAIRS ((token, pair) entries of a table buffer)"
#endif
#ifndef PP_ROPE_TABLE_UNITS
#error "rope.cu needs -DPP_ROPE_TABLE_UNITS (work units a thread loads before it stores any)"
#endif
// rope_table's knobs (compile options override them, for tuning):
#ifndef PP_ROPE_TABLE_EARLY
#define PP_ROPE_TABLE_EARLY 1  // 1: a tile's first units are loaded before its table is made
#endif
#ifndef PP_ROPE_TABLE_MINB
#define PP_ROPE_TABLE_MINB 5  // > 0: __launch_bounds__(256, this): blocks of <= 256, this many per SM
#endif

// A unit's data in registers: 16 bytes as a uint4 when WIDE (copied data then moves as one
// access), else N elements.
template <typename T, int N, bool WIDE>
struct Raw {
    typedef Vec<T, N> type;
};
template <typename T, int N>
struct Raw<T, N, true> {
    typedef uint4 type;
};

template <typename T, int N>
__device__ __forceinline__ Vec<T, N> as_vec(const Vec<T, N>& r) {
    return r;
}
template <typename T, int N>
__device__ __forceinline__ Vec<T, N> as_vec(const uint4& r) {  // N * sizeof(T) == 16
    Vec<T, N> v;
    *reinterpret_cast<uint4*>(&v) = r;
    return v;
}

// Per-launch geometry of rope_table: pairs, and rotation / copy units per (token, head) row.
struct Geo {
    int half, head_dim, rotary_dim;
    unsigned int rot_cols, copy_cols;
};

// One tile: nt tokens from `first`, heads h0 .. h0 + nh of each (all heads when nt > 1), so
// that its rows (token, head) lie contiguous from element `base`. Its units: rot_units
// rotation units (row, column) first, then copy units, `units` (< 2^31) in all.
struct Tile {
    long long first, base;
    unsigned int nh, rot_units, units;
};

// kU units of a tile per thread: all loaded (load), then rotated with the tile's table and
// stored (store). Unit u0 + j * blockDim.x is the thread's j-th, so a warp's loads coalesce.
template <typename T, bool WIDE, bool INTERLEAVED>
struct Units {
    static constexpr int kN = WIDE ? 16 / sizeof(T) : (INTERLEAVED ? 2 : 1);  // rotary column width
    static constexpr int kPairs = INTERLEAVED ? kN / 2 : kN;                   // pairs per column
    static constexpr int kCopyN = WIDE ? 16 / sizeof(T) : 1;                   // copy column width
    static constexpr int kU = PP_ROPE_TABLE_UNITS;
    static constexpr int kCopy = -1, kNone = -2;
    typedef typename Raw<T, kN, WIDE>::type R;

    R a[kU], b[kU];     // column, and its partner half further (rotate-half rotation units)
    long long off[kU];  // element offset of the column
    int tix[kU];        // rotation unit: table entry of its first pair; else kCopy or kNone

    __device__ __forceinline__ void load(const T* __restrict__ x, const Geo& g, const Tile& t,
                                         unsigned int u0) {
#pragma unroll
        for (int j = 0; j < kU; ++j) {
            const unsigned int u = u0 + static_cast<unsigned int>(j) * blockDim.x;
            tix[j] = kNone;
            if (u < t.rot_units) {
                const unsigned int row = u / g.rot_cols, col = u - row * g.rot_cols;
                const unsigned int tok = row / t.nh;
                off[j] = t.base + static_cast<long long>(row) * g.head_dim + static_cast<long long>(col) * kN;
                tix[j] = static_cast<int>(tok) * g.half + static_cast<int>(col);
                if constexpr (WIDE) {
                    a[j] = *reinterpret_cast<const uint4*>(x + off[j]);
                    if (!INTERLEAVED) b[j] = *reinterpret_cast<const uint4*>(x + off[j] + g.half);
                } else {
#pragma unroll
                    for (int k = 0; k < kN; ++k) a[j].e[k] = x[off[j] + k];
                    if (!INTERLEAVED) b[j].e[0] = x[off[j] + g.half];
                }
            } else if (u < t.units) {
                const unsigned int c = u - t.rot_units;
                const unsigned int row = c / g.copy_cols, col = c - row * g.copy_cols;
                off[j] = t.base + static_cast<long long>(row) * g.head_dim + g.rotary_dim +
                         static_cast<long long>(col) * kCopyN;
                tix[j] = kCopy;
                if constexpr (WIDE) {
                    a[j] = *reinterpret_cast<const uint4*>(x + off[j]);
                } else {
                    a[j].e[0] = x[off[j]];
                }
            }
        }
    }

    // Pair k of a rotation unit's column has its (cos, sin) at tab[tix + k * rot_cols].
    __device__ __forceinline__ void store(T* __restrict__ y, const Geo& g, const float2* __restrict__ tab) {
#pragma unroll
        for (int j = 0; j < kU; ++j) {
            if (tix[j] >= 0) {
                Vec<T, kN> va = as_vec<T, kN>(a[j]);
                Vec<T, kN> vb;
                if (!INTERLEAVED) vb = as_vec<T, kN>(b[j]);
#pragma unroll
                for (int k = 0; k < kPairs; ++k) {
                    const float2 cs = tab[tix[j] + k * static_cast<int>(g.rot_cols)];
                    if (INTERLEAVED) rotate(va.e[2 * k], va.e[2 * k + 1], cs.x, cs.y);
                    else rotate(va.e[k], vb.e[k], cs.x, cs.y);
                }
                if constexpr (WIDE) {
                    *reinterpret_cast<uint4*>(y + off[j]) = *reinterpret_cast<const uint4*>(&va);
                    if (!INTERLEAVED) {
                        *reinterpret_cast<uint4*>(y + off[j] + g.half) = *reinterpret_cast<const uint4*>(&vb);
                    }
                } else {
#pragma unroll
                    for (int k = 0; k < kN; ++k) y[off[j] + k] = va.e[k];
                    if (!INTERLEAVED) y[off[j] + g.half] = vb.e[0];
                }
            } else if (tix[j] == kCopy) {
                if constexpr (WIDE) {
                    *reinterpret_cast<uint4*>(y + off[j]) = a[j];
                } else {
                    y[off[j]] = a[j].e[0];
                }
            }
        }
    }
};

// rope_table's work. Once per block: freqs[r] = inv_freq of the pair that table entry r (mod
// half) holds, as rope takes it (column_freq, then step k times). Then a grid-stride loop over
// tiles; per tile: (0) each thread loads its first kU units (PP_ROPE_TABLE_EARLY); (1) the
// block fills the tile's table: entry tok * half + k * rot_cols + col holds (cos, sin) of pair
// col * kPairs + k of the tile's token tok, so that a warp's reads in (2) take consecutive
// entries; one barrier; (2) each thread rotates and stores its units, then loads, rotates and
// stores further passes of kU units. Two table buffers alternate between tiles, so one barrier
// per tile is enough: a thread writes a buffer only after the barrier that follows every
// thread's last read of it.
template <typename T, bool WIDE, bool INTERLEAVED>
__device__ __forceinline__ void table_body(const T* __restrict__ x, const int* __restrict__ positions,
                                           T* __restrict__ y, const Shape& p, int tile_tokens, int tile_heads,
                                           float2 (*table)[PP_ROPE_TABLE_PAIRS], double* freqs) {
    typedef Units<T, WIDE, INTERLEAVED> U;
    constexpr unsigned int kMaxUnits = 0x7fffffffu;
    Geo g;
    g.half = p.rotary_dim / 2;
    g.head_dim = p.head_dim;
    g.rotary_dim = p.rotary_dim;
    g.rot_cols = INTERLEAVED ? p.rotary_dim / U::kN : g.half / U::kN;
    g.copy_cols = (p.head_dim - p.rotary_dim) / U::kCopyN;
    const unsigned int ucols = g.rot_cols + g.copy_cols;  // <= head_dim < 2^31
    if (ucols == 0) return;
    // Tile sizes as asked, clamped: heads in [1, heads]; tokens >= 1, 1 unless all heads, at
    // most PP_ROPE_TABLE_PAIRS / half; units < 2^31.
    unsigned int nh_max = tile_heads < 1 ? 1u : (tile_heads < p.heads ? tile_heads : p.heads);
    if (nh_max > kMaxUnits / ucols) nh_max = kMaxUnits / ucols;
    int nt_max = 1;
    if (nh_max == static_cast<unsigned int>(p.heads) && tile_tokens > 1) {
        const long long most = kMaxUnits / (static_cast<long long>(p.heads) * ucols);
        nt_max = tile_tokens < most ? tile_tokens : static_cast<int>(most);
        if (g.half > 0 && nt_max > PP_ROPE_TABLE_PAIRS / g.half) nt_max = PP_ROPE_TABLE_PAIRS / g.half;
    }
    const long long hchunks = (p.heads - 1) / nh_max + 1;
    const long long tiles = ((p.tokens - 1) / nt_max + 1) * hchunks;
    const unsigned int pass = static_cast<unsigned int>(U::kU) * blockDim.x;

    if (g.half > 0) {
        const double step = freq_step(p);
        for (int r = threadIdx.x; r < g.half; r += blockDim.x) {
            const int k = r / static_cast<int>(g.rot_cols), col = r - k * static_cast<int>(g.rot_cols);
            double f = column_freq(col * U::kPairs, p);
            for (int m = 0; m < k; ++m) f *= step;
            freqs[r] = f;
        }
        __syncthreads();
    }

    int buf = 0;
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x, buf ^= 1) {
        pp::uindex_t tg, hg;
        pp::divmod(static_cast<pp::uindex_t>(tile), static_cast<pp::uindex_t>(hchunks), tg, hg);
        Tile t;
        t.first = static_cast<long long>(tg) * nt_max;
        const int nt = p.tokens - t.first < nt_max ? static_cast<int>(p.tokens - t.first) : nt_max;
        const unsigned int h0 = static_cast<unsigned int>(hg) * nh_max;
        t.nh = p.heads - h0 < nh_max ? p.heads - h0 : nh_max;
        t.base = (t.first * p.heads + h0) * p.head_dim;
        const unsigned int rows = static_cast<unsigned int>(nt) * t.nh;
        t.rot_units = rows * g.rot_cols;
        t.units = rows * ucols;
        U units;
        if (PP_ROPE_TABLE_EARLY) units.load(x, g, t, threadIdx.x);  // (0): in flight through (1)

        float2* tab = table[buf];  // (1)
        pp::uindex_t first_seq, first_s;  // first_s = first % seq
        pp::divmod(static_cast<pp::uindex_t>(t.first), static_cast<pp::uindex_t>(p.seq), first_seq, first_s);
        const int entries = nt * g.half;
        for (int e = threadIdx.x; e < entries; e += blockDim.x) {
            const int tok = e / g.half;
            const int pos = positions ? positions[t.first + tok]
                                      : p.position_offset + static_cast<int>((static_cast<unsigned int>(first_s) +
                                                                              static_cast<unsigned int>(tok)) %
                                                                             static_cast<unsigned int>(p.seq));
            float c, s;
            angle(pos, freqs[e - tok * g.half], c, s);
            tab[e] = make_float2(c, s);
        }
        __syncthreads();

        if (!PP_ROPE_TABLE_EARLY) units.load(x, g, t, threadIdx.x);
        units.store(y, g, tab);  // (2)
        for (unsigned int u0 = threadIdx.x + pass; u0 < t.units; u0 += pass) {
            units.load(x, g, t, u0);
            units.store(y, g, tab);
        }
    }
}

// rope's body (its kernel and rope_aot call it).
template <typename T>
__device__ __forceinline__ void rope_main(const T* __restrict__ x, const int* __restrict__ positions,
                                          T* __restrict__ y, long long tokens, int seq, int heads,
                                          int head_dim, int rotary_dim, int layout,
                                          int position_offset, float theta) {
    constexpr int kVec = 16 / sizeof(T);
    if (tokens <= 0 || seq <= 0 || heads <= 0 || head_dim <= 0) return;
    Shape p;
    fill_shape(p, tokens, seq, heads, head_dim, rotary_dim, position_offset, theta);
    const bool aligned = pp::is_aligned16(x) && pp::is_aligned16(y) && head_dim % kVec == 0;
    if (layout == 1) {
        if (aligned && rotary_dim % kVec == 0) rope_body<T, true, true>(x, positions, y, p);
        else rope_body<T, false, true>(x, positions, y, p);
    } else {
        if (aligned && (rotary_dim / 2) % kVec == 0) rope_body<T, true, false>(x, positions, y, p);
        else rope_body<T, false, false>(x, positions, y, p);
    }
}

// rope_table's body after its shared arrays (its kernel and rope_table_aot call it).
template <typename T>
__device__ __forceinline__ void rope_table_main(const T* __restrict__ x,
                                                const int* __restrict__ positions,
                                                T* __restrict__ y, long long tokens, int seq,
                                                int heads, int head_dim, int rotary_dim,
                                                int layout, int position_offset, float theta,
                                                int tile_tokens, int tile_heads,
                                                float2 (*table)[PP_ROPE_TABLE_PAIRS],
                                                double* freqs) {
    constexpr int kVec = 16 / sizeof(T);
    if (tokens <= 0 || seq <= 0 || heads <= 0 || head_dim <= 0 || rotary_dim / 2 > PP_ROPE_TABLE_PAIRS) return;
    Shape p;
    fill_shape(p, tokens, seq, heads, head_dim, rotary_dim, position_offset, theta);
    const bool aligned = pp::is_aligned16(x) && pp::is_aligned16(y) && head_dim % kVec == 0;
    if (layout == 1) {
        if (aligned && rotary_dim % kVec == 0) table_body<T, true, true>(x, positions, y, p, tile_tokens, tile_heads, table, freqs);
        else table_body<T, false, true>(x, positions, y, p, tile_tokens, tile_heads, table, freqs);
    } else {
        if (aligned && (rotary_dim / 2) % kVec == 0) {
            table_body<T, true, false>(x, positions, y, p, tile_tokens, tile_heads, table, freqs);
        } else {
            table_body<T, false, false>(x, positions, y, p, tile_tokens, tile_heads, table, freqs);
        }
    }
}

}  // namespace pp_rope

template <typename T>
__global__ void rope(const T* __restrict__ x, const int* __restrict__ positions, T* __restrict__ y,
                     long long tokens, int seq, int heads, int head_dim, int rotary_dim, int layout,
                     int position_offset, float theta) {
    pp_rope::rope_main(x, positions, y, tokens, seq, heads, head_dim, rotary_dim, layout,
                       position_offset, theta);
}

// Before sm_90, at most 4 blocks: sm_75 holds 1024 threads an SM, and sm_80 spills at 5.
#if PP_ROPE_TABLE_MINB > 4 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define PP_ROPE_TABLE_BOUNDS __launch_bounds__(256, 4)
#elif PP_ROPE_TABLE_MINB > 0
#define PP_ROPE_TABLE_BOUNDS __launch_bounds__(256, PP_ROPE_TABLE_MINB)
#else
#define PP_ROPE_TABLE_BOUNDS
#endif

template <typename T>
__global__ void PP_ROPE_TABLE_BOUNDS rope_table(const T* __restrict__ x, const int* __restrict__ positions,
                                                T* __restrict__ y, long long tokens, int seq, int heads,
                                                int head_dim, int rotary_dim, int layout, int position_offset,
                                                float theta, int tile_tokens, int tile_heads) {
    __shared__ float2 table[2][PP_ROPE_TABLE_PAIRS];
    __shared__ double freqs[PP_ROPE_TABLE_PAIRS];
    pp_rope::rope_table_main(x, positions, y, tokens, seq, heads, head_dim, rotary_dim, layout,
                             position_offset, theta, tile_tokens, tile_heads, table, freqs);
}

// Ahead-of-time entries (QDP aot_impl; pyplugins.ops.rope.RoPE.aot_launch), in TensorRT's order
// (the input pointer, 32-bit ints, the output pointer), calling the kernels' bodies without
// positions (QDP serves the one-input RoPE: token (b, s) at position_offset + s):
//     rope_aot<T>(const T* x, int tokens, int tokens_hi, int seq, int heads, int head_dim,
//                 int rotary_dim, int layout, int position_offset, int theta_bits, T* y)
//     rope_table_aot<T>(x, int tokens, int seq, heads, head_dim, rotary_dim, layout,
//                 position_offset, theta_bits, int tile_tokens, int tile_heads, T* y), with
//                 rope_table's bounds
// tokens = batch * seq < 2^31; theta travels as its float32 bits (__int_as_float).
// rope_aot takes tokens as two words, tokens_hi (0 under that bound) the high one, so that the
// body sees a 64-bit count it cannot bound, as rope's long long: from a sign-extended int,
// ptxas narrowed the float body's index math to 80 registers where rope<float> takes 96, which
// changed the blocks per SM (3, not 2, at 256 threads) and made the AOT kernel 13% slower at
// [1, 4096, 8, 128] on an H100 (docs/ops/rope.md "AOT entries"). rope_table_aot and half
// compile to rope_table's and rope's register counts as they are. rope_aot's positions pointer
// is null as well, but made from tokens_hi (0) so that ptxas cannot see it: with a constant null
// it compiled the body otherwise, and slower (docs/ops/rope.md "AOT entries").
template <typename T>
__global__ void rope_aot(const T* __restrict__ x, int tokens, int tokens_hi, int seq, int heads,
                         int head_dim, int rotary_dim, int layout, int position_offset,
                         int theta_bits, T* __restrict__ y) {
    const unsigned long long hi = static_cast<unsigned int>(tokens_hi);
    const long long count = static_cast<long long>((hi << 32) | static_cast<unsigned int>(tokens));
    const int* no_positions = reinterpret_cast<const int*>(hi);  // null: tokens_hi is 0
    pp_rope::rope_main(x, no_positions, y, count, seq, heads, head_dim, rotary_dim, layout,
                       position_offset, __int_as_float(theta_bits));
}

template <typename T>
__global__ void PP_ROPE_TABLE_BOUNDS rope_table_aot(const T* __restrict__ x, int tokens, int seq,
                                                    int heads, int head_dim, int rotary_dim,
                                                    int layout, int position_offset,
                                                    int theta_bits, int tile_tokens,
                                                    int tile_heads, T* __restrict__ y) {
    __shared__ float2 table[2][PP_ROPE_TABLE_PAIRS];
    __shared__ double freqs[PP_ROPE_TABLE_PAIRS];
    pp_rope::rope_table_main(x, static_cast<const int*>(nullptr), y,
                             static_cast<long long>(tokens), seq, heads, head_dim, rotary_dim,
                             layout, position_offset, __int_as_float(theta_bits), tile_tokens,
                             tile_heads, table, freqs);
}
