// circ_pad.cu -- circular (wrap) padding of a contiguous tensor of rank 1..8.
//
// Computes y[o_0, ..., o_7] = x[(o_0 - before_0) mod in_0, ..., (o_7 - before_7) mod in_7]
// with a non-negative modulo, which is numpy.pad(x, pads, mode="wrap") exactly, pads larger
// than the input dim included (the input repeats as often as needed). The plugin's pads are
// never negative (its field refuses them). The kernels see dims and shifts, not pads, and the GPU
// tests also launch circ_pad_narrow directly on output dims smaller than the input's (a crop);
// nothing else relies on that.
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
//   block      1-D, a multiple of 32 threads, at most 1024 (256 recommended).
//   grid       1-D, any number of blocks >= 1. Recommended:
//              min(ceil(rows * strips * group / block), 4 * resident blocks).
//   shared     0 bytes of dynamic shared memory (the kernel declares 43,040 bytes static, so
//              4 blocks of 256 threads fit on an SM; 56 registers a thread limit it to 4 anyway).
//   reads      whole aligned 16-byte blocks that contain input bytes, so up to 15 bytes before
//              or after the input tensor when it does not start or end on a 16-byte boundary
//              (device allocations are 256-byte aligned and page-mapped, so this is safe).
//   Recommended plan (strips, strip_vecs and group matter only to the long-row path below),
//   nvec = out_dims[7] / V:
//                group      = min(32, next power of two >= ceil(nvec / 2)), at least 1
//                strip_vecs = nvec if nvec <= 8 * group, else 8 * group  (at least 1)
//                strips     = ceil(nvec / strip_vecs), at least 1
//
// Two paths, chosen per launch from the row lengths (every block takes the same one):
//   staged     rows whose input (plus 47 bytes) and output each fit in CIRC_PAD_STAGE_BYTES
//              (16 KB): a block writes tiles of whole output rows, up to CIRC_PAD_TILE_ROWS
//              (512) rows, about CIRC_PAD_TILE_OUT (16 KB) of output, and no more than
//              ceil(rows / grid) rows so that every block gets work; tiles go to blocks
//              round-robin. Per tile, steps separated by barriers: (0) one thread per row finds
//              its source row; (1) the block copies each source row's aligned 16-byte blocks,
//              coalesced, into a shared-memory slot (cp.async on sm_80 and later, into the
//              second of two stages, so the next tile's reads are in flight while this one is
//              written; CIRC_PAD_PIPELINE=0 loads and stores instead); (2) it appends to each
//              slot the row's first V elements again, so any V elements from a column on lie
//              contiguous; (3) it writes the tile's output as aligned 16-byte vectors of the
//              flat output, ignoring row boundaries: each read from shared memory as two
//              aligned 16-byte loads joined by byte selects (pp::bytes_at), a vector that
//              spans two rows as two such reads joined the same way; only the tile's two end
//              vectors, and rows shorter than V, go element by element.
//   strips     longer rows: each row is split into `strips` work units of `strip_vecs`
//              aligned 16-byte output vectors (a scalar head and tail where the row does not
//              start or end on a 16-byte boundary), contiguous chunks of units per group of
//              `group` lanes; each vector is read as one or two aligned 16-byte loads
//              (load16_any), element by element only where it wraps around the input row, and
//              each lane keeps CIRC_PAD_UNROLL (2) vectors in flight. The source row is found
//              once per row (an odometer over the 7 outer dims).
//
// A second kernel for narrow rows (circ_pad.py's variant table picks it; same parameters):
//   kernel     circ_pad_narrow<T>(const T* x, T* y, CircPadParams p), p as above (rows,
//              strips, strip_vecs and group unused).
//   needs      with S = sizeof(T), planes = prod(out_dims[0..5]), one input plane of
//              in_dims[6] * in_dims[7] * S bytes: (plane bytes + 30) rounded down to 16
//              <= CIRC_PAD_NARROW_DATA (a -D option); out_dims[6] * out_dims[7] <= 2^24. The host
//              picks it for output rows of at most 128 bytes (circ_pad.NARROW_ROW_BYTES).
//   block      1-D, a multiple of 32 threads, at most 1024 (256 recommended).
//   grid       any number of blocks >= 1; recommended min(planes, resident blocks)
//              (its row's waves in circ_pad.py).
//   shared     0 dynamic; 45,664 bytes static: two stages (42,592) and the table path's
//              column table (CIRC_PAD_NARROW_TABLE * 4 bytes) and phases (1,024 bytes).
//   reads      as circ_pad: whole aligned 16-byte blocks holding input bytes.
//   how        a block writes tiles of pk whole output planes (pk = as many as a stage holds,
//              at most 64 and at most ceil(planes / grid)); tiles go to blocks round-robin.
//              Per tile: (0) one thread per plane finds its source plane; (1) the block copies
//              each source plane's aligned 16-byte blocks, coalesced, into a slot of shared
//              memory (cp.async into the other of two stages while the current one is written;
//              CIRC_PAD_PIPELINE=0 loads and stores instead); (2) it writes the tile's output
//              as aligned 16-byte vectors of the flat output, one way of two:
//              table     the flat output repeats its pattern every G = 16 / gcd(wo * S, 16)
//                        rows, a period of nv = G * wo / V whole aligned vectors (wo = 10:
//                        4 rows of 2-byte or 2 rows of 4-byte elements, 5 vectors). Each block
//                        builds, once, for each of the nv vector positions ("phases") in a
//                        period: the row of its first element and how many rows it spans, and
//                        for each of its V elements the byte offset in shared memory from the
//                        source row of that first row (row steps of wi * S and the wrapped
//                        source column), all for y's own misalignment. A vector whose rows are
//                        consecutive rows of one source plane (all but those crossing a plane's
//                        end or the H wrap) is then: one division of its index by nv (phase
//                        and period), one by ho (plane and row), the wrap of its first row,
//                        and V shared loads at the row's address plus the table's offsets
//                        (read 4 at a time). Applies where G * wo <= CIRC_PAD_NARROW_TABLE (512;
//                        0 turns it off) and nv <= 128: every row of <= 128 bytes of 2-, 4- or
//                        8-byte elements, and 1-byte rows whose period fits.
//              odometer  every other vector: one multiply-shift division by ho * wo and one by
//                        wo, then a (plane, row, column) odometer element by element; the
//                        tile's two end vectors store element by element.
//
// A third kernel, the host's choice wherever it applies (pads on the last two dims only):
//   kernel     circ_pad_flat<T>(const T* x, T* y, CircPadFlatParams p)
//   args       x, y as above (any alignment). p by value (104 bytes, all 8-byte fields):
//                total          output elements, < 2^62
//                plane_in       hi * wi; plane_out = ho * wo < 2^31 (planes: the last 2 dims)
//                wi, wo, hi, ho input and output widths and heights (>= 1)
//                sw, sh         the last two dims' shifts, (-before) mod wi and mod hi
//                magic_plane, shift_plane   e / plane_out for e < 2^63 (circ_pad.flat_magic64)
//                magic_wo, shift_wo         n / wo for n < 2^31 (circ_pad.flat_magic31)
//   needs      every dim before the last two unpadded (in == out there).
//   block      1-D, a multiple of 32 threads, at most 1024 (256); at most 256 when compiled
//              with CIRC_PAD_FLAT_MINB > 0.
//   grid       any number of blocks >= 1; recommended the full grid,
//              ceil(ceil((total + V - 1) / V) / (block * CIRC_PAD_FLAT_VECS)) blocks, V =
//              16 / sizeof(T); a smaller grid loops grid-stride.
//   shared     0 dynamic; CIRC_PAD_FLAT_TABLE * 4 bytes static (2 KB).
//   reads      as circ_pad: whole aligned 16-byte blocks holding input bytes.
//   how        thread j of block b writes aligned 16-byte output vector k = (b * CIRC_PAD_FLAT_VECS
//              + u) * block + j (u < VECS), elements k * V - lead on (lead: y's misalignment in
//              elements). It locates the vector's first element (plane by a 64-bit multiply-high,
//              row and column by a 32-bit multiply-shift: no division) and reads the vector as:
//              contiguous  the vector within one output row and its source columns not wrapping:
//                          one or two aligned 16-byte loads joined by byte selects (load16_any);
//              table       output rows of wo <= CIRC_PAD_FLAT_TABLE / V elements and the
//                          vector's source rows consecutive in x: element t from
//                          row + table[w * V + t], a column table each block builds in shared
//                          memory (one barrier) before its vectors;
//              any         otherwise (a row wraps in H, a plane ends, or the tensor's two end
//                          vectors, which store element by element): a (plane, row, column)
//                          odometer element by element.
//              No barrier in the loop, nothing staged: the bytes in flight are the loads of
//              every resident thread, as in a plain copy.
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
// @instantiate circ_pad_narrow<float>
// @instantiate circ_pad_narrow<__half>
// @instantiate circ_pad_narrow<__nv_bfloat16>
// @instantiate circ_pad_narrow<signed char>
// @instantiate circ_pad_narrow<unsigned char>
// @instantiate circ_pad_narrow<bool>
// @instantiate circ_pad_narrow<int>
// @instantiate circ_pad_narrow<long long>
// @instantiate circ_pad_flat<float>
// @instantiate circ_pad_flat<__half>
// @instantiate circ_pad_flat<__nv_bfloat16>
// @instantiate circ_pad_flat<signed char>
// @instantiate circ_pad_flat<unsigned char>
// @instantiate circ_pad_flat<bool>
// @instantiate circ_pad_flat<int>
// @instantiate circ_pad_flat<long long>
// @instantiate circ_pad_warp_narrow<float>
// @instantiate circ_pad_warp_narrow<__half>
// @instantiate circ_pad_warp_narrow<__nv_bfloat16>
// @instantiate circ_pad_warp_narrow<signed char>
// @instantiate circ_pad_warp_narrow<unsigned char>
// @instantiate circ_pad_warp_narrow<bool>
// @instantiate circ_pad_warp_narrow<int>
// @instantiate circ_pad_warp_narrow<long long>
// @instantiate circ_pad_warp<float>
// @instantiate circ_pad_warp<__half>
// @instantiate circ_pad_warp<__nv_bfloat16>
// @instantiate circ_pad_warp<signed char>
// @instantiate circ_pad_warp<unsigned char>
// @instantiate circ_pad_warp<bool>
// @instantiate circ_pad_warp<int>
// @instantiate circ_pad_warp<long long>
// @instantiate circ_pad_aot<signed char>
// @instantiate circ_pad_aot<__half>
// @instantiate circ_pad_aot<float>
// @instantiate circ_pad_aot<long long>
// @instantiate circ_pad_narrow_aot<signed char>
// @instantiate circ_pad_narrow_aot<__half>
// @instantiate circ_pad_narrow_aot<float>
// @instantiate circ_pad_narrow_aot<long long>
// @instantiate circ_pad_flat_aot<signed char>
// @instantiate circ_pad_flat_aot<__half>
// @instantiate circ_pad_flat_aot<float>
// @instantiate circ_pad_flat_aot<long long>
// @instantiate circ_pad_warp_narrow_aot<signed char>
// @instantiate circ_pad_warp_narrow_aot<__half>
// @instantiate circ_pad_warp_narrow_aot<float>
// @instantiate circ_pad_warp_narrow_aot<long long>
// @instantiate circ_pad_warp_aot<signed char>
// @instantiate circ_pad_warp_aot<__half>
// @instantiate circ_pad_warp_aot<float>
// @instantiate circ_pad_warp_aot<long long>
#include "common.cuh"

// Constants the host shares: pyplugins.ops.circ_pad.DEFINES passes each as a -D option
// to every compile, and the host sizes work by them, so there is no default here.
#ifndef CIRC_PAD_NARROW_DATA
#error "circ_pad.cu needs -DCIRC_PAD_NARROW_DATA (circ_pad_narrow: plane bytes a stage holds)"
#endif
#ifndef CIRC_PAD_WN_CHUNKS
#error "circ_pad.cu needs -DCIRC_PAD_WN_CHUNKS (circ_pad_warp_narrow: 16-byte chunks per lane)"
#endif
#ifndef CIRC_PAD_WN_TABLE
#error "circ_pad.cu needs -DCIRC_PAD_WN_TABLE (circ_pad_warp_narrow: offset-table entries, G * wo)"
#endif
#ifndef CIRC_PAD_WN_BLOCK
#error "circ_pad.cu needs -DCIRC_PAD_WN_BLOCK (circ_pad_warp_narrow: most threads a block)"
#endif
#ifndef CIRC_PAD_WARP_ROW
#error "circ_pad.cu needs -DCIRC_PAD_WARP_ROW (circ_pad_warp: most input row bytes, a slot's size)"
#endif
#ifndef CIRC_PAD_WARP_BLOCK
#error "circ_pad.cu needs -DCIRC_PAD_WARP_BLOCK (circ_pad_warp: most threads a block)"
#endif

