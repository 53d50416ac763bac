#include "backends/cpu/packed_gemm.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cpu/vec_math.h"
#include "core/tensor.h"

// The sanitizers' checks on the accumulator array keep the tile's accumulators out of
// registers (100x slower: too slow for the sanitizer build to run the real model). The tiles
// are left uninstrumented; the scalar path, which the op tests also run, shares their
// row/panel ranges and is instrumented, and masked SIMD loads and stores are not checked by
// ASan anyway.
#define ORCHID_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

namespace orchid {
namespace {

constexpr int kPanel = kPanelWidth;

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

// ---- scalar fallback ----------------------------------------------------------------------

// Row y's columns [16 p, 16 p + cols) = epilogue(alpha * acc + bias).
void StoreScalar(const float (&acc)[kPanel], int cols, float alpha, const float* bias, float* y,
                 Epilogue epilogue, int p) {
  float* yr = y + p * kPanel;
  for (int c = 0; c < cols; ++c) {
    float v = alpha * acc[c] + (bias ? bias[p * kPanel + c] : 0.0f);
    if (epilogue == Epilogue::kAccumulate) v += yr[c];
    if (epilogue == Epilogue::kGelu) v = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    yr[c] = v;
  }
}

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
      StoreScalar(acc, cols, j.alpha, j.bias, j.y + size_t(r) * j.ldy, j.epilogue, p);
    }
  }
}

// ---- bfloat16: the job and the scalar fallback ---------------------------------------------

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

// Each pair as vdpbf16ps takes it: the odd element's product, then the even one's.
void TilesScalarBf16(const Bf16Job& j, int r0, int r1, int p0, int p1) {
  const int pairs = j.w.pairs(), n = j.w.n;
  for (int p = p0; p < p1; ++p) {
    const bf16* wp = j.w.panel(p);
    const int cols = std::min(kPanel, n - p * kPanel);
    for (int r = r0; r < r1; ++r) {
      float acc[kPanel] = {};
      const bf16* xr = j.x + size_t(r) * j.ldx;
      for (int i = 0; i < pairs; ++i) {
        // Whole pairs as 32-bit words (as the SIMD kernels read them): GCC 12 at -O3
        // mis-vectorized the element-wise form of this loop (wrong sums, seen on odd and even k).
        const uint32_t xp = LoadPair(xr + 2 * size_t(i));
        const float x0 = WordLow(xp), x1 = WordHigh(xp);
        const bf16* wi = wp + size_t(i) * 2 * kPanel;
        for (int c = 0; c < kPanel; ++c) {
          const uint32_t wpair = LoadPair(wi + 2 * c);
          acc[c] += x1 * WordHigh(wpair);
          acc[c] += x0 * WordLow(wpair);
        }
      }
      StoreScalar(acc, cols, 1.0f, j.bias, j.y + size_t(r) * j.ldy, j.epilogue, p);
    }
  }
}

#if ORCHID_HAVE_X86_SIMD

// ---- AVX-512: tiles of MB rows x PB panels, MB * PB accumulators --------------------------

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

ORCHID_AVX512 void TilesAvx512(const Job& j, int r0, int r1, int p0, int p1) {
  // Panels outer: a group of 3 panels stays in L1/L2 while every row block uses it.
  for (int p = p0; p < p1; p += 3) {
    const int pb = std::min(3, p1 - p);
    RowTiles<8>(r0, r1, [&](auto mb, int r) { PanelsAvx512<decltype(mb)::value>(j, r, p, pb); });
  }
}

// ---- AVX2: tiles of MB rows x 1 panel (two 8-float halves) ---------------------------------

