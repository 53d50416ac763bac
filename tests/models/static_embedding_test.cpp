// Static embedding models (description/static_embedding.h, families/static_embedding.cpp) on
// tiny directories written here: how model2vec's and sentence-transformers' layouts are
// described, every malformed file refused with an error naming it, and the CPU engine's
// output against the mean of the table rows computed here in double precision.
#include "description/static_embedding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "description/registry.h"
#include "models/safetensors_writer.h"
#include "runtime/cpu_engine.h"

namespace orchid {
namespace {

using testing_util::F32Bytes;
using testing_util::FileBytes;
using testing_util::FreshDir;
using testing_util::RawTensor;
using testing_util::WriteFile;
using testing_util::WriteText;

constexpr int kRows = 8, kDim = 4;

// A WordPiece tokenizer of 8 tokens; token lengths 5 5 5 1 1 3 4 6: median 4.5, which
// model2vec's int(np.median(...)) makes 4.
std::string TinyTokenizer(const std::string& truncation = "null") {
  return R"({"version":"1.0","truncation":)" + truncation + R"(,"padding":null,
  "added_tokens":[
    {"id":0,"content":"[UNK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
    {"id":1,"content":"[CLS]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
    {"id":2,"content":"[SEP]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
  "normalizer":null,"pre_tokenizer":{"type":"BertPreTokenizer"},
  "post_processor":{"type":"TemplateProcessing",
    "single":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"[SEP]","type_id":0}}],
    "pair":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"[SEP]","type_id":0}},{"Sequence":{"id":"B","type_id":1}},{"SpecialToken":{"id":"[SEP]","type_id":1}}],
    "special_tokens":{"[CLS]":{"id":"[CLS]","ids":[1],"tokens":["[CLS]"]},"[SEP]":{"id":"[SEP]","ids":[2],"tokens":["[SEP]"]}}},
  "decoder":null,
  "model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":100,
    "vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2,"a":3,"b":4,"##c":5,"long":6,"##word":7}}})";
}

std::vector<float> Table(int rows = kRows) {
  std::vector<float> t(size_t(rows) * kDim);
  for (size_t i = 0; i < t.size(); ++i) t[i] = float(std::sin(0.7 * double(i) + 0.3));
  return t;
}

void WriteTable(const std::string& dir, const std::string& name = "embeddings",
                std::vector<int64_t> shape = {kRows, kDim}, const std::string& dtype = "F32") {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> t = Table(int(n / kDim + 1));
  t.resize(size_t(n));
  RawTensor raw{name, dtype, shape, F32Bytes(t)};
  if (dtype == "I8") raw.bytes.resize(size_t(n));
  WriteFile(dir + "/model.safetensors", FileBytes({raw}));
}

// model2vec's layout, as save_pretrained writes it (normalize true, max_length 3).
std::string Model2VecDir(const std::string& name,
                         const std::string& config = R"({"normalize": true, "max_length": 3})") {
  const std::string dir = FreshDir(name);
  WriteTable(dir);
  WriteText(dir + "/tokenizer.json", TinyTokenizer());
  WriteText(dir + "/config.json", config);
  WriteText(
      dir + "/modules.json",
      R"([{"idx":0,"name":"0","path":".","type":"sentence_transformers.models.StaticEmbedding"},
                {"idx":1,"name":"1","path":"1_Normalize","type":"sentence_transformers.models.Normalize"}])");
  return dir;
}

// sentence-transformers 3.x-5.x's layout: the module in 0_StaticEmbedding, then Normalize.
std::string SentenceTransformersDir(const std::string& name,
                                    const std::string& truncation = "null") {
  const std::string dir = FreshDir(name);
  std::filesystem::create_directories(dir + "/0_StaticEmbedding");
  WriteTable(dir + "/0_StaticEmbedding", "embedding.weight");
  WriteText(dir + "/0_StaticEmbedding/tokenizer.json", TinyTokenizer(truncation));
  WriteText(
      dir + "/modules.json",
      R"([{"idx":0,"name":"0","path":"0_StaticEmbedding","type":"sentence_transformers.models.StaticEmbedding"},
                {"idx":1,"name":"1","path":"1_Normalize","type":"sentence_transformers.models.Normalize"}])");
  return dir;
}

