#include "backends/cpu/softmax.h"

#include <cmath>

#include "backends/cpu/packed_gemm.h"
#include "backends/cpu/vec_math.h"
#include "backends/cpu/cpu_features.h"

namespace orchid {
namespace {

void SoftmaxRowScalar(float* x, int n) {
  float mx = x[0];
  for (int i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  float sum = 0;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

#if ORCHID_HAVE_X86_SIMD
ORCHID_AVX2 void SoftmaxRowAvx2(float* x, int n) {
  const int n8 = n & ~7;
  float mx = x[0];
  if (n8 > 0) {
    __m256 vmax = _mm256_loadu_ps(x);
    for (int i = 8; i < n8; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
    mx = simd::HorizontalMax(vmax);
  }
  for (int i = n8; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  const __m256 vmx = _mm256_set1_ps(mx);
  __m256 vsum = _mm256_setzero_ps();
  for (int i = 0; i < n8; i += 8) {
    const __m256 e = simd::Exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx));
    _mm256_storeu_ps(x + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  if (n8 < n) {
    const __m256i mask = simd::TailMask(size_t(n - n8));
    // Masked-off lanes load 0; exp(0 - mx) is finite, and the blend keeps them out of the sum.
    const __m256 e = simd::Exp(_mm256_sub_ps(_mm256_maskload_ps(x + n8, mask), vmx));
    _mm256_maskstore_ps(x + n8, mask, e);
    vsum = _mm256_add_ps(vsum, _mm256_and_ps(e, _mm256_castsi256_ps(mask)));
  }
  const __m256 vinv = _mm256_set1_ps(1.0f / simd::HorizontalSum(vsum));
  for (int i = 0; i < n8; i += 8)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
  for (int i = n8; i < n; ++i) x[i] *= _mm256_cvtss_f32(vinv);
}

ORCHID_AVX512 void SoftmaxRowAvx512(float* x, int n) {
  const int n16 = n & ~15;
  const __mmask16 tail = simd::TailMask16(size_t(n - n16));
  const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
  __m512 vmax = _mm512_mask_loadu_ps(neg_inf, tail, x + n16);
  for (int i = 0; i < n16; i += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(x + i));
  const __m512 vmx = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
  __m512 vsum = _mm512_setzero_ps();
  for (int i = 0; i < n16; i += 16) {
    const __m512 e = simd::Exp(_mm512_sub_ps(_mm512_loadu_ps(x + i), vmx));
    _mm512_storeu_ps(x + i, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  if (tail) {
    const __m512 e = simd::Exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + n16), vmx));
    _mm512_mask_storeu_ps(x + n16, tail, e);
    vsum = _mm512_mask_add_ps(vsum, tail, vsum, e);
  }
  const __m512 vinv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
  for (int i = 0; i < n16; i += 16)
    _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), vinv));
  if (tail)
    _mm512_mask_storeu_ps(x + n16, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, x + n16), vinv));
}

// x * s rounded on its own: a plain _mm512_mul_ps feeding a subtraction may be contracted into
// one fused multiply-add (GCC's default -ffp-contract=fast), which rounds once and so differs
// from the separate steps this must reproduce.
ORCHID_AVX512 inline __m512 MulRounded(__m512 x, __m512 s) {
  return _mm512_mul_round_ps(x, s, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// SoftmaxRowAvx512 of x * scale, its products rounded to bfloat16 into out.
ORCHID_AVX512 void SoftmaxRowToBf16Avx512(float* x, int n, float scale, uint16_t* out) {
  const int n16 = n & ~15;
  const __mmask16 tail = simd::TailMask16(size_t(n - n16));
  const __m512 vscale = _mm512_set1_ps(scale), neg_inf = _mm512_set1_ps(-INFINITY);
  // max(x * scale) is max(x) * scale, rounding included (scale > 0; rounding is monotonic).
  __m512 vmax = _mm512_mask_loadu_ps(neg_inf, tail, x + n16);
  for (int i = 0; i < n16; i += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(x + i));
  const __m512 vmx = MulRounded(_mm512_set1_ps(_mm512_reduce_max_ps(vmax)), vscale);
  __m512 vsum = _mm512_setzero_ps();
  for (int i = 0; i < n16; i += 16) {
    const __m512 e = simd::Exp(_mm512_sub_ps(MulRounded(_mm512_loadu_ps(x + i), vscale), vmx));
    _mm512_storeu_ps(x + i, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  if (tail) {
    const __m512 e =
        simd::Exp(_mm512_sub_ps(MulRounded(_mm512_maskz_loadu_ps(tail, x + n16), vscale), vmx));
    _mm512_mask_storeu_ps(x + n16, tail, e);
    vsum = _mm512_mask_add_ps(vsum, tail, vsum, e);
  }
  const __m512 vinv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
  for (int i = 0; i < n16; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        simd::Bf16Round(_mm512_mul_ps(_mm512_loadu_ps(x + i), vinv)));
  }
  if (tail) {
    _mm256_mask_storeu_epi16(
        out + n16, tail,
        simd::Bf16Round(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, x + n16), vinv)));
  }
  if (n % 2 != 0) out[n] = 0;
}
#endif

}  // namespace

void SoftmaxRows(float* x, int rows, int cols, int ld) {
#if ORCHID_HAVE_X86_SIMD
  if (UseAvx512()) {
    for (int r = 0; r < rows; ++r) SoftmaxRowAvx512(x + size_t(r) * ld, cols);
    return;
  }
  if (UseAvx2()) {
    for (int r = 0; r < rows; ++r) SoftmaxRowAvx2(x + size_t(r) * ld, cols);
    return;
  }
#endif
  for (int r = 0; r < rows; ++r) SoftmaxRowScalar(x + size_t(r) * ld, cols);
}

void SoftmaxRowsToBf16(float* x, int rows, int cols, int ld, float scale, uint16_t* out,
                       int ld_out) {
#if ORCHID_HAVE_X86_SIMD
  if (UseAvx512()) {
    for (int r = 0; r < rows; ++r) {
      SoftmaxRowToBf16Avx512(x + size_t(r) * ld, cols, scale, out + size_t(r) * ld_out);
    }
    return;
  }
#endif
  for (int r = 0; r < rows; ++r) {
    float* xr = x + size_t(r) * ld;
    for (int i = 0; i < cols; ++i) xr[i] *= scale;
  }
  SoftmaxRows(x, rows, cols, ld);
  ConvertRowsBf16(x, ld, cols, out, ld_out, 0, rows);
}

}  // namespace orchid