// y[0, 8) = epilogue(alpha * acc + b), for one row's 8-column half; masked (only the columns
// of `mask`) when kMasked. AMD's Zen cores run a masked store (vmaskmovps) as a slow microcoded
// sequence. At attention's short k (Q K^T over head_dim 32-128 inputs) a tile is a few hundred
// cycles, and perf put ~20% of the tiles' time on the masked stores of its 12 halves. So only a
// panel that runs past n (the last, when n is not a multiple of 16) takes the masked path. On
// Zen 3 (2 threads, alternating runs, medians) that made attention 15-25% faster for XLM-R-base,
// Qwen3-0.6B (bidirectional) and all-MiniLM-L6-v2 heads; whole models: all-MiniLM-L6-v2 8-17%
// faster (1 x 128 to 32 x 512 tokens), XLM-R-base at 8 x 512 11%.
template <bool kMasked>
ORCHID_NO_SANITIZE ORCHID_AVX2 inline void StoreEightAvx2(float* y, __m256 acc, __m256 alpha,
                                                          __m256 b, __m256i mask,
                                                          Epilogue epilogue) {
  __m256 v = _mm256_fmadd_ps(acc, alpha, b);
  if (epilogue == Epilogue::kAccumulate) {
    v = _mm256_add_ps(v, kMasked ? _mm256_maskload_ps(y, mask) : _mm256_loadu_ps(y));
  } else if (epilogue == Epilogue::kGelu) {
    v = simd::Gelu(v);
  }
  if (kMasked) {
    _mm256_maskstore_ps(y, mask, v);
  } else {
    _mm256_storeu_ps(y, v);
  }
}

// y = epilogue(alpha * sums + bias) for a tile's MB rows and panel p (sums: MB rows of 16,
// lds floats apart), columns past n left alone.
template <int MB>
ORCHID_NO_SANITIZE ORCHID_AVX2 inline void StoreTileAvx2(const float* sums, int lds, int n,
                                                         float alpha_s, const float* bias,
                                                         float* y0, int ldy, Epilogue epilogue,
                                                         int r, int p) {
  const int col = p * kPanel;
  const int cols = std::min(kPanel, n - col);
  const __m256 alpha = _mm256_set1_ps(alpha_s);
  if (cols == kPanel) {
    const __m256i none = _mm256_setzero_si256();  // unused by the unmasked stores
    const __m256 b0 = bias ? _mm256_loadu_ps(bias + col) : _mm256_setzero_ps();
    const __m256 b1 = bias ? _mm256_loadu_ps(bias + col + 8) : _mm256_setzero_ps();
    for (int m = 0; m < MB; ++m) {
      float* y = y0 + size_t(r + m) * ldy + col;
      const float* s = sums + size_t(m) * lds;
      StoreEightAvx2<false>(y, _mm256_load_ps(s), alpha, b0, none, epilogue);
      StoreEightAvx2<false>(y + 8, _mm256_load_ps(s + 8), alpha, b1, none, epilogue);
    }
    return;
  }
  const __m256i mask0 = simd::TailMask(size_t(std::min(8, cols)));
  const __m256 b0 = bias ? _mm256_maskload_ps(bias + col, mask0) : _mm256_setzero_ps();
  const bool upper = cols > 8;
  const __m256i mask1 = simd::TailMask(size_t(upper ? cols - 8 : 1));
  const __m256 b1 = bias && upper ? _mm256_maskload_ps(bias + col + 8, mask1) : _mm256_setzero_ps();
  for (int m = 0; m < MB; ++m) {
    float* y = y0 + size_t(r + m) * ldy + col;
    const float* s = sums + size_t(m) * lds;
    StoreEightAvx2<true>(y, _mm256_load_ps(s), alpha, b0, mask0, epilogue);
    if (upper) StoreEightAvx2<true>(y + 8, _mm256_load_ps(s + 8), alpha, b1, mask1, epilogue);
  }
}

// An unblocked tile's end: its accumulators (row m's 16 sums in lo[m], hi[m]) out to memory
// first (see TileInPlaceAvx2), then through the epilogue into y.
template <int MB>
ORCHID_NO_SANITIZE ORCHID_AVX2 inline void FinishTileAvx2(const __m256 (&lo)[MB],
                                                          const __m256 (&hi)[MB], int n,
                                                          float alpha, const float* bias, float* y,
                                                          int ldy, Epilogue epilogue, int r,
                                                          int p) {
  alignas(32) float sums[MB][kPanel];
  for (int m = 0; m < MB; ++m) {
    _mm256_store_ps(sums[m], lo[m]);
    _mm256_store_ps(sums[m] + 8, hi[m]);
  }
  StoreTileAvx2<MB>(&sums[0][0], kPanel, n, alpha, bias, y, ldy, epilogue, r, p);
}

