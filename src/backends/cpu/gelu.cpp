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

// x sigmoid(k1 x + k3 x^3).
void SigmoidGeluScalar(float* x, size_t n, float k1, float k3) {
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float z = v * (k1 + k3 * v * v);
    x[i] = v / (1.0f + std::exp(-z));
  }
}

#if ORCHID_HAVE_X86_SIMD
ORCHID_AVX2 inline __m256 SigmoidGelu8(__m256 v, __m256 k1, __m256 k3) {
  const __m256 z = _mm256_mul_ps(v, _mm256_fmadd_ps(k3, _mm256_mul_ps(v, v), k1));
  const __m256 e = simd::Exp(_mm256_sub_ps(_mm256_setzero_ps(), z));
  return _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

ORCHID_AVX2 void SigmoidGeluAvx2(float* x, size_t n, float k1, float k3) {
  const __m256 a = _mm256_set1_ps(k1), c = _mm256_set1_ps(k3);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, SigmoidGelu8(_mm256_loadu_ps(x + i), a, c));
  if (i < n) {
    const __m256i mask = simd::TailMask(n - i);
    _mm256_maskstore_ps(x + i, mask, SigmoidGelu8(_mm256_maskload_ps(x + i, mask), a, c));
  }
}

ORCHID_AVX512 inline __m512 SigmoidGelu16(__m512 v, __m512 k1, __m512 k3) {
  const __m512 z = _mm512_mul_ps(v, _mm512_fmadd_ps(k3, _mm512_mul_ps(v, v), k1));
  const __m512 e = simd::Exp(_mm512_sub_ps(_mm512_setzero_ps(), z));
  return _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

ORCHID_AVX512 void SigmoidGeluAvx512(float* x, size_t n, float k1, float k3) {
  const __m512 a = _mm512_set1_ps(k1), c = _mm512_set1_ps(k3);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(x + i, SigmoidGelu16(_mm512_loadu_ps(x + i), a, c));
  }
  if (i < n) {
    const __mmask16 mask = simd::TailMask16(n - i);
    _mm512_mask_storeu_ps(x + i, mask, SigmoidGelu16(_mm512_maskz_loadu_ps(mask, x + i), a, c));
  }
}
#endif

void SigmoidGelu(float* x, size_t n, float k1, float k3) {
#if ORCHID_HAVE_X86_SIMD
  if (UseAvx512()) return SigmoidGeluAvx512(x, n, k1, k3);
  if (UseAvx2()) return SigmoidGeluAvx2(x, n, k1, k3);
#endif
  SigmoidGeluScalar(x, n, k1, k3);
}

void SigmoidGelu(ThreadPool* pool, float* x, size_t n, float k1, float k3) {
  const int threads = PoolSize(pool);
  if (threads == 1 || n < 4096) return SigmoidGelu(x, n, k1, k3);
  const int64_t grain = std::max<int64_t>(4096, int64_t(n) / (4 * threads)) / 16 * 16;
  ParallelFor(pool, int64_t(n), grain,
              [&](int, int64_t b, int64_t e) { SigmoidGelu(x + b, size_t(e - b), k1, k3); });
}

}  // namespace

void QuickGelu(ThreadPool* pool, float* x, size_t n) { SigmoidGelu(pool, x, n, 1.702f, 0.0f); }

void GeluTanh(ThreadPool* pool, float* x, size_t n) {
  constexpr float k = 2.0f * 0.7978845608028654f;  // 2 sqrt(2 / pi)
  SigmoidGelu(pool, x, n, k, k * 0.044715f);
}

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
