// Pooling of per-token hidden states into one vector per sequence, over cu_seqlens:
// mean of the sequence's tokens, its first token (CLS) or its last token.
#pragma once

#include <cstdint>

#include "engine/ragged_batch.h"

namespace orchid {

// hidden: [cu_seqlens[num_seqs], dim]; out: [num_seqs, dim]. modes[s] must not be kNone
// (callers validate); sequences must be non-empty.
void Pool(const float* hidden, int dim, const int32_t* cu_seqlens, int num_seqs,
          const Pooling* modes, float* out);

}  // namespace orchid