#ifndef CIRC_PAD_UNROLL
#define CIRC_PAD_UNROLL 2  // strips path: output vectors in flight per lane
#endif
#ifndef CIRC_PAD_STAGE_BYTES
#define CIRC_PAD_STAGE_BYTES 16384  // staged path: shared memory for source rows; 0 turns it off
#endif
#ifndef CIRC_PAD_TILE_ROWS
#define CIRC_PAD_TILE_ROWS 512  // staged path: most rows per tile
#endif
#ifndef CIRC_PAD_TILE_OUT
#define CIRC_PAD_TILE_OUT 16384  // staged path: output bytes per tile to aim for
#endif
#ifndef CIRC_PAD_NARROW_TABLE
#define CIRC_PAD_NARROW_TABLE 512  // circ_pad_narrow: column table entries (G * wo); 0: odometer only
#endif
#ifndef CIRC_PAD_PIPELINE
#define CIRC_PAD_PIPELINE 1  // staged path: cp.async into the next stage (sm_80+); 0: plain loads
#endif

#ifndef CIRC_PAD_FLAT_VECS
#define CIRC_PAD_FLAT_VECS 1  // circ_pad_flat: output vectors per thread per pass
#endif
#ifndef CIRC_PAD_FLAT_TABLE
#define CIRC_PAD_FLAT_TABLE 512  // circ_pad_flat: column table entries (wo * V); 0 turns it off
#endif
#ifndef CIRC_PAD_FLAT_MINB
#define CIRC_PAD_FLAT_MINB 8  // circ_pad_flat: > 0: blocks of <= 256 threads, this many per SM
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

