// The packed GEMM's tile kernels, one file per instruction-set family, and what they share:
//   packed_gemm_scalar.cpp     any CPU: fp32 and bfloat16 (widened) tiles in plain C++
//   packed_gemm_avx2.cpp       AVX2 + FMA: fp32 tiles, bfloat16 widened to fp32
//   packed_gemm_avx512.cpp     AVX-512: fp32 tiles, bfloat16 widened to fp32, bfloat16 rounding
//   packed_gemm_bf16_dot.cpp   AVX512_BF16: bfloat16 tiles on vdpbf16ps
// Internal to backends/cpu: packed_gemm.cpp (the public calls, packing) picks a family per call
// from cpu_features.h's KernelIsa. Every family sums each output over k in the same order
// whatever the rows of the call (packed_gemm.h's contract), and the bfloat16 families give the
// same bits (CpuOpsTest.LinearBfloat16IsBitwiseTheSameOnEveryPath).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backends/cpu/packed_gemm.h"
#include "backends/cpu/vec_math.h"
#include "core/tensor.h"

// The sanitizers' checks on the accumulator array keep the tile's accumulators out of
// registers (100x slower: too slow for the sanitizer build to run the real model). The tiles
// are left uninstrumented; the scalar path, which the op tests also run, shares their
// row/panel ranges and is instrumented, and masked SIMD loads and stores are not checked by
// ASan anyway.
#define ORCHID_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

// For a tile function that must melt into its caller's loops. GCC's inliner weighs a function
// by the calls its translation unit holds: when the kernels moved into files of their own
// (2026-12-05), it left TileBf16Avx2<2..5> out of line, and the bfloat16 AVX2 path ran 1.07-1.42x
// slower than when one file held them all (bench/results/ab-engines-20261205-125504.md;
// inlined again: 0.98-1.04x, ab-engines-20261205-135726.md).
#define ORCHID_ALWAYS_INLINE __attribute__((always_inline))

namespace orchid::tiles {

inline constexpr int kPanel = kPanelWidth;

// Rows [r0, r1) in tiles: tile(std::integral_constant<int, MB>{}, r) with MB = kMax while a
// whole tile fits, then one tile of the rows left (1 .. kMax - 1). Each tile covers all of k,
// so the call through the lambda costs nothing.
template <int MB, typename F>
inline void LastRowTile(int rest, int r, F& tile) {
  if constexpr (MB > 0) {
    if (rest == MB) return tile(std::integral_constant<int, MB>{}, r);
    LastRowTile<MB - 1>(rest, r, tile);
  }
}

template <int kMax, typename F>
inline void RowTiles(int r0, int r1, F&& tile) {
  int r = r0;
  for (; r + kMax <= r1; r += kMax) tile(std::integral_constant<int, kMax>{}, r);
  LastRowTile<kMax - 1>(r1 - r, r, tile);
}

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

struct Bf16Job {
  const bf16* x;
  int ldx;
  Bf16PanelView w;
  const float* bias;
  float* y;
  int ldy;
  Epilogue epilogue;
};

inline uint32_t LoadPair(const bf16* x) {
  uint32_t u;
  std::memcpy(&u, x, 4);
  return u;
}

// The bfloat16 in a pair's low (even k) and high (odd k) half, as floats.
inline float WordLow(uint32_t pair) { return FloatFromBf16(bf16(pair & 0xffffu)); }
inline float WordHigh(uint32_t pair) { return FloatFromBf16(bf16(pair >> 16)); }

void TilesScalar(const Job& j, int r0, int r1, int p0, int p1);
// Each pair as vdpbf16ps takes it: the odd element's product, then the even one's.
void TilesScalarBf16(const Bf16Job& j, int r0, int r1, int p0, int p1);

#if ORCHID_HAVE_X86_SIMD

// y[r + m, 16 (p + q) + c] = epilogue(alpha * acc[m][q][c] + bias) for the tile's MB rows and
// PB panels, columns past n left alone.
template <int MB, int PB>
ORCHID_NO_SANITIZE ORCHID_AVX512 inline void StoreAvx512(const __m512 (&acc)[MB][PB], int n,
                                                         float alpha_s, const float* bias,
                                                         float* y0, int ldy, Epilogue epilogue,
                                                         int r, int p) {
  const __m512 alpha = _mm512_set1_ps(alpha_s);
  for (int q = 0; q < PB; ++q) {
    const int col = (p + q) * kPanel;
    const int cols = std::min(kPanel, n - col);
    const __mmask16 mask = cols >= kPanel ? __mmask16(0xffff) : simd::TailMask16(size_t(cols));
    const __m512 b = bias ? _mm512_maskz_loadu_ps(mask, bias + col) : _mm512_setzero_ps();
    for (int m = 0; m < MB; ++m) {
      float* y = y0 + size_t(r + m) * ldy + col;
      __m512 v = _mm512_fmadd_ps(acc[m][q], alpha, b);
      if (epilogue == Epilogue::kAccumulate) {
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, y));
      } else if (epilogue == Epilogue::kGelu) {
        v = simd::Gelu(v);
      }
      _mm512_mask_storeu_ps(y, mask, v);
    }
  }
}