// The AVX2 tiles are blocked the way Goto's GEMM is. k goes in blocks of kKcAvx2 inputs:
// - a panel's block (kKcAvx2 x 16 floats, 16 KB) stays in L1 while every row tile of the range
//   reads it;
// - the rows' block of x (kRowsAvx2 x kKcAvx2 floats, read in place) stays in L2 while the
//   group's panels pass;
// - the partial sums of the group's panels stay in a per-thread buffer between blocks.
// Each output still sums over k in one unbroken order (the accumulators resume from the
// partial sums), so blocking changes no result: the products are bitwise those of the
// unblocked tiles this replaced.
//
// The unblocked tiles (kept below for calls over a few panels) read a whole panel (k x 16
// floats: 64 KB at k = 1024) from L2 for every tile, and x in place (an address multiply-add per
// row per step). Blocked, all-MiniLM-L6-v2 ran 7-8% faster at 32 x 128, 32 x 512 and 1 x 512
// tokens, the same at 1 x 128 (engine level, 2 threads, Zen 3, 5-16 alternating runs each);
// XLM-R-base at 8 x 512 and Qwen3-0.6B at 1 x 512 were 4-6% faster in 3 alternations (noise
// level on this machine).
constexpr int kKcAvx2 = 256;
constexpr int kGroupAvx2 = 16;  // panels whose partial sums are kept: rows x 256 floats
constexpr int kTileRowsAvx2 = 6;  // rows per blocked tile (TileAvx2's MB at most)

// Tiles of at most kTileRowsAvx2 = 6 rows (12 accumulators) whose sums go to memory right after
// the k loop.
// GCC 12 spilled the accumulators otherwise, with the spill stores inside the k loop (on
// every step), which made it store-bound (2.6x slower at MiniLM's shapes).
//
// x is read in place (rows lda floats apart). Until 2026-12-02 each block of x was first copied
// into contiguous rows (kKcAvx2 floats apart, so that the loads were fixed offsets from one
// pointer); the copy was ~4% of XLM-R-base's time (a memmove per block and panel group) and the
// tiles ran no faster for it. Read in place, alternating runs of the same binary (Zen 3, 2
// threads, medians): all-MiniLM-L6-v2 5% faster at 32 x 128 tokens and 9% at 1 x 512,
// XLM-R-base at 8 x 512 1-6% (two sets of 10); Qwen3-0.6B at 1 x 512 level.
//
// part[m * ldp, + 16) holds row m's sums over inputs [0, k0); the tile adds inputs [k0, k0 +
// kc) from a (MB rows, lda floats apart) and b (the panel's rows k0 ..).
//
// The k loop is unrolled 4 steps (GCC 12 leaves it rolled, even at -O3). Rolled, the tile
// ran at ~60-65 GFLOP/s on one Zen 3 core with its data in L1/L2 (peak ~89), unrolled at ~68-75;
// 2 and 8 steps were no better than 4. Whole models, 2 threads, alternating runs: XLM-R-base
// at 8 x 512 tokens and all-MiniLM-L6-v2 at 32 x 128 and 1 x 512 9-11% faster. (The
// unblocked tile below showed no gain from it.) The sums are unchanged: each accumulator
// takes the same FMAs in the same order.
template <int MB>
ORCHID_NO_SANITIZE ORCHID_AVX2 inline void TileAvx2(const float* a, size_t lda, const float* b,
                                                    int kc, bool start, float* part, int ldp) {
  __m256 lo[MB], hi[MB];
  for (int m = 0; m < MB; ++m) {
    lo[m] = start ? _mm256_setzero_ps() : _mm256_load_ps(part + size_t(m) * ldp);
    hi[m] = start ? _mm256_setzero_ps() : _mm256_load_ps(part + size_t(m) * ldp + 8);
  }
#pragma GCC unroll 4
  for (int i = 0; i < kc; ++i, b += kPanel, ++a) {
    const __m256 w0 = _mm256_loadu_ps(b);
    const __m256 w1 = _mm256_loadu_ps(b + 8);
    for (int m = 0; m < MB; ++m) {
      const __m256 xv = _mm256_broadcast_ss(a + m * lda);
      lo[m] = _mm256_fmadd_ps(xv, w0, lo[m]);
      hi[m] = _mm256_fmadd_ps(xv, w1, hi[m]);
    }
  }
  for (int m = 0; m < MB; ++m) {
    _mm256_store_ps(part + size_t(m) * ldp, lo[m]);
    _mm256_store_ps(part + size_t(m) * ldp + 8, hi[m]);
  }
}