// circ_pad_flat's parameters (all 8-byte fields; circ_pad.py: FLAT_PARAMS_DTYPE).
struct CircPadFlatParams {
    long long total;
    long long plane_in;
    long long plane_out;
    long long wi;
    long long wo;
    long long hi;
    long long ho;
    long long sw;
    long long sh;
    unsigned long long magic_plane;
    long long shift_plane;
    long long magic_wo;
    long long shift_wo;
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

// The source element offset of output row `row` (its outer-dim index, found from scratch).
__device__ __forceinline__ pp::index_t source_row(pp::uindex_t row, const CircPadParams& p) {
    auto offset_only = [](int, pp::uindex_t, pp::uindex_t) {};
    return pp::WrapOdometer<pp::kMaxRank - 1>::split(row, p.out_dims, p.in_dims, p.shift,
                                                     p.in_strides, offset_only);
}

// 16 bytes at byte offset `off` of shared memory `base` (16-byte aligned), as one or two
// aligned 16-byte loads joined by byte selects.
__device__ __forceinline__ uint4 lds16_any(const unsigned char* base, unsigned int off) {
    const unsigned int delta = off & 15u;
    const uint4* block = reinterpret_cast<const uint4*>(base + (off - delta));
    const uint4 lo = block[0];
    if (delta == 0) {
        return lo;
    }
    return pp::bytes_at(lo, block[1], delta);
}

static_assert(CIRC_PAD_STAGE_BYTES % 16 == 0 && CIRC_PAD_STAGE_BYTES <= 32768 &&
                  CIRC_PAD_TILE_OUT <= 32768,
              "circ_pad: tile offsets and the staged path's multiply-shift divisions need "
              "CIRC_PAD_STAGE_BYTES (a multiple of 16) and CIRC_PAD_TILE_OUT <= 32768");

// One stage of the staged path's shared memory: a tile's source rows, one per slot, and
// where each came from.
struct __align__(16) StageBuf {
    unsigned char data[CIRC_PAD_STAGE_BYTES + 16];  // slots, and 16 bytes that reads overrun into
    pp::uindex_t src[CIRC_PAD_TILE_ROWS];           // byte address of each source row in x
    unsigned short at[CIRC_PAD_TILE_ROWS];          // offset of its element 0 in data
};

// The staged path's geometry, the same for every tile of a launch.
struct StageGeom {
    unsigned int wi, wo, s;   // input and output row lengths, the last dim's shift
    unsigned int in_bytes;    // wi * sizeof(B)
    unsigned int slot;        // bytes per slot: alignment (< 16), row, copy of its start (16)
    unsigned int nbs;         // 16-byte blocks per slot
    unsigned int magic_nbs;   // q / nbs == umulhi(q, magic_nbs) for q < 2^16
    unsigned int magic_wo;    // e / wo == umulhi(e, magic_wo) for e < 2^16 (when wo >= 2)
    unsigned int tr;          // rows per tile
    pp::uindex_t rows, tiles;
};

// (0) The source rows of the tile's nr rows from r0 on.
__device__ __forceinline__ void stage_locate(StageBuf& buf, pp::uindex_t r0, unsigned int nr,
                                             const CircPadParams& p, const unsigned char* x,
                                             unsigned int size, const StageGeom& g) {
    for (unsigned int t = threadIdx.x; t < nr; t += blockDim.x) {
        const pp::uindex_t a = reinterpret_cast<pp::uindex_t>(x) +
                               static_cast<pp::uindex_t>(source_row(r0 + t, p)) * size;
        buf.src[t] = a;
        buf.at[t] = static_cast<unsigned short>(t * g.slot + static_cast<unsigned int>(a & 15u));
    }
}

// (1) Source rows into their slots: block b of slot i is the b-th aligned 16-byte block of
// row i, copied only where it holds bytes of the row.
__device__ __forceinline__ void stage_fetch(StageBuf& buf, unsigned int nr, const StageGeom& g) {
    const unsigned int nq = nr * g.nbs;
    for (unsigned int q = threadIdx.x; q < nq; q += blockDim.x) {
        const unsigned int i = __umulhi(q, g.magic_nbs);
        const unsigned int b = q - i * g.nbs;
        const pp::uindex_t a = buf.src[i];
        const unsigned int mis = static_cast<unsigned int>(a & 15u);
        if (b * 16u < mis + g.in_bytes) {
            pp::copy16_async<CIRC_PAD_PIPELINE != 0>(buf.data + i * g.slot + b * 16u,
                         reinterpret_cast<const uint4*>(a - mis) + b);
        }
    }
}

// (2) After each row, its first V elements again (element t is row[t mod wi]), so that any
// V elements from a column c < wi on lie contiguous in the slot.
template <typename B>
__device__ __forceinline__ void stage_extend(StageBuf& buf, unsigned int nr, const StageGeom& g) {
    constexpr unsigned int V = 16 / sizeof(B);
    for (unsigned int j = threadIdx.x; j < nr * V; j += blockDim.x) {
        const unsigned int i = j / V;
        const unsigned int t = j % V;
        const unsigned int at = buf.at[i];
        const unsigned int from = t < g.wi ? t : t % g.wi;
        *reinterpret_cast<B*>(buf.data + at + g.in_bytes + t * sizeof(B)) =
            *reinterpret_cast<const B*>(buf.data + at + from * sizeof(B));
    }
}

// (3) The tile's output elements [0, nr * wo) as aligned vectors of the flat output; vector k
// starts at tile element k * V - lead.
template <typename B>
__device__ __forceinline__ void stage_emit(const StageBuf& buf, B* tile_out, unsigned int nr,
                                           const StageGeom& g) {
    constexpr unsigned int V = 16 / sizeof(B);
    constexpr unsigned int S = sizeof(B);
    const pp::uindex_t ybeg = reinterpret_cast<pp::uindex_t>(tile_out);
    const unsigned int ne = nr * g.wo;
    const unsigned int lead = static_cast<unsigned int>(ybeg & 15u) / S;
    B* const vbase = reinterpret_cast<B*>(ybeg - (ybeg & 15u));
    const unsigned int nv = (lead + ne + V - 1) / V;
    const bool vec_rows = g.wo >= V;  // a whole vector spans at most two rows
    for (unsigned int k = threadIdx.x; k < nv; k += blockDim.x) {
        const int rel = static_cast<int>(k * V) - static_cast<int>(lead);
        B* const dst = vbase + k * V;
        if (vec_rows && rel >= 0 && static_cast<unsigned int>(rel) + V <= ne) {
            const unsigned int i = __umulhi(static_cast<unsigned int>(rel), g.magic_wo);
            const unsigned int col = static_cast<unsigned int>(rel) - i * g.wo;
            const unsigned int at = buf.at[i];
            uint4 v;
            if (col + V <= g.wo) {  // one row: V elements from column c on, through the copy
                v = lds16_any(buf.data, at + wrap_col(col + g.s, g.wi) * S);
            } else {  // the last a elements of row i, then the first of row i + 1
                const unsigned int a = g.wo - col;
                const uint4 lo = lds16_any(buf.data, at + wrap_col(g.wo - V + g.s, g.wi) * S);
                const uint4 hi = lds16_any(buf.data, buf.at[i + 1] + g.s * S);
                v = pp::bytes_at(lo, hi, (V - a) * S);
            }
            *reinterpret_cast<uint4*>(dst) = v;
            continue;
        }
        // Element by element: the tile's two ends, rows shorter than a vector.
        pp::Vec16<B> v;
        const unsigned int e0 = rel < 0 ? 0u : static_cast<unsigned int>(rel);
        unsigned int i = e0 / g.wo;
        unsigned int col = e0 - i * g.wo;
        unsigned int c = wrap_col(col + g.s, g.wi);
        unsigned int at = buf.at[i];
#pragma unroll
        for (unsigned int t = 0; t < V; ++t) {
            const int e = rel + static_cast<int>(t);
            if (e >= 0 && static_cast<unsigned int>(e) < ne) {
                v.v[t] = *reinterpret_cast<const B*>(buf.data + at + c * S);
                if (pp::wrap_step(col, c, g.wo, g.wi, g.s) && ++i < nr) {
                    at = buf.at[i];
                }
            }
        }
        if (rel >= 0 && static_cast<unsigned int>(rel) + V <= ne) {
            pp::store16(dst, v);
        } else {
#pragma unroll
            for (unsigned int t = 0; t < V; ++t) {
                const int e = rel + static_cast<int>(t);
                if (e >= 0 && static_cast<unsigned int>(e) < ne) {
                    dst[t] = v.v[t];
                }
            }
        }
    }
}

// The block's tiles blockIdx.x, + gridDim.x, ... through two stages of shared memory (st = 0, 1):
// locate(st, tile) finds a tile's sources (a barrier follows), fetch(st, tile) starts copying
// them (cp.async where CIRC_PAD_PIPELINE is on), emit(st, tile) writes the tile once its copies
// have landed; the next tile's fetch is in flight while the current one is emitted. Every
// thread of the block calls it (emit may use barriers).
template <typename Locate, typename Fetch, typename Emit>
__device__ __forceinline__ void two_stage_tiles(pp::uindex_t tiles, Locate locate, Fetch fetch,
                                                Emit emit) {
    pp::uindex_t tile = blockIdx.x;
    if (tile >= tiles) {
        return;
    }
    unsigned int cur = 0;
    locate(0u, tile);
    __syncthreads();
    fetch(0u, tile);
    pp::async_commit<CIRC_PAD_PIPELINE != 0>();
    for (;;) {
        const pp::uindex_t next = tile + gridDim.x;
        const bool more = next < tiles;
        if (more) {
            locate(cur ^ 1u, next);
        }
        __syncthreads();  // the next tile's sources are known
        if (more) {
            fetch(cur ^ 1u, next);
        }
        pp::async_commit<CIRC_PAD_PIPELINE != 0>();
        pp::async_wait<CIRC_PAD_PIPELINE != 0, 1>();
        __syncthreads();  // the current tile's sources have landed
        emit(cur, tile);
        if (!more) {
            break;
        }
        __syncthreads();  // the current stage is free to refill
        tile = next;
        cur ^= 1u;
    }
}

// The staged path (see the header). Each block walks its tiles with two stages of shared
// memory: the next tile's source rows are in flight while the current tile is written.
// Needs wi * sizeof(B) + 47 <= CIRC_PAD_STAGE_BYTES and wo * sizeof(B) <= the same.
template <typename B>
__device__ __forceinline__ void circ_pad_staged(const B* __restrict__ xb, B* __restrict__ yb,
                                                const CircPadParams& p, unsigned int wi,
                                                unsigned int wo, unsigned int s,
                                                StageBuf* bufs) {
    constexpr unsigned int S = sizeof(B);

    StageGeom g;
    g.wi = wi;
    g.wo = wo;
    g.s = s;
    g.in_bytes = wi * S;
    g.slot = (g.in_bytes + 47u) & ~15u;
    g.nbs = g.slot >> 4;  // >= 3
    g.magic_nbs = 0xffffffffu / g.nbs + 1u;
    g.magic_wo = wo >= 2 ? 0xffffffffu / wo + 1u : 0u;
    g.rows = static_cast<pp::uindex_t>(p.rows);
    g.tr = min(CIRC_PAD_STAGE_BYTES / g.slot, static_cast<unsigned int>(CIRC_PAD_TILE_ROWS));
    g.tr = min(g.tr, max(1u, CIRC_PAD_TILE_OUT / (wo * S)));
    const pp::uindex_t per_block = (g.rows + gridDim.x - 1) / gridDim.x;
    if (per_block < g.tr) {
        g.tr = static_cast<unsigned int>(per_block);
    }
    g.tiles = (g.rows + g.tr - 1) / g.tr;
    const unsigned char* x = reinterpret_cast<const unsigned char*>(xb);

    auto rows_of = [&](pp::uindex_t tile) {
        return static_cast<unsigned int>(min(static_cast<pp::uindex_t>(g.tr), g.rows - tile * g.tr));
    };
    two_stage_tiles(
        g.tiles,
        [&](unsigned int st, pp::uindex_t tile) {
            stage_locate(bufs[st], tile * g.tr, rows_of(tile), p, x, S, g);
        },
        [&](unsigned int st, pp::uindex_t tile) { stage_fetch(bufs[st], rows_of(tile), g); },
        [&](unsigned int st, pp::uindex_t tile) {
            stage_extend<B>(bufs[st], rows_of(tile), g);
            __syncthreads();
            stage_emit<B>(bufs[st], yb + tile * g.tr * wo, rows_of(tile), g);
        });
}

// ---- The narrow path: tiles of whole planes (the last two dims) staged in shared memory. ----

// n / d for n < 2^31 and 1 <= d < 2^31 by one 64-bit multiply and shift:
// m = floor(2^(32+l) / d) + 1 with 2^l >= d makes the error n * (m - 2^(32+l)/d) / 2^(32+l)
// < 2^31 / 2^(32+l) <= 1 / (2d), too small to reach the next multiple of 1/d.
struct FastDiv {
    unsigned long long m;
    unsigned int shift;  // 32 + l
    unsigned int d;
};

__device__ __forceinline__ FastDiv make_fastdiv(unsigned int d) {
    const unsigned int l = d > 1 ? 32u - static_cast<unsigned int>(__clz(d - 1u)) : 0u;
    FastDiv f;
    f.shift = 32u + l;
    f.m = (1ull << f.shift) / d + 1ull;
    f.d = d;
    return f;
}

__device__ __forceinline__ unsigned int fastdiv(unsigned int n, const FastDiv& f) {
    return static_cast<unsigned int>((static_cast<unsigned long long>(n) * f.m) >> f.shift);
}

// A stage of the narrow path: the byte address of each of the tile's source planes, where each
// begins in `data`, the tile's place in the output's period (the table path), then the planes,
// each in a slot of whole aligned 16-byte blocks copied from x.
constexpr unsigned int kNarrowPlanes = 64;  // most planes per tile
constexpr unsigned int kNarrowHead = 816;   // src[64] (512 bytes), at[72] (288), tile[2] (8), 8
constexpr unsigned int kNarrowTable = CIRC_PAD_NARROW_TABLE;
constexpr unsigned int kNarrowPhases = 128;  // most vectors per period for the table path
constexpr unsigned int kNarrowData = CIRC_PAD_NARROW_DATA;
constexpr unsigned int kNarrowStage = kNarrowHead + kNarrowData;
static_assert(kNarrowData % 16 == 0 && kNarrowData <= 32768,
              "circ_pad: CIRC_PAD_NARROW_DATA must be a multiple of 16, at most 32768");

struct NarrowGeom {
    unsigned int wi, wo, hi, ho, sw, sh;  // plane dims and the last two dims' shifts
    unsigned int row_bytes;               // wi * sizeof(B)
    unsigned int in_bytes;                // hi * wi * sizeof(B): one source plane
    unsigned int slot, nbs;               // bytes and 16-byte blocks per plane slot
    unsigned int magic_nbs;               // q / nbs == umulhi(q, magic_nbs) for q < 2^16
    unsigned int plane_out;               // ho * wo
    unsigned int pk;                      // planes per tile
    pp::uindex_t planes, tiles;
    FastDiv div_plane, div_wo;
    // The table path (table true): a period of G output rows (G * wo * sizeof(B) a multiple of
    // 16 bytes) is nv aligned output vectors; div_nv, div_ho divide by nv and ho.
    bool table;
    unsigned int nv, G;
    FastDiv div_nv, div_ho;
};

// The table path's shared memory, the same for every tile of a launch. With lead_y = y's
// misalignment in elements and V = 16 / sizeof(B), vector K of y's aligned vectors (elements
// K * V - lead_y on) is vector P = K mod nv of period Q = K / nv; its first element lies in
// output row Q * G + phase[P].x (row 0: the output's first), its last phase[P].y rows further,
// and, where those rows are consecutive rows of one source plane, its element t at byte
// off[P * V + t] of shared memory from the source row of its first row.
struct NarrowTable {
    int off[kNarrowTable > 0 ? kNarrowTable : 1];
    int2 phase[kNarrowPhases];
};

__device__ __forceinline__ pp::uindex_t* narrow_src(unsigned char* st) {
    return reinterpret_cast<pp::uindex_t*>(st);
}
__device__ __forceinline__ unsigned int* narrow_at(unsigned char* st) {
    return reinterpret_cast<unsigned int*>(st + 512);
}
// tile[0]: the phase P0 of the tile's first aligned output vector; tile[1]: the output row of
// period P0 - (its phase) less the tile's first output row (the table path's row origin).
__device__ __forceinline__ int* narrow_tile(unsigned char* st) {
    return reinterpret_cast<int*>(st + 800);
}

// (0) The source plane of each of the tile's np planes from plane q0 on.
template <unsigned int S>
__device__ __forceinline__ void narrow_locate(unsigned char* st, pp::uindex_t q0, unsigned int np,
                                              const CircPadParams& p, const unsigned char* x,
                                              unsigned int y_mis, const NarrowGeom& g) {
    for (unsigned int t = threadIdx.x; t < np; t += blockDim.x) {
        // source_row of the plane's row 0 is its source plane's row sh.
        const pp::index_t row0 = source_row((q0 + t) * g.ho, p) -
                                 static_cast<pp::index_t>(g.sh) * g.wi;
        const pp::uindex_t a = reinterpret_cast<pp::uindex_t>(x) +
                               static_cast<pp::uindex_t>(row0) * S;
        narrow_src(st)[t] = a;
        narrow_at(st)[t] = t * g.slot + static_cast<unsigned int>(a & 15u);
    }
    if (g.table && threadIdx.x == 0) {
        // K0: the tile's first aligned vector among y's (y_mis: y's misalignment in bytes).
        const pp::uindex_t k0 = (y_mis + q0 * g.plane_out * S) / 16u;
        const pp::uindex_t period = k0 / g.nv;
        narrow_tile(st)[0] = static_cast<int>(k0 - period * g.nv);
        narrow_tile(st)[1] = static_cast<int>(static_cast<pp::index_t>(period * g.G) -
                                              static_cast<pp::index_t>(q0 * g.ho));
    }
}

// (1) Source planes into their slots, coalesced 16-byte blocks (cp.async where it can).
__device__ __forceinline__ void narrow_fetch(unsigned char* st, unsigned int np,
                                             const NarrowGeom& g) {
    unsigned char* data = st + kNarrowHead;
    const unsigned int nq = np * g.nbs;
    for (unsigned int q = threadIdx.x; q < nq; q += blockDim.x) {
        const unsigned int i = __umulhi(q, g.magic_nbs);
        const unsigned int b = q - i * g.nbs;
        const pp::uindex_t a = narrow_src(st)[i];
        const unsigned int mis = static_cast<unsigned int>(a & 15u);
        if (b * 16u < mis + g.in_bytes) {
            pp::copy16_async<CIRC_PAD_PIPELINE != 0>(data + i * g.slot + b * 16u,
                                                     reinterpret_cast<const uint4*>(a - mis) + b);
        }
    }
}

// V output elements from tile element `rel` on (Guard: only those in [0, ne)), each read from
// its source plane in shared memory; the plane/row/column odometer moves element by element.
template <typename B, bool Guard>
__device__ __forceinline__ pp::Vec16<B> narrow_gather(const unsigned char* data,
                                                      const unsigned int* at, int rel,
                                                      unsigned int ne, const NarrowGeom& g) {
    constexpr unsigned int V = 16 / sizeof(B);
    constexpr unsigned int S = sizeof(B);
    const unsigned int e0 = rel < 0 ? 0u : static_cast<unsigned int>(rel);
    unsigned int j = fastdiv(e0, g.div_plane);
    const unsigned int rem = e0 - j * g.plane_out;
    unsigned int h = fastdiv(rem, g.div_wo);
    unsigned int w = rem - h * g.wo;
    unsigned int r = wrap_col(h + g.sh, g.hi);
    unsigned int c = wrap_col(w + g.sw, g.wi);
    const unsigned char* rowp = data + at[j] + r * g.row_bytes;
    pp::Vec16<B> v;
#pragma unroll
    for (unsigned int t = 0; t < V; ++t) {
        if (!Guard || (rel + static_cast<int>(t) >= 0 && static_cast<unsigned int>(rel) + t < ne)) {
            v.v[t] = *reinterpret_cast<const B*>(rowp + c * S);
            if (t + 1 < V && pp::wrap_step(w, c, g.wo, g.wi, g.sw)) {
                if (pp::wrap_step(h, r, g.ho, g.hi, g.sh)) {
                    ++j;  // <= pk <= 64: at[] has 72 entries
                }
                rowp = data + at[j] + r * g.row_bytes;
            }
        }
    }
    return v;
}

// V elements of a vector on the table path: element t at row + off[t] (off: V entries of
// NarrowTable::off, 8-byte aligned, 16-byte aligned when V >= 4).
template <typename B>
__device__ __forceinline__ pp::Vec16<B> narrow_lookup(const unsigned char* row, const int* off) {
    constexpr unsigned int V = 16 / sizeof(B);
    pp::Vec16<B> v;
    if constexpr (V >= 4) {
#pragma unroll
        for (unsigned int t = 0; t < V; t += 4) {
            const int4 o = *reinterpret_cast<const int4*>(off + t);
            v.v[t] = *reinterpret_cast<const B*>(row + o.x);
            v.v[t + 1] = *reinterpret_cast<const B*>(row + o.y);
            v.v[t + 2] = *reinterpret_cast<const B*>(row + o.z);
            v.v[t + 3] = *reinterpret_cast<const B*>(row + o.w);
        }
    } else {
        const int2 o = *reinterpret_cast<const int2*>(off);
        v.v[0] = *reinterpret_cast<const B*>(row + o.x);
        v.v[1] = *reinterpret_cast<const B*>(row + o.y);
    }
    return v;
}

// (2) The tile's ne output elements as aligned 16-byte vectors of the flat output. A vector
// inside the tile whose rows are consecutive rows of one source plane takes the table
// (g.table); any other, the odometer (narrow_gather).
template <typename B>
__device__ __forceinline__ void narrow_emit(unsigned char* st, B* tile_out, unsigned int ne,
                                            const NarrowGeom& g, const NarrowTable& tab) {
    constexpr unsigned int V = 16 / sizeof(B);
    const unsigned char* data = st + kNarrowHead;
    const unsigned int* at = narrow_at(st);
    const pp::uindex_t ybeg = reinterpret_cast<pp::uindex_t>(tile_out);
    const unsigned int lead = static_cast<unsigned int>(ybeg & 15u) / sizeof(B);
    B* const vbase = reinterpret_cast<B*>(ybeg - (ybeg & 15u));
    const unsigned int nv = (lead + ne + V - 1) / V;
    const unsigned int p0 = static_cast<unsigned int>(narrow_tile(st)[0]);
    const int r0 = narrow_tile(st)[1];
    for (unsigned int k = threadIdx.x; k < nv; k += blockDim.x) {
        const int rel = static_cast<int>(k * V) - static_cast<int>(lead);
        B* const dst = vbase + k * V;
        if (rel >= 0 && static_cast<unsigned int>(rel) + V <= ne) {
            if (kNarrowTable > 0 && g.table) {
                const unsigned int m = p0 + k;
                const unsigned int q = fastdiv(m, g.div_nv);
                const unsigned int ph = m - q * g.nv;
                const int2 pr = tab.phase[ph];
                // the vector's first row (tile-relative: >= 0 as rel >= 0), its plane j, row h
                const unsigned int row = static_cast<unsigned int>(r0 + static_cast<int>(q * g.G) + pr.x);
                const unsigned int j = fastdiv(row, g.div_ho);
                const unsigned int h = row - j * g.ho;
                const unsigned int r = wrap_col(h + g.sh, g.hi);
                const unsigned int d = static_cast<unsigned int>(pr.y);
                if (h + d < g.ho && r + d < g.hi) {
                    pp::store16(dst, narrow_lookup<B>(data + at[j] + r * g.row_bytes,
                                                      tab.off + ph * V));
                    continue;
                }
            }
            pp::store16(dst, narrow_gather<B, false>(data, at, rel, ne, g));
        } else {
            const pp::Vec16<B> v = narrow_gather<B, true>(data, at, rel, ne, g);
#pragma unroll
            for (unsigned int t = 0; t < V; ++t) {
                const int e = rel + static_cast<int>(t);
                if (e >= 0 && static_cast<unsigned int>(e) < ne) {
                    dst[t] = v.v[t];
                }
            }
        }
    }
}

// The narrow path's geometry (the launch contract of circ_pad_narrow holds).
template <typename B>
__device__ __forceinline__ void narrow_geom(const CircPadParams& p, NarrowGeom& g) {
    constexpr unsigned int S = sizeof(B);
    constexpr unsigned int V = 16 / S;
    const long long wo = p.out_dims.d[7], ho = p.out_dims.d[6];
    const long long wi = p.in_dims.d[7], hi = p.in_dims.d[6];
    pp::uindex_t planes = 1;
#pragma unroll
    for (int d = 0; d < pp::kMaxRank - 2; ++d) {
        planes *= static_cast<pp::uindex_t>(p.out_dims.d[d]);
    }
    g.wi = static_cast<unsigned int>(wi);
    g.wo = static_cast<unsigned int>(wo);
    g.hi = static_cast<unsigned int>(hi);
    g.ho = static_cast<unsigned int>(ho);
    g.sw = static_cast<unsigned int>(p.shift.d[7]);
    g.sh = static_cast<unsigned int>(p.shift.d[6]);
    g.row_bytes = g.wi * S;
    g.in_bytes = g.hi * g.row_bytes;
    g.slot = (g.in_bytes + 15u + 15u) & ~15u;
    g.nbs = g.slot >> 4;
    g.magic_nbs = 0xffffffffu / g.nbs + 1u;
    g.plane_out = g.ho * g.wo;
    g.planes = planes;
    const pp::uindex_t per_block = (planes + gridDim.x - 1) / gridDim.x;
    g.pk = min(kNarrowPlanes, kNarrowData / g.slot);
    if (per_block < g.pk) {
        g.pk = static_cast<unsigned int>(per_block);
    }
    g.tiles = (planes + g.pk - 1) / g.pk;
    g.div_plane = make_fastdiv(g.plane_out);
    g.div_wo = make_fastdiv(g.wo);
    // A period: G = 16 / gcd(wo * S, 16) rows, nv = wo * S / gcd(wo * S, 16) vectors,
    // G * wo = nv * V elements (the table's entries).
    g.table = false;
    g.nv = 1;
    g.G = 1;
    if (kNarrowTable > 0 && g.wo <= kNarrowTable) {
        const unsigned int rb = g.wo * S;
        const unsigned int gcd16 = 1u << min(4, __ffs(static_cast<int>(rb)) - 1);
        g.nv = rb / gcd16;
        g.G = 16u / gcd16;
        g.table = g.nv * V <= kNarrowTable && g.nv <= kNarrowPhases;
    }
    g.div_nv = make_fastdiv(g.nv);
    g.div_ho = make_fastdiv(g.ho);
}

// The table path's shared memory (see NarrowTable) for y's misalignment of lead_y elements;
// every thread of the block calls it; a barrier must follow before it is read.
template <typename B>
__device__ __forceinline__ void narrow_table(NarrowTable& tab, unsigned int lead_y,
                                             const NarrowGeom& g) {
    constexpr unsigned int V = 16 / sizeof(B);
    const unsigned int len = g.nv * V;  // the period's elements, G * wo
    for (unsigned int i = threadIdx.x; i < len; i += blockDim.x) {
        const unsigned int ph = i / V;
        const unsigned int t = i - ph * V;
        // u0: the vector's first element counted from the row G rows before its period's
        // first (> 0: lead_y < V <= len); rows counted from there too.
        const unsigned int u0 = ph * V + len - lead_y;
        const unsigned int first = u0 / g.wo;
        const unsigned int u = u0 + t;
        const unsigned int row = u / g.wo;
        const unsigned int col = u - row * g.wo;
        tab.off[i] = static_cast<int>((row - first) * g.row_bytes +
                                      wrap_col(col + g.sw, g.wi) * sizeof(B));
        if (t == 0) {
            tab.phase[ph] = make_int2(static_cast<int>(first) - static_cast<int>(g.G),
                                      static_cast<int>((u0 + V - 1) / g.wo - first));
        }
    }
}

// The narrow path (see the header): each block walks its tiles of pk whole output planes
// with two stages, the next tile's source planes in flight while this tile is written.
template <typename B>
__device__ __forceinline__ void circ_pad_narrow_tiles(const B* __restrict__ xb, B* __restrict__ yb,
                                                const CircPadParams& p, const NarrowGeom& g) {
    constexpr unsigned int S = sizeof(B);
    __shared__ __align__(16) unsigned char stages[2 * kNarrowStage];
    __shared__ __align__(16) NarrowTable tab;
    const unsigned char* x = reinterpret_cast<const unsigned char*>(xb);
    const unsigned int y_mis = static_cast<unsigned int>(reinterpret_cast<pp::uindex_t>(yb) & 15u);
    if (kNarrowTable > 0 && g.table && blockIdx.x < g.tiles) {
        narrow_table<B>(tab, y_mis / S, g);  // read after two_stage_tiles' first barrier
    }
    auto planes_of = [&](pp::uindex_t tile) {
        return static_cast<unsigned int>(min(static_cast<pp::uindex_t>(g.pk), g.planes - tile * g.pk));
    };
    two_stage_tiles(
        g.tiles,
        [&](unsigned int st, pp::uindex_t tile) {
            narrow_locate<S>(stages + st * kNarrowStage, tile * g.pk, planes_of(tile), p, x, y_mis,
                             g);
        },
        [&](unsigned int st, pp::uindex_t tile) {
            narrow_fetch(stages + st * kNarrowStage, planes_of(tile), g);
        },
        [&](unsigned int st, pp::uindex_t tile) {
            narrow_emit<B>(stages + st * kNarrowStage, yb + tile * g.pk * g.plane_out,
                           planes_of(tile) * g.plane_out, g, tab);
        });
}

// ---- The flat path: one aligned 16-byte output vector per thread, read straight from x. ----

// n / d for 0 <= n < 2^63 (flat_div64) and for 0 <= n < 2^31 (flat_div31), by the host's
// magic numbers (circ_pad.py: flat_magic64 / flat_magic31).
__device__ __forceinline__ pp::uindex_t flat_div64(pp::uindex_t n, pp::uindex_t m, int s) {
    return s == 0 ? n : (__umul64hi(n, m) >> (s - 1));
}

__device__ __forceinline__ unsigned int flat_div31(unsigned int n, unsigned int m, int sh) {
    return static_cast<unsigned int>((static_cast<pp::uindex_t>(n) * m) >> sh);
}

// The flat path's geometry, from CircPadFlatParams (the host checked the ranges).
struct FlatGeom {
    unsigned int wi, wo, hi, ho, sw, sh;  // plane dims and the last two dims' shifts
    unsigned int plane_out;               // ho * wo < 2^31
    unsigned int magic_wo;                // n / wo == flat_div31(n, magic_wo, shift_wo)
    int shift_wo;
    pp::index_t plane_in;                 // hi * wi
    pp::uindex_t magic_plane;             // n / plane_out == flat_div64(n, magic_plane, shift_plane)
    int shift_plane;
    pp::index_t total;                    // output elements
};

// Where output element e (0 <= e < total) lies: plane q, output row h and column w, source row
// r and column c.
struct FlatPos {
    pp::uindex_t q;
    unsigned int h, w, r, c;
};

__device__ __forceinline__ FlatPos flat_locate(pp::uindex_t e, const FlatGeom& g) {
    FlatPos at;
    at.q = flat_div64(e, g.magic_plane, g.shift_plane);
    const unsigned int local =
        static_cast<unsigned int>(e) - static_cast<unsigned int>(at.q) * g.plane_out;
    at.h = flat_div31(local, g.magic_wo, g.shift_wo);
    at.w = local - at.h * g.wo;
    at.r = wrap_col(at.h + g.sh, g.hi);
    at.c = wrap_col(at.w + g.sw, g.wi);
    return at;
}

// V output elements from element e on, element by element with a (plane, row, column)
// odometer; only those in [0, total) are read (the others are left as they were in v).
template <typename B>
__device__ __forceinline__ void flat_gather_any(const B* __restrict__ x, pp::index_t e,
                                                const FlatGeom& g, pp::Vec16<B>& v) {
    constexpr int V = 16 / sizeof(B);
    FlatPos at = flat_locate(static_cast<pp::uindex_t>(e < 0 ? 0 : e), g);
    const B* plane = x + static_cast<pp::index_t>(at.q) * g.plane_in;
    unsigned int w = at.w, h = at.h, r = at.r, c = at.c;
#pragma unroll
    for (int t = 0; t < V; ++t) {
        const pp::index_t et = e + t;
        if (et >= 0 && et < g.total) {
            v.v[t] = __ldg(plane + static_cast<pp::index_t>(r) * g.wi + c);
            if (pp::wrap_step(w, c, g.wo, g.wi, g.sw) && pp::wrap_step(h, r, g.ho, g.hi, g.sh)) {
                plane += g.plane_in;
            }
        }
    }
}

// The whole output vector of elements [e, e + V), 0 <= e, e + V <= total. Three ways:
// contiguous (one output row, no wrap: one or two aligned 16-byte loads); table (rows shorter
// than CIRC_PAD_FLAT_TABLE / V elements, the vector's source rows consecutive in x: each
// element at tab[w * V + t] from its first row); else element by element (flat_gather_any).
template <typename B>
__device__ __forceinline__ uint4 flat_vector(const B* __restrict__ x, pp::index_t e,
                                             const FlatGeom& g, const int* tab) {
    constexpr unsigned int V = 16 / sizeof(B);
    const FlatPos at = flat_locate(static_cast<pp::uindex_t>(e), g);
    const B* row = x + static_cast<pp::index_t>(at.q) * g.plane_in +
                   static_cast<pp::index_t>(at.r) * g.wi;
    if (at.w + V <= g.wo && at.c + V <= g.wi) {
        return pp::load16_any(row + at.c);
    }
    pp::Vec16<B> v;
    if (tab != nullptr) {
        // d: the rows the vector spans, less one
        const unsigned int d = flat_div31(at.w + V - 1, g.magic_wo, g.shift_wo);
        if (at.h + d < g.ho && at.r + d < g.hi) {
            const int* te = tab + at.w * V;
            if (V % 4 == 0) {  // the offsets as 16-byte loads of shared memory
#pragma unroll
                for (unsigned int t = 0; t < V; t += 4) {
                    const int4 o = *reinterpret_cast<const int4*>(te + t);
                    v.v[t] = __ldg(row + o.x);
                    v.v[t + 1] = __ldg(row + o.y);
                    v.v[t + 2] = __ldg(row + o.z);
                    v.v[t + 3] = __ldg(row + o.w);
                }
            } else {
#pragma unroll
                for (unsigned int t = 0; t < V; ++t) {
                    v.v[t] = __ldg(row + te[t]);
                }
            }
            return *reinterpret_cast<const uint4*>(&v);
        }
    }
    flat_gather_any<B>(x, e, g, v);
    return *reinterpret_cast<const uint4*>(&v);
}

__device__ __forceinline__ void flat_geom(const CircPadFlatParams& p, FlatGeom& g) {
    g.wi = static_cast<unsigned int>(p.wi);
    g.wo = static_cast<unsigned int>(p.wo);
    g.hi = static_cast<unsigned int>(p.hi);
    g.ho = static_cast<unsigned int>(p.ho);
    g.sw = static_cast<unsigned int>(p.sw);
    g.sh = static_cast<unsigned int>(p.sh);
    g.plane_out = static_cast<unsigned int>(p.plane_out);
    g.magic_wo = static_cast<unsigned int>(p.magic_wo);
    g.shift_wo = static_cast<int>(p.shift_wo);
    g.plane_in = p.plane_in;
    g.magic_plane = p.magic_plane;
    g.shift_plane = static_cast<int>(p.shift_plane);
    g.total = p.total;
}

}  // namespace

