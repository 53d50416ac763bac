// Ragged multi-head self-attention: each sequence attends only to itself, with no padding.
//
// For every sequence s (tokens [cu[s], cu[s+1])) and head h, on the head's slices of the fused
// QKV rows: out_h = softmax(Q_h K_h^T / sqrt(head_dim)) V_h. Bidirectional (encoders).
// Both products run on packed_gemm.h (K and V packed per head into scratch), or on BLAS
// straight from the QKV rows when the shape asks for it. K and V are packed once per key/value
// head for all the query heads that read it. Work is spread over the pool by sequence when there
// are enough sequences, else by (sequence, key/value head), or by (sequence, query head) when
// those are too few; each thread has its own score matrix, so the scores take O(max_len^2)
// memory per thread.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "backends/cpu/thread_pool.h"

namespace orchid {

struct AttentionShape {
  int num_heads = 0;     // query heads
  int num_kv_heads = 0;  // key/value heads; divides num_heads (grouped-query attention)
  int head_dim = 0;
  bool causal = false;  // token i attends to tokens 0..i of its sequence only
  bool blas = false;    // both products on the BLAS library (gemm.h) instead of packed_gemm.h
  // Packed path: both products with bfloat16 operands (Q, K, the softmax's P and V rounded to
  // nearest even; fp32 accumulation, fp32 softmax), at vdpbf16ps's rate where the CPU has
  // AVX512_BF16. --dtype int8 models use it (their start-up check measures what it costs).
  bool bf16 = false;
  // Optional: added to the scaled score of query i and key j of head h (positions inside the
  // sequence): relative_bias[h * (2 span - 1) + (j - i) + span - 1]. span >= the longest
  // sequence. MPNet's relative position bias.
  const float* relative_bias = nullptr;
  int span = 0;
  // Optional, bidirectional only (DeBERTa-v2's disentangled attention): tables of rows of
  // num_heads * head_dim floats (either may be null); query i and key j of head h add
  // q_i . pos_key[r]_h + k_j . pos_query[r]_h, r = pos_index[(i - j) + max_len - 1] (max_len:
  // the batch's longest sequence; pos_index non-decreasing).
  const float* pos_key = nullptr;
  const float* pos_query = nullptr;
  const int32_t* pos_index = nullptr;
  float scale = 0.0f;  // the scores' scale; 0: 1 / sqrt(head_dim)
  // > 0: a sliding window. Query i sees keys j with |i - j| < window (bidirectional) or
  // 0 <= i - j < window (causal); the others get exactly zero weight.
  int window = 0;
  // Optional, bidirectional only: per sequence, the number of leading tokens that are keys
  // (0: all); the later tokens are queries only (RaggedBatch::attend_lens).
  const int32_t* key_lens = nullptr;
};

// qkv: [num_tokens, (num_heads + 2 * num_kv_heads) * head_dim], each row [Q | K | V], heads
// contiguous inside each; query head h reads key/value head h / (num_heads / num_kv_heads).
// out: [num_tokens, num_heads * head_dim]. scratch grows to threads x (max_len^2 + 3 max_len
// head_dim) floats, about.
// query_rows (optional, 2 * num_seqs ints): sequence s computes only the outputs of its query
// rows [query_rows[2 s], query_rows[2 s + 1]) (positions inside the sequence; all its rows are
// still keys and values) and leaves its other rows of `out` alone. On the packed path each row
// computed is bitwise what the call for all rows gives it (on BLAS, the library's rounding may
// differ with the row count). A model's last layer uses this when pooling reads one row of the
// sequence (CLS, last token).
void RaggedAttention(ThreadPool* pool, const float* qkv, const int32_t* cu_seqlens, int num_seqs,
                     const AttentionShape& shape, float* out, Buffer<float>* scratch,
                     const int32_t* query_rows = nullptr);

// Bidirectional multi-head attention (BERT): RaggedAttention with num_kv_heads == num_heads.
inline void RaggedSelfAttention(ThreadPool* pool, const float* qkv, const int32_t* cu_seqlens,
                                int num_seqs, int num_heads, int head_dim, float* out,
                                Buffer<float>* scratch, bool blas = false) {
  RaggedAttention(pool, qkv, cu_seqlens, num_seqs, {num_heads, num_heads, head_dim, false, blas},
                  out, scratch);
}

}  // namespace orchid
