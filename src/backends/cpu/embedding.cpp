#include "backends/cpu/embedding.h"

#include <cstring>

#include "backends/cpu/add.h"

namespace orchid {
namespace {

void LookupRows(const float* table, int dim, const int32_t* ids, int64_t begin, int64_t end,
                float* out, bool accumulate) {
  for (int64_t i = begin; i < end; ++i) {
    const float* src = table + size_t(ids == nullptr ? 0 : ids[i]) * dim;
    float* dst = out + size_t(i) * dim;
    if (accumulate) {
      Add(dst, src, size_t(dim));
    } else {
      std::memcpy(dst, src, sizeof(float) * dim);
    }
  }
}

}  // namespace

void EmbeddingLookup(ThreadPool* pool, const float* table, int dim, const int32_t* ids, int n,
                     float* out, bool accumulate) {
  if (PoolSize(pool) == 1 || n < 64) return LookupRows(table, dim, ids, 0, n, out, accumulate);
  ParallelFor(pool, n, 64, [&](int, int64_t b, int64_t e) {
    LookupRows(table, dim, ids, b, e, out, accumulate);
  });
}

}  // namespace orchid
