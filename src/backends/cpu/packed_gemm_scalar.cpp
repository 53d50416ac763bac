// The packed GEMM's tiles in plain C++ (packed_gemm_tiles.h): any CPU.
#include <cmath>

#include "backends/cpu/packed_gemm_tiles.h"

namespace orchid::tiles {
namespace {

// Row y's columns [16 p, 16 p + cols) = epilogue(alpha * acc + bias).
void StoreScalar(const float (&acc)[kPanel], int cols, float alpha, const float* bias, float* y,
                 Epilogue epilogue, int p) {
  float* yr = y + p * kPanel;
  for (int c = 0; c < cols; ++c) {
    float v = alpha * acc[c] + (bias ? bias[p * kPanel + c] : 0.0f);
    if (epilogue == Epilogue::kAccumulate) v += yr[c];
    if (epilogue == Epilogue::kGelu) v = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    yr[c] = v;
  }
}

}  // namespace

void TilesScalar(const Job& j, int r0, int r1, int p0, int p1) {
  const int k = j.w.k, n = j.w.n;
  for (int p = p0; p < p1; ++p) {
    const float* wp = j.w.panel(p);
    const int cols = std::min(kPanel, n - p * kPanel);
    for (int r = r0; r < r1; ++r) {
      float acc[kPanel] = {};
      const float* xr = j.x + size_t(r) * j.ldx;
      for (int i = 0; i < k; ++i) {
        for (int c = 0; c < kPanel; ++c) acc[c] += xr[i] * wp[size_t(i) * kPanel + c];
      }
      StoreScalar(acc, cols, j.alpha, j.bias, j.y + size_t(r) * j.ldy, j.epilogue, p);
    }
  }
}

void TilesScalarBf16(const Bf16Job& j, int r0, int r1, int p0, int p1) {
  const int pairs = j.w.pairs(), n = j.w.n;
  for (int p = p0; p < p1; ++p) {
    const bf16* wp = j.w.panel(p);
    const int cols = std::min(kPanel, n - p * kPanel);
    for (int r = r0; r < r1; ++r) {
      float acc[kPanel] = {};
      const bf16* xr = j.x + size_t(r) * j.ldx;
      for (int i = 0; i < pairs; ++i) {
        // Whole pairs as 32-bit words (as the SIMD kernels read them): GCC 12 at -O3
        // mis-vectorized the element-wise form of this loop (wrong sums, seen on odd and even k).
        const uint32_t xp = LoadPair(xr + 2 * size_t(i));
        const float x0 = WordLow(xp), x1 = WordHigh(xp);
        const bf16* wi = wp + size_t(i) * 2 * kPanel;
        for (int c = 0; c < kPanel; ++c) {
          const uint32_t wpair = LoadPair(wi + 2 * c);
          acc[c] += x1 * WordHigh(wpair);
          acc[c] += x0 * WordLow(wpair);
        }
      }
      StoreScalar(acc, cols, 1.0f, j.bias, j.y + size_t(r) * j.ldy, j.epilogue, p);
    }
  }
}

}  // namespace orchid::tiles
