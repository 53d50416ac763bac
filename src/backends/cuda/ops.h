// The CUDA backend's device ops: host-side launchers for the kernels in ops.cu and attention.cu.
//
// Conventions (every op):
//  - all pointers are device pointers; activations are row-major, one row per token;
//  - bf16 storage with fp32 arithmetic inside each kernel; norm weights are fp32;
//  - each launcher enqueues on `stream` and returns cudaGetLastError() (launch errors only;
//    execution errors surface at the next synchronising call);
//  - grids depend only on the sizes passed in (the engine passes bucketed sizes), never on
//    data such as sequence lengths, so every launch can be captured in a CUDA graph and
//    replayed with new inputs. Sequence boundaries are read on the device from cu_seqlens.
// Thread safety: the launchers keep no state; callers serialise work on a stream.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace orchid::cuda {

using bf16 = __nv_bfloat16;

// The row ops below that normalise a row (EmbedLayerNorm, AddLayerNorm, AddRmsNorm,
// PoolNormalize) keep it in shared memory: they take H <= 12256 and return
// cudaErrorInvalidValue above that, before touching the device.

// BERT embeddings + LayerNorm, one row per token t < T:
//   e = word[ids[t]] + pos_table[positions[t] + pos_offset] + type_table[types ? types[t] : 0]
//   out[t] = (e - mean(e)) / sqrt(var(e) + eps) * gamma + beta        (biased variance)
// word/pos_table/type_table: [*, H] bf16; gamma/beta: [H] fp32; out: [T, H] bf16. pos_table and
// type_table may be null: no such term (DistilBERT has no token types, NomicBERT no positions).
// Indices are trusted (the engine validates batches on the host before copying them).
cudaError_t EmbedLayerNorm(const int32_t* ids, const int32_t* types, const int32_t* positions,
                           int pos_offset, const bf16* word, const bf16* pos_table,
                           const bf16* type_table, const float* gamma, const float* beta,
                           float eps, int T, int H, bf16* out, cudaStream_t stream);

// Residual add + LayerNorm (BERT post-LN): out[t] = LN(x[t] + residual[t]) * gamma + beta;
// x == nullptr: a plain LayerNorm, out[t] = LN(residual[t]) * gamma + beta.
// x, residual, out: [T, H] bf16; out may alias residual (each element is read before it is
// written, by the same thread).
cudaError_t AddLayerNorm(const bf16* x, const bf16* residual, const float* gamma,
                         const float* beta, float eps, int T, int H, bf16* out,
                         cudaStream_t stream);

// Embedding gather into an fp32 residual stream (Qwen3): res[t] = float(table[ids[t]]).
cudaError_t EmbedGather(const int32_t* ids, const bf16* table, int T, int H, float* res,
                        cudaStream_t stream);

// Residual add + RMSNorm (Qwen3 pre-norm): when delta != nullptr, res[t] += delta[t] first
// (res is the fp32 residual stream, updated in place); then
//   out[t] = res[t] / sqrt(mean(res[t]^2) + eps) * weight             (out bf16, weight fp32).
cudaError_t AddRmsNorm(const bf16* delta, float* res, const float* weight, float eps, int T,
                       int H, bf16* out, cudaStream_t stream);

// Qwen3 per-head q/k RMSNorm then rotary embedding (neox layout), in place on the fused QKV
// rows qkv[t] = [Q heads (num_q) | K heads (num_kv) | V heads (num_kv)], each head_dim wide:
//   x = x / sqrt(mean(x^2) + eps) * w        (w = q_weight for Q heads, k_weight for K heads;
//                                             skipped when the weight pointer is null)
//   for i < d/2, angle = positions[t] * theta^(-2i/d) / inv_freq_divisor (1 but for NTK-scaled
//   GTE):
//     x[i] = x[i] cos - x[i + d/2] sin ;  x[i + d/2] = x[i + d/2] cos + x[i] sin
// V heads are untouched. head_dim must be even and <= 256.
cudaError_t QkNormRope(bf16* qkv, const int32_t* positions, const float* q_weight,
                       const float* k_weight, float eps, float theta, int T, int num_q,
                       int num_kv, int head_dim, cudaStream_t stream,
                       float inv_freq_divisor = 1.f);

// SwiGLU (Qwen3 MLP): out[t, i] = silu(gu[t, i]) * gu[t, I + i] for i < I, where gu[t] is
// [gate | up] (the fused gate/up projection). gu: [T, 2I]; out: [T, I].
cudaError_t SwiGlu(const bf16* gu, int T, int I, bf16* out, cudaStream_t stream);

// Pooling + optional L2 normalisation, one row per sequence s < S (S may include padding
// sequences of length zero, whose rows are written as zeros):
//   mode[s] = 1 mean over tokens [cu[s], cu[s+1]), 2 the first token (CLS), 3 the last token
//   (values of orchid::Pooling); norm[s] != 0: row /= max(||row||_2, 1e-12).
// hidden: [*, H] bf16; out: [S, H] fp32.
cudaError_t PoolNormalize(const bf16* hidden, const int32_t* cu_seqlens, const uint8_t* mode,
                          const uint8_t* norm, int S, int H, float* out, cudaStream_t stream);

// --- element-wise and row-copy ops (the op contract's glue: epilogues, residual adds that could
// not be fused into a norm, fp32 <-> bf16 conversions of the heads, pooled-row gathers) ---
// Element-wise ops run a grid-stride loop over the T x N elements with min(ceil(T N / 256),
// 65536) blocks of 256 threads: the grid depends only on T and N.

// Exact GELU in place: x = x/2 (1 + erf(x / sqrt 2)) over x: [T, N] (bf16 or fp32 storage,
// fp32 arithmetic).
cudaError_t GeluErf(bf16* x, int T, int N, cudaStream_t stream);
cudaError_t GeluErf(float* x, int T, int N, cudaStream_t stream);