// circ_pad's body (its kernel and circ_pad_aot call it).
template <typename T>
__device__ __forceinline__ void circ_pad_body(const T* __restrict__ x, T* __restrict__ y,
    const CircPadParams& p) {
    typedef typename pp::Bits<sizeof(T)>::type B;
    constexpr int V = 16 / static_cast<int>(sizeof(T));
    constexpr int UV = CIRC_PAD_UNROLL;
    constexpr int R = pp::kMaxRank - 1;  // outer (row) dims: slots 0..R-1
    const B* __restrict__ xb = reinterpret_cast<const B*>(x);
    B* __restrict__ yb = reinterpret_cast<B*>(y);
    __shared__ StageBuf bufs[2];  // the staged path's two stages
    if (CIRC_PAD_STAGE_BYTES > 0 &&
        static_cast<pp::uindex_t>(p.in_dims.d[R]) * sizeof(B) + 47u <= CIRC_PAD_STAGE_BYTES &&
        static_cast<pp::uindex_t>(p.out_dims.d[R]) * sizeof(B) <= CIRC_PAD_STAGE_BYTES) {
        circ_pad_staged<B>(xb, yb, p, static_cast<unsigned int>(p.in_dims.d[R]),
                           static_cast<unsigned int>(p.out_dims.d[R]),
                           static_cast<unsigned int>(p.shift.d[R]), bufs);
        return;
    }

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

    pp::uindex_t row, strip;
    pp::divmod(unit, p.strips, row, strip);

    // The outer dims' odometer: the source row of output row `row` (outer.off), moved on per row.
    pp::WrapOdometer<R> outer;
    outer.start(row, p.out_dims, p.in_dims, p.shift, p.in_strides);

    for (;;) {
        const B* __restrict__ src = xb + outer.off;
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
        outer.next(p.out_dims, p.in_dims, p.shift, p.in_strides);
    }
}

