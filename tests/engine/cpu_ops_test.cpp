// Every CPU op against a naive double-precision reference on random inputs, with ragged
// batches of odd sizes (lengths 1 included), serially and on thread pools of 2 and 3.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/add.h"
#include "backends/cpu/attention.h"
#include "backends/cpu/bf16_onednn.h"
#include "backends/cpu/embedding.h"
#include "backends/cpu/gelu.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/l2_normalize.h"
#include "backends/cpu/layer_norm.h"
#include "backends/cpu/linear.h"
#include "backends/cpu/packed_gemm.h"
#include "backends/cpu/pooling.h"
#include "backends/cpu/rms_norm.h"
#include "backends/cpu/rope.h"
#include "backends/cpu/softmax.h"
#include "backends/cpu/swiglu.h"
#include "backends/cpu/thread_pool.h"
#include "backends/cpu/vec_math.h"
#include "core/tensor.h"
#include "ops/rope.h"

namespace orchid {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Runs `body(pool)` with no pool and with pools of 2 and 3 threads.
template <typename F>
void ForEachPool(F body) {
  ThreadPool two(2), three(3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &two, &three}) {
    SCOPED_TRACE(p == nullptr ? 1 : p->size());
    body(p);
  }
}

// Runs `body()` once per instruction set (scalar, AVX2, AVX-512, AVX-512 with BF16), each
// capped with LimitIsa; a set the CPU lacks falls back to the next lower one.
template <typename F>
void ForEachIsa(F body) {
  struct Restore {
    ~Restore() { LimitIsa(Isa::kAvx512Bf16); }
  } restore;
  for (Isa isa :
       {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16}) {
    SCOPED_TRACE(isa == Isa::kScalar   ? "scalar"
                 : isa == Isa::kAvx2   ? "avx2"
                 : isa == Isa::kAvx512 ? "avx512"
                                             : "avx512-bf16");
    LimitIsa(isa);
    body();
  }
}

double GeluRef(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

TEST(ThreadPoolTest, ParallelForCoversEverythingOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 7, 1000}) {
      for (int64_t grain : {1, 3, 64}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::vector<std::atomic<int>> inside(static_cast<size_t>(threads));
        std::atomic<bool> shared_thread_id{false}, bad_range{false};
        pool.ParallelFor(n, grain, [&](int t, int64_t b, int64_t e) {
          if (t < 0 || t >= threads || b < 0 || e > n || b >= e) {
            bad_range = true;
            return;
          }
          if (inside[size_t(t)]++ != 0) shared_thread_id = true;
          for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
          inside[size_t(t)]--;
        });
        EXPECT_FALSE(bad_range.load());
        EXPECT_FALSE(shared_thread_id.load());
        for (auto& h : hits) ASSERT_EQ(h.load(), 1) << threads << " threads, n " << n;
      }
    }
  }
}

TEST(ThreadPoolTest, ManyShortRegionsInARow) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  for (int i = 0; i < 20000; ++i) {
    pool.ParallelFor(4, 1, [&](int, int64_t b, int64_t e) { total += e - b; });
  }
  EXPECT_EQ(total.load(), 20000 * 4);
}

// A chunk that blocks on another chunk: only possible if two threads really run at once,
// so this also shows the workers take part.
TEST(ThreadPoolTest, WorkersRunChunksConcurrently) {
  ThreadPool pool(2);
  std::atomic<int> arrived{0};
  std::atomic<bool> both{false};
  for (int attempt = 0; attempt < 50 && !both; ++attempt) {
    arrived = 0;
    pool.ParallelFor(2, 1, [&](int, int64_t, int64_t) {
      arrived++;
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
      while (arrived.load() < 2 && std::chrono::steady_clock::now() < until) {
      }
      if (arrived.load() == 2) both = true;
    });
  }
  EXPECT_TRUE(both.load());
}

TEST(ThreadPoolTest, SplitRangeIsAPartition) {
  for (int64_t n : {0, 1, 15, 16, 17, 1000}) {
    for (int parts : {1, 2, 3, 7}) {
      int64_t prev = 0;
      for (int i = 0; i < parts; ++i) {
        int64_t b, e;
        SplitRange(n, parts, i, 16, &b, &e);
        EXPECT_EQ(b, prev);
        EXPECT_LE(b, e);
        if (e < n) {
          EXPECT_EQ(e % 16, 0);
        }
        prev = e;
      }
      EXPECT_EQ(prev, n);
    }
  }
}

TEST(CpuOpsTest, GemmAllTransposes) {
  const int m = 7, n = 13, k = 9;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 1;
      auto a = Random(size_t((ta ? k : m) * lda), 1);
      auto b = Random(size_t((tb ? n : k) * ldb), 2);
      auto c = Random(size_t(m * ldc), 3);
      auto c0 = c;
      Gemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), ldc);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double s = 0;
          for (int p = 0; p < k; ++p) {
            const double av = ta ? a[size_t(p * lda + i)] : a[size_t(i * lda + p)];
            const double bv = tb ? b[size_t(j * ldb + p)] : b[size_t(p * ldb + j)];
            s += av * bv;
          }
          EXPECT_NEAR(c[size_t(i * ldc + j)], 0.5 * s + 2.0 * c0[size_t(i * ldc + j)], 1e-5);
        }
      }
    }
  }
}

TEST(CpuOpsTest, LinearAllEpiloguesAndSplits) {
  ForEachIsa([&] {
    // Row counts around the 5- and 8-row tiles and the 64- and 128-row chunks; output widths
    // around the 16-column panels and 3-panel groups; a k of 600 as well as short ones, and an
    // empty one (every output is its bias); 300 columns take more than one group of the AVX2
    // tiles' panels.
    for (int m : {1, 7, 8, 9, 150, 301}) {
      for (auto [k, n] :
           {std::pair{9, 37}, std::pair{64, 100}, std::pair{3, 16}, std::pair{20, 48},
            std::pair{384, 1}, std::pair{600, 33}, std::pair{0, 200}, std::pair{260, 300}}) {
        const int ldx = k + 1, ldy = n + 3;
        auto x = Random(size_t(m * ldx), 10);
        auto w = Random(size_t(n * k), 11);
        auto bias = Random(size_t(n), 12);
        auto y0 = Random(size_t(m * ldy), 13);
        for (WeightType type : {WeightType::kFloat32, WeightType::kFloat32Blas}) {
          SCOPED_TRACE(WeightTypeName(type));
          const PackedWeight packed = PackedWeight::Pack(w.data(), n, k, type);
          EXPECT_EQ(packed.type(), type);
          EXPECT_EQ(packed.panels(), (n + 15) / 16);
          for (auto ep :
               {LinearEpilogue::kNone, LinearEpilogue::kGelu, LinearEpilogue::kAccumulate}) {
            for (bool with_bias : {true, false}) {
              ForEachPool([&](ThreadPool* pool) {
                auto y = y0;
                Linear(pool, x.data(), m, ldx, packed, with_bias ? bias.data() : nullptr, y.data(),
                       ldy, ep);
                for (int i = 0; i < m; ++i) {
                  for (int j = 0; j < ldy; ++j) {
                    const size_t at = size_t(i * ldy + j);
                    if (j >= n) {  // padding between rows is untouched
                      ASSERT_EQ(y[at], y0[at]);
                      continue;
                    }
                    double s = with_bias ? bias[size_t(j)] : 0.0;
                    for (int p = 0; p < k; ++p)
                      s += double(x[size_t(i * ldx + p)]) * w[size_t(j * k + p)];
                    const double want = ep == LinearEpilogue::kGelu         ? GeluRef(s)
                                        : ep == LinearEpilogue::kAccumulate ? s + y0[at]
                                                                            : s;
                    ASSERT_NEAR(y[at], want, 2e-5 * std::max(1.0, std::abs(want)))
                        << "m=" << m << " n=" << n << " i=" << i << " j=" << j;
                  }
                }
              });
            }
          }
        }
      }
    }
  });
}