// tanh in place over x: [T, N] (bf16 or fp32 storage, fp32 arithmetic).
cudaError_t Tanh(bf16* x, int T, int N, cudaStream_t stream);
cudaError_t Tanh(float* x, int T, int N, cudaStream_t stream);
// max(x, 0) in place over x: [T, N].
cudaError_t Relu(bf16* x, int T, int N, cudaStream_t stream);
cudaError_t Relu(float* x, int T, int N, cudaStream_t stream);

// Residual add: x[i] += delta[i] over [T, N]; delta bf16, x bf16 (the sum rounded once) or
// fp32.
cudaError_t ResidualAdd(const bf16* delta, bf16* x, int T, int N, cudaStream_t stream);
cudaError_t ResidualAdd(const bf16* delta, float* x, int T, int N, cudaStream_t stream);

// out[i] = bf16(in[i]) over [T, N] (round to nearest even).
cudaError_t Fp32ToBf16(const float* in, int T, int N, bf16* out, cudaStream_t stream);

// The first N columns of each row of in ([T, ld], ld >= N) into out ([T, N]):
// out[t, j] = in[t, j] for j < N; bf16 -> bf16, bf16 -> fp32 or fp32 -> fp32 (all exact).
// Drops the zero-padded columns of a GEMM whose output width was padded to a multiple of 8.
cudaError_t CopyColumns(const bf16* in, int T, int ld, int N, bf16* out, cudaStream_t stream);
cudaError_t CopyColumns(const bf16* in, int T, int ld, int N, float* out, cudaStream_t stream);
cudaError_t CopyColumns(const float* in, int T, int ld, int N, float* out, cudaStream_t stream);

// Pooled-row gather, one row per sequence s < S (one block per row, threads over W):
//   mode[s] == 2 (CLS): out[s] = in[cu[s]];  mode[s] == 3 (last token): out[s] = in[cu[s+1] - 1];
//   anything else (padding sequences: mode 0), or an empty sequence: out[s] = 0.
// in: [*, W], out: [S, W], both bf16 or both fp32 (copied exactly). cu: [S + 1].
cudaError_t GatherPooledRows(const bf16* in, int W, const int32_t* cu_seqlens, const uint8_t* mode,
                             int S, bf16* out, cudaStream_t stream);
cudaError_t GatherPooledRows(const float* in, int W, const int32_t* cu_seqlens, const uint8_t* mode,
                             int S, float* out, cudaStream_t stream);

// The ragged index cuDNN's attention reads (cudnn_attention.h), from cu_seqlens [S + 1]:
//   seq_len[s] = cu[s + 1] - cu[s] (s < S); qkv_offset[s] = cu[s] * qkv_pitch and
//   out_offset[s] = cu[s] * out_pitch (s <= S): int32 element offsets of each sequence's first
//   row (the caller keeps T * pitch below 2^31). One thread per entry.
cudaError_t RaggedAttentionIndex(const int32_t* cu_seqlens, int S, int qkv_pitch, int out_pitch,
                                 int32_t* seq_len, int32_t* qkv_offset, int32_t* out_offset,
                                 cudaStream_t stream);

// Ragged attention (FlashAttention-2 style; attention.cu has the kernel's invariants).
//   qkv: [*, (num_q + 2 num_kv) * head_dim] bf16 rows [Q | K | V] (heads contiguous);
//   out: [*, num_q * head_dim] bf16; query head h reads key/value head h / (num_q / num_kv).
//   Sequence s owns rows [cu_seqlens[s], cu_seqlens[s+1]). Work is split into query tiles of
//   kAttentionTileRows rows: tile i (i < num_tiles) covers rows [tile_q0[i], tile_q0[i] + 64)
//   of sequence tile_seq[i] (clipped to the sequence), or nothing when tile_seq[i] < 0.
//   The grid is num_tiles x num_q blocks whatever the data, so a graph replays it with new
//   tiles; the engine sizes num_tiles = ceil(tokens_bucket / 64) + seqs_bucket, enough for any
//   batch of that bucket (sum ceil(len/64) <= tokens/64 + seqs).
//   scale: softmax scale (1/sqrt(head_dim)). causal: key j visible to query i iff j <= i.
//   head_dim in {32, 64, 80, 96, 128}; num_kv divides num_q.
//   kernel: which of the kernel's variants runs (all compute the same function; attention.cu).
constexpr int kAttentionTileRows = 64;
enum class AttentionKernel : uint8_t { kPipelined, kLdmatrixTrans, kTransposedStore };
// kPipelined, unless the environment sets ORCHID_CUDA_ATTENTION=ldmatrix or =transpose (read
// once): the fallbacks bench/gpu/device-check.sh switches to if only the default fails.
AttentionKernel DefaultAttentionKernel();
const char* AttentionKernelName(AttentionKernel k);  // "pipelined", "ldmatrix", "transpose"
cudaError_t RaggedFlashAttention(const bf16* qkv, const int32_t* cu_seqlens,
                                 const int32_t* tile_seq, const int32_t* tile_q0, int num_tiles,
                                 int num_q, int num_kv, int head_dim, float scale, bool causal,
                                 bf16* out, cudaStream_t stream,
                                 AttentionKernel kernel = DefaultAttentionKernel());
// Raises the kernels' dynamic shared-memory limits (needed above 48 KB). RaggedFlashAttention
// does it once per process on its first call; call it explicitly before any graph capture.
cudaError_t PrepareAttentionKernels();
// Whether RaggedFlashAttention supports this head dimension.
// (AttentionHeadDimSupported: backends/cuda/op_support.h.)

}  // namespace orchid::cuda
