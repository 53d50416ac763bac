// PyLate ColBERT (late interaction) end to end below the HTTP layer: the colbert-bert fixture
// (tests/fixtures/models/build.py, numpy) described and loaded, texts encoded by
// LateInteractionEncoder, run through the CPU engine with per-token output, the kept vectors
// normalised, and MaxSim, against what PyLate 1.6 computed for the same directory
// (tests/fixtures/colbert/colbert-bert.json, made by make_colbert.py beside it): token ids
// exactly, vectors at cosine >= 0.99999, scores within 1e-5 relative.
#include "gateway/late_interaction.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
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

const std::string kFixtures = ORCHID_SOURCE_DIR "/models/fixtures/";
const std::string kGoldens = ORCHID_SOURCE_DIR "/tests/fixtures/colbert/";
const std::string kDir = kFixtures + "colbert-bert";

struct Text {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<std::vector<double>> vectors;
};

struct Golden {
  std::vector<Text> queries, documents;
  std::vector<std::vector<double>> scores;
};

Golden ReadGolden(const std::string& name) {
  Golden g;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (!testing_util::LoadJson(parser, kGoldens + name + ".json", &doc)) return g;
  for (auto [key, out] : {std::pair{"queries", &g.queries}, {"documents", &g.documents}}) {
    for (auto t : doc[key].get_array()) {
      Text x;
      x.text = std::string(t["text"].get_string().value());
      x.ids = testing_util::Int32Array(t["input_ids"].value());
      for (auto row : t["vectors"].get_array()) x.vectors.push_back(testing_util::DoubleArray(row));
      out->push_back(std::move(x));
    }
  }
  for (auto row : doc["scores"].get_array()) g.scores.push_back(testing_util::DoubleArray(row));
  return g;
}

TEST(LateInteraction, DescribesPyLateDirectory) {
  if (!std::filesystem::exists(kDir + "/config.json")) {
    GTEST_FAIL() << kDir << " is missing: run `make fixtures`";
  }
  Result<ModelSpec> spec = DescribeModel(kDir);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const LateInteraction& li = spec->info.late_interaction;
  EXPECT_TRUE(li.enabled);
  EXPECT_EQ(li.query_prefix, "[Q] ");
  EXPECT_EQ(li.document_prefix, "[D] ");
  EXPECT_EQ(li.query_length, 12);
  EXPECT_EQ(li.document_length, 40);
  EXPECT_TRUE(li.do_query_expansion);
  EXPECT_FALSE(li.attend_to_expansion_tokens);
  EXPECT_EQ(li.skiplist_words.size(), 32u);
  ASSERT_EQ(spec->token_dense.size(), 1u);
  EXPECT_FALSE(spec->token_dense[0].bias);
  EXPECT_EQ(spec->info.token_dim(), 16);
  EXPECT_EQ(spec->info.hidden_size, 32);
  // The CUDA engine refuses it before loading, naming why.
  const Status cuda = CheckBackend(*spec, BackendKind::kCuda);
  EXPECT_EQ(cuda.code(), StatusCode::kUnimplemented);
  EXPECT_NE(cuda.ToString().find("late interaction"), std::string::npos) << cuda.ToString();
}

class LateInteractionModel : public testing::TestWithParam<std::string> {};

