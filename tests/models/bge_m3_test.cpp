// BGE-M3 below the HTTP layer: the bge-m3 fixture (tests/fixtures/bge_m3/build.py, numpy; its
// colbert_linear.pt and sparse_linear.pt in torch.save's format) described, loaded and run
// through the CPU engine once per batch with per-token output, and the rows split by
// gateway/bge_m3.h, against what FlagEmbedding's BGEM3FlagModel computed for the same directory
// (tests/fixtures/bge_m3/bge-m3.json, made by make_bge_m3.py beside it): token ids exactly,
// dense and ColBERT vectors at cosine >= 0.99999, lexical weights within 1e-5, and
// compute_score's five scores within 1e-5 relative. Also the arithmetic of bge_m3.h on small
// hand-made rows.
#include "gateway/bge_m3.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "description/registry.h"
#include "engine/ragged_batch.h"
#include "runtime/cpu_engine.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"

namespace orchid {
namespace {

using orchid::testing_util::Cosine;

const std::string kDir = ORCHID_SOURCE_DIR "/models/fixtures/bge-m3";
const std::string kGolden = ORCHID_SOURCE_DIR "/tests/fixtures/bge_m3/bge-m3.json";

TEST(BgeM3Rows, LexicalWeightsKeepEachIdsLargestAndDropSpecialsAndZeros) {
  // Five tokens, dim 2: rows [c0 c1 | sparse logit]; ids 0 (<s>), 7, 9, 7, 2 (</s>).
  const int32_t ids[] = {0, 7, 9, 7, 2};
  const float rows[] = {1, 0, 5.0f,   // <s>: unused
                        3, 4, 0.5f,   // 7
                        0, 0, -1.0f,  // 9: relu 0, dropped
                        0, 2, 0.75f,  // 7 again: the larger weight wins
                        1, 1, 2.0f};  // </s>: unused, but its ColBERT vector is kept
  LexicalWeights lexical;
  std::vector<float> colbert;
  SplitBgeM3Rows(ids, rows, 5, 2, {0, 1, 2, 3}, &lexical, &colbert);
  ASSERT_EQ(lexical.size(), 1u);
  EXPECT_EQ(lexical[0].first, 7);
  EXPECT_FLOAT_EQ(lexical[0].second, 0.75f);
  // Tokens 1..4, normalised; the zero vector stays zero.
  const std::vector<float> want = {0.6f, 0.8f, 0, 0, 0, 1, float(M_SQRT1_2), float(M_SQRT1_2)};
  ASSERT_EQ(colbert.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(colbert[i], want[i], 1e-7) << i;
}

TEST(BgeM3Rows, ScoresAsFlagEmbedding) {
  EXPECT_DOUBLE_EQ(
      LexicalScore({{1, 2.0f}, {4, 0.5f}, {9, 1.0f}}, {{4, 3.0f}, {9, 0.25f}, {11, 7}}),
      2.0 * 0 + 0.5 * 3.0 + 1.0 * 0.25);
  EXPECT_EQ(LexicalScore({}, {{1, 1.0f}}), 0.0);
  // colbert_score: the sum of each query vector's best dot product, over the query's count.
  const float q[] = {1, 0, 0, 1};
  const float d[] = {0.5f, 0.5f, -1, 0, 0, 0.25f};
  EXPECT_DOUBLE_EQ(BgeM3ColbertScore(q, 2, d, 3, 2), (0.5 + 0.5) / 2);
  EXPECT_EQ(BgeM3ColbertScore(q, 0, d, 3, 2), 0.0);
  BgeM3ScoreMode m;
  EXPECT_EQ(BgeM3Score(m, 0.5, 0.2, 0.8), 0.5);  // dense by default
  m.kind = *ParseBgeM3ScoreKind("sparse+dense");
  m.dense_weight = 0.4, m.sparse_weight = 0.2, m.colbert_weight = 0.4;
  EXPECT_DOUBLE_EQ(BgeM3Score(m, 0.5, 0.2, 0.8), (0.2 * 0.2 + 0.5 * 0.4) / 0.6);
  m.kind = *ParseBgeM3ScoreKind("colbert+sparse+dense");
  EXPECT_DOUBLE_EQ(BgeM3Score(m, 0.5, 0.2, 0.8), (0.8 * 0.4 + 0.2 * 0.2 + 0.5 * 0.4) / 1.0);
  EXPECT_FALSE(ParseBgeM3ScoreKind("hybrid"));
}

struct GoldenText {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<double> dense;
  std::map<int32_t, double> lexical;
  std::vector<std::vector<double>> colbert;
};

TEST(BgeM3Model, DescribedAsDensePlusAPerTokenHead) {
  if (!std::filesystem::exists(kDir + "/config.json")) {
    GTEST_FAIL() << kDir << " is missing: run `make fixtures`";
  }
  Result<ModelSpec> spec = DescribeModel(kDir);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->info.bge_m3);
  EXPECT_EQ(spec->info.default_pooling, Pooling::kCls);
  EXPECT_TRUE(spec->info.default_normalize);
  const int H = spec->info.hidden_size;
  EXPECT_EQ(spec->info.output_dim(), H);
  EXPECT_EQ(spec->info.token_dim(), H + 1);
  const Status cuda = CheckBackend(*spec, BackendKind::kCuda);
  EXPECT_EQ(cuda.code(), StatusCode::kUnimplemented);
  // One of the two heads alone is refused, naming the other.
  const std::string lone = testing::TempDir() + "/bge_m3_lone";
  std::filesystem::remove_all(lone);
  std::filesystem::create_directories(lone);
  for (const auto& f : std::filesystem::directory_iterator(kDir)) {
    if (f.path().filename() != "sparse_linear.pt") {
      std::filesystem::create_symlink(f.path(), lone + "/" + f.path().filename().string());
    }
  }
  Result<ModelSpec> bad = DescribeModel(lone);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sparse_linear.pt is missing"), std::string::npos)
      << bad.status().ToString();
}

TEST(BgeM3Model, OnePassMatchesFlagEmbedding) {
  if (!std::filesystem::exists(kDir + "/config.json")) {
    GTEST_FAIL() << kDir << " is missing: run `make fixtures`";
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_FALSE(parser.load(kGolden).get(doc)) << kGolden;
  std::vector<GoldenText> texts;
  for (auto t : doc["texts"].get_array()) {
    GoldenText x;
    x.text = std::string(t["text"].get_string().value());
    x.ids = testing_util::Int32Array(t["input_ids"].value());
    x.dense = testing_util::DoubleArray(t["dense"].value());
    for (auto [k, v] : t["lexical"].get_object()) {
      x.lexical[int32_t(std::stol(std::string(k)))] = v.get_double().value();
    }
    for (auto row : t["colbert"].get_array()) x.colbert.push_back(testing_util::DoubleArray(row));
    texts.push_back(std::move(x));
  }
  ASSERT_FALSE(texts.empty());
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromFile(kDir + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  auto model = LoadModel(kDir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const int H = (*model)->info().hidden_size;
  std::unique_ptr<Engine> engine = MakeCpuEngine(std::move(model).value(), {.num_threads = 2});
  const std::vector<int32_t> unused = BgeM3UnusedTokens(**tok);
  EXPECT_EQ(unused, (std::vector<int32_t>{0, 1, 2, 3}));

  // Every text in one ragged batch, per-token: pooled rows and token rows from that one pass.
  RaggedBatch batch;
  for (const GoldenText& t : texts) {
    Encoding e;
    ASSERT_TRUE((*tok)->Encode(t.text, EncodeOptions{}, &e).ok());
    EXPECT_EQ(e.ids, t.ids) << t.text;
    batch.Add(t.ids.data(), int(t.ids.size()), Pooling::kNone, false);
  }
  Result<Embeddings> r = engine->Submit(batch).wait();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->token_dim, H + 1);
  for (size_t i = 0; i < texts.size(); ++i) {
    const GoldenText& t = texts[i];
    EXPECT_GE(Cosine(r->row(int(i)), t.dense), 0.99999) << t.text;
    LexicalWeights lexical;
    std::vector<float> colbert;
    SplitBgeM3Rows(t.ids.data(), r->tokens.data() + size_t(r->token_offsets[i]) * size_t(H + 1),
                   int(t.ids.size()), H, unused, &lexical, &colbert);
    ASSERT_EQ(colbert.size(), t.colbert.size() * size_t(H)) << t.text;
    for (size_t k = 0; k < t.colbert.size(); ++k) {
      EXPECT_GE(Cosine(colbert.data() + k * size_t(H), t.colbert[k]), 0.99999) << t.text << k;
    }
    std::map<int32_t, double> mine;
    for (const auto& [id, w] : lexical) mine[id] = w;
    for (const auto& [id, w] : t.lexical) {
      if (w > 1e-5) {
        EXPECT_TRUE(mine.count(id)) << t.text << " id " << id;
      }
    }
    for (const auto& [id, w] : mine) {
      ASSERT_TRUE(t.lexical.count(id)) << t.text << " id " << id;
      EXPECT_NEAR(w, t.lexical.at(id), 1e-5 * std::max(1.0, std::abs(t.lexical.at(id))));
    }
  }
  // A dense-only pass (CLS pooling, the last layer pruned to the CLS rows) gives the same dense
  // vectors as the per-token pass.
  RaggedBatch dense;
  for (const GoldenText& t : texts) dense.Add(t.ids.data(), int(t.ids.size()), Pooling::kCls, true);
  Result<Embeddings> d = engine->Submit(dense).wait();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_GE(Cosine(d->row(int(i)), texts[i].dense), 0.99999) << texts[i].text;
  }
}

// BAAI/bge-m3's original upload keeps the encoder in pytorch_model.bin: the bge-m3-bin fixture
// (the same weights, written in torch.save's format) serves the same rows.
TEST(BgeM3Model, PytorchModelBinServesTheSameRows) {
  const std::string bin = kDir + "-bin";
  if (!std::filesystem::exists(bin + "/pytorch_model.bin")) {
    GTEST_FAIL() << bin << " is missing: run `make fixtures`";
  }
  EXPECT_FALSE(std::filesystem::exists(bin + "/model.safetensors"));
  const std::vector<int32_t> ids = {0, 35, 1200, 77, 2};
  std::vector<Embeddings> out;
  for (const std::string& dir : {kDir, bin}) {
    auto model = LoadModel(dir);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    std::unique_ptr<Engine> engine = MakeCpuEngine(std::move(model).value(), {.num_threads = 1});
    RaggedBatch batch;
    batch.Add(ids.data(), int(ids.size()), Pooling::kNone, false);
    Result<Embeddings> r = engine->Submit(batch).wait();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    out.push_back(std::move(*r));
  }
  EXPECT_EQ(out[0].data, out[1].data);
  EXPECT_EQ(out[0].tokens, out[1].tokens);
}

}  // namespace
}  // namespace orchid