// The SIMD tiles sum each output over k in one chain of fused multiply-adds, in order, whatever
// the blocking: k = 600 crosses the AVX2 tiles' 256-input blocks (their partial sums go out to
// memory and back between blocks), 150 rows cross their 128-row pieces; 150 columns (10 panels,
// the last partial) take the blocked tiles, 40 (3 panels) the unblocked ones. So every output is
// bitwise fma(x[k-1], w[k-1], ... fma(x[0], w[0], 0)), whichever rows share its tile or call.
// (The scalar fallback leaves fusing to the compiler.)
TEST(CpuOpsTest, LinearSumsEachOutputInOneFmaChain) {
  const int m = 150, k = 600, ldx = k + 3;
  const auto x = Random(size_t(m * ldx), 21);
  for (int n : {150, 40}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const int ldy = n + 1;
    const auto w = Random(size_t(n * k), 22);
    const PackedWeight packed = PackedWeight::Pack(w.data(), n, k, WeightType::kFloat32);
    std::vector<float> want(size_t(m) * size_t(n));
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int p = 0; p < k; ++p) {
          acc = std::fma(x[size_t(i * ldx + p)], w[size_t(j * k + p)], acc);
        }
        want[size_t(i * n + j)] = acc;
      }
    }
    auto check = [&] {
      ForEachPool([&](ThreadPool* pool) {
        std::vector<float> y(size_t(m) * size_t(ldy), 0.0f);
        Linear(pool, x.data(), m, ldx, packed, nullptr, y.data(), ldy, LinearEpilogue::kNone);
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < n; ++j) {
            ASSERT_EQ(y[size_t(i * ldy + j)], want[size_t(i * n + j)]) << "i=" << i << " j=" << j;
          }
        }
      });
    };
    struct Restore {
      ~Restore() { LimitIsa(Isa::kAvx512Bf16); }
    } restore;
    if (UseAvx2()) {
      SCOPED_TRACE("avx2");
      LimitIsa(Isa::kAvx2);
      check();
    }
    LimitIsa(Isa::kAvx512);
    if (UseAvx512()) {
      SCOPED_TRACE("avx512");
      check();
    }
  }
  if (!UseAvx2() && !UseAvx512()) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
}

// --dtype / --gemm as the CLI resolves them.
TEST(CpuOpsTest, ResolveWeightTypeFromFlags) {
  WeightType t = WeightType::kBfloat16;
  std::string err;
  EXPECT_TRUE(ResolveWeightType("", "blas", &t, &err));
  EXPECT_EQ(t, WeightType::kFloat32Blas);
  EXPECT_TRUE(ResolveWeightType("float32", "packed", &t, &err));
  EXPECT_EQ(t, WeightType::kFloat32);
  EXPECT_TRUE(ResolveWeightType("bf16", "", &t, &err));
  EXPECT_EQ(t, WeightType::kBfloat16);
  EXPECT_FALSE(ResolveWeightType("bfloat16", "blas", &t, &err));
  EXPECT_NE(err.find("float32 only"), std::string::npos) << err;
  EXPECT_FALSE(ResolveWeightType("float16", "", &t, &err));
  EXPECT_NE(err.find("--dtype"), std::string::npos) << err;
  EXPECT_FALSE(ResolveWeightType("", "mkl", &t, &err));
  EXPECT_NE(err.find("--gemm"), std::string::npos) << err;
  // auto (the default): the packed kernel wherever it has SIMD tiles, BLAS on scalar-only CPUs.
  struct Restore {
    ~Restore() { LimitIsa(Isa::kAvx512Bf16); }
  } restore;
  LimitIsa(Isa::kScalar);
  EXPECT_TRUE(ResolveWeightType("", "auto", &t, &err));
  EXPECT_EQ(t, WeightType::kFloat32Blas);
  EXPECT_TRUE(ResolveWeightType("bfloat16", "", &t, &err));
  EXPECT_EQ(t, WeightType::kBfloat16);
  EXPECT_TRUE(ResolveWeightType("", "packed", &t, &err));
  EXPECT_EQ(t, WeightType::kFloat32);
  LimitIsa(Isa::kAvx512Bf16);
  EXPECT_TRUE(ResolveWeightType("float32", "", &t, &err));
  EXPECT_EQ(
      t, UseAvx2() || UseAvx512() ? WeightType::kFloat32 : WeightType::kFloat32Blas);
}

