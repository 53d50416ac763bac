// Ragged FlashAttention-2-style attention on tensor cores (mma.sync m16n8k16, bf16 in, fp32
// accumulate), over packed Q/K/V with cu_seqlens. No padding, no score matrix in memory.
//
// Math, per sequence s and query head h (kv head g = h / (num_q / num_kv)):
//   O_i = sum_j softmax_j(q_i . k_j * scale) v_j  over visible keys j (all of the sequence, or
//   j <= i when causal), computed one key tile at a time with the online softmax:
//     m' = max(m, max_j s_ij);  l' = l * 2^(m - m') + sum_j 2^(s_ij - m');
//     O' = O * 2^(m - m') + sum_j 2^(s_ij - m') v_j;   at the end O / l.
//   Scores are kept in the log2 domain (scale * log2 e folded in) so exp is one exp2f.
//
// Work decomposition (graph-safe): grid = (num_tiles, num_q). Block (i, h) handles query tile
// i of head h: rows [tile_q0[i], tile_q0[i] + 64) of sequence tile_seq[i] (clipped to its
// length), or returns at once when tile_seq[i] < 0 (a padding tile: zero-length sequences get
// no tiles, so they cost one empty block launch each at most). The host fills the tile map.
//
// Block: 128 threads = 4 warps; warp w owns query rows [16w, 16w + 16) of the tile.
// Shared memory (bf16 elements; pitches padded by 8 elements = 16 bytes so 16-byte stores stay
// aligned and the 32-bit fragment loads of a warp hit 32 distinct banks):
//   Qs [64][D + 8]   the query tile (rows beyond the sequence zero-filled)
//   Ks [64][D + 8]   the current key tile (rows beyond the sequence zero-filled)
//   V tile, one of two layouts (AttentionVLoad, a template parameter):
//     kLdmatrixTrans:   Vs [64][D + 8] row-major like Ks (16-byte stores); B fragments of P.V
//                       come from ldmatrix.x4.trans (rows = keys; .trans hands thread i the
//                       elements (keys 2(i%4), 2(i%4)+1; dim i/4) of each 8x8 block, which is
//                       exactly b0/b1 of the "col" B operand). Row addresses are 16-byte
//                       aligned (pitch (D+8)*2 bytes) and 8 rows span 8 distinct 4-bank groups.
//     kTransposedStore: Vt [D][64 + 8], V transposed by scalar stores (bank-conflicted
//                       stores, 32-bit fragment loads); the simpler fallback
//                       (ORCHID_CUDA_ATTENTION_V=transpose).
//   total: (3 * 64 * (D + 8)) * 2 = 52,224 bytes (ldmatrix) or (2 * 64 * (D + 8) + D * 72) * 2
//   = 53,248 bytes (transposed) for D = 128: above 48 KB, so the limit is raised.
// Registers per thread: Q fragments D/16 x 4, O accumulators D/8 x 4 fp32, S tile 8 x 4 fp32
// (ptxas, sm_90: 88-182 registers by D, no spills).
// Performance notes: K/V tiles are loaded synchronously (no cp.async double buffering yet) and
// mma.sync is used, not Hopper's wgmma; both are the next steps once timings exist.
//
// Fragment layouts of mma.m16n8k16.row.col (g = lane / 4, t = lane % 4), as PTX defines them:
//   A (16x16, row-major): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B (16x8, "col"):      b0 = (k 2t..2t+1, n g), b1 = (k 2t+8..2t+9, n g)
//   C (16x8 fp32):        c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
// The S accumulators of two adjacent n8 tiles are exactly the A fragment of P for P.V, so P
// never leaves registers.
//
// Invariants the launcher checks: D in {32, 64, 80, 96, 128} (D % 16 == 0); num_kv divides
// num_q; the QKV row pitch (num_q + 2 num_kv) * D and every head offset are multiples of 8
// elements, so the 16-byte global loads are aligned (cudaMalloc'd base).
// Thread safety: stateless (the launcher raises the shared-memory limits once, thread-safely).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/ops.h"