// The unblocked tile, for calls over a few panels (attention's P V: head_dim / 16 panels): x
// read in place, all of k in one pass (no partial sums), at most 5 rows (10 accumulators) so that
// GCC keeps the row addressing in registers. As in every AVX2 tile, the sums go out to memory right
// after the k loop: with the epilogue reading the accumulators, GCC 12 spilled them inside the
// loop.
template <int MB>
ORCHID_NO_SANITIZE ORCHID_AVX2 inline void TileInPlaceAvx2(const Job& j, int r, int p) {
  const int k = j.w.k;
  const float* wp = j.w.panel(p);
  const float* x = j.x + size_t(r) * j.ldx;
  __m256 lo[MB], hi[MB];
  for (int m = 0; m < MB; ++m) lo[m] = hi[m] = _mm256_setzero_ps();
  for (int i = 0; i < k; ++i) {
    const __m256 w0 = _mm256_loadu_ps(wp + size_t(i) * kPanel);
    const __m256 w1 = _mm256_loadu_ps(wp + size_t(i) * kPanel + 8);
    for (int m = 0; m < MB; ++m) {
      const __m256 xv = _mm256_broadcast_ss(x + size_t(m) * j.ldx + i);
      lo[m] = _mm256_fmadd_ps(xv, w0, lo[m]);
      hi[m] = _mm256_fmadd_ps(xv, w1, hi[m]);
    }
  }
  FinishTileAvx2<MB>(lo, hi, j.w.n, j.alpha, j.bias, j.y, j.ldy, j.epilogue, r, p);
}

// Calls over at most this many panels take the unblocked tiles. Measured when the blocked tiles
// still copied each block of x (one copied float per 16 * panels multiply-adds): at attention's
// few panels (P V over 512 keys, head_dim 32) blocking made all-MiniLM-L6-v2 at 512 tokens 5-7%
// slower. The blocked tiles read x in place since 2026-12-02; this threshold was not
// re-measured after that.
constexpr int kMaxInPlacePanelsAvx2 = 8;

// Pulls the panel block that the tiles read next into L2 while the current block's row tiles
// run: a slice of its lines (one line per k step) before each tile. The weights stream from L3
// or DRAM once per piece of rows; left to the hardware prefetchers, each new block stalled the
// first tile that read it. With this, on Zen 3 (2 threads, alternating runs, medians):
// orchid_linear_bench at XLM-R-base's and Qwen3-0.6B's shapes (k >= 768, 4096 rows) ran 5-10%
// faster, XLM-R-base at 8 x 512 tokens 7-8%; all-MiniLM-L6-v2 (k = 384, weights of 0.6-2.4 MB)
// was the same within noise. A tile issues at most 32 prefetches (before its k loop): with
// fewer than 8 tiles per block (under 48 rows), fetching the whole next block in one or two
// bursts made one-thread products of 6-12 rows 15-25% slower than none at all.
class NextBlockPrefetch {
 public:
  static constexpr int kMaxLinesPerTile = 32;

  NextBlockPrefetch() = default;
  NextBlockPrefetch(const float* block, int kc, int r0, int r1)
      : line_(reinterpret_cast<const char*>(block)), left_(kc) {
    const int tiles = (r1 - r0 + kTileRowsAvx2 - 1) / kTileRowsAvx2;
    per_tile_ = std::min(kMaxLinesPerTile, (kc + tiles - 1) / tiles);
  }
  void Slice() {
    const int n = std::min(per_tile_, left_);
    for (int i = 0; i < n; ++i, line_ += kPanel * sizeof(float)) _mm_prefetch(line_, _MM_HINT_T1);
    left_ -= n;
  }