// BERT, ModernBERT (sliding-window layers) and XLM-R backbones, the projection a head over each.
TEST_P(LateInteractionModel, MatchesPyLate) {
  const std::string dir = kFixtures + GetParam();
  if (!std::filesystem::exists(dir + "/config.json")) {
    GTEST_FAIL() << dir << " is missing: run `make fixtures`";
  }
  const Golden g = ReadGolden(GetParam());
  ASSERT_FALSE(g.queries.empty());
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromFile(dir + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  Result<ModelSpec> spec = DescribeModel(dir);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  Result<LateInteractionEncoder> enc =
      LateInteractionEncoder::Make(spec->info.late_interaction, **tok);
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();
  auto model = LoadModel(dir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::unique_ptr<Engine> engine = MakeCpuEngine(std::move(model).value(), {.num_threads = 2});

  // Every query and document in one ragged batch, then each alone: the same vectors.
  std::vector<const Text*> texts;
  std::vector<bool> is_query;
  for (const Text& t : g.queries) texts.push_back(&t), is_query.push_back(true);
  for (const Text& t : g.documents) texts.push_back(&t), is_query.push_back(false);
  std::vector<LateInteractionEncoder::Encoded> encoded(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_TRUE(enc->Encode(texts[i]->text, is_query[i], &encoded[i]).ok());
    EXPECT_EQ(encoded[i].ids, texts[i]->ids) << texts[i]->text;
  }
  auto run = [&](size_t begin, size_t end) {
    RaggedBatch batch;
    for (size_t i = begin; i < end; ++i) {
      batch.Add(encoded[i].ids.data(), int(encoded[i].ids.size()), Pooling::kNone, false, nullptr,
                0, encoded[i].attend_len);
    }
    Result<Embeddings> r = engine->Submit(batch).wait();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::vector<float>> out;  // kept, normalised rows per text
    if (!r.ok()) return out;
    EXPECT_EQ(r->token_dim, 16);
    for (size_t i = begin; i < end; ++i) {
      const int s = int(i - begin);
      std::vector<float> rows;
      for (int t = r->token_offsets[size_t(s)]; t < r->token_offsets[size_t(s) + 1]; ++t) {
        if (!encoded[i].keep[size_t(t - r->token_offsets[size_t(s)])]) continue;
        rows.insert(rows.end(), r->tokens.begin() + ptrdiff_t(size_t(t) * 16),
                    r->tokens.begin() + ptrdiff_t(size_t(t + 1) * 16));
      }
      NormalizeRows(rows.data(), int(rows.size() / 16), 16);
      out.push_back(std::move(rows));
    }
    return out;
  };
  std::vector<std::vector<float>> together = run(0, texts.size());
  ASSERT_EQ(together.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<std::vector<float>> alone = run(i, i + 1);
    ASSERT_EQ(alone.size(), 1u);
    const std::vector<float>* both[] = {&together[i], &alone[0]};
    for (const std::vector<float>* got : both) {
      ASSERT_EQ(got->size(), texts[i]->vectors.size() * 16) << texts[i]->text;
      for (size_t t = 0; t < texts[i]->vectors.size(); ++t) {
        EXPECT_GE(Cosine(got->data() + t * 16, texts[i]->vectors[t]), 0.99999)
            << texts[i]->text << " token " << t;
      }
    }
  }
  // MaxSim of every query against every document, as pylate.scores.colbert_scores.
  const size_t nq = g.queries.size();
  for (size_t q = 0; q < nq; ++q) {
    for (size_t d = 0; d < g.documents.size(); ++d) {
      const std::vector<float>& qv = together[q];
      const std::vector<float>& dv = together[nq + d];
      const double s = MaxSim(qv.data(), int(qv.size() / 16), dv.data(), int(dv.size() / 16), 16);
      EXPECT_NEAR(s, g.scores[q][d], 1e-5 * std::abs(g.scores[q][d])) << q << " x " << d;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backbones, LateInteractionModel,
                         testing::Values("colbert-bert", "colbert-modernbert", "colbert-xlmr",
                                         "colbert-stanford"));

TEST(LateInteraction, ExpansionIsNotAttendedTo) {
  // The query's [MASK] padding must not change the vectors of the tokens before it: the same
  // query without its padding gives the same first vectors (and with the padding attended to,
  // they differ, so the comparison can fail).
  auto model = LoadModel(kDir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::unique_ptr<Engine> engine = MakeCpuEngine(std::move(model).value(), {.num_threads = 1});
  const std::vector<int32_t> padded = {101, 30522, 2054, 2003, 102, 103, 103, 103};
  const std::vector<int32_t> bare(padded.begin(), padded.begin() + 5);
  auto tokens = [&](const std::vector<int32_t>& ids, int attend) {
    RaggedBatch b;
    b.Add(ids.data(), int(ids.size()), Pooling::kNone, false, nullptr, 0, attend);
    Result<Embeddings> r = engine->Submit(b).wait();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->tokens : std::vector<float>();
  };
  const std::vector<float> a = tokens(padded, 5), b = tokens(bare, 0), c = tokens(padded, 0);
  ASSERT_EQ(a.size(), 8u * 16);
  ASSERT_EQ(b.size(), 5u * 16);
  double diff_masked = 0, diff_attended = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff_masked = std::max(diff_masked, double(std::abs(a[i] - b[i])));
    diff_attended = std::max(diff_attended, double(std::abs(c[i] - b[i])));
  }
  EXPECT_LT(diff_masked, 1e-5);
  EXPECT_GT(diff_attended, 1e-3);
}

TEST(LateInteraction, MaxSimIsSumOfBestDotProducts) {
  const float q[] = {1, 0, 0, 1};               // two query vectors
  const float d[] = {0.5f, 0.5f, 1, 0, 0, -1};  // three document vectors
  EXPECT_DOUBLE_EQ(MaxSim(q, 2, d, 3, 2), 1.0 + 0.5);
  float rows[] = {3, 4, 0, 0};
  NormalizeRows(rows, 2, 2);
  EXPECT_FLOAT_EQ(rows[0], 0.6f);
  EXPECT_FLOAT_EQ(rows[1], 0.8f);
  EXPECT_EQ(rows[2], 0.0f);
}

}  // namespace
}  // namespace orchid
