#include "engine/cpu/packed_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/cpu/vec_math.h"

// The sanitizers' checks on the accumulator array keep the tile's accumulators out of
// registers (100x slower: too slow for the sanitizer build to run the real model). The tiles
// are left uninstrumented; the scalar path, which the op tests also run, shares their
// row/panel ranges and is instrumented, and masked SIMD loads and stores are not checked by
// ASan anyway.
#define ORCHID_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

namespace orchid {
namespace {

constexpr int kPanel = kPanelWidth;

struct Job {
  const float* x;
  int ldx;
  PanelView w;
  float alpha;
  const float* bias;
  float* y;
  int ldy;
  Epilogue epilogue;
};

// ---- scalar fallback ----------------------------------------------------------------------

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
      float* yr = j.y + size_t(r) * j.ldy + p * kPanel;
      for (int c = 0; c < cols; ++c) {
        float v = j.alpha * acc[c] + (j.bias ? j.bias[p * kPanel + c] : 0.0f);
        if (j.epilogue == Epilogue::kAccumulate) v += yr[c];
        if (j.epilogue == Epilogue::kGelu) {
          v = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
        }
        yr[c] = v;
      }
    }
  }
}

#if ORCHID_HAVE_X86_SIMD

// ---- AVX-512: tiles of MB rows x PB panels, MB * PB accumulators --------------------------

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
  const int n = j.w.n;
  const __m512 alpha = _mm512_set1_ps(j.alpha);
  for (int q = 0; q < PB; ++q) {
    const int col = (p + q) * kPanel;
    const int cols = std::min(kPanel, n - col);
    const __mmask16 mask = cols >= kPanel ? __mmask16(0xffff) : simd::TailMask16(size_t(cols));
    const __m512 b = j.bias ? _mm512_maskz_loadu_ps(mask, j.bias + col) : _mm512_setzero_ps();
    for (int m = 0; m < MB; ++m) {
      float* y = j.y + size_t(r + m) * j.ldy + col;
      __m512 v = _mm512_fmadd_ps(acc[m][q], alpha, b);
      if (j.epilogue == Epilogue::kAccumulate) {
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, y));
      } else if (j.epilogue == Epilogue::kGelu) {
        v = simd::Gelu(v);
      }
      _mm512_mask_storeu_ps(y, mask, v);
    }
  }
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

ORCHID_AVX512 void TilesAvx512(const Job& j, int r0, int r1, int p0, int p1) {
  // Panels outer: a group of 3 panels stays in L1/L2 while every row block uses it.
  for (int p = p0; p < p1; p += 3) {
    const int pb = std::min(3, p1 - p);
    int r = r0;
    for (; r + 8 <= r1; r += 8) PanelsAvx512<8>(j, r, p, pb);
    switch (r1 - r) {
      case 7:
        PanelsAvx512<7>(j, r, p, pb);
        break;
      case 6:
        PanelsAvx512<6>(j, r, p, pb);
        break;
      case 5:
        PanelsAvx512<5>(j, r, p, pb);
        break;
      case 4:
        PanelsAvx512<4>(j, r, p, pb);
        break;
      case 3:
        PanelsAvx512<3>(j, r, p, pb);
        break;
      case 2:
        PanelsAvx512<2>(j, r, p, pb);
        break;
      case 1:
        PanelsAvx512<1>(j, r, p, pb);
        break;
      default:
        break;
    }
  }
}

// ---- AVX2: tiles of MB rows x 1 panel (two 8-float halves) ---------------------------------