TEST(StaticEmbeddingTest, DescribesModel2VecLayout) {
  const std::string dir = Model2VecDir("static_m2v");
  auto spec = DescribeModel(dir);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->family, FamilyKind::kStatic);
  EXPECT_EQ(spec->info.architecture, "StaticModel");
  EXPECT_EQ(spec->info.vocab_size, kRows);
  EXPECT_EQ(spec->info.hidden_size, kDim);
  EXPECT_EQ(spec->info.output_dim(), kDim);
  EXPECT_EQ(spec->info.max_seq_length, 3);
  EXPECT_EQ(spec->info.max_seq_length_source, "config.json max_length");
  EXPECT_TRUE(spec->info.default_normalize);
  EXPECT_EQ(spec->info.default_pooling, Pooling::kMean);
  const StaticEmbeddingConfig& c = spec->static_embedding;
  EXPECT_TRUE(c.model2vec);
  EXPECT_EQ(c.table, "embeddings");
  EXPECT_EQ(c.drop_token, 0);     // [UNK]
  EXPECT_EQ(c.max_chars, 3 * 4);  // max_length x int(median token length 4.5)
  EXPECT_EQ(TokenizerPath(dir), dir + "/tokenizer.json");
}

TEST(StaticEmbeddingTest, Model2VecDefaultsAndNoLimit) {
  auto spec = DescribeModel(Model2VecDir("static_m2v_default", "{}"));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->info.max_seq_length, 512);  // model2vec's DEFAULT_MAX_LENGTH
  EXPECT_FALSE(spec->info.default_normalize);
  spec = DescribeModel(Model2VecDir("static_m2v_null", R"({"max_length": null})"));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->static_embedding.max_chars, 0);
  EXPECT_GT(spec->info.max_seq_length, 100000);
}

TEST(StaticEmbeddingTest, Model2VecWithoutModulesJson) {
  // Directories from model2vec releases that wrote no modules.json: config.json names it.
  const std::string dir =
      Model2VecDir("static_m2v_old", R"({"model_type": "model2vec", "normalize": false})");
  std::filesystem::remove(dir + "/modules.json");
  auto spec = DescribeModel(dir);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->family, FamilyKind::kStatic);
  EXPECT_TRUE(spec->static_embedding.model2vec);
}

TEST(StaticEmbeddingTest, DescribesSentenceTransformersLayout) {
  const std::string dir = SentenceTransformersDir(
      "static_st", R"({"direction":"Right","max_length":5,"strategy":"LongestFirst","stride":0})");
  auto spec = DescribeModel(dir);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->family, FamilyKind::kStatic);
  EXPECT_EQ(spec->info.architecture, "StaticEmbedding");
  const StaticEmbeddingConfig& c = spec->static_embedding;
  EXPECT_FALSE(c.model2vec);
  EXPECT_EQ(c.table, "embedding.weight");
  EXPECT_EQ(c.drop_token, -1);  // sentence-transformers keeps the unknown token
  EXPECT_EQ(c.max_chars, 0);
  EXPECT_EQ(spec->info.max_seq_length, 5);  // tokenizer.json's truncation, as `tokenizers` applies
  EXPECT_TRUE(spec->info.default_normalize);
  EXPECT_EQ(TokenizerPath(dir), dir + "/0_StaticEmbedding/tokenizer.json");
}