 private:
  const char* line_ = nullptr;
  int left_ = 0, per_tile_ = 0;  // lines (k steps of 16 floats) still to fetch, and per tile
};

// Rows [r0, r1) in pieces of at most kRowsAvx2, so that a piece's block of x and its partial
// sums stay in L2 whatever the caller's range (attention passes a whole sequence's rows).
constexpr int kRowsAvx2 = 128;

ORCHID_AVX2 void TilesAvx2(const Job& j, int r0, int r1, int p0, int p1) {
  // (k = 0 as well: the blocked loop would not run a tile, and each output is its bias.)
  if (p1 - p0 <= kMaxInPlacePanelsAvx2 || j.w.k == 0) {
    for (int p = p0; p < p1; ++p) {
      RowTiles<5>(r0, r1, [&](auto mb, int r) { TileInPlaceAvx2<decltype(mb)::value>(j, r, p); });
    }
    return;
  }
  const int k = j.w.k;
  constexpr int ldp = kGroupAvx2 * kPanel;
  thread_local Buffer<float> partial;
  partial.Reserve(size_t(kRowsAvx2) * ldp);
  for (int rb = r0; rb < r1; rb += kRowsAvx2) {
    const int re = std::min(r1, rb + kRowsAvx2);
    for (int pg = p0; pg < p1; pg += kGroupAvx2) {
      const int pe = std::min(p1, pg + kGroupAvx2);
      for (int k0 = 0; k0 < k; k0 += kKcAvx2) {
        const int kc = std::min(k - k0, kKcAvx2);
        for (int p = pg; p < pe; ++p) {
          float* part = partial.data() + (p - pg) * kPanel;
          const float* b = j.w.panel(p) + size_t(k0) * kPanel;
          // The block the loop reads after this one: the next panel of the group, else the
          // group's first panel in the next k block, else the next group's first panel.
          NextBlockPrefetch next;
          if (p + 1 < pe) {
            next = NextBlockPrefetch(j.w.panel(p + 1) + size_t(k0) * kPanel, kc, rb, re);
          } else if (k0 + kc < k) {
            next = NextBlockPrefetch(j.w.panel(pg) + size_t(k0 + kc) * kPanel,
                                     std::min(k - k0 - kc, kKcAvx2), rb, re);
          } else if (pe < p1) {
            next = NextBlockPrefetch(j.w.panel(pe), std::min(k, kKcAvx2), rb, re);
          }
          RowTiles<kTileRowsAvx2>(rb, re, [&](auto mb, int r) {
            constexpr int MB = decltype(mb)::value;
            next.Slice();
            float* tile_part = part + size_t(r - rb) * ldp;
            TileAvx2<MB>(j.x + size_t(r) * j.ldx + k0, size_t(j.ldx), b, kc, k0 == 0, tile_part,
                         ldp);
            if (k0 + kc == k) {
              StoreTileAvx2<MB>(tile_part, ldp, j.w.n, j.alpha, j.bias, j.y, j.ldy, j.epilogue, r,
                                p);
            }
          });
        }
      }
    }
  }
}

// ---- bfloat16 on AVX512_BF16: vdpbf16ps, MB rows x PB panels -------------------------------

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

// ---- bfloat16 on AVX2: widened to fp32, two FMAs per pair, MB rows x 1 panel ---------------