namespace orchid::cuda {
namespace {

constexpr int kBM = kAttentionTileRows;  // query rows per block
constexpr int kBN = 64;                  // keys per iteration
constexpr int kThreads = 128;
constexpr int kVPitch = kBN + 8;

template <int D, bool kLdmatrix>
constexpr size_t SmemBytes() {
  return kLdmatrix ? size_t(3 * kBM * (D + 8)) * sizeof(bf16)
                   : size_t(2 * kBM * (D + 8) + D * kVPitch) * sizeof(bf16);
}

// Four 8x8 bf16 matrices from shared memory, transposed: lane l gives the address of row
// (l % 8) of matrix l / 8; r[m] receives this thread's two elements of matrix m.
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t r[4], const bf16* row_addr) {
  const unsigned addr = unsigned(__cvta_generic_to_shared(row_addr));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ uint32_t Ld32(const bf16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

__device__ __forceinline__ uint32_t Pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<const uint32_t*>(&v);
}

// c += a * b (m16n8k16, bf16 x bf16 -> fp32).
__device__ __forceinline__ void Mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int D, bool kLdmatrix>
__global__ void __launch_bounds__(kThreads)
    FlashAttentionKernel(const bf16* __restrict__ qkv, const int32_t* __restrict__ cu,
                         const int32_t* __restrict__ tile_seq,
                         const int32_t* __restrict__ tile_q0, int num_q, int num_kv,
                         float scale_log2, int causal, bf16* __restrict__ out) {
  static_assert(D % 16 == 0 && D <= 128, "head_dim");
  static_assert((D / 8) % 2 == 0, "ldmatrix.x4 covers two 8-wide slices of the head");
  constexpr int kPitch = D + 8;
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* Qs = reinterpret_cast<bf16*>(smem_raw);
  bf16* Ks = Qs + kBM * kPitch;
  bf16* Vt = Ks + kBN * kPitch;  // Vs [kBN][kPitch] (ldmatrix) or Vt [D][kVPitch]

  const int seq = tile_seq[blockIdx.x];
  if (seq < 0) return;  // padding tile (block-uniform)
  const int h = blockIdx.y;
  const int seq_begin = cu[seq];
  const int len = cu[seq + 1] - seq_begin;
  const int q0 = tile_q0[blockIdx.x];
  if (q0 >= len) return;  // defensive: the host never makes such tiles (block-uniform)
  const int kvh = h / (num_q / num_kv);
  const size_t ld = size_t(num_q + 2 * num_kv) * D;
  const bf16* Qg = qkv + size_t(seq_begin) * ld + size_t(h) * D;
  const bf16* Kg = qkv + size_t(seq_begin) * ld + size_t(num_q + kvh) * D;
  const bf16* Vg = qkv + size_t(seq_begin) * ld + size_t(num_q + num_kv + kvh) * D;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;

  // Query tile -> shared memory (16-byte loads, coalesced along each row).
  for (int c = tid; c < kBM * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (q0 + r < len) v = *reinterpret_cast<const uint4*>(Qg + size_t(q0 + r) * ld + col);
    *reinterpret_cast<uint4*>(Qs + r * kPitch + col) = v;
  }
  __syncthreads();

  // This warp's 16 query rows as A fragments, for every 16-wide slice of the head.
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kc = 0; kc < D / 16; ++kc) {
    const bf16* base = Qs + (warp * 16) * kPitch + kc * 16 + 2 * t4;
    qf[kc][0] = Ld32(base + g * kPitch);
    qf[kc][1] = Ld32(base + (g + 8) * kPitch);
    qf[kc][2] = Ld32(base + g * kPitch + 8);
    qf[kc][3] = Ld32(base + (g + 8) * kPitch + 8);
  }

  float o[D / 8][4];
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of this warp
  float l_run[2] = {0.f, 0.f};              // this thread's partial row sums
  const int row0 = q0 + warp * 16 + g;      // query index (in the sequence) of c0/c1
  const int kv_end = causal ? min(len, q0 + kBM) : len;

  for (int k0 = 0; k0 < kv_end; k0 += kBN) {
    __syncthreads();  // every warp is done reading the previous Ks / Vt
    for (int c = tid; c < kBN * kChunks; c += kThreads) {
      const int r = c / kChunks, col = (c % kChunks) * 8;
      uint4 kv = make_uint4(0u, 0u, 0u, 0u), vv = make_uint4(0u, 0u, 0u, 0u);
      if (k0 + r < len) {
        kv = *reinterpret_cast<const uint4*>(Kg + size_t(k0 + r) * ld + col);
        vv = *reinterpret_cast<const uint4*>(Vg + size_t(k0 + r) * ld + col);
      }
      *reinterpret_cast<uint4*>(Ks + r * kPitch + col) = kv;
      if constexpr (kLdmatrix) {
        *reinterpret_cast<uint4*>(Vt + r * kPitch + col) = vv;
      } else {
        const bf16* ve = reinterpret_cast<const bf16*>(&vv);
#pragma unroll
        for (int i = 0; i < 8; ++i) Vt[(col + i) * kVPitch + r] = ve[i];
      }
    }
    __syncthreads();

    // S = Q K^T for this warp's 16 rows x 64 keys.
    float s[kBN / 8][4];
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
#pragma unroll
      for (int nt = 0; nt < kBN / 8; ++nt) {
        const bf16* kb = Ks + (nt * 8 + g) * kPitch + kc * 16 + 2 * t4;
        Mma(s[nt], qf[kc], Ld32(kb), Ld32(kb + 8));
      }
    }

    // Mask, scale, row maxima (a row's 64 values live in the 4 lanes sharing g).
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int key = k0 + nt * 8 + 2 * t4 + (i & 1);
        const int qi = row0 + (i >> 1) * 8;
        const bool visible = key < len && (causal == 0 || key <= qi);
        const float v = visible ? s[nt][i] * scale_log2 : -INFINITY;
        s[nt][i] = v;
        mx[i >> 1] = fmaxf(mx[i >> 1], v);
      }
    }
    float alpha[2], base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float m_new = fmaxf(m_run[r], mx[r]);
      // A row with no visible key so far keeps m = -inf; use 0 as the base so that no
      // (-inf) - (-inf) = NaN arises (its p values and O stay 0).
      base[r] = m_new == -INFINITY ? 0.f : m_new;
      alpha[r] = exp2f(m_run[r] - base[r]);  // exp2(-inf) = 0 on the first visible tile
      m_run[r] = m_new;
    }
    float rs[2] = {0.f, 0.f};
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float p = exp2f(s[nt][i] - base[i >> 1]);
        s[nt][i] = p;
        rs[i >> 1] += p;
      }
    }
    l_run[0] = l_run[0] * alpha[0] + rs[0];
    l_run[1] = l_run[1] * alpha[1] + rs[1];
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      o[dt][0] *= alpha[0];
      o[dt][1] *= alpha[0];
      o[dt][2] *= alpha[1];
      o[dt][3] *= alpha[1];
    }

    // O += P V: P's A fragments come straight from the S accumulators of n-tiles 2kc, 2kc+1.