// Each broken directory is refused with an error that names what is wrong.
TEST(StaticEmbeddingTest, RefusesMalformedModels) {
  struct Case {
    const char* name;
    std::function<void(const std::string&)> damage;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"rows",
       [](const std::string& d) {
         WriteTable(d, "embeddings", {kRows - 1, kDim});
       },
       "has 7 rows but"},
      {"rank", [](const std::string& d) { WriteTable(d, "embeddings", {kRows * kDim}); },
       "must be [vocabulary, dim]"},
      {"int8",
       [](const std::string& d) {
         WriteTable(d, "embeddings", {kRows, kDim}, "I8");
       },
       "only float tables"},
      {"name", [](const std::string& d) { WriteTable(d, "weight"); }, "no table"},
      {"mapping",
       [](const std::string& d) {
         WriteFile(
             d + "/model.safetensors",
             FileBytes(
                 {RawTensor{"embeddings", "F32", {kRows, kDim}, F32Bytes(Table())},
                  RawTensor{"mapping", "F32", {kRows}, F32Bytes(std::vector<float>(kRows))}}));
       },
       "vocabulary-quantized"},
      {"header",
       [](const std::string& d) {
         WriteFile(d + "/model.safetensors", {0xff, 0xff, 0xff, 0xff});
       },
       "too short"},
      {"length",
       [](const std::string& d) {
         WriteFile(d + "/model.safetensors", FileBytes("{}", {}, uint64_t(1) << 40));
       },
       "header length"},
      {"no_table", [](const std::string& d) { std::filesystem::remove(d + "/model.safetensors"); },
       "not found"},
      {"max_length",
       [](const std::string& d) { WriteText(d + "/config.json", R"({"max_length": "64"})"); },
       "max_length"},
      {"quantized",
       [](const std::string& d) {
         WriteText(d + "/config.json", R"({"vocabulary_quantization": 4})");
       },
       "vocabulary_quantization"},
      {"tokenizer",
       [](const std::string& d) { WriteText(d + "/tokenizer.json", "{\"model\":{}}"); },
       "model.vocab"},
      {"order",
       [](const std::string& d) {
         WriteText(d + "/modules.json",
                   R"([{"type":"sentence_transformers.models.Normalize","path":"1_Normalize"},
                       {"type":"sentence_transformers.models.StaticEmbedding","path":"."}])");
       },
       "must be the first module"},
  };
  for (const Case& c : cases) {
    const std::string dir = Model2VecDir(std::string("static_bad_") + c.name);
    c.damage(dir);
    auto spec = DescribeModel(dir);
    ASSERT_FALSE(spec.ok()) << c.name;
    EXPECT_NE(spec.status().message().find(c.message), std::string::npos)
        << c.name << ": " << spec.status().ToString();
  }
}

TEST(StaticEmbeddingTest, CudaRefusesWithReason) {
  auto spec = DescribeModel(Model2VecDir("static_cuda"));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(CheckBackend(*spec, BackendKind::kCpu).ok());
  const Status st = CheckBackend(*spec, BackendKind::kCuda);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("--device cpu"), std::string::npos) << st.ToString();
}

// The engine's rows against the mean of the table's rows, in double precision.
TEST(StaticEmbeddingTest, CpuEngineAveragesTableRows) {
  for (const bool st_layout : {false, true}) {
    const std::string dir =
        st_layout ? SentenceTransformersDir("static_run_st") : Model2VecDir("static_run_m2v");
    auto model = LoadModel(dir);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const std::vector<float> table = Table();
    const std::vector<std::vector<int32_t>> seqs = {{3, 4, 5}, {7}, {0, 6, 6, 2, 1}};
    RaggedBatch batch;
    for (size_t s = 0; s < seqs.size(); ++s) {
      batch.Add(seqs[s].data(), int(seqs[s].size()), Pooling::kMean, /*norm=*/s != 1);
    }
    std::vector<float> out(seqs.size() * kDim);
    ASSERT_TRUE((*model)->Run(batch, nullptr, out.data(), true).ok());
    for (size_t s = 0; s < seqs.size(); ++s) {
      double mean[kDim] = {}, norm = 0;
      for (int32_t id : seqs[s]) {
        for (int j = 0; j < kDim; ++j) mean[j] += table[size_t(id) * kDim + size_t(j)];
      }
      for (double& m : mean) {
        m /= double(seqs[s].size());
        norm += m * m;
      }
      for (int j = 0; j < kDim; ++j) {
        const double want = s != 1 ? mean[j] / std::sqrt(norm) : mean[j];
        EXPECT_NEAR(out[s * kDim + size_t(j)], want, 1e-6) << "seq " << s << " dim " << j;
      }
    }
    // Per-token output: the rows themselves.
    std::vector<float> hidden(size_t(batch.num_tokens()) * kDim);
    ASSERT_TRUE((*model)->Hidden(batch, nullptr, hidden.data()).ok());
    for (int t = 0; t < batch.num_tokens(); ++t) {
      for (int j = 0; j < kDim; ++j) {
        EXPECT_EQ(hidden[size_t(t) * kDim + size_t(j)],
                  table[size_t(batch.token_ids[size_t(t)]) * kDim + size_t(j)]);
      }
    }
  }
}

}  // namespace
}  // namespace orchid