// x's rows [r0, r1) as fp32, widened once per call (ldf = 2 * pairs floats a row, the padding
// zero included), so that the k loop broadcasts each x value straight from memory. Widening a
// row's pair in the k loop instead (a scalar load, a broadcast, a shift and a mask per row, for
// every panel again) made the bfloat16 tiles 0.74x the fp32 ones' speed on Zen 1 (DistilBERT-base
// at 8 x 512, cpu-families-20261203-131808.md): the integer ops compete with the FMAs for the
// vector pipes.
ORCHID_AVX2 void WidenRowsAvx2(const Bf16Job& j, int r0, int r1, float* xf, int ldf) {
  for (int r = r0; r < r1; ++r) {
    const bf16* src = j.x + size_t(r) * j.ldx;
    float* dst = xf + size_t(r - r0) * size_t(ldf);
    int i = 0;
    for (; i + 8 <= ldf; i += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      _mm256_storeu_ps(dst + i,
                       _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
    }
    for (; i < ldf; ++i) dst[i] = FloatFromBf16(src[i]);
  }
}

// As TileInPlaceAvx2 (sums stored out after the k loop; MB <= 5: 10 accumulators, the four
// widened weight vectors and one broadcast x), on x widened by WidenRowsAvx2 (row r at
// xf[(r - r0) * ldf]): the same products as TileBf16Fma, in the same order.
template <int MB>
ORCHID_NO_SANITIZE ORCHID_AVX2 inline void TileBf16Avx2(const Bf16Job& j, const float* xf, int ldf,
                                                        int r, int p) {
  const int pairs = j.w.pairs();
  const bf16* wp = j.w.panel(p);
  const __m256i high = _mm256_set1_epi32(int(0xffff0000u));
  __m256 lo[MB], hi[MB];
  for (int m = 0; m < MB; ++m) lo[m] = hi[m] = _mm256_setzero_ps();
  for (int i = 0; i < pairs; ++i) {
    const bf16* wi = wp + size_t(i) * 2 * kPanel;
    const __m256i wa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wi));
    const __m256i wb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wi + kPanel));
    const __m256 even_lo = _mm256_castsi256_ps(_mm256_slli_epi32(wa, 16));
    const __m256 odd_lo = _mm256_castsi256_ps(_mm256_and_si256(wa, high));
    const __m256 even_hi = _mm256_castsi256_ps(_mm256_slli_epi32(wb, 16));
    const __m256 odd_hi = _mm256_castsi256_ps(_mm256_and_si256(wb, high));
    const float* xi = xf + 2 * size_t(i);
    for (int m = 0; m < MB; ++m) {
      const __m256 x1 = _mm256_broadcast_ss(xi + size_t(m) * size_t(ldf) + 1);
      lo[m] = _mm256_fmadd_ps(x1, odd_lo, lo[m]);
      hi[m] = _mm256_fmadd_ps(x1, odd_hi, hi[m]);
      const __m256 x0 = _mm256_broadcast_ss(xi + size_t(m) * size_t(ldf));
      lo[m] = _mm256_fmadd_ps(x0, even_lo, lo[m]);
      hi[m] = _mm256_fmadd_ps(x0, even_hi, hi[m]);
    }
  }
  FinishTileAvx2<MB>(lo, hi, j.w.n, 1.0f, j.bias, j.y, j.ldy, j.epilogue, r, p);
}

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

ORCHID_AVX2 void TilesBf16Avx2(const Bf16Job& j, int r0, int r1, int p0, int p1) {
  ForEachWidenedPiece(j, r0, r1, [&](const float* xf, int ldf, int rb, int re) {
    for (int p = p0; p < p1; ++p) {
      RowTiles<5>(rb, re, [&](auto mb, int r) {
        TileBf16Avx2<decltype(mb)::value>(j, xf + size_t(r - rb) * size_t(ldf), ldf, r, p);
      });
    }
  });
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

// Not itself compiled for AVX512_BF16: each tile call covers all of k, so the call costs nothing.
void TilesBf16Dot(const Bf16Job& j, int r0, int r1, int p0, int p1) {
  for (int p = p0; p < p1; p += 3) {
    const int pb = std::min(3, p1 - p);
    RowTiles<8>(r0, r1, [&](auto mb, int r) { PanelsBf16Dot<decltype(mb)::value>(j, r, p, pb); });
  }
}

// ---- bfloat16 on AVX-512 by fp32 FMAs, x widened once per call ----------------------------

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

// ---- which AVX-512 bfloat16 path ----------------------------------------------------------

// vdpbf16ps does two multiply-adds a lane where an FMA does one, but cores issue it at
// different rates: on a 2-core Emerald Rapids VM (2026-12-03) 0.5 a cycle against the FMA's 2,
// so there it has half the FMAs' multiply-add rate, and DistilBERT-base at 8 x 512 ran at 0.6x
// float32's speed under --dtype bfloat16. The two paths give the same sums bit for bit
// (CpuOpsTest.LinearBfloat16IsBitwiseTheSameOnEveryPath; only denormal inputs, which vdpbf16ps
// reads as zero, could differ), so the faster one is taken, measured once per process: 24
// independent chains of each instruction, best of 3 alternating runs (~1.5 ms in all there).
constexpr int kProbeChains = 24;
constexpr long kProbeIters = 20000;

template <class F>
double Seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

ORCHID_NO_SANITIZE ORCHID_AVX512BF16 float DotChains(long iters) {
  __m512 acc[kProbeChains];
  for (auto& a : acc) a = _mm512_setzero_ps();
  __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80), w = x;
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (int c = 0; c < kProbeChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], x, w);
    asm volatile("" : "+v"(x));
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kProbeChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  return _mm512_reduce_add_ps(sum);
}