#pragma unroll
    for (int kc = 0; kc < kBN / 16; ++kc) {
      uint32_t a[4];
      a[0] = Pack(s[2 * kc][0], s[2 * kc][1]);
      a[1] = Pack(s[2 * kc][2], s[2 * kc][3]);
      a[2] = Pack(s[2 * kc + 1][0], s[2 * kc + 1][1]);
      a[3] = Pack(s[2 * kc + 1][2], s[2 * kc + 1][3]);
      if constexpr (kLdmatrix) {
        // Matrices 0..3 = (keys kc*16 + 0..7 | 8..15) x (dims dt*8 | dt*8 + 8): lanes 0-7 and
        // 16-23 address keys 0..7, lanes 8-15 and 24-31 keys 8..15; lanes >= 16 the next 8 dims.
        const bf16* vrow = Vt + (kc * 16 + (lane & 15)) * kPitch + (lane >> 4) * 8;
#pragma unroll
        for (int dt = 0; dt < D / 8; dt += 2) {
          uint32_t b[4];
          LdMatrixX4Trans(b, vrow + dt * 8);
          Mma(o[dt], a, b[0], b[1]);
          Mma(o[dt + 1], a, b[2], b[3]);
        }
      } else {
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt) {
          const bf16* vb = Vt + (dt * 8 + g) * kVPitch + kc * 16 + 2 * t4;
          Mma(o[dt], a, Ld32(vb), Ld32(vb + 8));
        }
      }
    }
  }

  // Finish the row sums across the 4 lanes of each row, normalise, store the valid rows.
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = l_run[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inv[r] = l > 0.f ? 1.f / l : 0.f;
  }
  const size_t out_ld = size_t(num_q) * D;
  bf16* Og = out + size_t(seq_begin) * out_ld + size_t(h) * D;
  const int row1 = row0 + 8;
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    const int col = dt * 8 + 2 * t4;
    if (row0 < len) {
      *reinterpret_cast<__nv_bfloat162*>(Og + size_t(row0) * out_ld + col) =
          __floats2bfloat162_rn(o[dt][0] * inv[0], o[dt][1] * inv[0]);
    }
    if (row1 < len) {
      *reinterpret_cast<__nv_bfloat162*>(Og + size_t(row1) * out_ld + col) =
          __floats2bfloat162_rn(o[dt][2] * inv[1], o[dt][3] * inv[1]);
    }
  }
}