TEST(CpuOpsTest, Bfloat16RoundsToNearestEven) {
  auto bits = [](float f) { return Bf16FromFloat(f); };
  EXPECT_EQ(bits(1.0f), 0x3f80);
  EXPECT_EQ(bits(-2.0f), 0xc000);
  EXPECT_EQ(bits(1.0f + 0x1p-8f), 0x3f80);             // halfway: to the even 0x3f80
  EXPECT_EQ(bits(1.0f + 3 * 0x1p-8f), 0x3f82);         // halfway: to the even 0x3f82
  EXPECT_EQ(bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // just above halfway
  EXPECT_EQ(bits(INFINITY), 0x7f80);
  EXPECT_EQ(bits(3.4028235e38f), 0x7f80);  // above the largest bfloat16: rounds to infinity
  EXPECT_TRUE(std::isnan(FloatFromBf16(bits(NAN))));
  EXPECT_EQ(FloatFromBf16(bits(0.15625f)), 0.15625f);  // exactly representable
  // The SIMD conversion agrees with the scalar one bit for bit, odd k padded with a zero.
  std::vector<float> x = Random(size_t(5 * 37), 3, -100, 100);
  x[3] = NAN;
  x[7] = -INFINITY;
  x[11] = 1e-41f;  // subnormal
  x[12] = 1.0f + 0x1p-8f;
  const int k = 37, ld = 38;
  ForEachIsa([&] {
    std::vector<bf16> got(size_t(5 * ld), 0xffff);
    ConvertRowsBf16(x.data(), k, k, got.data(), ld, 1, 5);
    for (int r = 0; r < 5; ++r) {
      for (int i = 0; i < ld; ++i) {
        const bf16 want = r == 0 ? bf16(0xffff) : i == k ? bf16(0) : bits(x[size_t(r * k + i)]);
        ASSERT_EQ(got[size_t(r * ld + i)], want) << r << "," << i;
      }
    }
  });
}

// UnpackRows gives back exactly the rows PackRows packed (int8's quantization reads them: the
// packed copy the calibration ran on is the only one kept), a partial last panel included.
TEST(CpuOpsTest, UnpackRowsUndoesPackRows) {
  for (auto [n, k] : {std::pair{37, 29}, std::pair{16, 8}, std::pair{5, 3}}) {
    const auto w = Random(size_t(n) * size_t(k), uint32_t(70 + n), -1, 1);
    std::vector<float> packed(PackedSize(n, k));
    PackRows(w.data(), n, k, k, packed.data());
    std::vector<float> back(size_t(n) * size_t(k), -9.0f);
    UnpackRows(PanelView{packed.data(), n, k}, 0, n, back.data());
    EXPECT_EQ(back, w) << n << " x " << k;
    std::vector<float> tail(size_t(n - 3) * size_t(k));
    UnpackRows(PanelView{packed.data(), n, k}, 3, n, tail.data());
    EXPECT_TRUE(std::equal(tail.begin(), tail.end(), w.begin() + 3 * k)) << n << " x " << k;
  }
}

// The packed bfloat16 operand, element by element as Bf16PanelView reads it: W[c][i] at
// panel c / 16, pair i / 2, lane c % 16, half i % 2; zeros past n (the last panel) and past k
// (odd k). PackRowsBf16 reads W as rows, PackColumnsBf16 as V's columns (W = V^T), both with a
// row pitch wider than the row.
TEST(CpuOpsTest, Bfloat16PackingsPutEachElementInItsPanelSlot) {
  for (const auto& [n, k] : {std::pair{1, 1}, std::pair{16, 32}, std::pair{17, 5},
                             std::pair{37, 64}, std::pair{32, 33}, std::pair{64, 512}}) {
    const int ld_rows = k + 3, ld_cols = n + 5;
    std::vector<float> w = Random(size_t(n) * size_t(ld_rows), uint32_t(n * 131 + k), -3, 3);
    w[0] = 1.0f + 0x1p-8f;  // a tie: to even
    if (w.size() > 2) w[2] = NAN;
    std::vector<float> v(size_t(k) * size_t(ld_cols), 99.0f);  // V [k, n] with V[i][c] = W[c][i]
    for (int c = 0; c < n; ++c) {
      for (int i = 0; i < k; ++i)
        v[size_t(i) * ld_cols + size_t(c)] = w[size_t(c) * ld_rows + size_t(i)];
    }
    const int pairs = (k + 1) / 2;
    auto want = [&](int panel, int pair, int lane, int half) -> bf16 {
      const int c = panel * kPanelWidth + lane, i = 2 * pair + half;
      if (c >= n || i >= k) return 0;
      return Bf16FromFloat(w[size_t(c) * ld_rows + size_t(i)]);
    };
    ForEachIsa([&] {
      std::vector<bf16> rows(PackedSizeBf16(n, k), 0xffff), cols(PackedSizeBf16(n, k), 0xffff);
      PackRowsBf16(w.data(), n, k, ld_rows, rows.data());
      PackColumnsBf16(v.data(), n, k, ld_cols, cols.data());
      for (int p = 0; p < (n + kPanelWidth - 1) / kPanelWidth; ++p) {
        for (int u = 0; u < pairs; ++u) {
          for (int lane = 0; lane < kPanelWidth; ++lane) {
            for (int half = 0; half < 2; ++half) {
              const size_t at = (size_t(p) * size_t(pairs) + size_t(u)) * 2 * kPanelWidth +
                                size_t(2 * lane + half);
              ASSERT_EQ(rows[at], want(p, u, lane, half))
                  << "rows n=" << n << " k=" << k << " panel " << p << " pair " << u;
              ASSERT_EQ(cols[at], want(p, u, lane, half))
                  << "columns n=" << n << " k=" << k << " panel " << p << " pair " << u;
            }
          }
        }
      }
    });
  }
}
// The bfloat16 linear layer multiplies exactly the bfloat16-rounded operands, in fp32: checked
// against a double-precision product of the rounded values, every epilogue, every path. A
// row's result must not depend on the rows beside it.
TEST(CpuOpsTest, LinearBfloat16MatchesRoundedReference) {
  // orchid's packed kernel on each ISA (oneDNN's, which a probe may pick on AMX hosts, has its
  // own tests: bf16_onednn_test.cpp).
  SetBf16Gemm(Bf16Gemm::kPacked);
  struct Unpin {
    ~Unpin() { SetBf16Gemm(Bf16Gemm::kAuto); }
  } unpin;
  ForEachIsa([&] {
    for (int m : {1, 7, 8, 9, 150, 301}) {
      for (auto [k, n] : {std::pair{9, 37}, std::pair{64, 100}, std::pair{3, 16}, std::pair{20, 48},
                          std::pair{384, 1}, std::pair{1, 5}}) {
        const int ldx = k + 1, ldy = n + 3;
        auto x = Random(size_t(m * ldx), 20);
        auto w = Random(size_t(n * k), 21);
        auto bias = Random(size_t(n), 22);
        auto y0 = Random(size_t(m * ldy), 23);
        const PackedWeight packed = PackedWeight::Pack(w.data(), n, k, WeightType::kBfloat16);
        EXPECT_EQ(packed.type(), WeightType::kBfloat16);
        auto round = [](float f) { return double(FloatFromBf16(Bf16FromFloat(f))); };
        for (auto ep :
             {LinearEpilogue::kNone, LinearEpilogue::kGelu, LinearEpilogue::kAccumulate}) {
          ForEachPool([&](ThreadPool* pool) {
            auto y = y0;
            Linear(pool, x.data(), m, ldx, packed, bias.data(), y.data(), ldy, ep);
            for (int i = 0; i < m; ++i) {
              for (int j = 0; j < ldy; ++j) {
                const size_t at = size_t(i * ldy + j);
                if (j >= n) {
                  ASSERT_EQ(y[at], y0[at]);
                  continue;
                }
                double s = bias[size_t(j)];
                for (int p = 0; p < k; ++p)
                  s += round(x[size_t(i * ldx + p)]) * round(w[size_t(j * k + p)]);
                const double want = ep == LinearEpilogue::kGelu         ? GeluRef(s)
                                    : ep == LinearEpilogue::kAccumulate ? s + y0[at]
                                                                        : s;
                ASSERT_NEAR(y[at], want, 2e-5 * std::max(1.0, std::abs(want)))
                    << "m=" << m << " n=" << n << " k=" << k << " i=" << i << " j=" << j;
              }
            }
            // Row m-1 computed alone is bit-identical.
            auto alone = y0;
            const size_t last = size_t(m - 1);
            Linear(pool, x.data() + last * size_t(ldx), 1, ldx, packed, bias.data(),
                   alone.data() + last * size_t(ldy), ldy, ep);
            for (int j = 0; j < n; ++j) {
              ASSERT_EQ(alone[last * size_t(ldy) + size_t(j)], y[last * size_t(ldy) + size_t(j)]);
            }
          });
        }
      }
    }
  });
  // And it is a real rounding: fp32 and bfloat16 layers differ on the same inputs.
  auto x = Random(64, 30), w = Random(64 * 16, 31);
  std::vector<float> a(16), b(16);
  Linear(nullptr, x.data(), 1, 64, PackedWeight::Pack(w.data(), 16, 64), nullptr, a.data(), 16,
         LinearEpilogue::kNone);
  Linear(nullptr, x.data(), 1, 64, PackedWeight::Pack(w.data(), 16, 64, WeightType::kBfloat16),
         nullptr, b.data(), 16, LinearEpilogue::kNone);
  EXPECT_NE(a, b);
}

// The bfloat16 products are exact in fp32, and every instruction set sums them in the order
// vdpbf16ps takes a pair (odd element, then even), so the scalar, AVX2 and AVX-512 FMA paths
// give the same bits (AVX512_BF16's vdpbf16ps is left out: it need not round as two FMAs do).
// The scalar loop, the AVX2 and AVX-512 FMA tiles and vdpbf16ps (where the CPU has AVX512_BF16:
// pinned both ways, whichever the start-up probe would pick) give the same sums, bit for bit.
TEST(CpuOpsTest, LinearBfloat16IsBitwiseTheSameOnEveryPath) {
  struct Restore {
    ~Restore() {
      LimitIsa(Isa::kAvx512Bf16);
      SetBf16Kernel(Bf16Kernel::kAuto);
      SetBf16Gemm(Bf16Gemm::kAuto);
    }
  } restore;
  SetBf16Gemm(Bf16Gemm::kPacked);  // the packed kernel's paths (not oneDNN's)
  struct Path {
    Isa isa;
    Bf16Kernel kernel;
    const char* name;
  };
  const Path paths[] = {{Isa::kAvx2, Bf16Kernel::kAuto, "avx2"},
                        {Isa::kAvx512, Bf16Kernel::kAuto, "avx512"},
                        {Isa::kAvx512Bf16, Bf16Kernel::kFma, "avx512bf16 fma"},
                        {Isa::kAvx512Bf16, Bf16Kernel::kDot, "avx512bf16 vdpbf16ps"}};
  for (auto [m, k, n] : {std::tuple{1, 9, 37}, std::tuple{7, 384, 100}, std::tuple{150, 63, 48},
                         std::tuple{301, 1024, 33}}) {
    SCOPED_TRACE(testing::Message() << "m=" << m << " k=" << k << " n=" << n);
    auto x = Random(size_t(m * k), 40), w = Random(size_t(n * k), 41), b = Random(size_t(n), 42);
    const PackedWeight packed = PackedWeight::Pack(w.data(), n, k, WeightType::kBfloat16);
    std::vector<float> want(size_t(m * n)), got(size_t(m * n));
    LimitIsa(Isa::kScalar);
    Linear(nullptr, x.data(), m, k, packed, b.data(), want.data(), n, LinearEpilogue::kNone);
    for (const Path& path : paths) {
      LimitIsa(path.isa);
      SetBf16Kernel(path.kernel);
      ThreadPool pool(2);
      Linear(&pool, x.data(), m, k, packed, b.data(), got.data(), n, LinearEpilogue::kNone);
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << path.name;
    }
  }
}

TEST(CpuOpsTest, GeluMatchesErfForm) {
  ForEachIsa([&] {
    // Dense sweep of [-12, 12] plus the odd sizes that exercise the vector tails.
    std::vector<float> x;
    for (int i = -24000; i <= 24000; ++i) x.push_back(float(i) / 2000.0f);
    for (size_t n : {size_t(1), size_t(7), size_t(15), size_t(17), x.size()}) {
      ForEachPool([&](ThreadPool* pool) {
        std::vector<float> y(x.begin(), x.begin() + long(n));
        Gelu(pool, y.data(), n);
        for (size_t i = 0; i < n; ++i) {
          const double want = GeluRef(x[i]);
          ASSERT_NEAR(y[i], want, 2e-7 * std::max(1.0, std::fabs(want)) + 1e-7) << "x=" << x[i];
        }
      });
    }
    // With a bias added first.
    auto v = Random(19, 5, -4, 4), b = Random(19, 6);
    auto y = v;
    BiasGelu(y.data(), b.data(), y.size());
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], GeluRef(double(v[i]) + b[i]), 1e-6);
  });
}

