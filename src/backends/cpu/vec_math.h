// SIMD building blocks for the CPU ops: AVX2+FMA exp and erf on 8 floats, horizontal sums. The
// build may target x86-64-v2, so every function here carries its own target attribute and is
// only called where the kernels' instruction set allows it (cpu_features.h: KernelIsa).
#pragma once

#include <cstddef>

#if defined(__x86_64__)
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_ps().
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#define ORCHID_HAVE_X86_SIMD 1
#define ORCHID_AVX2 __attribute__((target("avx2,fma")))
#define ORCHID_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))
#define ORCHID_AVX512BF16 \
  __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512bf16,avx2,fma")))
#else
#define ORCHID_HAVE_X86_SIMD 0
#endif

namespace orchid::simd {


#if ORCHID_HAVE_X86_SIMD

ORCHID_AVX2 inline float HorizontalSum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  __m128 sh = _mm_movehdup_ps(lo);
  lo = _mm_add_ps(lo, sh);
  sh = _mm_movehl_ps(sh, lo);
  return _mm_cvtss_f32(_mm_add_ss(lo, sh));
}

ORCHID_AVX2 inline float HorizontalMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// exp(x), Cephes-style: x = n ln2 + r, |r| <= ln2/2, degree-6 polynomial for e^r; about 1-2 ulp.
// Inputs below about -87.3 give 0.
ORCHID_AVX2 inline __m256 Exp(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.3762626647949f);
  const __m256 lo = _mm256_set1_ps(-88.3762626647949f);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  __m256 fx = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f));
  fx = _mm256_floor_ps(fx);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  __m256i n = _mm256_cvttps_epi32(fx);
  n = _mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(n));
}

// erf(x), Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7), the form PyTorch's vectorised
// CPU erf uses.
ORCHID_AVX2 inline __m256 Erf(__m256 x) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256 sign = _mm256_and_ps(x, sign_mask);
  const __m256 ax = _mm256_andnot_ps(sign_mask, x);
  const __m256 one = _mm256_set1_ps(1.0f);
  // 1 / d by rcp (12 bits) plus one Newton step (~23 bits); d >= 1, so no special cases.
  const __m256 d = _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), ax, one);
  __m256 t = _mm256_rcp_ps(d);
  t = _mm256_mul_ps(t, _mm256_fnmadd_ps(d, t, _mm256_set1_ps(2.0f)));
  __m256 r = _mm256_set1_ps(1.061405429f);
  r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(-1.453152027f));
  r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(1.421413741f));
  r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(-0.284496736f));
  r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(0.254829592f));
  r = _mm256_mul_ps(r, t);
  const __m256 e = Exp(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(ax, ax)));
  const __m256 y = _mm256_fnmadd_ps(r, e, one);
  return _mm256_or_ps(y, sign);
}

// Loads/stores of the first n (< 8) lanes, for loop tails.
ORCHID_AVX2 inline __m256i TailMask(size_t n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), idx);
}

// The same two functions on 16 floats.
ORCHID_AVX512 inline __m512 Exp(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.3762626647949f);
  const __m512 lo = _mm512_set1_ps(-88.3762626647949f);
  x = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
  __m512 fx = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f));
  fx = _mm512_roundscale_ps(fx, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), x);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
  // y 2^fx in one instruction (fx is already an integer); exact, as the exponent-bits form is,
  // except below 2^-126, where this gives the subnormal and that form gave 0.
  return _mm512_scalef_ps(y, fx);
}

ORCHID_AVX512 inline __m512 Erf(__m512 x) {
  const __m512 sign_mask = _mm512_set1_ps(-0.0f);
  const __m512 sign = _mm512_and_ps(x, sign_mask);
  const __m512 ax = _mm512_andnot_ps(sign_mask, x);
  const __m512 one = _mm512_set1_ps(1.0f);
  // 1 / d by rcp14 plus one Newton step (a full division is the slowest instruction here).
  const __m512 d = _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), ax, one);
  __m512 t = _mm512_rcp14_ps(d);
  t = _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, _mm512_set1_ps(2.0f)));
  __m512 r = _mm512_set1_ps(1.061405429f);
  r = _mm512_fmadd_ps(r, t, _mm512_set1_ps(-1.453152027f));
  r = _mm512_fmadd_ps(r, t, _mm512_set1_ps(1.421413741f));
  r = _mm512_fmadd_ps(r, t, _mm512_set1_ps(-0.284496736f));
  r = _mm512_fmadd_ps(r, t, _mm512_set1_ps(0.254829592f));
  r = _mm512_mul_ps(r, t);
  const __m512 e = Exp(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(ax, ax)));
  const __m512 y = _mm512_fnmadd_ps(r, e, one);
  return _mm512_or_ps(y, sign);
}

// GELU, exact form: x/2 * (1 + erf(x / sqrt(2))).
ORCHID_AVX2 inline __m256 Gelu(__m256 v) {
  const __m256 e = Erf(_mm256_mul_ps(v, _mm256_set1_ps(0.70710678118654752f)));
  return _mm256_mul_ps(_mm256_mul_ps(v, _mm256_set1_ps(0.5f)),
                       _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
}
ORCHID_AVX512 inline __m512 Gelu(__m512 v) {
  const __m512 e = Erf(_mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f)));
  return _mm512_mul_ps(_mm512_mul_ps(v, _mm512_set1_ps(0.5f)),
                       _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
}

// Mask of the first n (< 16) lanes.
inline __mmask16 TailMask16(size_t n) { return __mmask16((1u << n) - 1u); }

// 16 floats to bfloat16, rounding to nearest even, NaN quieted (the integer form of
// Bf16FromFloat in packed_gemm.h, so the same bits on every ISA).
ORCHID_AVX512 inline __m256i Bf16Round(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i top = _mm512_srli_epi32(u, 16);
  __m512i h = _mm512_srli_epi32(
      _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                           _mm512_and_si512(top, _mm512_set1_epi32(1)))),
      16);
  h = _mm512_mask_mov_epi32(h, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
                            _mm512_or_si512(top, _mm512_set1_epi32(0x40)));
  return _mm512_cvtepi32_epi16(h);
}

#endif  // ORCHID_HAVE_X86_SIMD

}  // namespace orchid::simd
