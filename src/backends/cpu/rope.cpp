#include "backends/cpu/rope.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace orchid {

void ApplyRope(ThreadPool* pool, float* x, int ld, int rows, int num_heads, int head_dim,
               const int32_t* positions, double theta, double inv_freq_divisor) {
  const int half = head_dim / 2;
  // transformers: inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), in fp32.
  // NTK-scaled GTE divides them, in fp32, by factor^(2/d).
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) {
    const float e = float(2 * i) / float(head_dim);
    inv_freq[size_t(i)] = 1.0f / std::pow(float(theta), e);
    if (inv_freq_divisor != 1.0) inv_freq[size_t(i)] /= float(inv_freq_divisor);
  }
  const int64_t grain = std::max<int64_t>(8, rows / (4 * PoolSize(pool)));
  ParallelFor(pool, rows, grain, [&](int, int64_t r0, int64_t r1) {
    std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    for (int64_t r = r0; r < r1; ++r) {
      const float pos = float(positions[r]);
      for (int i = 0; i < half; ++i) {
        const float angle = pos * inv_freq[size_t(i)];
        cs[size_t(i)] = std::cos(angle);
        sn[size_t(i)] = std::sin(angle);
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