TEST(CpuOpsTest, SigmoidGelusMatchTheirFormulas) {
  // CLIP's quick_gelu, x sigmoid(1.702 x), and SigLIP's gelu_pytorch_tanh,
  // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), against double precision.
  auto quick = [](double x) { return x / (1 + std::exp(-1.702 * x)); };
  auto tanh_form = [](double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  };
  ForEachIsa([&] {
    std::vector<float> x;
    for (int i = -24000; i <= 24000; ++i) x.push_back(float(i) / 1000.0f);
    x.push_back(-200.0f), x.push_back(200.0f);
    for (size_t n : {size_t(1), size_t(7), size_t(15), size_t(17), x.size()}) {
      ForEachPool([&](ThreadPool* pool) {
        std::vector<float> q(x.begin(), x.begin() + long(n)), t = q;
        QuickGelu(pool, q.data(), n);
        GeluTanh(pool, t.data(), n);
        for (size_t i = 0; i < n; ++i) {
          const double wq = quick(x[i]), wt = tanh_form(x[i]);
          ASSERT_NEAR(q[i], wq, 4e-7 * std::max(1.0, std::fabs(wq))) << "quick x=" << x[i];
          ASSERT_NEAR(t[i], wt, 4e-7 * std::max(1.0, std::fabs(wt))) << "tanh x=" << x[i];
        }
      });
    }
  });
}

TEST(CpuOpsTest, LayerNormMatchesReference) {
  ForEachIsa([&] {
    for (int dim : {1, 7, 16, 33, 384}) {
      for (int rows : {1, 13}) {
        auto x0 = Random(size_t(rows * dim), 20, -3, 5);
        auto g = Random(size_t(dim), 21, 0.5f, 1.5f), b = Random(size_t(dim), 22);
        ForEachPool([&](ThreadPool* pool) {
          auto x = x0;
          LayerNorm(pool, x.data(), rows, dim, g.data(), b.data(), 1e-5f);
          for (int r = 0; r < rows; ++r) {
            double mean = 0, var = 0;
            for (int d = 0; d < dim; ++d) mean += x0[size_t(r * dim + d)];
            mean /= dim;
            for (int d = 0; d < dim; ++d) var += std::pow(x0[size_t(r * dim + d)] - mean, 2);
            var /= dim;
            for (int d = 0; d < dim; ++d) {
              const double want =
                  (x0[size_t(r * dim + d)] - mean) / std::sqrt(var + 1e-5) * g[size_t(d)] +
                  b[size_t(d)];
              ASSERT_NEAR(x[size_t(r * dim + d)], want, 1e-5) << "dim " << dim << " row " << r;
            }
          }
        });
      }
    }
  });
}

TEST(CpuOpsTest, SoftmaxMatchesReferenceAndIsStable) {
  ForEachIsa([&] {
    for (int cols : {1, 5, 8, 16, 17, 31, 128, 129}) {
      const int rows = 3, ld = cols + 2;
      auto x0 = Random(size_t(rows * ld), 30, -20, 20);
      x0[0] = 1000.0f;  // huge logits must not overflow
      if (cols > 1) x0[1] = -1000.0f;
      auto x = x0;
      SoftmaxRows(x.data(), rows, cols, ld);
      for (int r = 0; r < rows; ++r) {
        double mx = -1e300, sum = 0;
        for (int c = 0; c < cols; ++c) mx = std::max(mx, double(x0[size_t(r * ld + c)]));
        for (int c = 0; c < cols; ++c) sum += std::exp(x0[size_t(r * ld + c)] - mx);
        double total = 0;
        for (int c = 0; c < cols; ++c) {
          const double want = std::exp(x0[size_t(r * ld + c)] - mx) / sum;
          ASSERT_NEAR(x[size_t(r * ld + c)], want, 2e-6 * want + 1e-9) << "cols " << cols;
          total += x[size_t(r * ld + c)];
        }
        EXPECT_NEAR(total, 1.0, 1e-5);
        for (int c = cols; c < ld; ++c) EXPECT_EQ(x[size_t(r * ld + c)], x0[size_t(r * ld + c)]);
      }
    }
  });
}