ORCHID_NO_SANITIZE ORCHID_AVX512 float FmaChains(long iters) {
  __m512 acc[kProbeChains];
  for (auto& a : acc) a = _mm512_setzero_ps();
  __m512 x = _mm512_set1_ps(1.0f), w = x;
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (int c = 0; c < kProbeChains; ++c) acc[c] = _mm512_fmadd_ps(x, w, acc[c]);
    asm volatile("" : "+v"(x));
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kProbeChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  return _mm512_reduce_add_ps(sum);
}

// vdpbf16ps's multiply-add rate over the FMAs' (32 and 16 a 512-bit instruction), each the best
// of 3 alternating runs.
double DotOverFmaRate() {
  volatile float sink = 0;
  double dot = 0, fma = 0;
  for (int run = 0; run < 3; ++run) {
    dot = std::max(dot, 32.0 / Seconds([&] { sink = DotChains(kProbeIters); }));
    fma = std::max(fma, 16.0 / Seconds([&] { sink = FmaChains(kProbeIters); }));
  }
  (void)sink;
  return dot / fma;
}

// The widened path spends issue slots beyond its FMAs on widening the weights (4 integer ops
// beside 32 FMAs a pair in an 8 x 2 tile, on the same ports): vdpbf16ps is taken when its
// multiply-add rate is at least 1.15x the FMAs'.
bool Bf16DotIsFaster() {
  static const bool faster = DotOverFmaRate() >= 1.15;
  return faster;
}

std::atomic<int> bf16_kernel{int(Bf16Kernel::kAuto)};

bool UseBf16Dot() {
  if (!simd::HasAvx512Bf16()) return false;
  switch (Bf16Kernel(bf16_kernel.load(std::memory_order_relaxed))) {
    case Bf16Kernel::kDot:
      return true;
    case Bf16Kernel::kFma:
      return false;
    case Bf16Kernel::kAuto:
      break;
  }
  return Bf16DotIsFaster();
}

// Round to nearest even, 16 floats at a time (the integer form of Bf16FromFloat).
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

void PackedGemmTilesBf16(const bf16* x, int ldx, Bf16PanelView w, const float* bias, float* y,
                         int ldy, Epilogue epilogue, int r0, int r1, int p0, int p1) {
  const Bf16Job j{x, ldx, w, bias, y, ldy, epilogue};
  if (r0 >= r1 || p0 >= p1) return;
#if ORCHID_HAVE_X86_SIMD
  if (UseBf16Dot()) return TilesBf16Dot(j, r0, r1, p0, p1);
  if (simd::HasAvx512()) return TilesBf16Widened(j, r0, r1, p0, p1);
  if (simd::HasAvx2Fma()) return TilesBf16Avx2(j, r0, r1, p0, p1);
#endif
  TilesScalarBf16(j, r0, r1, p0, p1);
}

void SetBf16Kernel(Bf16Kernel kernel) {
#if ORCHID_HAVE_X86_SIMD
  bf16_kernel.store(int(kernel), std::memory_order_relaxed);
#else
  (void)kernel;
#endif
}

