#include "backends/cpu/swiglu.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "backends/cpu/vec_math.h"

namespace orchid {
namespace {

void SwiGluRowScalar(const float* g, const float* u, int dim, float* o) {
  for (int i = 0; i < dim; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

#if ORCHID_HAVE_X86_SIMD
// silu(g) * u with simd::Exp (1-2 ulp; its clamp keeps exp(-g) finite, so a very negative g
// gives a tiny quotient rather than 0 / inf).
ORCHID_AVX2 void SwiGluRowAvx2(const float* g, const float* u, int dim, float* o) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 zero = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= dim; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 e = simd::Exp(_mm256_sub_ps(zero, gv));
    const __m256 silu = _mm256_div_ps(gv, _mm256_add_ps(one, e));
    _mm256_storeu_ps(o + i, _mm256_mul_ps(silu, _mm256_loadu_ps(u + i)));
  }
  SwiGluRowScalar(g + i, u + i, dim - i, o + i);
}
#endif

void GeluTanhGluRow(const float* g, const float* u, int dim, float* o) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int i = 0; i < dim; ++i) {
    const float x = g[i];
    o[i] = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x))) * u[i];
  }
}

void GeluGluRow(const float* g, const float* u, int dim, float* o) {
  for (int i = 0; i < dim; ++i) {
    const float x = g[i];
    o[i] = 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)) * u[i];
  }
}

void RunRows(ThreadPool* pool, const float* gate_up, int rows, int dim, float* out,
             void (*row)(const float*, const float*, int, float*)) {
  const int64_t grain = std::max<int64_t>(4, rows / (4 * PoolSize(pool)));
  ParallelFor(pool, rows, grain, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* g = gate_up + size_t(r) * 2 * size_t(dim);
      row(g, g + dim, dim, out + size_t(r) * size_t(dim));
    }
  });
}

}  // namespace

void SwiGlu(ThreadPool* pool, const float* gate_up, int rows, int dim, float* out) {
  void (*row)(const float*, const float*, int, float*) = SwiGluRowScalar;
#if ORCHID_HAVE_X86_SIMD
  if (simd::HasAvx2Fma()) row = SwiGluRowAvx2;
#endif
  RunRows(pool, gate_up, rows, dim, out, row);
}

void GeluTanhGlu(ThreadPool* pool, const float* gate_up, int rows, int dim, float* out) {
  RunRows(pool, gate_up, rows, dim, out, GeluTanhGluRow);
}

void GeluGlu(ThreadPool* pool, const float* gate_up, int rows, int dim, float* out) {
  RunRows(pool, gate_up, rows, dim, out, GeluGluRow);
}

}  // namespace orchid