// The fused softmax for bfloat16 attention gives exactly what the three steps it replaces gave
// (scale, SoftmaxRows, ConvertRowsBf16) on every ISA, an odd width's pad included, and leaves
// the rows' other columns alone.
TEST(CpuOpsTest, SoftmaxToBfloat16IsTheSameBitsAsItsSteps) {
  ForEachIsa([&] {
    for (int cols : {1, 5, 16, 17, 31, 128, 129, 512}) {
      // Enough rows that one value in ~10^4 rounding differently (say, a multiply and subtract
      // fused into one rounding) shows up in the bfloat16 results.
      const int rows = 96, ld = cols + 3, ld_out = 2 * ((cols + 1) / 2) + 2;
      auto x0 = Random(size_t(rows * ld), uint32_t(31 + cols), -40, 40);
      x0[0] = 3000.0f;                  // huge logits must not overflow
      const float scale = 0.17677669f;  // 1 / sqrt(32)
      auto steps = x0;
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) steps[size_t(r * ld + c)] *= scale;
      }
      SoftmaxRows(steps.data(), rows, cols, ld);
      std::vector<bf16> want(size_t(rows * ld_out), 0xabcd), got(size_t(rows * ld_out), 0xabcd);
      ConvertRowsBf16(steps.data(), ld, cols, want.data(), ld_out, 0, rows);
      auto x = x0;
      SoftmaxRowsToBf16(x.data(), rows, cols, ld, scale, got.data(), ld_out);
      ASSERT_EQ(got, want) << "cols " << cols;
      for (int r = 0; r < rows; ++r) {
        for (int c = cols; c < ld; ++c) ASSERT_EQ(x[size_t(r * ld + c)], x0[size_t(r * ld + c)]);
      }
    }
  });
}

TEST(CpuOpsTest, RaggedSelfAttentionMatchesReference) {
  ForEachIsa([&] {
    // 300: several blocks of query rows (attention.cpp's RowBlock).
    const std::vector<int32_t> lens = {1, 3, 17, 1, 64, 5, 300};
    std::vector<int32_t> cu = {0};
    for (int32_t l : lens) cu.push_back(cu.back() + l);
    const int T = cu.back();
    for (auto [heads, hd] : {std::pair{3, 8}, std::pair{2, 32}, std::pair{1, 5}}) {
      const int H = heads * hd;
      auto qkv = Random(size_t(T) * 3 * H, 40, -2, 2);
      for (bool blas : {false, true}) {
        SCOPED_TRACE(blas ? "BLAS" : "packed");
        ForEachPool([&](ThreadPool* pool) {
          std::vector<float> out(size_t(T) * H, -7.0f);
          Buffer<float> scratch;
          RaggedSelfAttention(pool, qkv.data(), cu.data(), int(lens.size()), heads, hd, out.data(),
                              &scratch, blas);
          for (size_t s = 0; s < lens.size(); ++s) {
            for (int h = 0; h < heads; ++h) {
              for (int i = cu[s]; i < cu[s + 1]; ++i) {
                std::vector<double> p;
                double mx = -1e300, sum = 0;
                for (int j = cu[s]; j < cu[s + 1]; ++j) {
                  double dot = 0;
                  for (int d = 0; d < hd; ++d) {
                    dot += double(qkv[size_t(i) * 3 * H + size_t(h * hd + d)]) *
                           qkv[size_t(j) * 3 * H + size_t(H + h * hd + d)];
                  }
                  p.push_back(dot / std::sqrt(double(hd)));
                  mx = std::max(mx, p.back());
                }
                for (auto& v : p) sum += (v = std::exp(v - mx));
                for (int d = 0; d < hd; ++d) {
                  double o = 0;
                  for (int j = cu[s]; j < cu[s + 1]; ++j) {
                    o += p[size_t(j - cu[s])] / sum *
                         qkv[size_t(j) * 3 * H + size_t(2 * H + h * hd + d)];
                  }
                  ASSERT_NEAR(out[size_t(i) * H + size_t(h * hd + d)], o, 1e-5)
                      << "seq " << s << " head " << h << " token " << i;
                }
              }
            }
          }
        });
      }
    }
  });
}

// Key limits (RaggedBatch::attend_lens: a ColBERT query's [MASK] expansion): every row of
// sequence s attends to its first key_lens[s] tokens only (0: all), with a sliding window too
// (ModernBERT's local layers), on the packed, BLAS and bfloat16 paths. bfloat16 is compared
// within its rounding; the others within 1e-5.
TEST(CpuOpsTest, RaggedAttentionKeyLimitsMatchReference) {
  const std::vector<int32_t> lens = {12, 1, 40, 5, 70, 300};
  const std::vector<int32_t> keys = {8, 0, 33, 5, 20, 250};
  std::vector<int32_t> cu = {0};
  for (int32_t l : lens) cu.push_back(cu.back() + l);
  const int T = cu.back(), heads = 2, hd = 16, H = heads * hd;
  auto qkv = Random(size_t(T) * 3 * H, 47, -2, 2);
  for (int window : {0, 8}) {
    for (int path = 0; path < 3; ++path) {  // packed, BLAS, bfloat16
      SCOPED_TRACE(::testing::Message() << "window " << window << " path " << path);
      ForEachPool([&](ThreadPool* pool) {
        std::vector<float> out(size_t(T) * H, -7.0f);
        Buffer<float> scratch;
        AttentionShape shape{heads, heads, hd, false, path == 1};
        shape.bf16 = path == 2;
        shape.window = window;
        shape.key_lens = keys.data();
        RaggedAttention(pool, qkv.data(), cu.data(), int(lens.size()), shape, out.data(), &scratch);
        for (size_t s = 0; s < lens.size(); ++s) {
          const int kv = keys[s] > 0 ? keys[s] : lens[s];
          for (int h = 0; h < heads; ++h) {
            for (int i = cu[s]; i < cu[s + 1]; ++i) {
              const int r = i - cu[s];
              int lo = 0, hi = kv;
              if (window > 0) {
                lo = std::max(0, r - window + 1);
                hi = std::min(kv, r + window);
              }
              std::vector<double> p;
              double mx = -1e300, sum = 0;
              for (int j = lo; j < hi; ++j) {
                double dot = 0;
                for (int d = 0; d < hd; ++d) {
                  dot += double(qkv[size_t(i) * 3 * H + size_t(h * hd + d)]) *
                         qkv[size_t(cu[s] + j) * 3 * H + size_t(H + h * hd + d)];
                }
                p.push_back(dot / std::sqrt(double(hd)));
                mx = std::max(mx, p.back());
              }
              for (auto& v : p) sum += (v = std::exp(v - mx));
              for (int d = 0; d < hd; ++d) {
                double o = 0;
                for (int j = lo; j < hi; ++j) {
                  o += p[size_t(j - lo)] / sum *
                       qkv[size_t(cu[s] + j) * 3 * H + size_t(2 * H + h * hd + d)];
                }
                ASSERT_NEAR(out[size_t(i) * H + size_t(h * hd + d)], o, path == 2 ? 3e-2 : 1e-5)
                    << "seq " << s << " head " << h << " token " << r;
              }
            }
          }
        }
      });
    }
  }
}