template <typename T>
__global__ void circ_pad(const T* __restrict__ x, T* __restrict__ y, CircPadParams p) {
    circ_pad_body<T>(x, y, p);
}

// circ_pad_narrow's body (its kernel and circ_pad_narrow_aot call it).
template <typename T>
__device__ __forceinline__ void circ_pad_narrow_body(const T* __restrict__ x, T* __restrict__ y,
    const CircPadParams& p) {
    typedef typename pp::Bits<sizeof(T)>::type B;
    NarrowGeom g;
    narrow_geom<B>(p, g);
    circ_pad_narrow_tiles<B>(reinterpret_cast<const B*>(x), reinterpret_cast<B*>(y), p, g);
}

template <typename T>
__global__ void circ_pad_narrow(const T* __restrict__ x, T* __restrict__ y, CircPadParams p) {
    circ_pad_narrow_body<T>(x, y, p);
}

#if CIRC_PAD_FLAT_MINB > 0
#define CIRC_PAD_FLAT_BOUNDS __launch_bounds__(256, CIRC_PAD_FLAT_MINB)
#else
#define CIRC_PAD_FLAT_BOUNDS
#endif

// circ_pad_flat's body (its kernel and circ_pad_flat_aot call it).
template <typename T>
__device__ __forceinline__ void circ_pad_flat_body(const T* __restrict__ x, T* __restrict__ y,
    const CircPadFlatParams& p) {
    typedef typename pp::Bits<sizeof(T)>::type B;
    constexpr int V = 16 / static_cast<int>(sizeof(T));
    constexpr int U = CIRC_PAD_FLAT_VECS;
    const B* __restrict__ xb = reinterpret_cast<const B*>(x);
    FlatGeom g;
    flat_geom(p, g);
    const pp::uindex_t ya = reinterpret_cast<pp::uindex_t>(y);
    const int lead = static_cast<int>((ya & 15u) / sizeof(B));
    B* const vbase = reinterpret_cast<B*>(ya - (ya & 15u));  // vector k: elements k*V - lead on
    const pp::index_t nv = (g.total + lead + V - 1) / V;

    const int* tab = nullptr;
#if CIRC_PAD_FLAT_TABLE > 0
    __shared__ __align__(16) int table[CIRC_PAD_FLAT_TABLE];
    if (g.wo <= CIRC_PAD_FLAT_TABLE / V) {  // the same in every block (wo * V might overflow)
        // table[w * V + t]: offset of output column w + t (next rows included) from row start.
        for (unsigned int i = threadIdx.x; i < g.wo * V; i += blockDim.x) {
            const unsigned int u = i / V + i % V;
            const unsigned int dt = u / g.wo;
            table[i] = static_cast<int>(dt * g.wi + wrap_col(u - dt * g.wo + g.sw, g.wi));
        }
        __syncthreads();
        tab = table;
    }
#endif
    const pp::index_t chunk = static_cast<pp::index_t>(blockDim.x) * U;
    for (pp::index_t k0 = blockIdx.x * chunk + threadIdx.x; k0 < nv;
         k0 += static_cast<pp::index_t>(gridDim.x) * chunk) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const pp::index_t k = k0 + static_cast<pp::index_t>(u) * blockDim.x;
            const pp::index_t e = k * V - lead;
            if (k < nv && e >= 0 && e + V <= g.total) {
                v[u] = flat_vector<B>(xb, e, g, tab);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const pp::index_t k = k0 + static_cast<pp::index_t>(u) * blockDim.x;
            const pp::index_t e = k * V - lead;
            if (k >= nv) {
                continue;
            }
            B* const dst = vbase + k * V;
            if (e >= 0 && e + V <= g.total) {
                *reinterpret_cast<uint4*>(dst) = v[u];
                continue;
            }
            // The output's first or last vector, in part: element by element.
            pp::Vec16<B> part;
            flat_gather_any<B>(xb, e, g, part);
#pragma unroll
            for (int t = 0; t < V; ++t) {
                if (e + t >= 0 && e + t < g.total) {
                    dst[t] = part.v[t];
                }
            }
        }
    }
}

template <typename T>
__global__ void CIRC_PAD_FLAT_BOUNDS circ_pad_flat(const T* __restrict__ x, T* __restrict__ y,
                                                   CircPadFlatParams p) {
    circ_pad_flat_body<T>(x, y, p);
}

// ==== circ_pad_warp_narrow: narrow rows, each warp stages its own groups of rows. =============
//
// A fourth kernel, for narrow rows (circ_pad.py: its row), without block barriers in
// its loop:
//   kernel     circ_pad_warp_narrow<T>(const T* x, T* y, CircPadFlatParams p), p as for
//              circ_pad_flat (total, plane_in, wi, wo, hi, ho, sw, sh are read; the magic
//              numbers are not).
//   needs      pads on the last two dims only (as circ_pad_flat); input rows of wi * sizeof(T)
//              bytes, a multiple of 16; output rows total / wo < 2^31; a group of
//              P = 16 / gcd(wo * sizeof(T), 16) rows (plus the ceil(lead / wo) rows before it,
//              lead <= V - 1: y's misalignment in elements) of 16-byte input chunks fitting
//              32 * CIRC_PAD_WN_CHUNKS chunks, and P * wo <= CIRC_PAD_WN_TABLE (the host checks
//              both for lead = V - 1; the kernel traps where they fail). Every output row of at
//              most 128 bytes (circ_pad.NARROW_ROW_BYTES) with pads >= 0 fits.
//   args       x: any alignment (16-byte aligned is the fast case: aligned loads); y: any
//              alignment (a multiple of sizeof(T)). No overlap.
//   block      1-D, a multiple of 32 threads, at most CIRC_PAD_WN_BLOCK (the host's BLOCK; a
//              larger launch fails: the launch bounds say so).
//   grid       any number of blocks >= 1; recommended min(blocks needed, 4 * resident blocks)
//              (its row's waves); warps take groups round-robin, grid-stride.
//   shared     0 dynamic; static: CIRC_PAD_WN_TABLE * 2 bytes of offset table and, per warp of
//              CIRC_PAD_WN_BLOCK / 32, 32 * CIRC_PAD_WN_CHUNKS * (16 + pad) bytes (pad:
//              CIRC_PAD_WN_PAD rounded up to sizeof(T)): 24,576 bytes for 2- and 4-byte
//              types (64 / 59 registers on sm_90: 4 blocks of 256 a SM). Knobs that push it
//              past 48 KB (CHUNKS=8 or BLOCK=512 with 8-byte types) do not compile.
//   reads      16-byte chunks of input rows (whole aligned blocks holding them when x is not
//              16-byte aligned, as circ_pad).
//   how        y's aligned 16-byte vectors (vector K: elements K * V - lead on) are cut into
//              groups of nv = G * wo / V vectors, G a multiple of P (so G * wo * sizeof(T) is a
//              multiple of 16), as many rows as the chunks allow. Group n covers output rows
//              n * G - pre ... n * G + G - 1 (pre = ceil(lead / wo) rows for the elements the
//              lead pulls in). A warp: (1) loads the group's source rows (row R: plane R / ho,
//              source row (R % ho + sh) mod hi) as 16-byte chunks into registers, lane l
//              chunks l, l + 32, ...; (2) __syncwarp, stores them into its own shared buffer,
//              rows at a stride of row bytes + pad (an odd number of words spreads the rows
//              over the banks), __syncwarp; (3) issues the loads of its next group (in
//              registers while this one is written: CIRC_PAD_WN_INFLIGHT groups); (4) writes
//              the group's vectors, lane l vectors l, l + 32, ...: vector v's V elements at
//              the buffer offsets tab[v * V + t], a table of 16-bit offsets the block builds
//              once for the launch (the only __syncthreads), V shared loads packed into one
//              16-byte store. Only the output's first and last vectors, where partly outside
//              y, store element by element.
//
// Knobs (-D options):
#ifndef CIRC_PAD_WN_PAD
#define CIRC_PAD_WN_PAD 4  // bytes after each staged row (a multiple of 4; 0: none)
#endif
#ifndef CIRC_PAD_WN_MINB
#define CIRC_PAD_WN_MINB 0  // > 0: __launch_bounds__ asks for this many blocks per SM
#endif
#ifndef CIRC_PAD_WN_INFLIGHT
#define CIRC_PAD_WN_INFLIGHT 1  // groups loaded into registers ahead of the one written (1 or 2)
#endif

static_assert(CIRC_PAD_WN_PAD % 4 == 0 && CIRC_PAD_WN_CHUNKS >= 1 && CIRC_PAD_WN_TABLE >= 16 &&
                  CIRC_PAD_WN_TABLE % 8 == 0 && CIRC_PAD_WN_BLOCK % 32 == 0 &&
                  CIRC_PAD_WN_INFLIGHT >= 1 && CIRC_PAD_WN_INFLIGHT <= 2,
              "circ_pad: CIRC_PAD_WN_PAD must be a multiple of 4, CIRC_PAD_WN_TABLE a multiple "
              "of 8, CIRC_PAD_WN_BLOCK of 32, CIRC_PAD_WN_INFLIGHT 1 or 2");