bool Bf16DotInUse() {
#if ORCHID_HAVE_X86_SIMD
  return UseBf16Dot();
#else
  return false;
#endif
}

void ConvertRowsBf16(const float* x, int ldx, int k, bf16* dst, int ld_dst, int r0, int r1) {
#if ORCHID_HAVE_X86_SIMD
  if (simd::HasAvx512()) return ConvertRowsBf16Avx512(x, ldx, k, dst, ld_dst, r0, r1);
#endif
  for (int r = r0; r < r1; ++r) {
    const float* xr = x + size_t(r) * ldx;
    bf16* out = dst + size_t(r) * ld_dst;
    for (int i = 0; i < k; ++i) out[i] = Bf16FromFloat(xr[i]);
    if (k % 2 != 0) out[k] = 0;
  }
}

// Both bfloat16 packings convert 16 floats at a time (ConvertRowsBf16) into a thread-local
// copy first and then only move 16-bit values into the panel layout: per element that is a
// fraction of the scalar rounding they did before, which attention pays for every sequence and
// head (its K and V^T; issue 31: 12% of an int8 MiniLM pass at 8 x 512 went to packing).
void PackRowsBf16(const float* w, int n, int k, int ldw, bf16* dst) {
  const int panels = (n + kPanel - 1) / kPanel, pairs = (k + 1) / 2, ldr = 2 * pairs;
  thread_local std::vector<bf16> rows;
  rows.resize(size_t(n) * size_t(ldr));
  ConvertRowsBf16(w, ldw, k, rows.data(), ldr, 0, n);  // an odd k ends each row with a zero
  for (int p = 0; p < panels; ++p) {
    bf16* out = dst + size_t(p) * size_t(pairs) * 2 * kPanel;
    const int cols = std::min(kPanel, n - p * kPanel);
    if (cols < kPanel) std::memset(out, 0, size_t(pairs) * 2 * kPanel * sizeof(bf16));
    for (int c = 0; c < cols; ++c) {
      const bf16* src = rows.data() + size_t(p * kPanel + c) * size_t(ldr);
      for (int u = 0; u < pairs; ++u) {
        out[size_t(u) * 2 * kPanel + 2 * c] = src[2 * u];
        out[size_t(u) * 2 * kPanel + 2 * c + 1] = src[2 * u + 1];
      }
    }
  }
}

void PackColumnsBf16(const float* v, int n, int k, int ldv, bf16* dst) {
  const int panels = (n + kPanel - 1) / kPanel, pairs = (k + 1) / 2;
  const int ldr = 2 * ((n + 1) / 2);
  thread_local std::vector<bf16> rows;
  rows.resize(size_t(2 * pairs) * size_t(ldr));
  ConvertRowsBf16(v, ldv, n, rows.data(), ldr, 0, k);
  if (k % 2 != 0) std::fill_n(rows.data() + size_t(k) * size_t(ldr), size_t(ldr), bf16(0));
  for (int p = 0; p < panels; ++p) {
    bf16* out = dst + size_t(p) * size_t(pairs) * 2 * kPanel;
    const int cols = std::min(kPanel, n - p * kPanel);
    for (int u = 0; u < pairs; ++u) {
      const bf16* a = rows.data() + size_t(2 * u) * size_t(ldr) + size_t(p) * kPanel;
      const bf16* b = a + ldr;
      bf16* o = out + size_t(u) * 2 * kPanel;
      for (int c = 0; c < cols; ++c) {
        o[2 * c] = a[c];
        o[2 * c + 1] = b[c];
      }
      for (int c = cols; c < kPanel; ++c) o[2 * c] = o[2 * c + 1] = 0;
    }
  }
}

void UnpackRows(const PanelView& packed, int r0, int r1, float* w) {
  for (int r = r0; r < r1; ++r) {
    const float* src = packed.panel(r / kPanel) + r % kPanel;
    float* out = w + size_t(r - r0) * size_t(packed.k);
    for (int i = 0; i < packed.k; ++i) out[i] = src[size_t(i) * kPanel];
  }
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