// Grouped-query heads and causal masking (Qwen3): a plain reference per (sequence, head, token).
// 70 tokens cross the causal path's 64-row blocks. Packed and BLAS products both. Six sequences
// are shared out whole over the pool; two, and five (which do not share out evenly over 2 or 3
// threads), by (sequence, key/value head), or by (sequence, query head) when those are fewer
// than twice the threads.
TEST(CpuOpsTest, RaggedAttentionCausalGroupedQueryMatchesReference) {
  for (const std::vector<int32_t>& lens :
       {std::vector<int32_t>{1, 2, 17, 1, 70, 7}, std::vector<int32_t>{70, 9},
        std::vector<int32_t>{3, 70, 1, 17, 9}}) {
    std::vector<int32_t> cu = {0};
    for (int32_t l : lens) cu.push_back(cu.back() + l);
    const int T = cu.back();
    for (auto [causal, blas] : {std::pair{true, false}, std::pair{false, false},
                                std::pair{true, true}, std::pair{false, true}}) {
      for (auto [heads, kv, hd] :
           {std::tuple{4, 2, 16}, std::tuple{6, 1, 8}, std::tuple{3, 3, 5}}) {
        SCOPED_TRACE(::testing::Message() << "causal " << causal << " blas " << blas << " heads "
                                          << heads << " kv " << kv);
        const int Q = heads * hd, KV = kv * hd, ld = Q + 2 * KV;
        auto qkv = Random(size_t(T) * size_t(ld), 41, -2, 2);
        ForEachPool([&](ThreadPool* pool) {
          std::vector<float> out(size_t(T) * size_t(Q), -7.0f);
          Buffer<float> scratch;
          RaggedAttention(pool, qkv.data(), cu.data(), int(lens.size()),
                          {heads, kv, hd, causal, blas}, out.data(), &scratch);
          for (size_t s = 0; s < lens.size(); ++s) {
            for (int h = 0; h < heads; ++h) {
              const int g = h / (heads / kv);
              for (int i = cu[s]; i < cu[s + 1]; ++i) {
                const int last = causal ? i : cu[s + 1] - 1;
                std::vector<double> p;
                double mx = -1e300, sum = 0;
                for (int j = cu[s]; j <= last; ++j) {
                  double dot = 0;
                  for (int d = 0; d < hd; ++d) {
                    dot += double(qkv[size_t(i) * ld + size_t(h * hd + d)]) *
                           qkv[size_t(j) * ld + size_t(Q + g * hd + d)];
                  }
                  p.push_back(dot / std::sqrt(double(hd)));
                  mx = std::max(mx, p.back());
                }
                for (auto& v : p) sum += (v = std::exp(v - mx));
                for (int d = 0; d < hd; ++d) {
                  double o = 0;
                  for (int j = cu[s]; j <= last; ++j) {
                    o += p[size_t(j - cu[s])] / sum *
                         qkv[size_t(j) * ld + size_t(Q + KV + g * hd + d)];
                  }
                  ASSERT_NEAR(out[size_t(i) * Q + size_t(h * hd + d)], o, 1e-5)
                      << "seq " << s << " head " << h << " token " << i;
                }
              }
            }
          }
        });
      }
    }
  }
}

// bfloat16 products (--dtype int8 models): against a reference that rounds Q, K, P and V to
// bfloat16 as the kernel does and sums in double. A P value within fp32 noise of a rounding
// boundary may round the other way in the reference (2^-8 of it), so single elements get a
// loose bound and the mean a tight one; unrounded operands would miss both by far.
TEST(CpuOpsTest, RaggedAttentionBfloat16MatchesRoundedReference) {
  auto round = [](double f) { return double(FloatFromBf16(Bf16FromFloat(float(f)))); };
  const std::vector<int32_t> lens = {1, 2, 17, 70, 7, 300};
  std::vector<int32_t> cu = {0};
  for (int32_t l : lens) cu.push_back(cu.back() + l);
  const int T = cu.back();
  for (bool causal : {false, true}) {
    for (auto [heads, kv, hd] : {std::tuple{4, 2, 16}, std::tuple{3, 3, 5}, std::tuple{2, 1, 40}}) {
      SCOPED_TRACE(::testing::Message() << "causal " << causal << " heads " << heads << " hd "
                                        << hd);
      const int Q = heads * hd, KV = kv * hd, ld = Q + 2 * KV;
      auto qkv = Random(size_t(T) * size_t(ld), 45, -1, 1);
      ForEachPool([&](ThreadPool* pool) {
        std::vector<float> out(size_t(T) * size_t(Q), -7.0f);
        Buffer<float> scratch;
        AttentionShape shape{heads, kv, hd, causal, false};
        shape.bf16 = true;
        RaggedAttention(pool, qkv.data(), cu.data(), int(lens.size()), shape, out.data(), &scratch);
        double sum_err = 0;
        size_t count = 0;
        for (size_t s = 0; s < lens.size(); ++s) {
          for (int h = 0; h < heads; ++h) {
            const int g = h / (heads / kv);
            for (int i = cu[s]; i < cu[s + 1]; ++i) {
              const int last = causal ? i : cu[s + 1] - 1;
              std::vector<double> p;
              double mx = -1e300, sum = 0;
              for (int j = cu[s]; j <= last; ++j) {
                double dot = 0;
                for (int d = 0; d < hd; ++d) {
                  dot += round(qkv[size_t(i) * ld + size_t(h * hd + d)]) *
                         round(qkv[size_t(j) * ld + size_t(Q + g * hd + d)]);
                }
                p.push_back(float(dot) * (1.0f / std::sqrt(float(hd))));
                mx = std::max(mx, p.back());
              }
              for (auto& v : p) sum += (v = std::exp(v - mx));
              for (int d = 0; d < hd; ++d) {
                double o = 0;
                for (int j = cu[s]; j <= last; ++j) {
                  o += round(p[size_t(j - cu[s])] / sum) *
                       round(qkv[size_t(j) * ld + size_t(Q + KV + g * hd + d)]);
                }
                const double err = std::abs(out[size_t(i) * Q + size_t(h * hd + d)] - o);
                ASSERT_LT(err, 1e-2) << "seq " << s << " head " << h << " token " << i;
                sum_err += err;
                ++count;
              }
            }
          }
        }
        EXPECT_LT(sum_err / double(count), 2e-4);
      });
    }
  }
}

