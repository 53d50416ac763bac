#include "backends/cpu/layer_norm.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/vec_math.h"
#include "backends/cpu/cpu_features.h"

namespace orchid {
namespace {

void LayerNormRowScalar(float* x, int dim, const float* gamma, const float* beta, float eps) {
  double sum = 0;
  for (int i = 0; i < dim; ++i) sum += x[i];
  const float mean = float(sum / dim);
  double sq = 0;
  for (int i = 0; i < dim; ++i) {
    const float d = x[i] - mean;
    sq += double(d) * d;
  }
  const float inv = 1.0f / std::sqrt(float(sq / dim) + eps);
  for (int i = 0; i < dim; ++i) x[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
}

#if ORCHID_HAVE_X86_SIMD
ORCHID_AVX2 void LayerNormRowAvx2(float* x, int dim, const float* gamma, const float* beta,
                                  float eps) {
  const int n8 = dim & ~7;
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n8; i += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + i));
  float sum = simd::HorizontalSum(acc);
  for (int i = n8; i < dim; ++i) sum += x[i];
  const float mean = sum / float(dim);
  const __m256 vmean = _mm256_set1_ps(mean);
  acc = _mm256_setzero_ps();
  for (int i = 0; i < n8; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vmean);
    acc = _mm256_fmadd_ps(d, d, acc);
  }
  float sq = simd::HorizontalSum(acc);
  for (int i = n8; i < dim; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.0f / std::sqrt(sq / float(dim) + eps);
  const __m256 vinv = _mm256_set1_ps(inv);
  for (int i = 0; i < n8; i += 8) {
    const __m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmean), vinv);
    _mm256_storeu_ps(x + i,
                     _mm256_fmadd_ps(d, _mm256_loadu_ps(gamma + i), _mm256_loadu_ps(beta + i)));
  }
  for (int i = n8; i < dim; ++i) x[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
}
#endif

void LayerNormRows(float* x, int rows, int dim, const float* gamma, const float* beta, float eps) {
#if ORCHID_HAVE_X86_SIMD
  if (UseAvx2()) {
    for (int r = 0; r < rows; ++r) LayerNormRowAvx2(x + size_t(r) * dim, dim, gamma, beta, eps);
    return;
  }
#endif
  for (int r = 0; r < rows; ++r) LayerNormRowScalar(x + size_t(r) * dim, dim, gamma, beta, eps);
}

}  // namespace

void LayerNorm(ThreadPool* pool, float* x, int rows, int dim, const float* gamma, const float* beta,
               float eps) {
  const int threads = PoolSize(pool);
  if (threads == 1 || rows < 8) return LayerNormRows(x, rows, dim, gamma, beta, eps);
  // A few chunks per thread, handed out dynamically: a thread the OS delays holds up little.
  const int64_t grain = std::max<int64_t>(8, rows / (4 * threads));
  ParallelFor(pool, rows, grain, [&](int, int64_t r0, int64_t r1) {
    LayerNormRows(x + r0 * dim, int(r1 - r0), dim, gamma, beta, eps);
  });
}

}  // namespace orchid