namespace {

constexpr unsigned int kWnChunks = CIRC_PAD_WN_CHUNKS;

// Bytes after each staged row for S-byte elements, and one warp's buffer.
template <unsigned int S>
struct WarpNarrowSizes {
    static constexpr unsigned int pad = (CIRC_PAD_WN_PAD + S - 1) / S * S;
    static constexpr unsigned int warp_bytes = 32u * kWnChunks * (16u + pad);
    static_assert(warp_bytes <= 65536, "circ_pad: the 16-bit offset table needs warp buffers "
                                       "of at most 64 KB (CIRC_PAD_WN_CHUNKS too large)");
};

// The warp-narrow geometry, the same for every group of a launch.
struct WarpNarrowGeom {
    unsigned int wi, wo, hi, ho, sw, sh;
    unsigned int stride;   // staged row stride in bytes: wi * sizeof(B) + pad
    unsigned int rv;       // 16-byte chunks per input row
    unsigned int magic_rv; // c / rv == (c * magic_rv) >> 16 for c < 2^12
    unsigned int G, pre;   // output rows per group, rows staged before its first
    unsigned int lead;     // y's misalignment in elements
    unsigned int nv;       // output vectors per group, G * wo / V
    unsigned int nch;      // chunks staged per group, (G + pre) * rv
    pp::index_t rows;      // output rows (< 2^31)
    pp::index_t total, plane_in;
    pp::index_t nvec, groups;
    pp::index_t kfull;     // vectors [lead > 0, kfull) lie wholly inside y
    FastDiv div_ho;
};

template <typename B>
__device__ __forceinline__ void warp_narrow_geom(const CircPadFlatParams& p, unsigned int lead,
                                                 WarpNarrowGeom& g) {
    constexpr unsigned int S = sizeof(B);
    constexpr unsigned int V = 16 / S;
    g.wi = static_cast<unsigned int>(p.wi);
    g.wo = static_cast<unsigned int>(p.wo);
    g.hi = static_cast<unsigned int>(p.hi);
    g.ho = static_cast<unsigned int>(p.ho);
    g.sw = static_cast<unsigned int>(p.sw);
    g.sh = static_cast<unsigned int>(p.sh);
    g.total = p.total;
    g.plane_in = p.plane_in;
    g.rows = p.total / p.wo;
    g.lead = lead;
    const unsigned int rb = g.wi * S;
    g.rv = rb / 16u;
    g.magic_rv = g.rv ? (65535u + g.rv) / g.rv : 0u;
    g.stride = rb + WarpNarrowSizes<S>::pad;
    g.pre = (lead + g.wo - 1u) / g.wo;
    // P: the fewest rows whose output is whole 16-byte vectors.
    const unsigned int gcd16 = 1u << min(4, __ffs(static_cast<int>(g.wo * S)) - 1);
    const unsigned int P = 16u / gcd16;
    const unsigned int staged = 32u * kWnChunks / g.rv;  // rows that fit the lanes' chunks
    unsigned int G = staged > g.pre ? (staged - g.pre) / P * P : 0u;
    G = min(G, CIRC_PAD_WN_TABLE / g.wo / P * P);
    if (G == 0u || g.rv == 0u || rb % 16u != 0u) {
        __trap();  // outside the launch contract: the host never launches this
    }
    g.G = G;
    g.nv = G * g.wo / V;
    g.nch = (G + g.pre) * g.rv;
    g.nvec = (g.total + lead + V - 1) / V;
    g.groups = (g.nvec + g.nv - 1) / g.nv;
    g.kfull = (g.total + lead) / V;
    g.div_ho = make_fastdiv(g.ho);
}

// The group's table: tab[u], u < G * wo, is the byte offset in a warp's buffer of the source
// of group element u (the group's first vector's element 0 is u = 0). Every thread of the
// block calls it; a barrier must follow.
template <typename B>
__device__ __forceinline__ void warp_narrow_table(unsigned short* tab, const WarpNarrowGeom& g) {
    constexpr unsigned int S = sizeof(B);
    const unsigned int len = g.G * g.wo;
    for (unsigned int u = threadIdx.x; u < len; u += blockDim.x) {
        const unsigned int s = u + g.pre * g.wo - g.lead;  // counted from the first staged row
        const unsigned int j = s / g.wo;
        const unsigned int c = s - j * g.wo;
        tab[u] = static_cast<unsigned short>(j * g.stride + wrap_col(c + g.sw, g.wi) * S);
    }
}

// (1) Group n's chunks into registers: this lane's chunk i is the group's chunk c = lane + 32 * i
// (if c < nch), staged row c / rv, bytes 16 * (c % rv) on in that row. Rows outside the output are
// not loaded (their elements are never stored). Where the group's rows come from consecutive
// rows of one source plane (most groups), chunk c is simply 16 * c bytes after the first.
template <unsigned int S, bool Aligned>
__device__ __forceinline__ void warp_narrow_load(const unsigned char* __restrict__ x,
                                                 pp::index_t n, const WarpNarrowGeom& g,
                                                 unsigned int lane, uint4 (&r)[kWnChunks]) {
    if (n >= g.groups) {
        return;
    }
    const pp::index_t r0 = n * g.G - g.pre;
    const unsigned int span = g.nch / g.rv - 1u;  // staged rows less one
    bool straight = r0 >= 0 && r0 + span < g.rows;
    const unsigned char* first = x;
    if (straight) {
        const unsigned int rr = static_cast<unsigned int>(r0);
        const unsigned int q = fastdiv(rr, g.div_ho);
        const unsigned int h = rr - q * g.ho;
        const unsigned int sr = wrap_col(h + g.sh, g.hi);
        straight = h + span < g.ho && sr + span < g.hi;
        first = x + (static_cast<pp::index_t>(q) * g.plane_in +
                     static_cast<pp::index_t>(sr) * g.wi) * S;
    }
    if (straight) {  // warp-uniform
#pragma unroll
        for (unsigned int i = 0; i < kWnChunks; ++i) {
            if (lane + 32u * i < g.nch) {
                const unsigned char* src = first + (lane + 32u * i) * 16u;
                r[i] = Aligned ? __ldg(reinterpret_cast<const uint4*>(src)) : pp::load16_any(src);
            }
        }
        return;
    }
#pragma unroll
    for (unsigned int i = 0; i < kWnChunks; ++i) {
        const unsigned int c = lane + 32u * i;
        const unsigned int j = (c * g.magic_rv) >> 16;  // c / rv
        const pp::index_t row = r0 + j;
        if (c < g.nch && row >= 0 && row < g.rows) {
            const unsigned int rr = static_cast<unsigned int>(row);
            const unsigned int q = fastdiv(rr, g.div_ho);
            const unsigned int src_row = wrap_col(rr - q * g.ho + g.sh, g.hi);
            const unsigned char* src =
                x + (static_cast<pp::index_t>(q) * g.plane_in +
                     static_cast<pp::index_t>(src_row) * g.wi) * S + (c - j * g.rv) * 16u;
            r[i] = Aligned ? __ldg(reinterpret_cast<const uint4*>(src)) : pp::load16_any(src);
        }
    }
}

// (2) The registers into the warp's buffer (rows at g.stride bytes).
template <unsigned int S>
__device__ __forceinline__ void warp_narrow_stage(unsigned char* wbuf, const WarpNarrowGeom& g,
                                                  unsigned int lane, const uint4 (&r)[kWnChunks]) {
#pragma unroll
    for (unsigned int i = 0; i < kWnChunks; ++i) {
        const unsigned int c = lane + 32u * i;
        if (c < g.nch) {
            const unsigned int j = (c * g.magic_rv) >> 16;  // c / rv
            unsigned char* dst = wbuf + j * g.stride + (c - j * g.rv) * 16u;
            if (WarpNarrowSizes<S>::pad % 16u == 0u) {
                *reinterpret_cast<uint4*>(dst) = r[i];
            } else {  // rows 4-byte aligned only
                unsigned int* d = reinterpret_cast<unsigned int*>(dst);
                d[0] = r[i].x;
                d[1] = r[i].y;
                d[2] = r[i].z;
                d[3] = r[i].w;
            }
        }
    }
}

// The V 16-bit offsets of one vector (tab entries te[0..V)), two to a word.
template <unsigned int V>
__device__ __forceinline__ void warp_narrow_offsets(const unsigned short* te,
                                                    unsigned int (&w)[V / 2]) {
    if constexpr (V >= 8) {
#pragma unroll
        for (unsigned int k = 0; k < V / 8; ++k) {
            const uint4 a = reinterpret_cast<const uint4*>(te)[k];
            w[4 * k] = a.x;
            w[4 * k + 1] = a.y;
            w[4 * k + 2] = a.z;
            w[4 * k + 3] = a.w;
        }
    } else if constexpr (V == 4) {
        const uint2 a = *reinterpret_cast<const uint2*>(te);
        w[0] = a.x;
        w[1] = a.y;
    } else {
        w[0] = *reinterpret_cast<const unsigned int*>(te);
    }
}

// (4) Group n's vectors from the warp's buffer: lane l writes vectors l, l + 32, ... (vbase:
// y's aligned vector 0, whose element 0 is y's element -lead).
template <typename B>
__device__ __forceinline__ void warp_narrow_emit(const unsigned char* wbuf,
                                                 const unsigned short* tab, pp::uindex_t vbase,
                                                 pp::index_t n, const WarpNarrowGeom& g,
                                                 unsigned int lane) {
    constexpr unsigned int V = 16 / sizeof(B);
    const pp::index_t k0 = n * g.nv;
    // Group-relative 32-bit bounds: vectors [0, vend) exist, [vlo, vhi) lie wholly inside y.
    const unsigned int vend = static_cast<unsigned int>(min(static_cast<pp::index_t>(g.nv), g.nvec - k0));
    const pp::index_t lo = (g.lead > 0u ? 1 : 0) - k0;
    const unsigned int vlo = lo > 0 ? static_cast<unsigned int>(lo) : 0u;
    const pp::index_t hi = g.kfull - k0;
    const unsigned int vhi = hi <= 0 ? 0u : static_cast<unsigned int>(min(hi, static_cast<pp::index_t>(g.nv)));
    const pp::uindex_t gdst = vbase + static_cast<pp::uindex_t>(k0) * 16u;
    for (unsigned int v = lane; v < vend; v += 32u) {
        unsigned int w[V / 2];
        warp_narrow_offsets<V>(tab + v * V, w);
        pp::Vec16<B> out;
#pragma unroll
        for (unsigned int t = 0; t < V; ++t) {
            const unsigned int off = (t & 1u) ? (w[t / 2] >> 16) : (w[t / 2] & 0xffffu);
            out.v[t] = *reinterpret_cast<const B*>(wbuf + off);
        }
        const pp::uindex_t dst = gdst + v * 16u;
        if (v >= vlo && v < vhi) {
            const uint4 o = *reinterpret_cast<const uint4*>(&out);
            // a plain global store (dst comes from an integer: the compiler would go generic)
            asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(o.x),
                         "r"(o.y), "r"(o.z), "r"(o.w)
                         : "memory");
        } else {  // the output's first or last vector, in part
            const pp::index_t e = (k0 + v) * V - g.lead;
            B* const el = reinterpret_cast<B*>(dst);
#pragma unroll
            for (unsigned int t = 0; t < V; ++t) {
                if (e + t >= 0 && e + t < g.total) {
                    el[t] = out.v[t];
                }
            }
        }
    }
}
// Steps (1) to (4) for the warp's groups n, n + wstride, ... (Aligned: x is 16-byte aligned).
template <typename B, bool Aligned>
__device__ __forceinline__ void warp_narrow_groups(const unsigned char* __restrict__ xb,
                                                   pp::uindex_t vbase, unsigned char* wbuf,
                                                   const unsigned short* tab, pp::index_t n,
                                                   pp::index_t wstride, const WarpNarrowGeom& g,
                                                   unsigned int lane) {
    constexpr unsigned int S = sizeof(B);
    constexpr unsigned int D = CIRC_PAD_WN_INFLIGHT;
    uint4 r[D][kWnChunks];
#pragma unroll
    for (unsigned int d = 0; d < D; ++d) {
        warp_narrow_load<S, Aligned>(xb, n + d * wstride, g, lane, r[d]);
    }
    for (;;) {
#pragma unroll
        for (unsigned int d = 0; d < D; ++d) {
            if (n >= g.groups) {
                return;
            }
            __syncwarp();  // the previous group's reads of the buffer are done
            warp_narrow_stage<S>(wbuf, g, lane, r[d]);
            __syncwarp();  // the group is staged
            warp_narrow_load<S, Aligned>(xb, n + D * wstride, g, lane, r[d]);
            warp_narrow_emit<B>(wbuf, tab, vbase, n, g, lane);
            n += wstride;
        }
    }
}

}  // namespace

#if CIRC_PAD_WN_MINB > 0
#define CIRC_PAD_WN_BOUNDS __launch_bounds__(CIRC_PAD_WN_BLOCK, CIRC_PAD_WN_MINB)
#else
#define CIRC_PAD_WN_BOUNDS __launch_bounds__(CIRC_PAD_WN_BLOCK)
#endif

// circ_pad_warp_narrow's body (its kernel and circ_pad_warp_narrow_aot call it).
template <typename T>
__device__ __forceinline__ void circ_pad_warp_narrow_body(const T* __restrict__ x, T* __restrict__ y,
    const CircPadFlatParams& p) {
    typedef typename pp::Bits<sizeof(T)>::type B;
    constexpr unsigned int S = sizeof(T);
    __shared__ __align__(16) unsigned short tab[CIRC_PAD_WN_TABLE];
    __shared__ __align__(16) unsigned char bufs[CIRC_PAD_WN_BLOCK / 32][WarpNarrowSizes<S>::warp_bytes];
    if ((blockDim.x & 31u) != 0u) {
        __trap();  // __syncwarp below needs whole warps
    }
    const pp::uindex_t ya = reinterpret_cast<pp::uindex_t>(y);
    WarpNarrowGeom g;
    warp_narrow_geom<B>(p, static_cast<unsigned int>((ya & 15u) / S), g);
    const pp::uindex_t vbase = ya - (ya & 15u);  // vector k: elements k * V - lead on
    warp_narrow_table<B>(tab, g);
    __syncthreads();  // the only block barrier

    const unsigned int lane = threadIdx.x & 31u;
    const unsigned int warps = blockDim.x >> 5;
    unsigned char* const wbuf = bufs[threadIdx.x >> 5];
    const pp::index_t wstride = static_cast<pp::index_t>(gridDim.x) * warps;
    pp::index_t n = static_cast<pp::index_t>(blockIdx.x) * warps + (threadIdx.x >> 5);
    if (n >= g.groups) {
        return;
    }
    const unsigned char* const xb = reinterpret_cast<const unsigned char*>(x);
    if ((reinterpret_cast<pp::uindex_t>(x) & 15u) == 0u) {
        warp_narrow_groups<B, true>(xb, vbase, wbuf, tab, n, wstride, g, lane);
    } else {
        warp_narrow_groups<B, false>(xb, vbase, wbuf, tab, n, wstride, g, lane);
    }
}