// query_rows: each sequence computes only a range of its query rows (the last layer under CLS
// or last-token pooling); those rows are bitwise the full call's, the others are left alone.
TEST(CpuOpsTest, RaggedAttentionQueryRowsMatchTheFullCallBitwise) {
  const std::vector<int32_t> lens = {1, 70, 130, 17, 64, 9, 300};
  std::vector<int32_t> cu = {0};
  for (int32_t l : lens) cu.push_back(cu.back() + l);
  const int T = cu.back();
  // [begin, end) per sequence: the whole of it, the first row (CLS), the last (last token),
  // and rows that straddle the blocks of query rows (64 causal; 96 bidirectional at 300).
  const std::vector<int32_t> ranges = {0, 1, 69, 70, 3, 129, 0, 1, 63, 64, 0, 9, 90, 200};
  for (auto [causal, heads, kv, hd, half] :
       {std::tuple{true, 4, 2, 16, false}, std::tuple{false, 4, 2, 16, false},
        std::tuple{true, 3, 3, 40, false}, std::tuple{false, 6, 1, 8, false},
        std::tuple{true, 4, 2, 16, true}, std::tuple{false, 3, 3, 40, true}}) {
    SCOPED_TRACE(::testing::Message() << "causal " << causal << " heads " << heads << " kv " << kv
                                      << " bf16 " << half);
    const int Q = heads * hd, ld = Q + 2 * kv * hd;
    auto qkv = Random(size_t(T) * size_t(ld), 43, -2, 2);
    ForEachPool([&](ThreadPool* pool) {
      std::vector<float> full(size_t(T) * size_t(Q)), part(size_t(T) * size_t(Q), -7.0f);
      Buffer<float> scratch;
      AttentionShape shape{heads, kv, hd, causal, false};
      shape.bf16 = half;
      RaggedAttention(pool, qkv.data(), cu.data(), int(lens.size()), shape, full.data(), &scratch);
      RaggedAttention(pool, qkv.data(), cu.data(), int(lens.size()), shape, part.data(), &scratch,
                      ranges.data());
      int computed = 0;
      for (size_t s = 0; s < lens.size(); ++s) {
        for (int i = 0; i < lens[s]; ++i) {
          const bool wanted = i >= ranges[2 * s] && i < ranges[2 * s + 1];
          computed += wanted;
          for (int c = 0; c < Q; ++c) {
            const size_t at = size_t(cu[s] + i) * size_t(Q) + size_t(c);
            if (wanted) {
              ASSERT_EQ(part[at], full[at]) << "seq " << s << " row " << i << " column " << c;
            } else {
              ASSERT_EQ(part[at], -7.0f) << "seq " << s << " row " << i << " written";
            }
          }
        }
      }
      EXPECT_EQ(computed, 1 + 1 + 126 + 1 + 1 + 9 + 110);
    });
  }
}

TEST(CpuOpsTest, RmsNormRowsAndHeads) {
  const int rows = 37, dim = 24;
  auto x = Random(size_t(rows) * 30, 50, -3, 3);  // rows 30 floats apart
  auto w = Random(size_t(dim), 51, 0.5f, 1.5f);
  ForEachPool([&](ThreadPool* pool) {
    std::vector<float> y(size_t(rows) * dim);
    RmsNorm(pool, x.data(), 30, rows, dim, w.data(), 1e-6f, y.data(), dim);
    for (int r = 0; r < rows; ++r) {
      double sq = 0;
      for (int i = 0; i < dim; ++i) sq += double(x[size_t(r) * 30 + i]) * x[size_t(r) * 30 + i];
      const double inv = 1 / std::sqrt(sq / dim + 1e-6);
      for (int i = 0; i < dim; ++i) {
        ASSERT_NEAR(y[size_t(r) * dim + i], w[size_t(i)] * x[size_t(r) * 30 + i] * inv, 1e-5);
      }
    }
    // Per head: 3 heads of 8 inside rows of 30, normalised with one 8-wide weight.
    std::vector<float> h = x;
    RmsNormHeads(pool, h.data(), 30, rows, 3, 8, w.data(), 1e-6f);
    for (int r = 0; r < rows; ++r) {
      for (int k = 0; k < 3; ++k) {
        const float* in = x.data() + size_t(r) * 30 + size_t(k) * 8;
        double sq = 0;
        for (int i = 0; i < 8; ++i) sq += double(in[i]) * in[i];
        const double inv = 1 / std::sqrt(sq / 8 + 1e-6);
        for (int i = 0; i < 8; ++i) {
          ASSERT_NEAR(h[size_t(r) * 30 + size_t(k) * 8 + i], w[size_t(i)] * in[i] * inv, 1e-5);
        }
      }
      for (int i = 24; i < 30; ++i) ASSERT_EQ(h[size_t(r) * 30 + i], x[size_t(r) * 30 + i]);
    }
  });
}

TEST(CpuOpsTest, RopeNeoxLayout) {
  const int rows = 9, heads = 2, hd = 16, ld = 40;
  auto x = Random(size_t(rows) * ld, 52);
  std::vector<int32_t> pos = {0, 1, 2, 3, 100, 511, 7, 8, 2047};
  ForEachPool([&](ThreadPool* pool) {
    std::vector<float> y = x;
    std::vector<float> inv;
    float scale = 0;
    ops::RopeInverseFrequencies(1e6, hd, {}, 0, &inv, &scale);
    ASSERT_EQ(scale, 1.0f);
    ApplyRope(pool, y.data(), ld, rows, heads, hd, pos.data(), inv.data(), scale);
    for (int r = 0; r < rows; ++r) {
      for (int h = 0; h < heads; ++h) {
        for (int i = 0; i < hd / 2; ++i) {
          const double angle = pos[size_t(r)] * std::pow(1e6, -2.0 * i / hd);
          const float* in = x.data() + size_t(r) * ld + size_t(h) * hd;
          const double a = in[i], b = in[i + hd / 2];
          const float* out = y.data() + size_t(r) * ld + size_t(h) * hd;
          // fp32 angles (as transformers) drift from exact ones by ~pos * 1e-7.
          ASSERT_NEAR(out[i], a * std::cos(angle) - b * std::sin(angle), 5e-4) << r << " " << i;
          ASSERT_NEAR(out[i + hd / 2], b * std::cos(angle) + a * std::sin(angle), 5e-4);
        }
      }
      // Position 0 is the identity; floats past the heads are untouched.
      for (int i = heads * hd; i < ld; ++i) ASSERT_EQ(y[size_t(r) * ld + i], x[size_t(r) * ld + i]);
    }
    for (int i = 0; i < heads * hd; ++i) ASSERT_EQ(y[size_t(i)], x[size_t(i)]);
  });
}

TEST(CpuOpsTest, SwiGluGatesUp) {
  const int rows = 13, dim = 20;  // 20: two 8-wide vectors and a scalar tail
  auto gu = Random(size_t(rows) * 2 * dim, 53, -6, 6);
  gu[0] = -100.0f;  // exp(-g) past float's range: silu(g) is -0 in the reference
  gu[1] = 100.0f;
  ForEachIsa([&] {
    ForEachPool([&](ThreadPool* pool) {
      std::vector<float> out(size_t(rows) * dim);
      SwiGlu(pool, gu.data(), rows, dim, out.data());
      for (int r = 0; r < rows; ++r) {
        for (int i = 0; i < dim; ++i) {
          const double g = gu[size_t(r) * 2 * dim + i], u = gu[size_t(r) * 2 * dim + dim + i];
          const double want = g / (1 + std::exp(-g)) * u;
          ASSERT_NEAR(out[size_t(r) * dim + i], want, 1e-6 * std::max(1.0, std::abs(want)))
              << "r=" << r << " i=" << i;
        }
      }
    });
  });
}

