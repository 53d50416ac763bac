// The packed GEMM's tiles on AVX-512 (packed_gemm_tiles.h): fp32 tiles of MB rows x PB panels
// (MB * PB accumulators), bfloat16 operands widened to fp32 (where vdpbf16ps is missing or
// slower: cpu_features.h), and the rounding of fp32 rows to bfloat16.
#include "backends/cpu/packed_gemm_tiles.h"

#if ORCHID_HAVE_X86_SIMD

namespace orchid::tiles {
namespace {

template <int MB, int PB>
ORCHID_NO_SANITIZE ORCHID_AVX512 inline void TileAvx512(const Job& j, int r, int p) {
  const int k = j.w.k;
  const size_t stride = size_t(k) * kPanel;
  const float* wp = j.w.panel(p);
  const float* x = j.x + size_t(r) * j.ldx;
  __m512 acc[MB][PB];
  for (int m = 0; m < MB; ++m) {
    for (int q = 0; q < PB; ++q) acc[m][q] = _mm512_setzero_ps();
  }
  for (int i = 0; i < k; ++i) {
    __m512 w[PB];
    for (int q = 0; q < PB; ++q) w[q] = _mm512_loadu_ps(wp + q * stride + size_t(i) * kPanel);
    for (int m = 0; m < MB; ++m) {
      const __m512 xv = _mm512_set1_ps(x[size_t(m) * j.ldx + i]);
      for (int q = 0; q < PB; ++q) acc[m][q] = _mm512_fmadd_ps(xv, w[q], acc[m][q]);
    }
  }
  StoreAvx512<MB, PB>(acc, j.w.n, j.alpha, j.bias, j.y, j.ldy, j.epilogue, r, p);
}

template <int MB>
ORCHID_AVX512 void PanelsAvx512(const Job& j, int r, int p, int pb) {
  switch (pb) {
    case 3:
      return TileAvx512<MB, 3>(j, r, p);
    case 2:
      return TileAvx512<MB, 2>(j, r, p);
    default:
      return TileAvx512<MB, 1>(j, r, p);
  }
}

}  // namespace

ORCHID_AVX512 void TilesAvx512(const Job& j, int r0, int r1, int p0, int p1) {
  // Panels outer: a group of 3 panels stays in L1/L2 while every row block uses it.
  for (int p = p0; p < p1; p += 3) {
    const int pb = std::min(3, p1 - p);
    RowTiles<8>(r0, r1, [&](auto mb, int r) { PanelsAvx512<decltype(mb)::value>(j, r, p, pb); });
  }
}

// ---- bfloat16 by fp32 FMAs, x widened once per call ----------------------------------------

namespace {

// MB rows x PB panels: the weights widened to fp32 (even and odd k of a pair), x broadcast from
// its rows as WidenRowsAvx2 widened them (row r at xf[(r - rb) * ldf]); two FMAs per pair, the
// odd element's first, as vdpbf16ps and the AVX2 tiles take them: the same sums, bit for bit.
// MB = 8, PB = 2: 16 accumulators, 4 widened weight vectors and 2 broadcasts.
template <int MB, int PB>
ORCHID_NO_SANITIZE ORCHID_AVX512 inline void TileBf16Widened(const Bf16Job& j, const float* xf,
                                                             int ldf, int r, int p) {
  const int pairs = j.w.pairs();
  const size_t stride = size_t(pairs) * 2 * kPanel;
  const bf16* wp = j.w.panel(p);
  const __m512i high = _mm512_set1_epi32(int(0xffff0000u));
  __m512 acc[MB][PB];
  for (int m = 0; m < MB; ++m) {
    for (int q = 0; q < PB; ++q) acc[m][q] = _mm512_setzero_ps();
  }
  for (int i = 0; i < pairs; ++i) {
    __m512 even[PB], odd[PB];
    for (int q = 0; q < PB; ++q) {
      const __m512i w = _mm512_loadu_si512(wp + q * stride + size_t(i) * 2 * kPanel);
      even[q] = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
      odd[q] = _mm512_castsi512_ps(_mm512_and_si512(w, high));
    }
    const float* xi = xf + 2 * size_t(i);
    for (int m = 0; m < MB; ++m) {
      const __m512 x1 = _mm512_set1_ps(xi[size_t(m) * size_t(ldf) + 1]);
      const __m512 x0 = _mm512_set1_ps(xi[size_t(m) * size_t(ldf)]);
      for (int q = 0; q < PB; ++q) {
        acc[m][q] = _mm512_fmadd_ps(x1, odd[q], acc[m][q]);
        acc[m][q] = _mm512_fmadd_ps(x0, even[q], acc[m][q]);
      }
    }
  }
  StoreAvx512<MB, PB>(acc, j.w.n, 1.0f, j.bias, j.y, j.ldy, j.epilogue, r, p);
}

}  // namespace

ORCHID_AVX512 void TilesBf16Widened(const Bf16Job& j, int r0, int r1, int p0, int p1) {
  ForEachWidenedPiece(j, r0, r1, [&](const float* xf, int ldf, int rb, int re) {
    for (int p = p0; p < p1; p += 2) {
      const bool two = p + 1 < p1;
      RowTiles<8>(rb, re, [&](auto mb, int r) {
        constexpr int MB = decltype(mb)::value;
        const float* xr = xf + size_t(r - rb) * size_t(ldf);
        if (two) {
          TileBf16Widened<MB, 2>(j, xr, ldf, r, p);
        } else {
          TileBf16Widened<MB, 1>(j, xr, ldf, r, p);
        }
      });
    }
  });
}

ORCHID_NO_SANITIZE ORCHID_AVX512 void ConvertRowsBf16Avx512(const float* x, int ldx, int k,
                                                            bf16* dst, int ld_dst, int r0, int r1) {
  for (int r = r0; r < r1; ++r) {
    const float* xr = x + size_t(r) * ldx;
    bf16* out = dst + size_t(r) * ld_dst;
    for (int i = 0; i < k; i += 16) {
      const __mmask16 mask = k - i >= 16 ? __mmask16(0xffff) : simd::TailMask16(size_t(k - i));
      _mm256_mask_storeu_epi16(out + i, mask, simd::Bf16Round(_mm512_maskz_loadu_ps(mask, xr + i)));
    }
    if (k % 2 != 0) out[k] = 0;
  }
}

}  // namespace orchid::tiles

#endif  // ORCHID_HAVE_X86_SIMD