template <typename T>
__global__ void CIRC_PAD_WN_BOUNDS circ_pad_warp_narrow(const T* __restrict__ x,
                                                        T* __restrict__ y, CircPadFlatParams p) {
    circ_pad_warp_narrow_body<T>(x, y, p);
}

// ==== The warp path: circ_pad_warp, a warp per output row, rows staged per warp (no barriers) ====
//
//   kernel     circ_pad_warp<T>(const T* x, T* y, CircPadFlatParams p)
//   args       x, y as circ_pad_flat (any element alignment of either; no overlap). p as
//              circ_pad_flat's; the kernel reads total, plane_in, plane_out, wi, wo, hi, ho, sw,
//              sh, magic_plane and shift_plane only.
//   needs      every dim before the last two unpadded; input rows of wi * sizeof(T) bytes, a
//              multiple of 16 and at most CIRC_PAD_WARP_ROW (a launch with longer rows writes
//              nothing: the host checks, circ_pad.py); ho * wo < 2^31 and hi, sw, sh
//              < 2^31 (circ_pad_flat's ranges).
//   block      1-D, a multiple of 32 threads, at most CIRC_PAD_WARP_BLOCK (the host's BLOCK;
//              the kernel's __launch_bounds__, so a larger block fails to launch).
//   grid       any number of blocks >= 1; recommended ceil(warps / warps a block), warps =
//              min(rows, max(32768, ceil(rows / ceil(4096 / row bytes)))): about 4 KB of output
//              rows a warp, at least 32768 warps (circ_pad.warp_row_warps), rows = total / wo.
//   shared     0 dynamic; (CIRC_PAD_WARP_BLOCK / 32) * (CIRC_PAD_WARP_DEPTH + 1) *
//              (CIRC_PAD_WARP_ROW + 32) bytes static (33,280 with the host's values).
//   reads      as circ_pad: whole aligned 16-byte blocks holding input bytes.
//   how        warp w of the grid writes output rows w, w + warps, ... (all planes' rows in
//              one sequence); output row (q, h) is source row (q, (h + sh) mod hi) shifted by
//              sw: output column c is source column (c + sw) mod wi. Each warp owns
//              CIRC_PAD_WARP_DEPTH + 1 slots of shared memory; a slot holds one source row as
//              its aligned 16-byte blocks (cp.async on sm_80+, CIRC_PAD_WARP_ASYNC), x's
//              misalignment `mis` (the same for every row) before element 0, and the row's
//              first 16 bytes again after its end, so that the 16 bytes from any column on lie
//              contiguous (the W wrap costs nothing). While the warp writes row i from its slot,
//              the copies of rows i + 1 .. i + DEPTH are in flight into the other slots. Per
//              row: __syncwarp (the slot to refill is free), start the copy of row i + DEPTH,
//              wait for row i's, __syncwarp (every lane's copies visible), and with mis != 0
//              one more step placing the wrap copy (a __syncwarp). Then the output row: the
//              elements before y's first 16-byte boundary in the row and after its last one
//              element by element (lanes 0..15 and 16..31), the rest as aligned 16-byte
//              stores, lane l taking vectors l, l + 32, ..., each built from an unaligned
//              16-byte window of the slot: two aligned shared loads and byte selects
//              (pp::bytes_at) by an offset within the block that is the same for the whole
//              row (rows are 16n bytes), so no branch. Row, plane and source positions
//              advance by additions: no division per row or vector.
//
// Its instantiations are listed at the top of the file, with the other kernels'.

// circ_pad_warp's knobs (-D options; kernel_variants.py times them):
#ifndef CIRC_PAD_WARP_DEPTH
#define CIRC_PAD_WARP_DEPTH 1  // rows whose copies are in flight while one is written
#endif
#ifndef CIRC_PAD_WARP_MINB
// > 0: __launch_bounds__ asks for this many blocks an SM. 5: 48 registers on sm_80 and sm_90,
// no spill in circ_pad_warp or in circ_pad_warp_aot for any element size (at 6, 40 registers,
// the AOT entry spilled on sm_90; docs/ops/circ_pad.md "Launch bounds"); 0: no minimum.
#define CIRC_PAD_WARP_MINB 5
#endif
#ifndef CIRC_PAD_WARP_ASYNC
#define CIRC_PAD_WARP_ASYNC 1  // cp.async copies (sm_80+); 0: loads and shared stores
#endif

static_assert(CIRC_PAD_WARP_ROW % 16 == 0 && CIRC_PAD_WARP_ROW >= 16 && CIRC_PAD_WARP_DEPTH >= 1 &&
                  CIRC_PAD_WARP_DEPTH <= 7 && CIRC_PAD_WARP_BLOCK % 32 == 0 &&
                  CIRC_PAD_WARP_BLOCK >= 32 && CIRC_PAD_WARP_BLOCK <= 1024,
              "circ_pad_warp: CIRC_PAD_WARP_ROW a positive multiple of 16, CIRC_PAD_WARP_DEPTH "
              "in 1..7, CIRC_PAD_WARP_BLOCK a multiple of 32 up to 1024");
static_assert((CIRC_PAD_WARP_BLOCK / 32) * (CIRC_PAD_WARP_DEPTH + 1) * (CIRC_PAD_WARP_ROW + 32) <=
                  49152,
              "circ_pad_warp: its static shared memory, (CIRC_PAD_WARP_BLOCK / 32) * "
              "(CIRC_PAD_WARP_DEPTH + 1) * (CIRC_PAD_WARP_ROW + 32) bytes, must fit 48 KiB");

namespace {

constexpr unsigned int kWarpSlots = CIRC_PAD_WARP_DEPTH + 1;
constexpr unsigned int kWarpSlot = CIRC_PAD_WARP_ROW + 32;  // mis, row, wrap copy, overrun reads

// What every row of a circ_pad_warp launch shares.
struct WarpGeom {
    unsigned int wi, wo, hi, ho, sw, sh;
    unsigned int row_bytes;  // wi * sizeof(B), a multiple of 16
    unsigned int mis;        // x's misalignment in bytes: every source row's (rows are 16n bytes)
    pp::index_t plane_in;    // hi * wi
    const unsigned char* x0;  // x rounded down to 16 bytes
};

// Starts copying source row r of plane q into `slot` (lane's share): the row's aligned 16-byte
// blocks at slot[0, mis + row_bytes + ...), and for an aligned x (mis == 0) block 0 once more
// after the row's end (the wrap copy; with mis != 0, warp_wrap places it once the row landed).
__device__ __forceinline__ void warp_fetch(unsigned char* slot, pp::uindex_t q, unsigned int r,
                                           const WarpGeom& g, unsigned int lane,
                                           unsigned int S) {
    const unsigned char* src =
        g.x0 + (static_cast<pp::index_t>(q) * g.plane_in + static_cast<pp::index_t>(r) * g.wi) * S;
    const unsigned int nb = g.row_bytes >> 4;  // the wrap block's index; blocks 0..nb are copied
    for (unsigned int b = lane; b <= nb; b += 32) {
        const unsigned int from = (b == nb && g.mis == 0) ? 0u : b;
        pp::copy16_async<CIRC_PAD_WARP_ASYNC != 0>(slot + b * 16u, src + from * 16u);
    }
}

// With a misaligned x: the row's first 16 bytes again after its end (slot[mis + row_bytes ..]),
// once every lane's copies have landed and are visible (after a __syncwarp).
__device__ __forceinline__ void warp_wrap(unsigned char* slot, const WarpGeom& g,
                                          unsigned int lane) {
    if (lane < 16) {
        slot[g.mis + g.row_bytes + lane] = slot[g.mis + lane];
    }
}

// One aligned 16-byte load of shared memory (LDS.128) and one aligned 16-byte store to global
// memory (STG.128), each a single instruction: written as plain C++, the compiler turns
// warp_emit's byte selects into selected addresses and 4-byte loads, and splits the store.
// The memory clobbers keep them on their side of the __syncwarp calls.
__device__ __forceinline__ uint4 warp_lds128(const unsigned char* p) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(static_cast<unsigned int>(__cvta_generic_to_shared(p)))
                 : "memory");
    return v;
}

__device__ __forceinline__ void warp_stg128(void* p, const uint4& v) {
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
}

// Output row `dst` (wo elements) from the source row in `slot`: output column c is source
// column (c + sw) mod wi, at slot byte mis + that * sizeof(B).
template <typename B>
__device__ __forceinline__ void warp_emit(const unsigned char* slot, B* dst, const WarpGeom& g,
                                          unsigned int lane, unsigned int lane_col,
                                          unsigned int step) {
    constexpr unsigned int S = sizeof(B);
    constexpr unsigned int V = 16 / S;
    const unsigned int lead = static_cast<unsigned int>(-reinterpret_cast<pp::uindex_t>(dst)) & 15u;
    const unsigned int head = min(lead / S, g.wo);  // elements before the first 16-byte boundary
    const unsigned int nvec = (g.wo - head) / V;
    const unsigned int body_end = head + nvec * V;
    // Head (lanes 0..15) and tail (lanes 16..31) elements, fewer than V each.
    const unsigned int e = lane < 16 ? lane : body_end + (lane - 16);
    if (lane < 16 ? lane < head : e < g.wo) {
        const unsigned int s = wrap_col(e + g.sw, g.wi);
        dst[e] = *reinterpret_cast<const B*>(slot + g.mis + s * S);
    }
    // Body: vector k = lane, lane + 32, ... at output column head + k * V, from the slot's
    // bytes [mis + s * S, + 16), s its source column. Row bytes being a multiple of 16, every
    // vector of the row starts `delta` bytes into an aligned block (lds16_any's offset, but
    // the same for the whole row): two aligned loads and byte selects, no branch.
    B* const body = dst + head;
    unsigned int s = wrap_col(head + g.sw + lane_col, g.wi);  // source column of vector `lane`
    const unsigned int delta = (g.mis + (head + g.sw) * S) & 15u;
    const unsigned char* const base = slot + g.mis - delta;  // + s * S: 16-byte aligned
#pragma unroll 4
    for (unsigned int k = lane; k < nvec; k += 32) {
        const unsigned char* const block = base + s * S;
        warp_stg128(body + k * V, pp::bytes_at(warp_lds128(block), warp_lds128(block + 16), delta));
        s += step;
        if (s >= g.wi) {
            s -= g.wi;
        }
    }
}

}  // namespace

#if CIRC_PAD_WARP_MINB > 0
#define CIRC_PAD_WARP_BOUNDS __launch_bounds__(CIRC_PAD_WARP_BLOCK, CIRC_PAD_WARP_MINB)
#else
#define CIRC_PAD_WARP_BOUNDS __launch_bounds__(CIRC_PAD_WARP_BLOCK)
#endif

