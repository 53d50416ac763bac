#include "backends/cpu/rms_norm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace orchid {
namespace {

void RmsNormRow(const float* x, int dim, const float* w, float eps, float* y) {
  float sq = 0;
  for (int i = 0; i < dim; ++i) sq += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sq / float(dim) + eps);
  for (int i = 0; i < dim; ++i) y[i] = w[i] * (x[i] * inv);
}

int64_t Grain(ThreadPool* pool, int64_t rows) {
  return std::max<int64_t>(8, rows / (4 * PoolSize(pool)));
}

}  // namespace

void RmsNorm(ThreadPool* pool, const float* x, int ldx, int rows, int dim, const float* weight,
             float eps, float* y, int ldy) {
  ParallelFor(pool, rows, Grain(pool, rows), [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      RmsNormRow(x + size_t(r) * size_t(ldx), dim, weight, eps, y + size_t(r) * size_t(ldy));
    }
  });
}

void RmsNormHeads(ThreadPool* pool, float* x, int ld, int rows, int num_heads, int head_dim,
                  const float* weight, float eps) {
  ParallelFor(pool, rows, Grain(pool, rows), [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int h = 0; h < num_heads; ++h) {
        float* p = x + size_t(r) * size_t(ld) + size_t(h) * size_t(head_dim);
        RmsNormRow(p, head_dim, weight, eps, p);
      }
    }
  });
}

}  // namespace orchid
