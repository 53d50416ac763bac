// Ragged multi-head self-attention: each sequence attends only to itself, with no padding.
//
// For every sequence s (tokens [cu[s], cu[s+1])) and head h, on the head's slices of the fused
// QKV rows: out_h = softmax(Q_h K_h^T / sqrt(head_dim)) V_h. Bidirectional (encoders).
// Both products run on packed_gemm.h (K and V packed per head into scratch). Work is spread
// over the pool by sequence when there are enough sequences, else by (sequence, head); each
// thread has its own score matrix, so the scores take O(max_len^2) memory per thread.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "engine/cpu/thread_pool.h"

namespace orchid {

// qkv: [num_tokens, 3 * num_heads * head_dim], each row [Q | K | V], heads contiguous inside each.
// out: [num_tokens, num_heads * head_dim]. scratch grows to threads x max_len^2 floats.
void RaggedSelfAttention(ThreadPool* pool, const float* qkv, const int32_t* cu_seqlens,
                         int num_seqs, int num_heads, int head_dim, float* out,
                         Buffer<float>* scratch);

}  // namespace orchid
