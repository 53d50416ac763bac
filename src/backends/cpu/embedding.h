// Embedding lookup: rows of a table selected by ids, copied or added into an output.
#pragma once

#include <cstdint>

#include "backends/cpu/thread_pool.h"

namespace orchid {

// out[i] (+)= table[ids[i]] for i < n; table is [rows, dim]. ids must be valid (callers
// validate them against the table size first). ids == nullptr means id 0 for every row.
void EmbeddingLookup(ThreadPool* pool, const float* table, int dim, const int32_t* ids, int n,
                     float* out, bool accumulate);

}  // namespace orchid
