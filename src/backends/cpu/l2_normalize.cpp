#include "backends/cpu/l2_normalize.h"

#include <algorithm>
#include <cmath>

namespace orchid {

void L2Normalize(float* x, int rows, int dim, const uint8_t* mask) {
  for (int r = 0; r < rows; ++r) {
    if (mask != nullptr && mask[r] == 0) continue;
    float* row = x + size_t(r) * dim;
    double sq = 0;
    for (int d = 0; d < dim; ++d) sq += double(row[d]) * row[d];
    const float inv = float(1.0 / std::max(std::sqrt(sq), 1e-12));
    for (int d = 0; d < dim; ++d) row[d] *= inv;
  }
}

}  // namespace orchid
