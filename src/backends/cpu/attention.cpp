#include "backends/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/packed_gemm.h"
#include "backends/cpu/softmax.h"

namespace orchid {
namespace {

// Query rows per block: each block runs from Q K^T to P V before the next, so the scratch holds
// one block's scores (and P), not a whole head's: about 128 KB of fp32 scores (half an L2 on
// the smallest cores served, leaving room for K, V and P), at least 16 rows (whole tiles of the
// packed kernel). A causal block is 64 rows, which also bounds the keys it multiplies.
constexpr int kCausalBlock = 64;
int RowBlock(int len, bool causal) {
  if (causal) return kCausalBlock;
  constexpr int kScoreFloats = 32 * 1024;
  return std::max(16, kScoreFloats / std::max(len, 1) / 16 * 16);
}

}  // namespace

void RaggedAttention(ThreadPool* pool, const float* qkv, const int32_t* cu_seqlens, int num_seqs,
                     const AttentionShape& shape, float* out, Buffer<float>* scratch,
                     const int32_t* query_rows) {
  if (num_seqs <= 0) return;
  const int num_heads = shape.num_heads, head_dim = shape.head_dim;
  const int group = num_heads / shape.num_kv_heads;  // query heads per key/value head
  const int hidden = num_heads * head_dim;
  const int kv_width = shape.num_kv_heads * head_dim;
  const int ld_qkv = hidden + 2 * kv_width;
  const bool causal = shape.causal;
  int max_len = 0;
  int max_block = 0;        // the most rows of a block
  size_t block_scores = 0;  // the largest block of scores: rows x keys
  for (int s = 0; s < num_seqs; ++s) {
    const int len = cu_seqlens[s + 1] - cu_seqlens[s];
    const int rows = std::min(len, RowBlock(len, causal));
    max_len = std::max(max_len, len);
    max_block = std::max(max_block, rows);
    block_scores = std::max(block_scores, size_t(rows) * size_t(len));
  }
  // Per thread: one block's scores, the packed K and V of one key/value head, one block's Q
  // rows copied together, and DeBERTa's content-to-position (one block) and position-to-content
  // (every key) products.
  auto round16 = [](size_t n) { return (n + 15) / 16 * 16; };
  const size_t scores_size = round16(block_scores);
  const size_t k_size = round16(PackedSize(max_len, head_dim));
  const size_t v_size = round16(PackedSize(head_dim, max_len));
  const size_t q_size = round16(size_t(max_block) * size_t(head_dim));
  // DeBERTa: the table rows [pos_lo, pos_lo + pos_cols) the batch's distances reach.
  const bool disentangled = shape.pos_key != nullptr || shape.pos_query != nullptr;
  const int pos_lo = disentangled ? shape.pos_index[0] : 0;
  const int pos_cols = disentangled ? shape.pos_index[2 * max_len - 2] - pos_lo + 1 : 0;
  const size_t c2p_size = round16(size_t(max_block) * size_t(pos_cols));
  const size_t p2c_size = round16(size_t(max_len) * size_t(pos_cols));
  const size_t stride = scores_size + k_size + v_size + q_size + c2p_size + p2c_size;
  const int threads = PoolSize(pool);
  scratch->Reserve(stride * size_t(threads));
  const float scale = shape.scale > 0 ? shape.scale : 1.0f / std::sqrt(float(head_dim));
  const int window = shape.window;
  // Softmax of row i over its keys [0, keys) (causal: [0, i]); with a sliding window only the
  // keys inside it, the rest set to exact zeros.
  auto softmax_row = [&](float* r, int i, int keys) {
    int lo = 0, hi = causal ? i + 1 : keys;
    if (window > 0) {
      lo = std::max(0, i - window + 1);
      if (!causal) hi = std::min(keys, i + window);
      lo = std::min(lo, hi);  // a query past the attended keys' window sees none: zeros
    }
    std::fill(r, r + lo, 0.0f);
    SoftmaxRows(r + lo, 1, hi - lo, hi - lo);
    std::fill(r + hi, r + keys, 0.0f);
  };
  // Relative position bias on query rows [r0, r1) of head h (their scores from `block`, ld
  // apart), keys [0, keys) of each.
  const int bias_stride = 2 * shape.span - 1;
  auto add_bias = [&](int h, float* block, int ld, int r0, int r1, int keys) {
    if (shape.relative_bias == nullptr) return;
    const float* b = shape.relative_bias + size_t(h) * size_t(bias_stride) + (shape.span - 1);
    for (int i = r0; i < r1; ++i) {
      float* r = block + size_t(i - r0) * ld;
      const float* bi = b - i;  // bi[j] = bias of j - i
      const int n = std::min(keys, causal ? i + 1 : keys);
      for (int j = 0; j < n; ++j) r[j] += bi[j];
    }
  };
  // DeBERTa's disentangled terms of head h: position_to_content over every key of the sequence
  // (k: its K rows, ld_qkv apart) once per head into p2c, then per block of query rows [r0, r1)
  // (q_in: the head's Q rows) content_to_position into c2p and both added to the block's scores.
  const size_t table_stride = size_t(hidden);
  auto position_to_content = [&](int h, const float* k, int len, float* p2c) {
    if (shape.pos_query == nullptr) return;
    Gemm(false, true, len, pos_cols, head_dim, 1.0f, k, ld_qkv,
         shape.pos_query + size_t(pos_lo) * table_stride + size_t(h) * head_dim, hidden, 0.0f, p2c,
         pos_cols);
  };
  auto add_disentangled = [&](int h, const float* q_in, int len, float* block, int ld, int r0,
                              int r1, float* c2p, const float* p2c) {
    if (shape.pos_key != nullptr) {
      Gemm(false, true, r1 - r0, pos_cols, head_dim, 1.0f, q_in + size_t(r0) * ld_qkv, ld_qkv,
           shape.pos_key + size_t(pos_lo) * table_stride + size_t(h) * head_dim, hidden, 0.0f, c2p,
           pos_cols);
    }
    for (int i = r0; i < r1; ++i) {
      float* r = block + size_t(i - r0) * ld;
      const int32_t* index = shape.pos_index + (i + max_len - 1);  // index[-j]: i - j
      const float* c = c2p + size_t(i - r0) * pos_cols;
      for (int j = 0; j < len; ++j) {
        const int u = index[-j] - pos_lo;
        float add = 0.0f;
        if (shape.pos_key != nullptr) add += c[u];
        if (shape.pos_query != nullptr) add += p2c[size_t(j) * pos_cols + size_t(u)];
        r[j] += add;
      }
    }
  };

  // Sequence s, key/value head g, and query heads [h0, h1) of those that read it (g * group to
  // (g + 1) * group): K and V are packed once for all of them. Each query head's rows go in
  // blocks (RowBlock), each block from Q K^T to P V before the next; every buffer below holds
  // one block's rows, indexed from the block's first.
  const bool half = shape.bf16 && !shape.blas;
  auto kv_head = [&](int thread, int s, int g, int h0, int h1) {
    thread_local std::vector<bf16> kb, vb, qb, pb;  // bf16: packed K, V^T; a block's Q and P
    float* scores = scratch->data() + stride * size_t(thread);
    float* k_packed = scores + scores_size;
    float* v_packed = k_packed + k_size;
    float* q_rows = v_packed + v_size;
    float* c2p = q_rows + q_size;
    float* p2c = c2p + c2p_size;
    const int start = cu_seqlens[s], len = cu_seqlens[s + 1] - start;
    // Keys [0, kv) only (RaggedBatch::attend_lens); the rows' other scores become exact zeros.
    const int kv = shape.key_lens != nullptr && shape.key_lens[s] > 0 ? shape.key_lens[s] : len;
    // The query rows [q0, q1) of the sequence that are wanted; the keys and values are all of it.
    const int q0 = query_rows != nullptr ? query_rows[2 * s] : 0;
    const int q1 = query_rows != nullptr ? query_rows[2 * s + 1] : len;
    const int block = RowBlock(len, causal);
    const float* row = qkv + size_t(start) * ld_qkv;
    const float* k = row + hidden + size_t(g) * head_dim;
    const float* v = row + hidden + kv_width + size_t(g) * head_dim;
    const int ldqb = 2 * ((head_dim + 1) / 2), ldp = 2 * ((len + 1) / 2);
    if (half) {
      // K as the "weight" rows of Q K^T, V^T's rows (V's columns) as those of P V, in bfloat16.
      kb.resize(PackedSizeBf16(len, head_dim) + 1);
      vb.resize(PackedSizeBf16(head_dim, len) + 1);
      qb.resize(size_t(std::min(block, len)) * size_t(ldqb) + 1);
      pb.resize(size_t(std::min(block, len)) * size_t(ldp) + 1);
      PackRowsBf16(k, len, head_dim, ld_qkv, kb.data());
      PackColumnsBf16(v, head_dim, len, ld_qkv, vb.data());
    } else if (!shape.blas) {
      PackRows(k, len, head_dim, ld_qkv, k_packed);
      PackColumns(v, head_dim, len, ld_qkv, v_packed);
    }
    // bfloat16 products without a bias between them and softmax: the scale is applied inside
    // SoftmaxRowsToBf16, which writes P in bfloat16 itself (the same bits, two passes fewer).
    const bool fused =
        half && window == 0 && kv == len && shape.relative_bias == nullptr && !disentangled;
    for (int h = h0; h < h1; ++h) {
      const float* q_in = row + size_t(h) * head_dim;
      float* o = out + size_t(start) * hidden + size_t(h) * head_dim;
      position_to_content(h, k, len, p2c);
      // Scores of query rows [r0, r1) over the first key_panels panels of keys (K's rows are the
      // "weight" rows), into `scores` from its first row. The rows of Q are converted to
      // bfloat16 (padded to an even width with a zero), or in fp32 copied next to each other
      // (in place they are ld_qkv floats apart, a large power-of-two multiple: every row falls
      // in the same few cache sets; Q K^T re-reads them for every panel of keys, and from the
      // copy it ran ~20% faster: one 512-token head, head_dim 128, AVX2).
      auto qk = [&](int r0, int r1, int key_panels) {
        const float* q_block = q_in + size_t(r0) * ld_qkv;
        if (shape.blas) {  // exactly the keys the rows see (causal: [0, r1))
          Gemm(false, true, r1 - r0, causal ? r1 : kv, head_dim, scale, q_block, ld_qkv, k, ld_qkv,
               0.0f, scores, len);
          return;
        }
        if (!half) {
          for (int i = 0; i < r1 - r0; ++i) {
            std::copy(q_block + size_t(i) * ld_qkv, q_block + size_t(i) * ld_qkv + head_dim,
                      q_rows + size_t(i) * head_dim);
          }
          PackedGemmTiles(q_rows, head_dim, PanelView{k_packed, len, head_dim}, scale, nullptr,
                          scores, len, Epilogue::kNone, 0, r1 - r0, 0, key_panels);
          return;
        }
        ConvertRowsBf16(q_block, ld_qkv, head_dim, qb.data(), ldqb, 0, r1 - r0);
        PackedGemmTilesBf16(qb.data(), ldqb, Bf16PanelView{kb.data(), len, head_dim}, nullptr,
                            scores, len, Epilogue::kNone, 0, r1 - r0, 0, key_panels);
        if (fused) return;
        const int keys = std::min(len, key_panels * kPanelWidth);
        for (int i = 0; i < r1 - r0; ++i) {
          float* r = scores + size_t(i) * len;
          for (int j = 0; j < keys; ++j) r[j] *= scale;
        }
      };
      // out[r0, r1) = P V over the first `keys` keys, P the block's rows (V [len, d] holds the
      // weight W = V^T column by column). Fewer than len keys: each 16-wide panel of V^T is
      // [len][16] ([pairs][16][2] in bfloat16), so its first rows are the panel of the
      // truncated product.
      auto pv = [&](int r0, int r1, int keys) {
        float* o_block = o + size_t(r0) * hidden;
        const int rows = r1 - r0;
        if (shape.blas) {
          Gemm(false, false, rows, head_dim, keys, 1.0f, scores, len, v, ld_qkv, 0.0f, o_block,
               hidden);
          return;
        }
        if (half) {  // P's first `keys` columns (a zero after an odd count)
          if (!fused) ConvertRowsBf16(scores, len, keys, pb.data(), ldp, 0, rows);
          const Bf16PanelView vt{vb.data(), head_dim, len};
          if (keys == len) {
            PackedGemmTilesBf16(pb.data(), ldp, vt, nullptr, o_block, hidden, Epilogue::kNone, 0,
                                rows, 0, vt.panels());
            return;
          }
          for (int p = 0; p < vt.panels(); ++p) {
            const Bf16PanelView panel{vt.panel(p),
                                      std::min(kPanelWidth, head_dim - p * kPanelWidth), keys};
            PackedGemmTilesBf16(pb.data(), ldp, panel, nullptr, o_block + p * kPanelWidth, hidden,
                                Epilogue::kNone, 0, rows, 0, 1);
          }
          return;
        }
        const PanelView vt{v_packed, head_dim, len};
        if (keys == len) {
          PackedGemmTiles(scores, len, vt, 1.0f, nullptr, o_block, hidden, Epilogue::kNone, 0, rows,
                          0, vt.panels());
          return;
        }
        for (int p = 0; p < vt.panels(); ++p) {
          const PanelView panel{vt.panel(p), std::min(kPanelWidth, head_dim - p * kPanelWidth),
                                keys};
          PackedGemmTiles(scores, len, panel, 1.0f, nullptr, o_block + p * kPanelWidth, hidden,
                          Epilogue::kNone, 0, rows, 0, 1);
        }
      };
      for (int r0 = q0; r0 < q1; r0 += block) {
        const int r1 = std::min(q1, r0 + block);
        if (!causal) {
          qk(r0, r1, (len + kPanelWidth - 1) / kPanelWidth);
          add_bias(h, scores, len, r0, r1, len);
          if (disentangled) add_disentangled(h, q_in, len, scores, len, r0, r1, c2p, p2c);
          if (fused) {
            SoftmaxRowsToBf16(scores, r1 - r0, len, len, scale, pb.data(), ldp);
          } else if (window > 0 || kv < len) {
            for (int i = r0; i < r1; ++i) softmax_row(scores + size_t(i - r0) * len, i, kv);
          } else {
            SoftmaxRows(scores, r1 - r0, len, len);
          }
          pv(r0, r1, kv);
          continue;
        }
        // Causal: rows [r0, r1) only see keys [0, r1), so each block of rows multiplies only
        // that much of K and V (about half the work of the full products). Row i keeps columns
        // 0..i; the masked ones become exact zeros, as softmax of -inf, and add nothing to P V
        // (which is also why a row's result does not depend on where its block ends: the extra
        // keys of a longer block add exact zeros after the row's own sum).
        const int key_panels = (r1 + kPanelWidth - 1) / kPanelWidth;
        const int keys = shape.blas ? r1 : std::min(len, key_panels * kPanelWidth);
        qk(r0, r1, key_panels);
        add_bias(h, scores, len, r0, r1, keys);
        for (int i = r0; i < r1; ++i) {
          float* r = scores + size_t(i - r0) * len;
          if (!fused) {
            softmax_row(r, i, keys);
            continue;
          }
          // P's row i: keys [0, i] from the softmax, zeros up to r1 (and the pad after an odd r1).
          bf16* p = pb.data() + size_t(i - r0) * ldp;
          SoftmaxRowsToBf16(r, 1, i + 1, len, scale, p, ldp);
          std::fill(p + i + 1, p + r1 + (r1 % 2), bf16(0));
        }
        pv(r0, r1, r1);
      }
    }
  };

  // Whole sequences per thread when they share out evenly: every thread gets the same number,
  // or so many that the last round's idle threads cost little. Otherwise smaller units (below):
  // 5 sequences of 512 tokens on 2 threads left one thread idle for a sixth of attention, and
  // the units made a MiniLM-sized cross-encoder 3% faster at 5 x 512 (alternating runs, Zen 3);
  // where sequences share out evenly, whole sequences stay: at 8 x 512, XLM-R-base ran 6%
  // slower on the units.
  const bool whole_sequences =
      num_seqs >= 2 * threads && (num_seqs % threads == 0 || num_seqs >= 8 * threads);
  if (whole_sequences) {
    // Enough sequences to share out whole: each thread takes a sequence and runs its heads.
    // A head reads a few cache lines from each of the sequence's rows, thousands of bytes
    // apart, which the hardware prefetchers do not follow; one sequential sweep over the
    // sequence's rows first brings them all into L2 at streaming speed.
    ParallelFor(pool, num_seqs, 1, [&](int thread, int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        const char* block = reinterpret_cast<const char*>(qkv + size_t(cu_seqlens[s]) * ld_qkv);
        const size_t bytes = size_t(cu_seqlens[s + 1] - cu_seqlens[s]) * ld_qkv * sizeof(float);
        for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(block + off, 0, 2);
        for (int g = 0; g < shape.num_kv_heads; ++g) {
          kv_head(thread, int(s), g, g * group, (g + 1) * group);
        }
      }
    });
  } else {
    // Few sequences: share out (sequence, key/value head) pairs, dynamically (lengths differ);
    // or (sequence, query head) pairs, each packing its own K and V, when the former are too few
    // to keep every thread busy.
    const int per_unit = int64_t(num_seqs) * shape.num_kv_heads >= 2 * threads ? group : 1;
    const int units_per_seq = num_heads / per_unit;
    ParallelFor(pool, int64_t(num_seqs) * units_per_seq, 1,
                [&](int thread, int64_t begin, int64_t end) {
                  for (int64_t i = begin; i < end; ++i) {
                    const int h0 = int(i % units_per_seq) * per_unit;
                    kv_head(thread, int(i / units_per_seq), h0 / group, h0, h0 + per_unit);
                  }
                });
  }
}

}  // namespace orchid
