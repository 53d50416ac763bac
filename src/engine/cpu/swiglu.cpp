#include "engine/cpu/swiglu.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace orchid {

void SwiGlu(ThreadPool* pool, const float* gate_up, int rows, int dim, float* out) {
  const int64_t grain = std::max<int64_t>(4, rows / (4 * PoolSize(pool)));
  ParallelFor(pool, rows, grain, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* g = gate_up + size_t(r) * 2 * size_t(dim);
      const float* u = g + dim;
      float* o = out + size_t(r) * size_t(dim);
      for (int i = 0; i < dim; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    }
  });
}

}  // namespace orchid