// GeGLU, both GELUs (Gemma's tanh form, ModernBERT's exact one), on every ISA, against the
// formulas in double.
TEST(CpuOpsTest, GeGluGatesUpWithEitherGelu) {
  const int rows = 13, dim = 20;  // 20: two 8-wide vectors and a scalar tail
  auto gu = Random(size_t(rows) * 2 * dim, 59, -6, 6);
  gu[0] = -100.0f;  // tanh saturates: gelu_tanh(g) is -0
  gu[1] = 100.0f;
  ForEachIsa([&] {
    ForEachPool([&](ThreadPool* pool) {
      for (bool tanh_form : {true, false}) {
        std::vector<float> out(size_t(rows) * dim);
        (tanh_form ? GeluTanhGlu : GeluGlu)(pool, gu.data(), rows, dim, out.data());
        for (int r = 0; r < rows; ++r) {
          for (int i = 0; i < dim; ++i) {
            const double g = gu[size_t(r) * 2 * dim + i], u = gu[size_t(r) * 2 * dim + dim + i];
            const double gelu =
                tanh_form ? 0.5 * g * (1 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)))
                          : 0.5 * g * (1 + std::erf(g / std::sqrt(2.0)));
            const double want = gelu * u;
            ASSERT_NEAR(out[size_t(r) * dim + i], want, 2e-6 * std::max(1.0, std::abs(want)))
                << "r=" << r << " i=" << i << (tanh_form ? " tanh" : " erf");
          }
        }
      }
    });
  });
}

TEST(CpuOpsTest, PoolingOverCuSeqlens) {
  const std::vector<int32_t> cu = {0, 1, 4, 11};
  const int dim = 5;
  auto h = Random(size_t(11 * dim), 50);
  for (Pooling mode : {Pooling::kMean, Pooling::kCls, Pooling::kLastToken}) {
    std::vector<Pooling> modes(3, mode);
    std::vector<float> out(3 * dim);
    Pool(h.data(), dim, cu.data(), 3, modes.data(), out.data());
    for (int s = 0; s < 3; ++s) {
      for (int d = 0; d < dim; ++d) {
        double want = 0;
        if (mode == Pooling::kCls) want = h[size_t(cu[size_t(s)] * dim + d)];
        if (mode == Pooling::kLastToken) want = h[size_t((cu[size_t(s) + 1] - 1) * dim + d)];
        if (mode == Pooling::kMean) {
          for (int t = cu[size_t(s)]; t < cu[size_t(s) + 1]; ++t) want += h[size_t(t * dim + d)];
          want /= cu[size_t(s) + 1] - cu[size_t(s)];
        }
        EXPECT_NEAR(out[size_t(s * dim + d)], want, 1e-6) << PoolingName(mode) << " seq " << s;
      }
    }
  }
  // Mixed modes in one call.
  const std::vector<Pooling> mixed = {Pooling::kLastToken, Pooling::kCls, Pooling::kMean};
  std::vector<float> out(3 * dim);
  Pool(h.data(), dim, cu.data(), 3, mixed.data(), out.data());
  EXPECT_EQ(out[0], h[0]);
  EXPECT_EQ(out[size_t(dim)], h[size_t(dim)]);
}

// include_prompt: false — the first skip[s] tokens are left out of the reducing modes (weighted
// mean keeps each token's weight by its place in the whole sequence); CLS and last token ignore
// it; nothing left gives zeros.
TEST(CpuOpsTest, PoolingSkipsLeadingTokens) {
  const std::vector<int32_t> cu = {0, 4, 9};
  const int dim = 3;
  auto h = Random(size_t(9 * dim), 51);
  const std::vector<int32_t> skip = {2, 5};  // sequence 1 has 5 tokens: nothing left
  for (Pooling mode : {Pooling::kMean, Pooling::kMax, Pooling::kMeanSqrtLen, Pooling::kWeightedMean,
                       Pooling::kCls, Pooling::kLastToken}) {
    std::vector<Pooling> modes(2, mode);
    std::vector<float> out(2 * dim);
    Pool(h.data(), dim, cu.data(), 2, modes.data(), out.data(), skip.data());
    for (int d = 0; d < dim; ++d) {
      auto x = [&](int t) { return double(h[size_t(t * dim + d)]); };
      double want = 0;
      switch (mode) {
        case Pooling::kMean:
          want = (x(2) + x(3)) / 2;
          break;
        case Pooling::kMax:
          want = std::max(x(2), x(3));
          break;
        case Pooling::kMeanSqrtLen:
          want = (x(2) + x(3)) / std::sqrt(2.0);
          break;
        case Pooling::kWeightedMean:
          want = (3 * x(2) + 4 * x(3)) / 7;
          break;
        case Pooling::kCls:
          want = x(0);
          break;
        default:
          want = x(3);
          break;
      }
      EXPECT_NEAR(out[size_t(d)], want, 1e-6) << PoolingName(mode);
      const double second = mode == Pooling::kCls ? x(4) : mode == Pooling::kLastToken ? x(8) : 0.0;
      EXPECT_NEAR(out[size_t(dim + d)], second, 1e-6) << PoolingName(mode) << " (all skipped)";
    }
  }
}

TEST(CpuOpsTest, L2NormalizeRowsWithMask) {
  std::vector<float> x = {3, 4, 0, 0, 1, 1, 0, 0, 0};
  const uint8_t mask[] = {1, 0, 1};
  L2Normalize(x.data(), 3, 3, mask);
  EXPECT_NEAR(x[0], 0.6, 1e-7);
  EXPECT_NEAR(x[1], 0.8, 1e-7);
  EXPECT_EQ(x[4], 1.0f);                                      // masked out: untouched
  for (int d = 6; d < 9; ++d) EXPECT_EQ(x[size_t(d)], 0.0f);  // zero stays zero, no NaN
  auto y = Random(7 * 33, 60);
  L2Normalize(y.data(), 7, 33, nullptr);
  for (int r = 0; r < 7; ++r) {
    double n = 0;
    for (int d = 0; d < 33; ++d) n += double(y[size_t(r * 33 + d)]) * y[size_t(r * 33 + d)];
    EXPECT_NEAR(n, 1.0, 1e-6);
  }
}

TEST(CpuOpsTest, EmbeddingLookupAndAdd) {
  const int rows = 10, dim = 6, n = 150;
  auto table = Random(size_t(rows * dim), 70);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::mt19937 rng(71);
  for (auto& id : ids) id = int32_t(rng() % rows);
  ForEachPool([&](ThreadPool* pool) {
    std::vector<float> out(size_t(n * dim));
    EmbeddingLookup(pool, table.data(), dim, ids.data(), n, out.data(), false);
    EmbeddingLookup(pool, table.data(), dim, nullptr, n, out.data(), true);  // + row 0
    for (int i = 0; i < n; ++i) {
      for (int d = 0; d < dim; ++d) {
        ASSERT_FLOAT_EQ(out[size_t(i * dim + d)],
                        table[size_t(ids[size_t(i)] * dim + d)] + table[size_t(d)]);
      }
    }
  });
  std::vector<float> y = {1, 2, 3, 4, 5};
  const float x[] = {10, 20, 30, 40, 50};
  Add(y.data(), x, 5);
  EXPECT_EQ(y, (std::vector<float>{11, 22, 33, 44, 55}));
}

}  // namespace
}  // namespace orchid
