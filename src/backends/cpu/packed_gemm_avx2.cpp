// The packed GEMM's tiles on AVX2 + FMA (packed_gemm_tiles.h): fp32 tiles of MB rows x 1 panel
// (two 8-float halves), and bfloat16 operands widened to fp32 (two FMAs per pair).
#include "backends/cpu/packed_gemm_tiles.h"

#if ORCHID_HAVE_X86_SIMD

namespace orchid::tiles {
namespace {

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

}  // namespace

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

// ---- bfloat16 widened to fp32, two FMAs per pair, MB rows x 1 panel ------------------------

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

namespace {

// As TileInPlaceAvx2 (sums stored out after the k loop; MB <= 5: 10 accumulators, the four
// widened weight vectors and one broadcast x), on x widened by WidenRowsAvx2 (row r at
// xf[(r - r0) * ldf]): the same products as TileBf16Fma, in the same order.
template <int MB>
ORCHID_ALWAYS_INLINE ORCHID_NO_SANITIZE ORCHID_AVX2 inline void TileBf16Avx2(const Bf16Job& j,
                                                                             const float* xf,
                                                                             int ldf, int r,
                                                                             int p) {
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

}  // namespace

ORCHID_AVX2 void TilesBf16Avx2(const Bf16Job& j, int r0, int r1, int p0, int p1) {
  ForEachWidenedPiece(j, r0, r1, [&](const float* xf, int ldf, int rb, int re) {
    for (int p = p0; p < p1; ++p) {
      RowTiles<5>(rb, re, [&](auto mb, int r) {
        TileBf16Avx2<decltype(mb)::value>(j, xf + size_t(r - rb) * size_t(ldf), ldf, r, p);
      });
    }
  });
}

}  // namespace orchid::tiles

#endif  // ORCHID_HAVE_X86_SIMD
