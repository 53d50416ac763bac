#include "engine/cpu/pooling.h"

#include <cstring>

namespace orchid {

void Pool(const float* hidden, int dim, const int32_t* cu_seqlens, int num_seqs,
          const Pooling* modes, float* out) {
  for (int s = 0; s < num_seqs; ++s) {
    const int begin = cu_seqlens[s], end = cu_seqlens[s + 1];
    float* dst = out + size_t(s) * dim;
    switch (modes[s]) {
      case Pooling::kCls:
        std::memcpy(dst, hidden + size_t(begin) * dim, sizeof(float) * dim);
        break;
      case Pooling::kLastToken:
        std::memcpy(dst, hidden + size_t(end - 1) * dim, sizeof(float) * dim);
        break;
      case Pooling::kMean:
      case Pooling::kNone: {
        // Summed in double: long sequences otherwise lose low bits of small components.
        for (int d = 0; d < dim; ++d) dst[d] = 0;
        constexpr int kChunk = 64;
        double acc[kChunk];
        for (int d0 = 0; d0 < dim; d0 += kChunk) {
          const int w = dim - d0 < kChunk ? dim - d0 : kChunk;
          for (int d = 0; d < w; ++d) acc[d] = 0;
          for (int t = begin; t < end; ++t) {
            const float* row = hidden + size_t(t) * dim + d0;
            for (int d = 0; d < w; ++d) acc[d] += row[d];
          }
          const double inv = 1.0 / double(end - begin);
          for (int d = 0; d < w; ++d) dst[d0 + d] = float(acc[d] * inv);
        }
        break;
      }
    }
  }
}

}  // namespace orchid
