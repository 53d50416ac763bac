#include "engine/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "engine/cpu/gemm.h"
#include "engine/cpu/packed_gemm.h"
#include "engine/cpu/softmax.h"

namespace orchid {

void RaggedAttention(ThreadPool* pool, const float* qkv, const int32_t* cu_seqlens, int num_seqs,
                     const AttentionShape& shape, float* out, Buffer<float>* scratch) {
  if (num_seqs <= 0) return;
  const int num_heads = shape.num_heads, head_dim = shape.head_dim;
  const int group = num_heads / shape.num_kv_heads;  // query heads per key/value head
  const int hidden = num_heads * head_dim;
  const int kv_width = shape.num_kv_heads * head_dim;
  const int ld_qkv = hidden + 2 * kv_width;
  const bool causal = shape.causal;
  int max_len = 0;
  for (int s = 0; s < num_seqs; ++s) max_len = std::max(max_len, cu_seqlens[s + 1] - cu_seqlens[s]);
  // Per thread: the score matrix and the packed K and V of one head.
  auto round16 = [](size_t n) { return (n + 15) / 16 * 16; };
  const size_t scores_size = round16(size_t(max_len) * size_t(max_len));
  const size_t k_size = round16(PackedSize(max_len, head_dim));
  const size_t v_size = round16(PackedSize(head_dim, max_len));
  const size_t stride = scores_size + k_size + v_size;
  const int threads = PoolSize(pool);
  scratch->Reserve(stride * size_t(threads));
  const float scale = 1.0f / std::sqrt(float(head_dim));

  auto head = [&](int thread, int s, int h) {
    float* scores = scratch->data() + stride * size_t(thread);
    float* k_packed = scores + scores_size;
    float* v_packed = k_packed + k_size;
    const int start = cu_seqlens[s], len = cu_seqlens[s + 1] - start;
    const float* row = qkv + size_t(start) * ld_qkv;
    const float* q = row + size_t(h) * head_dim;
    const float* k = row + hidden + size_t(h / group) * head_dim;
    const float* v = row + hidden + kv_width + size_t(h / group) * head_dim;
    float* o = out + size_t(start) * hidden + size_t(h) * head_dim;
    if (shape.blas) {
      // The same products on BLAS, reading K and V in place; causal rows [r0, r1) multiply
      // only keys [0, r1), their masked scores set to exact zeros as below.
      constexpr int kRowBlock = 64;
      const int block = causal ? kRowBlock : len;
      for (int r0 = 0; r0 < len; r0 += block) {
        const int r1 = std::min(len, r0 + block), keys = causal ? r1 : len;
        float* s_rows = scores + size_t(r0) * len;
        Gemm(false, true, r1 - r0, keys, head_dim, scale, q + size_t(r0) * ld_qkv, ld_qkv, k,
             ld_qkv, 0.0f, s_rows, len);
        if (causal) {
          for (int i = r0; i < r1; ++i) {
            float* r = scores + size_t(i) * len;
            SoftmaxRows(r, 1, i + 1, len);
            std::fill(r + i + 1, r + keys, 0.0f);
          }
        } else {
          SoftmaxRows(s_rows, r1 - r0, keys, len);
        }
        Gemm(false, false, r1 - r0, head_dim, keys, 1.0f, s_rows, len, v, ld_qkv, 0.0f,
             o + size_t(r0) * hidden, hidden);
      }
      return;
    }
    // scores = Q K^T / sqrt(d): K's rows are the "weight" rows.
    PackRows(k, len, head_dim, ld_qkv, k_packed);
    PackColumns(v, head_dim, len, ld_qkv, v_packed);
    if (!causal) {
      PackedGemm(q, len, ld_qkv, PanelView{k_packed, len, head_dim}, scale, nullptr, scores, len,
                 Epilogue::kNone);
      SoftmaxRows(scores, len, len, len);
      // out = P V: V [len, d] holds the weight W = V^T column by column.
      PackedGemm(scores, len, len, PanelView{v_packed, head_dim, len}, 1.0f, nullptr, o, hidden,
                 Epilogue::kNone);
      return;
    }
    // Causal: rows [r0, r1) only see keys [0, r1), so each block of rows multiplies only that
    // much of K and V (about half the work of the full products). Row i keeps columns 0..i;
    // the masked ones become exact zeros, as softmax of -inf, and add nothing to P V.
    constexpr int kRowBlock = 64;
    for (int r0 = 0; r0 < len; r0 += kRowBlock) {
      const int r1 = std::min(len, r0 + kRowBlock);
      const int key_panels = (r1 + kPanelWidth - 1) / kPanelWidth;
      const int keys = std::min(len, key_panels * kPanelWidth);
      PackedGemmTiles(q, ld_qkv, PanelView{k_packed, len, head_dim}, scale, nullptr, scores, len,
                      Epilogue::kNone, r0, r1, 0, key_panels);
      for (int i = r0; i < r1; ++i) {
        float* r = scores + size_t(i) * len;
        SoftmaxRows(r, 1, i + 1, len);
        std::fill(r + i + 1, r + keys, 0.0f);
      }
      // P V over the first r1 keys: each 16-wide panel of V^T is [len][16], so its first r1
      // rows are the panel of the truncated product.
      const PanelView vt{v_packed, head_dim, len};
      for (int p = 0; p < vt.panels(); ++p) {
        const PanelView panel{vt.panel(p), std::min(kPanelWidth, head_dim - p * kPanelWidth), r1};
        PackedGemmTiles(scores, len, panel, 1.0f, nullptr, o + p * kPanelWidth, hidden,
                        Epilogue::kNone, r0, r1, 0, 1);
      }
    }
  };

  if (num_seqs >= 2 * threads) {
    // Enough sequences to share out whole: each thread takes a sequence and runs its heads.
    // A head reads a few cache lines from each of the sequence's rows, thousands of bytes
    // apart, which the hardware prefetchers do not follow; one sequential sweep over the
    // sequence's rows first brings them all into L2 at streaming speed.
    ParallelFor(pool, num_seqs, 1, [&](int thread, int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        const char* block = reinterpret_cast<const char*>(qkv + size_t(cu_seqlens[s]) * ld_qkv);
        const size_t bytes = size_t(cu_seqlens[s + 1] - cu_seqlens[s]) * ld_qkv * sizeof(float);
        for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(block + off, 0, 2);
        for (int h = 0; h < num_heads; ++h) head(thread, int(s), h);
      }
    });
  } else {
    // Few sequences: share out (sequence, head) pairs, dynamically (lengths differ).
    ParallelFor(pool, int64_t(num_seqs) * num_heads, 1,
                [&](int thread, int64_t begin, int64_t end) {
                  for (int64_t i = begin; i < end; ++i) {
                    head(thread, int(i / num_heads), int(i % num_heads));
                  }
                });
  }
}

}  // namespace orchid