// Rows [r0, r1) in pieces of at most kRowsAvx2, so that a piece's block of x and its partial
// sums stay in L2 whatever the caller's range (attention passes a whole sequence's rows).
constexpr int kRowsAvx2 = 128;

// x's rows [r0, r1) as fp32, widened once per call (ldf = 2 * pairs floats a row, the padding
// zero included), so that the k loop broadcasts each x value straight from memory. Widening a
// row's pair in the k loop instead (a scalar load, a broadcast, a shift and a mask per row, for
// every panel again) made the bfloat16 tiles 0.74x the fp32 ones' speed on Zen 1 (DistilBERT-base
// at 8 x 512, cpu-families-20261203-131808.md): the integer ops compete with the FMAs for the
// vector pipes.
ORCHID_AVX2 void WidenRowsAvx2(const Bf16Job& j, int r0, int r1, float* xf, int ldf);

// Rows [r0, r1) in pieces of kRowsAvx2, each widened into this thread's buffer (so that the
// block stays in L2, as TilesAvx2's x), then tiles(xf, ldf, rb, re): row r at
// xf[(r - rb) * ldf].
template <class F>
void ForEachWidenedPiece(const Bf16Job& j, int r0, int r1, F&& tiles) {
  const int ldf = 2 * j.w.pairs();
  thread_local Buffer<float> widened;
  for (int rb = r0; rb < r1; rb += kRowsAvx2) {
    const int re = std::min(r1, rb + kRowsAvx2);
    widened.Reserve(size_t(re - rb) * size_t(ldf) + 1);
    WidenRowsAvx2(j, rb, re, widened.data(), ldf);
    tiles(static_cast<const float*>(widened.data()), ldf, rb, re);
  }
}

ORCHID_AVX2 void TilesAvx2(const Job& j, int r0, int r1, int p0, int p1);
ORCHID_AVX512 void TilesAvx512(const Job& j, int r0, int r1, int p0, int p1);
ORCHID_AVX2 void TilesBf16Avx2(const Bf16Job& j, int r0, int r1, int p0, int p1);
ORCHID_AVX512 void TilesBf16Widened(const Bf16Job& j, int r0, int r1, int p0, int p1);
void TilesBf16Dot(const Bf16Job& j, int r0, int r1, int p0, int p1);
// Round to nearest even, 16 floats at a time (the integer form of Bf16FromFloat).
ORCHID_AVX512 void ConvertRowsBf16Avx512(const float* x, int ldx, int k, bf16* dst, int ld_dst,
                                         int r0, int r1);

#endif  // ORCHID_HAVE_X86_SIMD

}  // namespace orchid::tiles
