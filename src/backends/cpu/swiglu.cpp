#include "backends/cpu/swiglu.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "backends/cpu/vec_math.h"
#include "backends/cpu/cpu_features.h"

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

#if ORCHID_HAVE_X86_SIMD
// gelu_tanh(g) * u: tanh(y) = 1 - 2 / (e^(2y) + 1) with simd::Exp (clamped, so a large |y| gives
// +-1, not inf / inf).
ORCHID_AVX2 void GeluTanhGluRowAvx2(const float* g, const float* u, int dim, float* o) {
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
  const __m256 c0 = _mm256_set1_ps(0.7978845608028654f), c1 = _mm256_set1_ps(0.044715f);
  int i = 0;
  for (; i + 8 <= dim; i += 8) {
    const __m256 x = _mm256_loadu_ps(g + i);
    const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    const __m256 y = _mm256_mul_ps(c0, _mm256_fmadd_ps(c1, x3, x));
    const __m256 e = simd::Exp(_mm256_mul_ps(two, y));
    const __m256 t = _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(e, one)));
    const __m256 gelu = _mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_add_ps(one, t));
    _mm256_storeu_ps(o + i, _mm256_mul_ps(gelu, _mm256_loadu_ps(u + i)));
  }
  GeluTanhGluRow(g + i, u + i, dim - i, o + i);
}

// gelu(g) * u with simd::Gelu (exact, erf).
ORCHID_AVX2 void GeluGluRowAvx2(const float* g, const float* u, int dim, float* o) {
  int i = 0;
  for (; i + 8 <= dim; i += 8) {
    const __m256 gelu = simd::Gelu(_mm256_loadu_ps(g + i));
    _mm256_storeu_ps(o + i, _mm256_mul_ps(gelu, _mm256_loadu_ps(u + i)));
  }
  GeluGluRow(g + i, u + i, dim - i, o + i);
}
#endif

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
  if (UseAvx2()) row = SwiGluRowAvx2;
#endif
  RunRows(pool, gate_up, rows, dim, out, row);
}

void GeluTanhGlu(ThreadPool* pool, const float* gate_up, int rows, int dim, float* out) {
  void (*row)(const float*, const float*, int, float*) = GeluTanhGluRow;
#if ORCHID_HAVE_X86_SIMD
  if (UseAvx2()) row = GeluTanhGluRowAvx2;
#endif
  RunRows(pool, gate_up, rows, dim, out, row);
}

void GeluGlu(ThreadPool* pool, const float* gate_up, int rows, int dim, float* out) {
  void (*row)(const float*, const float*, int, float*) = GeluGluRow;
#if ORCHID_HAVE_X86_SIMD
  if (UseAvx2()) row = GeluGluRowAvx2;
#endif
  RunRows(pool, gate_up, rows, dim, out, row);
}

}  // namespace orchid
