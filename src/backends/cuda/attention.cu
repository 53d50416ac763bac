// Ragged FlashAttention-2-style attention on tensor cores (mma.sync m16n8k16, bf16 in, fp32
// accumulate), over packed Q/K/V with cu_seqlens. No padding, no score matrix in memory.
//
// Math, per sequence s and query head h (kv head g = h / (num_q / num_kv)):
//   O_i = sum_j softmax_j(q_i . k_j * scale) v_j  over visible keys j (all of the sequence, or
//   j <= i when causal), computed one key tile at a time with the online softmax:
//     m' = max(m, max_j s_ij);  l' = l * 2^(m - m') + sum_j 2^(s_ij - m');
//     O' = O * 2^(m - m') + sum_j 2^(s_ij - m') v_j;   at the end O / l.
//   Scores are kept raw (the running maxima too); the log2-domain scale (scale * log2 e) is
//   applied inside the exponent, p = exp2(s * c - m * c): one FFMA and one exp2 per score.
//
// Work decomposition (graph-safe): grid = (num_tiles, num_q). Block (i, h) handles query tile
// i of head h: rows [tile_q0[i], tile_q0[i] + 64) of sequence tile_seq[i] (clipped to its
// length), or returns at once when tile_seq[i] < 0 (a padding tile: zero-length sequences get
// no tiles, so they cost one empty block launch each at most). The host fills the tile map.
//
// Block: 128 threads = 4 warps; warp w owns query rows [16w, 16w + 16) of the tile.
// Three variants (AttentionKernel, a template parameter; all compute the same function):
//   kPipelined (the default): Q, K and V tiles reach shared memory by cp.async (16 bytes a
//     thread, rows beyond the sequence zero-filled by the copy itself), K/V double-buffered:
//     tile j + 1 is in flight while tile j is computed, one barrier per tile. Q's A fragments
//     and K's B fragments come from ldmatrix.x4 (4 fragments an instruction), V's from
//     ldmatrix.x4.trans. Masks are evaluated only on the tiles that need one (the sequence's
//     last key tile; with causal, the tiles that reach past the block's first query row).
//   kLdmatrixTrans: the first kernel: synchronous 16-byte loads through registers into one
//     buffer, two barriers per tile; 32-bit fragment loads for Q and K; V by ldmatrix.trans;
//     every tile masked. Kept as a fallback (ORCHID_CUDA_ATTENTION=ldmatrix).
//   kTransposedStore: as kLdmatrixTrans but V stored transposed by scalar stores
//     (bank-conflicted) and read by 32-bit fragment loads; the simplest (=transpose).
// Shared memory (bf16 elements; pitches padded by 8 elements = 16 bytes so 16-byte stores stay
// aligned and 8 consecutive rows of an ldmatrix or the 32-bit fragment loads of a warp hit
// distinct banks):
//   Qs [64][D + 8]                     the query tile
//   Ks [stages][64][D + 8]             key tiles (2 stages pipelined, else 1)
//   Vs [stages][64][D + 8] row-major   (kPipelined, kLdmatrixTrans) or Vt [D][64 + 8]
//   D = 128: 87,040 bytes (pipelined), 52,224 (ldmatrix), 53,248 (transposed): above 48 KB,
//   so the limits are raised (PrepareAttentionKernels).
// Registers per thread: Q fragments D/16 x 4, O accumulators D/8 x 4 fp32, S tile 8 x 4 fp32.
//
// ldmatrix.x4: lane l gives the address of row (l % 8) of matrix l / 8; without .trans thread
// (g, t) receives (row g, columns 2t, 2t+1) of each 8x8 matrix, with .trans (rows 2t, 2t+1;
// column g). So, for 16x16 A (Q: rows = queries, columns = dims) the four matrices are
// (rows 0-7 | 8-15) x (cols 0-7 | 8-15) in the order a0 a1 a2 a3: lane l addresses row l % 16,
// column (l / 16) * 8. For B of Q K^T (K row-major: rows = keys = n, columns = dims = k),
// matrices (n-tile nt, dims 0-7), (nt, dims 8-15), (nt + 1, 0-7), (nt + 1, 8-15) are b0 b1 of
// n-tile nt and b0 b1 of nt + 1: lane l addresses key nt * 8 + (l / 16) * 8 + l % 8, dim
// ((l / 8) % 2) * 8.
//
// Fragment layouts of mma.m16n8k16.row.col (g = lane / 4, t = lane % 4), as PTX defines them:
//   A (16x16, row-major): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8,
//   2t+8..) B (16x8, "col"):      b0 = (k 2t..2t+1, n g), b1 = (k 2t+8..2t+9, n g) C (16x8 fp32):
//   c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
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

