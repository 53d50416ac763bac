// --dtype bfloat16 on oneDNN's matmul (issue 31: AMX-BF16 where the CPU has it): the layer
// against a double-precision product of the bfloat16-rounded operands, every epilogue, row
// independence, the load-time probe, and a whole model against the packed kernel. ctest runs
// these again under ONEDNN_MAX_CPU_ISA caps (tests/CMakeLists.txt); where oneDNN has no
// bfloat16 matmul under the cap, the layer must fall back to the packed kernel.
#include "backends/cpu/bf16_onednn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/int8_linear.h"
#include "backends/cpu/linear.h"
#include "backends/cpu/thread_pool.h"
#include "runtime/cpu_engine.h"

namespace orchid {
namespace {

const std::string kFixtures = ORCHID_SOURCE_DIR "/models/fixtures";

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

double Gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double Round(float f) { return double(FloatFromBf16(Bf16FromFloat(f))); }

// Pins the choice for a test and restores the default after it.
struct Pin {
  explicit Pin(Bf16Gemm g) { SetBf16Gemm(g); }
  ~Pin() { SetBf16Gemm(Bf16Gemm::kAuto); }
};

// Skips, saying why, where oneDNN makes no bfloat16 matmul (below AVX-512, or under a cap).
#define SKIP_WITHOUT_ONEDNN_BF16()                                                          \
  do {                                                                                      \
    std::vector<float> w_(64 * 16, 0.5f);                                                   \
    if (OneDnnBf16Weight::Pack(w_.data(), 16, 64).empty()) {                                \
      GTEST_SKIP() << "oneDNN has no bfloat16 matmul on this CPU (its ISA: " << OneDnnIsa() \
                   << "); the packed kernel runs --dtype bfloat16 here";                    \
    }                                                                                       \
  } while (0)

TEST(Bf16OneDnnTest, MultipliesTheRoundedOperandsEveryEpilogue) {
  SKIP_WITHOUT_ONEDNN_BF16();
  Pin pin(Bf16Gemm::kOneDnn);
  for (int m : {1, 7, 150, 301}) {
    for (auto [k, n] :
         {std::pair{64, 100}, std::pair{20, 48}, std::pair{384, 1}, std::pair{768, 37}}) {
      for (bool dense : {true, false}) {
        SCOPED_TRACE(testing::Message()
                     << "m=" << m << " k=" << k << " n=" << n << (dense ? " dense" : " strided"));
        const int ldx = k + 3, ldy = dense ? n : n + 5;
        auto x = Random(size_t(m) * size_t(ldx), 20);
        auto w = Random(size_t(n) * size_t(k), 21);
        auto bias = Random(size_t(n), 22);
        auto y0 = Random(size_t(m) * size_t(ldy), 23);
        const PackedWeight packed = PackedWeight::Pack(w.data(), n, k, WeightType::kBfloat16);
        ASSERT_FALSE(packed.onednn_bf16().empty());
        for (auto ep : {Epilogue::kNone, Epilogue::kGelu, Epilogue::kAccumulate}) {
          for (bool with_bias : {true, false}) {
            for (int threads : {1, 2}) {
              ThreadPool pool(threads);
              auto y = y0;
              Linear(&pool, x.data(), m, ldx, packed, with_bias ? bias.data() : nullptr, y.data(),
                     ldy, ep);
              for (int i = 0; i < m; ++i) {
                for (int j = 0; j < ldy; ++j) {
                  const size_t at = size_t(i) * size_t(ldy) + size_t(j);
                  if (j >= n) {
                    ASSERT_EQ(y[at], y0[at]);
                    continue;
                  }
                  double s = with_bias ? bias[size_t(j)] : 0.0, mag = std::abs(s);
                  for (int p = 0; p < k; ++p) {
                    const double t = Round(x[size_t(i) * size_t(ldx) + size_t(p)]) *
                                     Round(w[size_t(j) * size_t(k) + size_t(p)]);
                    s += t;
                    mag += std::abs(t);
                  }
                  const double want = ep == Epilogue::kGelu         ? Gelu(s)
                                      : ep == Epilogue::kAccumulate ? s + y0[at]
                                                                    : s;
                  // fp32 accumulation of exact products in any order (AMX sums in tiles):
                  // within a few ulps of the magnitudes. Unrounded fp32 operands would be off
                  // by ~2^-9 of each product, far outside this.
                  ASSERT_NEAR(y[at], want, 4e-6 * (mag + std::abs(want)) + 1e-7)
                      << "epilogue " << int(ep) << " bias " << with_bias << " threads " << threads
                      << " i=" << i << " j=" << j;
                }
              }
            }
          }
        }
      }
    }
  }
}

// A text's embedding must not depend on the batch it shares: each row computed alone gives
// the same bits as in a block of 301 rows.
TEST(Bf16OneDnnTest, ARowsResultDoesNotDependOnTheRowsBesideIt) {
  SKIP_WITHOUT_ONEDNN_BF16();
  Pin pin(Bf16Gemm::kOneDnn);
  const int m = 301, k = 768, n = 200;
  auto x = Random(size_t(m) * size_t(k), 30), w = Random(size_t(n) * size_t(k), 31),
       bias = Random(size_t(n), 32);
  const PackedWeight packed = PackedWeight::Pack(w.data(), n, k, WeightType::kBfloat16);
  ASSERT_FALSE(packed.onednn_bf16().empty());
  ThreadPool pool(2);
  std::vector<float> all(size_t(m) * size_t(n)), one(static_cast<size_t>(n));
  for (auto ep : {Epilogue::kNone, Epilogue::kGelu}) {  // (kGelu: the post-op primitives)
    Linear(&pool, x.data(), m, k, packed, bias.data(), all.data(), n, ep);
    for (int r : {0, 1, 15, 16, 17, 150, 299, 300}) {
      Linear(&pool, x.data() + size_t(r) * size_t(k), 1, k, packed, bias.data(), one.data(), n, ep);
      for (int j = 0; j < n; ++j) {
        ASSERT_EQ(one[size_t(j)], all[size_t(r) * size_t(n) + size_t(j)])
            << "epilogue " << int(ep) << " row " << r << " j " << j;
      }
    }
  }
}

// Odd k (oneDNN would need another layout for the packed pairs) and a pinned packed kernel
// leave the layer on orchid's kernel.
TEST(Bf16OneDnnTest, OddWidthsAndThePinStayOnThePackedKernel) {
  std::vector<float> w(size_t(33) * 65, 0.25f);
  EXPECT_TRUE(OneDnnBf16Weight::Pack(w.data(), 33, 65).empty());
  Pin pin(Bf16Gemm::kPacked);
  const PackedWeight packed = PackedWeight::Pack(w.data(), 32, 64, WeightType::kBfloat16);
  EXPECT_TRUE(packed.onednn_bf16().empty());
}

// kAuto: the probe times both kernels on the layer's own weights once per shape, keeps one
// (only that one's weights stay) and says which in Bf16GemmChoices.
TEST(Bf16OneDnnTest, TheProbeChoosesOncePerShapeAndSaysWhich) {
  SKIP_WITHOUT_ONEDNN_BF16();
  Pin pin(Bf16Gemm::kAuto);
  const int k = 512, n = 1536;
  auto w = Random(size_t(n) * size_t(k), 40);
  const PackedWeight a = PackedWeight::Pack(w.data(), n, k, WeightType::kBfloat16);
  const PackedWeight b = PackedWeight::Pack(w.data(), n, k, WeightType::kBfloat16);
  EXPECT_EQ(a.onednn_bf16().empty(), b.onednn_bf16().empty());  // decided once
  const std::string choices = Bf16GemmChoices();
  std::printf("bf16 GEMM choices: %s\n", choices.c_str());
  const std::string want =
      "512->1536 " + std::string(a.onednn_bf16().empty() ? "packed" : "oneDNN");
  EXPECT_NE(choices.find(want), std::string::npos) << choices;
}

// oneDNN 2.6 has AMX (and its fastest AVX512-BF16 / VNNI code) only in its brgemm kernels,
// which it picks only for a fixed row count: with a run-time one it had silently fallen back to
// gemm:jit. Both layers must be on brgemm wherever the CPU (or the cap) allows it.
TEST(Bf16OneDnnTest, LayersRunOnBrgemmWhereTheCpuHasIt) {
  const std::string isa = OneDnnIsa();
  std::vector<float> w(size_t(256) * 512, 0.25f);
  const Int8Weight int8 = Int8Weight::Quantize(w.data(), 256, 512);
  const OneDnnBf16Weight bf16 = OneDnnBf16Weight::Pack(w.data(), 256, 512);
  std::printf("oneDNN ISA %s: int8 on %s, bf16 on %s\n", isa.c_str(), int8.kernel().c_str(),
              bf16.empty() ? "(none)" : bf16.kernel().c_str());
  const auto has = [&](const char* s) { return isa.find(s) != std::string::npos; };
  if (has("vnni") || has("bf16") || has("amx")) {
    EXPECT_EQ(int8.kernel().rfind("brg:", 0), 0u) << int8.kernel();
  }
  if (has("bf16") || has("amx")) {
    ASSERT_FALSE(bf16.empty());
    EXPECT_EQ(bf16.kernel().rfind("brg:", 0), 0u) << bf16.kernel();
  }
  if (has("amx")) {
    EXPECT_NE(int8.kernel().find("amx"), std::string::npos) << int8.kernel();
    EXPECT_NE(bf16.kernel().find("amx"), std::string::npos) << bf16.kernel();
  }
}

// A whole model: oneDNN and the packed kernel multiply the same rounded numbers, so the
// embeddings agree to fp32 summation order, far closer than bfloat16 to fp32.
TEST(Bf16OneDnnTest, ModelEmbeddingsMatchThePackedKernel) {
  SKIP_WITHOUT_ONEDNN_BF16();
  for (const char* name : {"mpnet-embed", "qwen3-embed", "bert-cross-encoder"}) {
    SCOPED_TRACE(name);
    const std::string dir = kFixtures + "/" + name;
    std::vector<std::vector<float>> out;
    for (Bf16Gemm g : {Bf16Gemm::kPacked, Bf16Gemm::kOneDnn}) {
      Pin pin(g);
      LoadOptions lo;
      lo.linear_weights = WeightType::kBfloat16;
      auto model = LoadModel(dir, lo);
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      const ModelInfo& info = (*model)->info();
      if (g == Bf16Gemm::kOneDnn) {  // the model's layers (k = hidden, even) are on oneDNN
        ASSERT_EQ(info.hidden_size % 2, 0);
        std::vector<float> w(size_t(info.hidden_size) * 8, 0.5f);
        ASSERT_FALSE(PackedWeight::Pack(w.data(), 8, info.hidden_size, WeightType::kBfloat16)
                         .onednn_bf16()
                         .empty());
      }
      RaggedBatch batch;
      std::mt19937 rng(7);
      for (int len : {1, 5, 33, 100}) {
        std::vector<int32_t> ids;
        for (int i = 0; i < len; ++i) ids.push_back(int32_t(rng() % 200) + 5);
        batch.Add(ids.data(), len, info.default_pooling, true);
      }
      const bool scorer = info.task == ModelTask::kScore;
      const size_t width = size_t(scorer ? info.hidden_size : info.output_dim());
      const size_t rows = size_t(scorer ? batch.num_tokens() : batch.num_sequences());
      std::vector<float> y(rows * width);
      ThreadPool pool(2);
      const Status s = scorer ? (*model)->Hidden(batch, &pool, y.data())
                              : (*model)->Run(batch, &pool, y.data(), true);
      ASSERT_TRUE(s.ok()) << s.ToString();
      out.push_back(std::move(y));
    }
    const size_t rows = out[0].size();
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < rows; ++i) {
      ab += double(out[0][i]) * out[1][i];
      aa += double(out[0][i]) * out[0][i];
      bb += double(out[1][i]) * out[1][i];
    }
    EXPECT_GT(ab / std::sqrt(aa * bb), 0.99999);
    // (On AVX512-BF16 the two often agree bit for bit: both sum each output's pairs of
    // products in k order into one fp32 accumulator.)
  }
}

}  // namespace
}  // namespace orchid