template <int MB>
ORCHID_NO_SANITIZE ORCHID_AVX2 inline void TileAvx2(const Job& j, int r, int p) {
  const int k = j.w.k;
  const float* wp = j.w.panel(p);
  const float* x = j.x + size_t(r) * j.ldx;
  __m256 acc[MB][2];
  for (int m = 0; m < MB; ++m) acc[m][0] = acc[m][1] = _mm256_setzero_ps();
  for (int i = 0; i < k; ++i) {
    const __m256 w0 = _mm256_loadu_ps(wp + size_t(i) * kPanel);
    const __m256 w1 = _mm256_loadu_ps(wp + size_t(i) * kPanel + 8);
    for (int m = 0; m < MB; ++m) {
      const __m256 xv = _mm256_broadcast_ss(x + size_t(m) * j.ldx + i);
      acc[m][0] = _mm256_fmadd_ps(xv, w0, acc[m][0]);
      acc[m][1] = _mm256_fmadd_ps(xv, w1, acc[m][1]);
    }
  }
  const int col = p * kPanel;
  const int cols = std::min(kPanel, j.w.n - col);
  const __m256 alpha = _mm256_set1_ps(j.alpha);
  for (int h = 0; h < 2; ++h) {
    const int hc = std::min(8, cols - 8 * h);
    if (hc <= 0) break;
    const __m256i mask = simd::TailMask(size_t(hc));
    const __m256 b = j.bias ? _mm256_maskload_ps(j.bias + col + 8 * h, mask) : _mm256_setzero_ps();
    for (int m = 0; m < MB; ++m) {
      float* y = j.y + size_t(r + m) * j.ldy + col + 8 * h;
      __m256 v = _mm256_fmadd_ps(acc[m][h], alpha, b);
      if (j.epilogue == Epilogue::kAccumulate) {
        v = _mm256_add_ps(v, _mm256_maskload_ps(y, mask));
      } else if (j.epilogue == Epilogue::kGelu) {
        v = simd::Gelu(v);
      }
      _mm256_maskstore_ps(y, mask, v);
    }
  }
}

ORCHID_AVX2 void TilesAvx2(const Job& j, int r0, int r1, int p0, int p1) {
  for (int p = p0; p < p1; ++p) {
    int r = r0;
    for (; r + 6 <= r1; r += 6) TileAvx2<6>(j, r, p);
    switch (r1 - r) {
      case 5:
        TileAvx2<5>(j, r, p);
        break;
      case 4:
        TileAvx2<4>(j, r, p);
        break;
      case 3:
        TileAvx2<3>(j, r, p);
        break;
      case 2:
        TileAvx2<2>(j, r, p);
        break;
      case 1:
        TileAvx2<1>(j, r, p);
        break;
      default:
        break;
    }
  }
}

#endif  // ORCHID_HAVE_X86_SIMD

}  // namespace

void PackedGemmTiles(const float* x, int ldx, PanelView w, float alpha, const float* bias, float* y,
                     int ldy, Epilogue epilogue, int r0, int r1, int p0, int p1) {
  const Job j{x, ldx, w, alpha, bias, y, ldy, epilogue};
  if (r0 >= r1 || p0 >= p1) return;
#if ORCHID_HAVE_X86_SIMD
  if (simd::HasAvx512()) return TilesAvx512(j, r0, r1, p0, p1);
  if (simd::HasAvx2Fma()) return TilesAvx2(j, r0, r1, p0, p1);
#endif
  TilesScalar(j, r0, r1, p0, p1);
}

void PackRows(const float* w, int n, int k, int ldw, float* dst) {
  const int panels = (n + kPanel - 1) / kPanel;
  for (int p = 0; p < panels; ++p) {
    float* out = dst + size_t(p) * size_t(k) * kPanel;
    const int cols = std::min(kPanel, n - p * kPanel);
    if (cols < kPanel) std::memset(out, 0, size_t(k) * kPanel * sizeof(float));
    for (int c = 0; c < cols; ++c) {
      const float* src = w + size_t(p * kPanel + c) * size_t(ldw);
      for (int i = 0; i < k; ++i) out[size_t(i) * kPanel + c] = src[i];
    }
  }
}

void PackColumns(const float* w, int n, int k, int ldw, float* dst) {
  const int panels = (n + kPanel - 1) / kPanel;
  for (int p = 0; p < panels; ++p) {
    float* out = dst + size_t(p) * size_t(k) * kPanel;
    const int cols = std::min(kPanel, n - p * kPanel);
    for (int i = 0; i < k; ++i) {
      const float* src = w + size_t(i) * size_t(ldw) + p * kPanel;
      std::memcpy(out + size_t(i) * kPanel, src, size_t(cols) * sizeof(float));
      if (cols < kPanel) {
        std::memset(out + size_t(i) * kPanel + cols, 0, size_t(kPanel - cols) * sizeof(float));
      }
    }
  }
}

}  // namespace orchid
