#include "backends/cpu/rope.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace orchid {

void ApplyRope(ThreadPool* pool, float* x, int ld, int rows, int num_heads, int head_dim,
               const int32_t* positions, const float* inv_freq, float scale) {
  const int half = head_dim / 2;
  const int64_t grain = std::max<int64_t>(8, rows / (4 * PoolSize(pool)));
  ParallelFor(pool, rows, grain, [&](int, int64_t r0, int64_t r1) {
    std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    for (int64_t r = r0; r < r1; ++r) {
      const float pos = float(positions[r]);
      for (int i = 0; i < half; ++i) {
        const float angle = pos * inv_freq[i];
        cs[size_t(i)] = std::cos(angle);
        sn[size_t(i)] = std::sin(angle);
        if (scale != 1.0f) {  // transformers: cos = emb.cos() * attention_scaling (fp32)
          cs[size_t(i)] *= scale;
          sn[size_t(i)] *= scale;
        }
      }
      for (int h = 0; h < num_heads; ++h) {
        float* p = x + size_t(r) * size_t(ld) + size_t(h) * size_t(head_dim);
        for (int i = 0; i < half; ++i) {
          const float a = p[i], b = p[i + half];
          p[i] = a * cs[size_t(i)] - b * sn[size_t(i)];
          p[i + half] = b * cs[size_t(i)] + a * sn[size_t(i)];
        }
      }
    }
  });
}

}  // namespace orchid