template <int D, AttentionKernel kKind>
constexpr size_t SmemBytes() {
  switch (kKind) {
    case AttentionKernel::kPipelined:
      return size_t(5 * kBM * (D + 8)) * sizeof(bf16);
    case AttentionKernel::kLdmatrixTrans:
      return size_t(3 * kBM * (D + 8)) * sizeof(bf16);
    case AttentionKernel::kTransposedStore:
      break;
  }
  return size_t(2 * kBM * (D + 8) + D * kVPitch) * sizeof(bf16);
}

__device__ __forceinline__ unsigned SmemAddr(const void* p) {
  return unsigned(__cvta_generic_to_shared(p));
}

// Four 8x8 bf16 matrices from shared memory (see the file comment for who gets what).
__device__ __forceinline__ void LdMatrixX4(uint32_t r[4], const bf16* row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(row_addr)));
}
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t r[4], const bf16* row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(row_addr)));
}

// 16 bytes global -> shared without registers; valid == false zero-fills the destination
// (src-size 0: nothing is read from src, which must still be a global address).
__device__ __forceinline__ void CpAsync16(bf16* dst, const bf16* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SmemAddr(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void CpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until this thread's copies have all landed (a barrier then publishes them).
__device__ __forceinline__ void CpAsyncWaitAll() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
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

// rows x D bf16 from global (row pitch ld elements) to shared (pitch D + 8) by cp.async; rows
// at or past `valid_rows` are zero-filled.
template <int D, int kRows>
__device__ __forceinline__ void CopyTileAsync(bf16* dst, const bf16* src, size_t ld, int valid_rows,
                                              int tid) {
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int c = tid; c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const bool valid = r < valid_rows;
    CpAsync16(dst + r * (D + 8) + col, src + size_t(valid ? r : 0) * ld + col, valid);
  }
}

template <int D, AttentionKernel kKind>
__global__ void __launch_bounds__(kThreads)
    FlashAttentionKernel(const bf16* __restrict__ qkv, const int32_t* __restrict__ cu,
                         const int32_t* __restrict__ tile_seq, const int32_t* __restrict__ tile_q0,
                         int num_q, int num_kv, float scale_log2, int causal,
                         bf16* __restrict__ out) {
  static_assert(D % 16 == 0 && D <= 128, "head_dim");
  static_assert((D / 8) % 2 == 0, "ldmatrix.x4 covers two 8-wide slices of the head");
  constexpr bool kPipe = kKind == AttentionKernel::kPipelined;
  constexpr bool kVRowMajor = kKind != AttentionKernel::kTransposedStore;
  constexpr int kStages = kPipe ? 2 : 1;
  constexpr int kPitch = D + 8;
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  constexpr int kKvTile = kBN * kPitch;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* Qs = reinterpret_cast<bf16*>(smem_raw);
  bf16* Ks = Qs + kBM * kPitch;       // [kStages][kBN][kPitch]
  bf16* Vs = Ks + kStages * kKvTile;  // [kStages][kBN][kPitch], or Vt [D][kVPitch]

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
  const int kv_end = causal ? min(len, q0 + kBM) : len;
  const int num_kv_tiles = (kv_end + kBN - 1) / kBN;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;

  // The query tile (and, pipelined, the first key/value tile) -> shared memory.
  if constexpr (kPipe) {
    CopyTileAsync<D, kBM>(Qs, Qg + size_t(q0) * ld, ld, len - q0, tid);
    CopyTileAsync<D, kBN>(Ks, Kg, ld, len, tid);
    CopyTileAsync<D, kBN>(Vs, Vg, ld, len, tid);
    CpAsyncCommit();
    CpAsyncWaitAll();
  } else {
    for (int c = tid; c < kBM * kChunks; c += kThreads) {
      const int r = c / kChunks, col = (c % kChunks) * 8;
      uint4 v = make_uint4(0u, 0u, 0u, 0u);
      if (q0 + r < len) v = *reinterpret_cast<const uint4*>(Qg + size_t(q0 + r) * ld + col);
      *reinterpret_cast<uint4*>(Qs + r * kPitch + col) = v;
    }
  }
  __syncthreads();

  // This warp's 16 query rows as A fragments, for every 16-wide slice of the head.
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kc = 0; kc < D / 16; ++kc) {
    if constexpr (kPipe) {
      LdMatrixX4(qf[kc], Qs + (warp * 16 + (lane & 15)) * kPitch + kc * 16 + (lane >> 4) * 8);
    } else {
      const bf16* base = Qs + (warp * 16) * kPitch + kc * 16 + 2 * t4;
      qf[kc][0] = Ld32(base + g * kPitch);
      qf[kc][1] = Ld32(base + (g + 8) * kPitch);
      qf[kc][2] = Ld32(base + g * kPitch + 8);
      qf[kc][3] = Ld32(base + (g + 8) * kPitch + 8);
    }
  }

  float o[D / 8][4];
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of this warp (raw scores)
  float l_run[2] = {0.f, 0.f};              // this thread's partial row sums
  const int row0 = q0 + warp * 16 + g;      // query index (in the sequence) of c0/c1

  for (int j = 0; j < num_kv_tiles; ++j) {
    const int k0 = j * kBN;
    const bf16* Kt = Ks;
    const bf16* Vt = Vs;
    if constexpr (kPipe) {
      if (j > 0) {
        CpAsyncWaitAll();  // tile j (issued during tile j - 1) has landed for this thread...
        __syncthreads();   // ...for all of them; and every warp is done with tile j - 1
      }
      if (j + 1 < num_kv_tiles) {  // refill the buffer tile j - 1 used, behind this tile
        const int next = k0 + kBN;
        bf16* kd = Ks + ((j + 1) & 1) * kKvTile;
        bf16* vd = Vs + ((j + 1) & 1) * kKvTile;
        CopyTileAsync<D, kBN>(kd, Kg + size_t(next) * ld, ld, len - next, tid);
        CopyTileAsync<D, kBN>(vd, Vg + size_t(next) * ld, ld, len - next, tid);
        CpAsyncCommit();
      }
      Kt = Ks + (j & 1) * kKvTile;
      Vt = Vs + (j & 1) * kKvTile;
    } else {
      __syncthreads();  // every warp is done reading the previous Ks / Vs
      for (int c = tid; c < kBN * kChunks; c += kThreads) {
        const int r = c / kChunks, col = (c % kChunks) * 8;
        uint4 kv = make_uint4(0u, 0u, 0u, 0u), vv = make_uint4(0u, 0u, 0u, 0u);
        if (k0 + r < len) {
          kv = *reinterpret_cast<const uint4*>(Kg + size_t(k0 + r) * ld + col);
          vv = *reinterpret_cast<const uint4*>(Vg + size_t(k0 + r) * ld + col);
        }
        *reinterpret_cast<uint4*>(Ks + r * kPitch + col) = kv;
        if constexpr (kVRowMajor) {
          *reinterpret_cast<uint4*>(Vs + r * kPitch + col) = vv;
        } else {
          const bf16* ve = reinterpret_cast<const bf16*>(&vv);
#pragma unroll
          for (int i = 0; i < 8; ++i) Vs[(col + i) * kVPitch + r] = ve[i];
        }
      }
      __syncthreads();
    }

    // S = Q K^T for this warp's 16 rows x 64 keys.
    float s[kBN / 8][4];
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
      if constexpr (kPipe) {
        const bf16* kb =
            Kt + ((lane >> 4) * 8 + (lane & 7)) * kPitch + kc * 16 + ((lane >> 3) & 1) * 8;
#pragma unroll
        for (int nt = 0; nt < kBN / 8; nt += 2) {
          uint32_t b[4];
          LdMatrixX4(b, kb + nt * 8 * kPitch);
          Mma(s[nt], qf[kc], b[0], b[1]);
          Mma(s[nt + 1], qf[kc], b[2], b[3]);
        }
      } else {
#pragma unroll
        for (int nt = 0; nt < kBN / 8; ++nt) {
          const bf16* kb = Kt + (nt * 8 + g) * kPitch + kc * 16 + 2 * t4;
          Mma(s[nt], qf[kc], Ld32(kb), Ld32(kb + 8));
        }
      }
    }

    // Mask (where a key of this tile can be invisible to a row of this block), row maxima
    // (a row's 64 values live in the 4 lanes sharing g).
    const bool masked = !kPipe || k0 + kBN > len || (causal != 0 && k0 + kBN - 1 > q0);
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (masked) {
          const int key = k0 + nt * 8 + 2 * t4 + (i & 1);
          const int qi = row0 + (i >> 1) * 8;
          if (key >= len || (causal != 0 && key > qi)) s[nt][i] = -INFINITY;
        }
        mx[i >> 1] = fmaxf(mx[i >> 1], s[nt][i]);
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
      base[r] = m_new == -INFINITY ? 0.f : m_new * scale_log2;
      alpha[r] = exp2f(m_run[r] * scale_log2 - base[r]);  // exp2(-inf) = 0 on the first tile
      m_run[r] = m_new;
    }
    float rs[2] = {0.f, 0.f};
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float p = exp2f(fmaf(s[nt][i], scale_log2, -base[i >> 1]));
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
      if constexpr (kVRowMajor) {
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

template <int D, AttentionKernel kKind>
void LaunchKernel(dim3 grid, const bf16* qkv, const int32_t* cu, const int32_t* tile_seq,
                  const int32_t* tile_q0, int num_q, int num_kv, float scale_log2, bool causal,
                  bf16* out, cudaStream_t stream) {
  FlashAttentionKernel<D, kKind><<<grid, kThreads, SmemBytes<D, kKind>(), stream>>>(
      qkv, cu, tile_seq, tile_q0, num_q, num_kv, scale_log2, causal ? 1 : 0, out);
}

template <int D>
cudaError_t Launch(const bf16* qkv, const int32_t* cu, const int32_t* tile_seq,
                   const int32_t* tile_q0, int num_tiles, int num_q, int num_kv, float scale,
                   bool causal, bf16* out, AttentionKernel kernel, cudaStream_t stream) {
  const dim3 grid{unsigned(num_tiles), unsigned(num_q), 1u};
  const float scale_log2 = scale * 1.4426950408889634f;
  switch (kernel) {
    case AttentionKernel::kPipelined:
      LaunchKernel<D, AttentionKernel::kPipelined>(grid, qkv, cu, tile_seq, tile_q0, num_q, num_kv,
                                                   scale_log2, causal, out, stream);
      break;
    case AttentionKernel::kLdmatrixTrans:
      LaunchKernel<D, AttentionKernel::kLdmatrixTrans>(grid, qkv, cu, tile_seq, tile_q0, num_q,
                                                       num_kv, scale_log2, causal, out, stream);
      break;
    case AttentionKernel::kTransposedStore:
      LaunchKernel<D, AttentionKernel::kTransposedStore>(grid, qkv, cu, tile_seq, tile_q0, num_q,
                                                         num_kv, scale_log2, causal, out, stream);
      break;
  }
  return cudaGetLastError();
}

template <int D, AttentionKernel kKind>
cudaError_t RaiseSmemLimit() {
  return cudaFuncSetAttribute(FlashAttentionKernel<D, kKind>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(SmemBytes<D, kKind>()));
}

template <int D>
cudaError_t Prepare() {
  cudaError_t e = RaiseSmemLimit<D, AttentionKernel::kPipelined>();
  if (e == cudaSuccess) e = RaiseSmemLimit<D, AttentionKernel::kLdmatrixTrans>();
  if (e == cudaSuccess) e = RaiseSmemLimit<D, AttentionKernel::kTransposedStore>();
  return e;
}

}  // namespace