// circ_pad_warp's body (its kernel and circ_pad_warp_aot call it).
template <typename T>
__device__ __forceinline__ void circ_pad_warp_body(const T* __restrict__ x, T* __restrict__ y,
    const CircPadFlatParams& p) {
    typedef typename pp::Bits<sizeof(T)>::type B;
    constexpr unsigned int S = sizeof(B);
    constexpr unsigned int V = 16 / S;
    __shared__ __align__(16) unsigned char slots[CIRC_PAD_WARP_BLOCK / 32][kWarpSlots][kWarpSlot];

    WarpGeom g;
    g.wi = static_cast<unsigned int>(p.wi);
    g.wo = static_cast<unsigned int>(p.wo);
    g.hi = static_cast<unsigned int>(p.hi);
    g.ho = static_cast<unsigned int>(p.ho);
    g.sw = static_cast<unsigned int>(p.sw);
    g.sh = static_cast<unsigned int>(p.sh);
    g.plane_in = p.plane_in;
    if (p.wi * static_cast<pp::index_t>(S) > CIRC_PAD_WARP_ROW ||
        (p.wi * static_cast<pp::index_t>(S)) % 16 != 0) {
        return;  // outside the contract (the host never launches it so)
    }
    g.row_bytes = g.wi * S;
    const pp::uindex_t xa = reinterpret_cast<pp::uindex_t>(x);
    g.mis = static_cast<unsigned int>(xa & 15u);
    g.x0 = reinterpret_cast<const unsigned char*>(xa - g.mis);

    const unsigned int lane = threadIdx.x & 31u;
    const unsigned int wib = threadIdx.x >> 5;
    unsigned char* const mine = &slots[wib][0][0];
    const pp::uindex_t rows =
        flat_div64(static_cast<pp::uindex_t>(p.total), p.magic_plane,
                   static_cast<int>(p.shift_plane)) * g.ho;
    const pp::uindex_t warps = (static_cast<pp::uindex_t>(gridDim.x) * blockDim.x) >> 5;
    pp::uindex_t row = ((static_cast<pp::uindex_t>(blockIdx.x) * blockDim.x) >> 5) + wib;
    if (row >= rows) {
        return;  // the whole warp: no barrier waits for it
    }

    // The fetch cursor (plane fq, row fh of output row fetch_row), CIRC_PAD_WARP_DEPTH of this
    // warp's rows ahead of the emit cursor `row` once primed; it steps by `warps` rows = bq
    // planes and bh rows.
    pp::uindex_t fq, fh64, bq, bh64;
    pp::divmod(row, g.ho, fq, fh64);
    pp::divmod(warps, g.ho, bq, bh64);
    unsigned int fh = static_cast<unsigned int>(fh64);
    const unsigned int bh = static_cast<unsigned int>(bh64);
    pp::uindex_t fetch_row = row;
    auto fetch_next = [&](unsigned int slot) {
        if (fetch_row < rows) {
            warp_fetch(mine + slot * kWarpSlot, fq, wrap_col(fh + g.sh, g.hi), g, lane, S);
        }
        pp::async_commit<CIRC_PAD_WARP_ASYNC != 0>();  // an empty group past the end: counts match
        fetch_row += warps;
        fq += bq;
        fh += bh;
        if (fh >= g.ho) {
            fh -= g.ho;
            ++fq;
        }
    };
#pragma unroll
    for (unsigned int d = 0; d < CIRC_PAD_WARP_DEPTH; ++d) {
        fetch_next(d);
    }

    const unsigned int lane_col = (lane * V) % g.wi;  // vector `lane`'s column offset, mod wi
    const unsigned int step = (32u * V) % g.wi;       // column advance per 32 vectors, mod wi
    unsigned int cur = 0;
    B* const yb = reinterpret_cast<B*>(y);
    for (; row < rows; row += warps) {
        __syncwarp();  // every lane is done reading the slot refilled next (the previous row's)
        const unsigned int refill = cur + CIRC_PAD_WARP_DEPTH;
        fetch_next(refill >= kWarpSlots ? refill - kWarpSlots : refill);
        pp::async_wait<CIRC_PAD_WARP_ASYNC != 0, CIRC_PAD_WARP_DEPTH>();  // row's own copies landed
        __syncwarp();  // ... and every lane's are visible to the warp
        unsigned char* const slot = mine + cur * kWarpSlot;
        if (g.mis != 0) {
            warp_wrap(slot, g, lane);
            __syncwarp();
        }
        warp_emit<B>(slot, yb + static_cast<pp::index_t>(row) * g.wo, g, lane, lane_col, step);
        cur = cur + 1 == kWarpSlots ? 0 : cur + 1;
    }
}

template <typename T>
__global__ void CIRC_PAD_WARP_BOUNDS circ_pad_warp(const T* __restrict__ x, T* __restrict__ y,
                                                   CircPadFlatParams p) {
    circ_pad_warp_body<T>(x, y, p);
}

// ==== Ahead-of-time entries (QDP aot_impl; pyplugins.ops.circ_pad.CircPad.aot_launch) ====
//
// In TensorRT's order: the input pointer, 32-bit ints, the output pointer. Each builds its
// kernel's parameter struct from the ints and calls that kernel's body, with its launch bounds:
//   circ_pad_aot<T>, circ_pad_narrow_aot<T>(const T* x, int in_dims[8], int out_dims[8],
//              int shift[8], int in_strides[8], int rows, int strips, int strip_vecs,
//              int group, T* y): CircPadParams field by field (36 ints)
//   circ_pad_flat_aot<T>, circ_pad_warp_narrow_aot<T>, circ_pad_warp_aot<T>(const T* x,
//              int total, int plane_in, int plane_out, int wi, int wo, int hi, int ho, int sw,
//              int sh, T* y): CircPadFlatParams' first nine fields, then per kernel only what
//              its body reads, made by every thread (no shared memory, no barrier):
//                flat_aot: the magic numbers as circ_pad.flat_magic64 / flat_magic31 make
//                  them (plane_out and wo < 2^31);
//                warp_narrow_aot: none (its body reads no magic number);
//                warp_aot: its first int is the plane count, not total (the host passes
//                  the product of the dims before the last two): its body reads total only
//                  as flat_div64(total, magic_plane, shift_plane), the plane count, so the
//                  entry passes the count with shift_plane 0 (flat_div64's n / 1), the ints
//                  zero-extended.
//              (Until 2026-11: thread 0 derived both magic numbers and shared them behind a
//              barrier; docs/ops/circ_pad.md "AOT entries".)
// Every value < 2^31: the host refuses a profile whose input or output has 2^31 elements or
// more. The element type only sets the element size, so the host instantiates one type per
// size (signed char, __half, float, long long).

#define CIRC_PAD_AOT_ROW_PARAMS \
    int i0, int i1, int i2, int i3, int i4, int i5, int i6, int i7, int o0, int o1, int o2, \
    int o3, int o4, int o5, int o6, int o7, int s0, int s1, int s2, int s3, int s4, int s5, \
    int s6, int s7, int t0, int t1, int t2, int t3, int t4, int t5, int t6, int t7, int rows, \
    int strips, int strip_vecs, int group

namespace {

__device__ __forceinline__ void circ_pad_put8(pp::Dims8& d, int a0, int a1, int a2, int a3, int a4,
                                              int a5, int a6, int a7) {
    d.d[0] = a0; d.d[1] = a1; d.d[2] = a2; d.d[3] = a3;
    d.d[4] = a4; d.d[5] = a5; d.d[6] = a6; d.d[7] = a7;
}

// (TensorRT launches an empty output too, which the host skips for the JIT kernels.)
#define CIRC_PAD_AOT_ROW_STRUCT(p)                                          \
    if (rows == 0 || o7 == 0) return;                                       \
    CircPadParams p;                                                        \
    circ_pad_put8(p.in_dims, i0, i1, i2, i3, i4, i5, i6, i7);               \
    circ_pad_put8(p.out_dims, o0, o1, o2, o3, o4, o5, o6, o7);              \
    circ_pad_put8(p.shift, s0, s1, s2, s3, s4, s5, s6, s7);                 \
    circ_pad_put8(p.in_strides, t0, t1, t2, t3, t4, t5, t6, t7);            \
    p.rows = rows;                                                          \
    p.strips = strips;                                                      \
    p.strip_vecs = strip_vecs;                                              \
    p.group = group

// The bit length of n (0 for 0).
__device__ __forceinline__ int circ_pad_bits(unsigned int n) {
    return n == 0u ? 0 : 32 - __clz(n);
}

// CircPadFlatParams' first nine fields from the ints; the magic numbers zero.
__device__ __forceinline__ CircPadFlatParams circ_pad_aot_flat_plain(int total, int plane_in,
                                                                     int plane_out, int wi,
                                                                     int wo, int hi, int ho,
                                                                     int sw, int sh) {
    CircPadFlatParams p;
    p.total = total;
    p.plane_in = plane_in;
    p.plane_out = plane_out;
    p.wi = wi;
    p.wo = wo;
    p.hi = hi;
    p.ho = ho;
    p.sw = sw;
    p.sh = sh;
    p.magic_plane = 0;
    p.shift_plane = 0;
    p.magic_wo = 0;
    p.shift_wo = 0;
    return p;
}

// CircPadFlatParams from the nine ints with both magic numbers, made by each thread.
__device__ __forceinline__ CircPadFlatParams circ_pad_aot_flat(int total, int plane_in,
                                                               int plane_out, int wi, int wo,
                                                               int hi, int ho, int sw, int sh) {
    CircPadFlatParams p = circ_pad_aot_flat_plain(total, plane_in, plane_out, wi, wo, hi, ho,
                                                  sw, sh);
    // plane_out: ceil(2^(63 + s) / d), s = bits(d - 1), as 2^(31 + s) * 2^32 in two steps
    const unsigned long long d = static_cast<unsigned int>(max(plane_out, 1));
    const int s = circ_pad_bits(static_cast<unsigned int>(d) - 1u);
    const unsigned long long a = 1ull << (31 + s);
    const unsigned long long q1 = a / d, r1 = a % d;
    const unsigned long long r2 = r1 << 32;
    p.magic_plane = (q1 << 32) + r2 / d + (r2 % d != 0u ? 1u : 0u);
    p.shift_plane = s;
    // wo: ceil(2^(31 + s) / wo), shift 31 + s
    const unsigned long long w = static_cast<unsigned int>(max(wo, 1));
    const int sw2 = circ_pad_bits(static_cast<unsigned int>(w) - 1u);
    const unsigned long long b = 1ull << (31 + sw2);
    p.magic_wo = static_cast<long long>(b / w + (b % w != 0u ? 1u : 0u));
    p.shift_wo = 31 + sw2;
    return p;
}

// circ_pad_warp_body's parameters from circ_pad_warp_aot's ints, whose first is the plane count
// (the product of the dims before the last two), not total: the body reads total only as
// flat_div64(total, magic_plane, shift_plane), the plane count, which with shift_plane 0 is
// total itself, so the entry divides nothing. Each int is zero-extended (all lie in [0, 2^31)):
// the compiler then knows every 64-bit field's high word is 0 (why both matter:
// docs/ops/circ_pad.md "AOT entries").
__device__ __forceinline__ CircPadFlatParams circ_pad_aot_warp(int planes, int plane_in,
                                                               int plane_out, int wi, int wo,
                                                               int hi, int ho, int sw, int sh) {
    CircPadFlatParams p;
    p.total = static_cast<unsigned int>(planes);
    p.plane_in = static_cast<unsigned int>(plane_in);
    p.plane_out = static_cast<unsigned int>(plane_out);
    p.wi = static_cast<unsigned int>(wi);
    p.wo = static_cast<unsigned int>(wo);
    p.hi = static_cast<unsigned int>(hi);
    p.ho = static_cast<unsigned int>(ho);
    p.sw = static_cast<unsigned int>(sw);
    p.sh = static_cast<unsigned int>(sh);
    p.magic_plane = 0;
    p.shift_plane = 0;
    p.magic_wo = 0;
    p.shift_wo = 0;
    return p;
}

}  // namespace

#define CIRC_PAD_AOT_FLAT_PARAMS \
    int total, int plane_in, int plane_out, int wi, int wo, int hi, int ho, int sw, int sh
#define CIRC_PAD_AOT_FLAT_ARGS total, plane_in, plane_out, wi, wo, hi, ho, sw, sh

template <typename T>
__global__ void circ_pad_aot(const T* __restrict__ x, CIRC_PAD_AOT_ROW_PARAMS, T* __restrict__ y) {
    CIRC_PAD_AOT_ROW_STRUCT(p);
    circ_pad_body<T>(x, y, p);
}

template <typename T>
__global__ void circ_pad_narrow_aot(const T* __restrict__ x, CIRC_PAD_AOT_ROW_PARAMS,
                                    T* __restrict__ y) {
    CIRC_PAD_AOT_ROW_STRUCT(p);
    circ_pad_narrow_body<T>(x, y, p);
}

template <typename T>
__global__ void CIRC_PAD_FLAT_BOUNDS circ_pad_flat_aot(const T* __restrict__ x,
                                                       CIRC_PAD_AOT_FLAT_PARAMS, T* __restrict__ y) {
    if (total == 0) return;  // an empty output
    circ_pad_flat_body<T>(x, y, circ_pad_aot_flat(CIRC_PAD_AOT_FLAT_ARGS));
}

template <typename T>
__global__ void CIRC_PAD_WN_BOUNDS circ_pad_warp_narrow_aot(const T* __restrict__ x,
                                                            CIRC_PAD_AOT_FLAT_PARAMS,
                                                            T* __restrict__ y) {
    if (total == 0) return;  // an empty output
    circ_pad_warp_narrow_body<T>(x, y, circ_pad_aot_flat_plain(CIRC_PAD_AOT_FLAT_ARGS));
}

template <typename T>
__global__ void CIRC_PAD_WARP_BOUNDS circ_pad_warp_aot(const T* __restrict__ x,
                                                       CIRC_PAD_AOT_FLAT_PARAMS, T* __restrict__ y) {
    if (total == 0 || plane_out == 0) return;  // an empty output (total: the plane count)
    circ_pad_warp_body<T>(x, y, circ_pad_aot_warp(CIRC_PAD_AOT_FLAT_ARGS));
}
