#include "backends/cpu/gelu.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/vec_math.h"
#include "backends/cpu/cpu_features.h"

namespace orchid {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;

void BiasGeluScalar(float* x, const float* bias, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float v = bias == nullptr ? x[i] : x[i] + bias[i];
    x[i] = 0.5f * v * (1.0f + std::erf(v * kInvSqrt2));
  }
}

#if ORCHID_HAVE_X86_SIMD
ORCHID_AVX2 void BiasGeluAvx2(float* x, const float* bias, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
    _mm256_storeu_ps(x + i, simd::Gelu(v));
  }
  if (i < n) {
    const __m256i mask = simd::TailMask(n - i);
    __m256 v = _mm256_maskload_ps(x + i, mask);
    if (bias != nullptr) v = _mm256_add_ps(v, _mm256_maskload_ps(bias + i, mask));
    _mm256_maskstore_ps(x + i, mask, simd::Gelu(v));
  }
}

ORCHID_AVX512 void BiasGeluAvx512(float* x, const float* bias, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    if (bias != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + i));
    _mm512_storeu_ps(x + i, simd::Gelu(v));
  }
  if (i < n) {
    const __mmask16 mask = simd::TailMask16(n - i);
    __m512 v = _mm512_maskz_loadu_ps(mask, x + i);
    if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, bias + i));
    _mm512_mask_storeu_ps(x + i, mask, simd::Gelu(v));
  }
}
#endif

}  // namespace

void BiasGelu(float* x, const float* bias, size_t n) {
#if ORCHID_HAVE_X86_SIMD
  if (UseAvx512()) return BiasGeluAvx512(x, bias, n);
  if (UseAvx2()) return BiasGeluAvx2(x, bias, n);
#endif
  BiasGeluScalar(x, bias, n);
}

void Gelu(ThreadPool* pool, float* x, size_t n) {
  const int threads = PoolSize(pool);
  if (threads == 1 || n < 4096) return BiasGelu(x, nullptr, n);
  const int64_t grain = std::max<int64_t>(4096, int64_t(n) / (4 * threads)) / 16 * 16;
  ParallelFor(pool, int64_t(n), grain,
              [&](int, int64_t b, int64_t e) { BiasGelu(x + b, nullptr, size_t(e - b)); });
}

}  // namespace orchid
