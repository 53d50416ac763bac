// Pooling of per-token hidden states into one vector per sequence, over cu_seqlens:
// mean of the sequence's tokens, its first token (CLS), its last token, or sentence-transformers'
// max, mean-sqrt-len and weighted-mean modes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "backends/cpu/thread_pool.h"
#include "engine/ragged_batch.h"

namespace orchid {

// hidden: [cu_seqlens[num_seqs], dim]; out: [num_seqs, dim]. modes[s] must not be kNone
// (callers validate); sequences must be non-empty. skip (optional, [num_seqs]): the first
// skip[s] tokens of sequence s are left out of mean, max, mean-sqrt-len and weighted-mean
// pooling (sentence-transformers' include_prompt: false; weighted mean keeps each token's
// weight by its place in the whole sequence); when that leaves no token the row is zeros.
void Pool(const float* hidden, int dim, const int32_t* cu_seqlens, int num_seqs,
          const Pooling* modes, float* out, const int32_t* skip = nullptr);

// The rows Pool reads: a sequence's first token (CLS), its last (last token), or all of its
// tokens (mean; none). query_rows gets [begin, end) per sequence as positions inside it
// (2 * num_seqs ints, the form RaggedAttention takes), rows the token indices, in order.
// Returns whether that is fewer than all the tokens: a model's last layer then computes only
// those rows, since no other row of its output is read.
bool PooledRows(const RaggedBatch& batch, std::vector<int32_t>* query_rows,
                std::vector<int32_t>* rows);

}  // namespace orchid