template <int D>
cudaError_t Launch(const bf16* qkv, const int32_t* cu, const int32_t* tile_seq,
                   const int32_t* tile_q0, int num_tiles, int num_q, int num_kv, float scale,
                   bool causal, bf16* out, AttentionVLoad v, cudaStream_t stream) {
  const dim3 grid{unsigned(num_tiles), unsigned(num_q), 1u};
  const float scale_log2 = scale * 1.4426950408889634f;
  if (v == AttentionVLoad::kLdmatrixTrans) {
    FlashAttentionKernel<D, true><<<grid, kThreads, SmemBytes<D, true>(), stream>>>(
        qkv, cu, tile_seq, tile_q0, num_q, num_kv, scale_log2, causal ? 1 : 0, out);
  } else {
    FlashAttentionKernel<D, false><<<grid, kThreads, SmemBytes<D, false>(), stream>>>(
        qkv, cu, tile_seq, tile_q0, num_q, num_kv, scale_log2, causal ? 1 : 0, out);
  }
  return cudaGetLastError();
}

template <int D>
cudaError_t Prepare() {
  const cudaError_t e = cudaFuncSetAttribute(FlashAttentionKernel<D, true>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(SmemBytes<D, true>()));
  if (e != cudaSuccess) return e;
  return cudaFuncSetAttribute(FlashAttentionKernel<D, false>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(SmemBytes<D, false>()));
}

}  // namespace

AttentionVLoad DefaultAttentionVLoad() {
  static const AttentionVLoad v = [] {
    const char* e = std::getenv("ORCHID_CUDA_ATTENTION_V");
    return e != nullptr && std::strcmp(e, "transpose") == 0 ? AttentionVLoad::kTransposedStore
                                                            : AttentionVLoad::kLdmatrixTrans;
  }();
  return v;
}

// The head widths instantiated here are the ones op_support.h's AttentionHeadDimSupported admits.
cudaError_t PrepareAttentionKernels() {
  cudaError_t e;
  if ((e = Prepare<32>()) != cudaSuccess) return e;
  if ((e = Prepare<64>()) != cudaSuccess) return e;
  if ((e = Prepare<80>()) != cudaSuccess) return e;
  if ((e = Prepare<96>()) != cudaSuccess) return e;
  return Prepare<128>();
}

cudaError_t RaggedFlashAttention(const bf16* qkv, const int32_t* cu_seqlens,
                                 const int32_t* tile_seq, const int32_t* tile_q0, int num_tiles,
                                 int num_q, int num_kv, int head_dim, float scale, bool causal,
                                 bf16* out, cudaStream_t stream, AttentionVLoad v) {
  if (num_tiles <= 0) return cudaSuccess;
  // Raise the shared-memory limits once per process (thread-safe static initialisation); the
  // engine also calls PrepareAttentionKernels() up front, before any graph capture.
  static const cudaError_t prepared = PrepareAttentionKernels();
  if (prepared != cudaSuccess) return prepared;
  if (num_q <= 0 || num_kv <= 0 || num_q % num_kv != 0 || num_q > 65535) {
    return cudaErrorInvalidValue;
  }
  switch (head_dim) {
    case 32:
      return Launch<32>(qkv, cu_seqlens, tile_seq, tile_q0, num_tiles, num_q, num_kv, scale,
                        causal, out, v, stream);
    case 64:
      return Launch<64>(qkv, cu_seqlens, tile_seq, tile_q0, num_tiles, num_q, num_kv, scale,
                        causal, out, v, stream);
    case 80:
      return Launch<80>(qkv, cu_seqlens, tile_seq, tile_q0, num_tiles, num_q, num_kv, scale,
                        causal, out, v, stream);
    case 96:
      return Launch<96>(qkv, cu_seqlens, tile_seq, tile_q0, num_tiles, num_q, num_kv, scale,
                        causal, out, v, stream);
    case 128:
      return Launch<128>(qkv, cu_seqlens, tile_seq, tile_q0, num_tiles, num_q, num_kv, scale,
                         causal, out, v, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace orchid::cuda