AttentionKernel DefaultAttentionKernel() {
  static const AttentionKernel k = [] {
    const char* e = std::getenv("ORCHID_CUDA_ATTENTION");
    if (e != nullptr && std::strcmp(e, "ldmatrix") == 0) return AttentionKernel::kLdmatrixTrans;
    if (e != nullptr && std::strcmp(e, "transpose") == 0) {
      return AttentionKernel::kTransposedStore;
    }
    return AttentionKernel::kPipelined;
  }();
  return k;
}

const char* AttentionKernelName(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kPipelined:
      return "pipelined";
    case AttentionKernel::kLdmatrixTrans:
      return "ldmatrix";
    case AttentionKernel::kTransposedStore:
      return "transpose";
  }
  return "?";
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
                                 bf16* out, cudaStream_t stream, AttentionKernel kernel) {
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
      return Launch<32>(qkv, cu_seqlens, tile_seq, tile_q0, num_tiles, num_q, num_kv, scale, causal,
                        out, kernel, stream);
    case 64:
      return Launch<64>(qkv, cu_seqlens, tile_seq, tile_q0, num_tiles, num_q, num_kv, scale, causal,
                        out, kernel, stream);
    case 80:
      return Launch<80>(qkv, cu_seqlens, tile_seq, tile_q0, num_tiles, num_q, num_kv, scale, causal,
                        out, kernel, stream);
    case 96:
      return Launch<96>(qkv, cu_seqlens, tile_seq, tile_q0, num_tiles, num_q, num_kv, scale, causal,
                        out, kernel, stream);
    case 128:
      return Launch<128>(qkv, cu_seqlens, tile_seq, tile_q0, num_tiles, num_q, num_kv, scale,
                         causal, out, kernel, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace orchid::cuda
