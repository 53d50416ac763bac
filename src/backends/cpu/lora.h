// Task adapters' low-rank deltas on the CPU (ops::Backend::LoraAdd): for each row t of a batch
// whose sequence runs adapter a, out[t] += (x[t] A_a^T) (scale B_a)^T, with x[t] the layer's
// input row, or A_a's column of token t's id for an embedding table. Rank 4 (jina-embeddings-v3)
// makes it ~r (n + k) multiply-adds a row beside the layer's n k: a fraction of a percent.
// Each row's delta is summed in a fixed order, so a row's result does not depend on its batch.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/thread_pool.h"
#include "ops/backend.h"

namespace orchid {

class LoraDelta {
 public:
  // Copies the parts (ops::LoraPart) of an [n, k] layer, or of a table of k rows and n columns.
  LoraDelta(const std::vector<ops::LoraPart>& parts, int n, int k, bool table);

  // Adds the deltas to out ([rows, n]) for rows [0, rows): in ([rows, k]) or, for a table,
  // ids ([rows]); seq_of_row[t] is the row's sequence, adapters[s] its adapter (0: none; empty
  // adapters: every row none, nothing to do).
  void Apply(ThreadPool* pool, const float* in, const int32_t* ids, int rows,
             const int32_t* seq_of_row, const std::vector<int32_t>& adapters, float* out) const;

 private:
  struct Part {
    int adapter = 0, row_offset = 0, rows = 0, rank = 0;
    std::vector<float> a;   // [rank, k]; a table's: [k, rank] (the id's row is gathered)
    std::vector<float> bt;  // [rank, rows]: B transposed, times the scale
  };
  int n_ = 0, k_ = 0;
  bool table_ = false;
  std::vector<Part> parts_;
};

}  // namespace orchid
