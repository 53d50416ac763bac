// The packed GEMM's bfloat16 tiles on AVX512_BF16's vdpbf16ps (packed_gemm_tiles.h): MB rows x
// PB panels, two multiply-adds a lane per instruction, fp32 accumulation.
#include "backends/cpu/packed_gemm_tiles.h"

#if ORCHID_HAVE_X86_SIMD

namespace orchid::tiles {
namespace {

template <int MB, int PB>
ORCHID_NO_SANITIZE ORCHID_AVX512BF16 inline void TileBf16(const Bf16Job& j, int r, int p) {
  const int pairs = j.w.pairs();
  const size_t stride = size_t(pairs) * 2 * kPanel;
  const bf16* wp = j.w.panel(p);
  const bf16* x = j.x + size_t(r) * j.ldx;
  __m512 acc[MB][PB];
  for (int m = 0; m < MB; ++m) {
    for (int q = 0; q < PB; ++q) acc[m][q] = _mm512_setzero_ps();
  }
  for (int i = 0; i < pairs; ++i) {
    __m512bh w[PB];
    for (int q = 0; q < PB; ++q) {
      w[q] = (__m512bh)_mm512_loadu_si512(wp + q * stride + size_t(i) * 2 * kPanel);
    }
    for (int m = 0; m < MB; ++m) {
      const __m512bh xv =
          (__m512bh)_mm512_set1_epi32(int(LoadPair(x + size_t(m) * j.ldx + 2 * size_t(i))));
      for (int q = 0; q < PB; ++q) acc[m][q] = _mm512_dpbf16_ps(acc[m][q], xv, w[q]);
    }
  }
  StoreAvx512<MB, PB>(acc, j.w.n, 1.0f, j.bias, j.y, j.ldy, j.epilogue, r, p);
}

template <int MB>
ORCHID_AVX512BF16 void PanelsBf16Dot(const Bf16Job& j, int r, int p, int pb) {
  switch (pb) {
    case 3:
      return TileBf16<MB, 3>(j, r, p);
    case 2:
      return TileBf16<MB, 2>(j, r, p);
    default:
      return TileBf16<MB, 1>(j, r, p);
  }
}

}  // namespace

// Not itself compiled for AVX512_BF16: each tile call covers all of k, so the call costs nothing.
void TilesBf16Dot(const Bf16Job& j, int r0, int r1, int p0, int p1) {
  for (int p = p0; p < p1; p += 3) {
    const int pb = std::min(3, p1 - p);
    RowTiles<8>(r0, r1, [&](auto mb, int r) { PanelsBf16Dot<decltype(mb)::value>(j, r, p, pb); });
  }
}

}  // namespace orchid::tiles

#endif  // ORCHID_HAVE_X86_SIMD
