// Pooling of per-token hidden states into one vector per sequence, over cu_seqlens:
// mean of the sequence's tokens, its first token (CLS) or its last token.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "engine/cpu/thread_pool.h"
#include "engine/ragged_batch.h"

namespace orchid {

// hidden: [cu_seqlens[num_seqs], dim]; out: [num_seqs, dim]. modes[s] must not be kNone
// (callers validate); sequences must be non-empty.
void Pool(const float* hidden, int dim, const int32_t* cu_seqlens, int num_seqs,
          const Pooling* modes, float* out);

// The rows Pool reads: a sequence's first token (CLS), its last (last token), or all of its
// tokens (mean; none). query_rows gets [begin, end) per sequence as positions inside it
// (2 * num_seqs ints, the form RaggedAttention takes), rows the token indices, in order.
// Returns whether that is fewer than all the tokens: a model's last layer then computes only
// those rows, since no other row of its output is read.
bool PooledRows(const RaggedBatch& batch, std::vector<int32_t>* query_rows,
                std::vector<int32_t>* rows);

// A model's last layer on the pooled rows only. Attention computes just their query rows
// (query_rows()); Gather then copies their context and hidden rows together, the rest of the
// layer runs on those `size()` rows (every op after attention treats rows independently, so
// they come out bitwise as in the full layer), and Scatter writes them back into place.
class LastLayerRows {
 public:
  // Whether the batch's last layer can run on fewer rows than all (PooledRows).
  bool Plan(const RaggedBatch& batch) { return PooledRows(batch, &query_rows_, &rows_); }
  const int32_t* query_rows() const { return query_rows_.data(); }
  int size() const { return int(rows_.size()); }

  // The pooled rows of context [T, context_width] and hidden [T, hidden_width].
  void Gather(ThreadPool* pool, const float* context, int context_width, const float* hidden,
              int hidden_width);
  float* context() { return context_.data(); }
  float* hidden() { return hidden_.data(); }
  // hidden() back into its rows of the full states [T, hidden_width].
  void Scatter(int hidden_width, float* hidden) const;

 private:
  std::vector<int32_t> query_rows_, rows_;
  Buffer<float> context_, hidden_;
};

}  // namespace orchid
