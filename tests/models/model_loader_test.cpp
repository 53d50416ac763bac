// LoadModel on small model directories written by the test: config and sentence-transformers
// parsing (and their errors), weight-name prefixes, dtypes, and a tiny random BERT checked
// against a naive double-precision implementation written here from the paper's equations.
#include "description/registry.h"
#include "runtime/cpu_engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "models/safetensors_writer.h"

namespace orchid {
namespace {

using testing_util::F32Bytes;
using testing_util::FileBytes;
using testing_util::RawTensor;
using testing_util::WriteFile;
using testing_util::WriteText;

struct TinyBert {
  int vocab = 50, hidden = 16, layers = 2, heads = 4, inter = 24, max_pos = 40, types = 2;
  std::map<std::string, std::vector<float>> w;
  std::map<std::string, std::vector<int64_t>> shapes;

  void Add(const std::string& name, std::vector<int64_t> shape, std::mt19937* rng, float scale,
           float offset = 0) {
    size_t n = 1;
    for (auto d : shape) n *= size_t(d);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = offset + u(*rng);
    w[name] = v;
    shapes[name] = shape;
  }

  explicit TinyBert(uint32_t seed = 7) {
    std::mt19937 rng(seed);
    const int64_t H = hidden, I = inter;
    Add("embeddings.word_embeddings.weight", {vocab, H}, &rng, 1.0f);
    Add("embeddings.position_embeddings.weight", {max_pos, H}, &rng, 0.5f);
    Add("embeddings.token_type_embeddings.weight", {types, H}, &rng, 0.5f);
    Add("embeddings.LayerNorm.weight", {H}, &rng, 0.2f, 1.0f);
    Add("embeddings.LayerNorm.bias", {H}, &rng, 0.2f);
    for (int l = 0; l < layers; ++l) {
      const std::string p = "encoder.layer." + std::to_string(l) + ".";
      for (const char* qkv : {"query", "key", "value"}) {
        Add(p + "attention.self." + qkv + ".weight", {H, H}, &rng, 0.5f);
        Add(p + "attention.self." + qkv + ".bias", {H}, &rng, 0.1f);
      }
      Add(p + "attention.output.dense.weight", {H, H}, &rng, 0.3f);
      Add(p + "attention.output.dense.bias", {H}, &rng, 0.1f);
      Add(p + "attention.output.LayerNorm.weight", {H}, &rng, 0.2f, 1.0f);
      Add(p + "attention.output.LayerNorm.bias", {H}, &rng, 0.2f);
      Add(p + "intermediate.dense.weight", {I, H}, &rng, 0.5f);
      Add(p + "intermediate.dense.bias", {I}, &rng, 0.1f);
      Add(p + "output.dense.weight", {H, I}, &rng, 0.3f);
      Add(p + "output.dense.bias", {H}, &rng, 0.1f);
      Add(p + "output.LayerNorm.weight", {H}, &rng, 0.2f, 1.0f);
      Add(p + "output.LayerNorm.bias", {H}, &rng, 0.2f);
    }
  }

  std::string ConfigJson() const {
    return "{\"architectures\":[\"BertModel\"],\"model_type\":\"bert\",\"vocab_size\":" +
           std::to_string(vocab) + ",\"hidden_size\":" + std::to_string(hidden) +
           ",\"num_hidden_layers\":" + std::to_string(layers) +
           ",\"num_attention_heads\":" + std::to_string(heads) +
           ",\"intermediate_size\":" + std::to_string(inter) +
           ",\"hidden_act\":\"gelu\",\"max_position_embeddings\":" + std::to_string(max_pos) +
           ",\"type_vocab_size\":" + std::to_string(types) + ",\"layer_norm_eps\":1e-12}";
  }

  // Writes config.json and model.safetensors (names with `prefix`, in `dtype`).
  void Write(const std::string& dir, const std::string& prefix = "",
             const std::string& dtype = "F32") const {
    WriteText(dir + "/config.json", ConfigJson());
    std::vector<RawTensor> ts;
    ts.push_back({prefix + "embeddings.position_ids",
                  "I64",
                  {1, max_pos},
                  std::vector<uint8_t>(size_t(max_pos) * 8)});
    for (const auto& [name, v] : w) {
      RawTensor t{prefix + name, dtype, shapes.at(name), {}};
      if (dtype == "F32") {
        t.bytes = F32Bytes(v);
      } else {  // BF16: the top half of each float
        for (float x : v) {
          uint32_t bits;
          std::memcpy(&bits, &x, 4);
          t.bytes.push_back(uint8_t(bits >> 16));
          t.bytes.push_back(uint8_t(bits >> 24));
        }
      }
      ts.push_back(std::move(t));
    }
    WriteFile(dir + "/model.safetensors", FileBytes(ts));
  }

  // Rounds every weight to bf16, so an F32 and a BF16 file hold the same numbers.
  void RoundToBf16() {
    for (auto& [name, v] : w) {
      for (float& x : v) {
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        bits &= 0xffff0000u;
        std::memcpy(&x, &bits, 4);
      }
    }
  }

  // The reference forward pass for one sequence, in double: BERT as written in the paper /
  // Hugging Face's BertModel (post-LN, exact GELU), no pooling.
  std::vector<double> Reference(const std::vector<int32_t>& ids,
                                const std::vector<int32_t>& types_in) const {
    const int L = int(ids.size()), H = hidden, I = inter, hd = hidden / heads;
    auto W = [&](const std::string& n) -> const std::vector<float>& { return w.at(n); };
    std::vector<double> h(size_t(L) * H);
    auto layer_norm = [&](std::vector<double>& x, const std::string& n) {
      for (int t = 0; t < L; ++t) {
        double mean = 0, var = 0;
        for (int d = 0; d < H; ++d) mean += x[size_t(t) * H + d];
        mean /= H;
        for (int d = 0; d < H; ++d) var += std::pow(x[size_t(t) * H + d] - mean, 2);
        var /= H;
        for (int d = 0; d < H; ++d) {
          double& v = x[size_t(t) * H + d];
          v = (v - mean) / std::sqrt(var + 1e-12) * W(n + ".weight")[size_t(d)] +
              W(n + ".bias")[size_t(d)];
        }
      }
    };
    auto linear = [&](const std::vector<double>& x, int in, const std::string& n, int out) {
      std::vector<double> y(size_t(L) * out);
      for (int t = 0; t < L; ++t) {
        for (int o = 0; o < out; ++o) {
          double s = W(n + ".bias")[size_t(o)];
          for (int i = 0; i < in; ++i)
            s += x[size_t(t) * in + i] * W(n + ".weight")[size_t(o) * in + i];
          y[size_t(t) * out + o] = s;
        }
      }
      return y;
    };
    for (int t = 0; t < L; ++t) {
      for (int d = 0; d < H; ++d) {
        h[size_t(t) * H + d] =
            double(W("embeddings.word_embeddings.weight")[size_t(ids[size_t(t)]) * H + d]) +
            W("embeddings.position_embeddings.weight")[size_t(t) * H + d] +
            W("embeddings.token_type_embeddings.weight")
                [size_t(types_in.empty() ? 0 : types_in[size_t(t)]) * H + d];
      }
    }
    layer_norm(h, "embeddings.LayerNorm");
    for (int l = 0; l < layers; ++l) {
      const std::string p = "encoder.layer." + std::to_string(l) + ".";
      auto q = linear(h, H, p + "attention.self.query", H);
      auto k = linear(h, H, p + "attention.self.key", H);
      auto v = linear(h, H, p + "attention.self.value", H);
      std::vector<double> ctx(size_t(L) * H, 0.0);
      for (int hh = 0; hh < heads; ++hh) {
        for (int i = 0; i < L; ++i) {
          std::vector<double> s(static_cast<size_t>(L));
          double mx = -1e300;
          for (int j = 0; j < L; ++j) {
            double dot = 0;
            for (int d = 0; d < hd; ++d) {
              dot += q[size_t(i) * H + hh * hd + d] * k[size_t(j) * H + hh * hd + d];
            }
            s[size_t(j)] = dot / std::sqrt(double(hd));
            mx = std::max(mx, s[size_t(j)]);
          }
          double sum = 0;
          for (auto& x : s) sum += (x = std::exp(x - mx));
          for (int j = 0; j < L; ++j) {
            for (int d = 0; d < hd; ++d) {
              ctx[size_t(i) * H + hh * hd + d] +=
                  s[size_t(j)] / sum * v[size_t(j) * H + hh * hd + d];
            }
          }
        }
      }
      auto a = linear(ctx, H, p + "attention.output.dense", H);
      for (size_t i = 0; i < h.size(); ++i) h[i] += a[i];
      layer_norm(h, p + "attention.output.LayerNorm");
      auto m = linear(h, H, p + "intermediate.dense", I);
      for (auto& x : m) x = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
      auto o = linear(m, I, p + "output.dense", H);
      for (size_t i = 0; i < h.size(); ++i) h[i] += o[i];
      layer_norm(h, p + "output.LayerNorm");
    }
    return h;
  }
};

class ModelLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_util::FreshDir(std::string("ml_") +
                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  // LoadModel must fail with `code` and a message containing each needle.
  void ExpectLoadError(StatusCode code, const std::vector<std::string>& needles) {
    auto m = LoadModel(dir_);
    ASSERT_FALSE(m.ok()) << "LoadModel(" << dir_ << ") unexpectedly succeeded";
    EXPECT_EQ(m.status().code(), code) << m.status().ToString();
    for (const auto& n : needles) {
      EXPECT_NE(m.status().message().find(n), std::string::npos)
          << "\"" << n << "\" not in: " << m.status().message();
    }
  }
  std::string dir_;
};

TEST_F(ModelLoaderTest, TinyBertMatchesNaiveReference) {
  TinyBert tb;
  tb.Write(dir_);
  auto m = LoadModel(dir_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelInfo& info = (*m)->info();
  EXPECT_EQ(info.architecture, "BertModel");
  EXPECT_EQ(info.hidden_size, tb.hidden);
  EXPECT_EQ(info.vocab_size, tb.vocab);
  // No sentence-transformers files: mean pooling, no normalisation, the position limit.
  EXPECT_EQ(info.default_pooling, Pooling::kMean);
  EXPECT_FALSE(info.default_normalize);
  EXPECT_EQ(info.max_seq_length, tb.max_pos);

  // Ragged: lengths 1, 5, 17, 2, 40 (the maximum), token types on one of them.
  std::mt19937 rng(3);
  RaggedBatch batch;
  std::vector<std::vector<int32_t>> seqs, types;
  for (int len : {1, 5, 17, 2, 40}) {
    std::vector<int32_t> ids(static_cast<size_t>(len)), tt;
    for (auto& id : ids) id = int32_t(rng() % uint32_t(tb.vocab));
    if (len == 17) {
      for (int i = 0; i < len; ++i) tt.push_back(i < 8 ? 0 : 1);
    }
    batch.Add(ids.data(), len, Pooling::kMean, false, tt.empty() ? nullptr : tt.data());
    seqs.push_back(ids);
    types.push_back(tt);
  }
  std::vector<float> hidden(size_t(batch.num_tokens()) * size_t(tb.hidden));
  ASSERT_TRUE((*m)->Hidden(batch, nullptr, hidden.data()).ok());
  double max_err = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const auto ref = tb.Reference(seqs[s], types[s]);
    for (size_t i = 0; i < ref.size(); ++i) {
      const float got = hidden[size_t(batch.cu_seqlens[s]) * size_t(tb.hidden) + i];
      max_err = std::max(max_err, std::fabs(got - ref[i]));
    }
  }
  EXPECT_LT(max_err, 2e-4) << "max |orchid - reference| over all tokens";
}

TEST_F(ModelLoaderTest, AcceptsBertPrefixAndBf16Weights) {
  TinyBert tb;
  tb.RoundToBf16();
  tb.Write(dir_, "bert.", "BF16");
  auto m = LoadModel(dir_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<int32_t> ids = {1, 7, 3, 49, 0, 12};
  RaggedBatch b;
  b.Add(ids.data(), int(ids.size()), Pooling::kMean, false);
  std::vector<float> hidden(ids.size() * size_t(tb.hidden));
  ASSERT_TRUE((*m)->Hidden(b, nullptr, hidden.data()).ok());
  const auto ref = tb.Reference(ids, {});
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(hidden[i], ref[i], 2e-4) << i;
}

TEST_F(ModelLoaderTest, ForwardRejectsOutOfRangeInputs) {
  TinyBert tb;
  tb.Write(dir_);
  auto m = LoadModel(dir_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::vector<float> hidden(64 * size_t(tb.hidden));
  const std::vector<int32_t> ids = {1, 2, 3};
  RaggedBatch b;
  b.Add(ids.data(), 3, Pooling::kMean, false);
  b.token_ids[1] = tb.vocab;  // one past the vocabulary
  EXPECT_EQ((*m)->Hidden(b, nullptr, hidden.data()).code(), StatusCode::kInvalidArgument);
  b.token_ids[1] = 2;
  b.positions[2] = tb.max_pos;
  EXPECT_EQ((*m)->Hidden(b, nullptr, hidden.data()).code(), StatusCode::kOutOfRange);
  b.positions[2] = -1;
  EXPECT_EQ((*m)->Hidden(b, nullptr, hidden.data()).code(), StatusCode::kOutOfRange);
  b.positions[2] = 2;
  b.token_type_ids = {0, 2, 0};
  EXPECT_EQ((*m)->Hidden(b, nullptr, hidden.data()).code(), StatusCode::kInvalidArgument);
  b.token_type_ids = {0, 1, 0};
  EXPECT_TRUE((*m)->Hidden(b, nullptr, hidden.data()).ok());
}

TEST_F(ModelLoaderTest, ReadsSentenceTransformersModules) {
  TinyBert tb;
  tb.Write(dir_);
  WriteText(dir_ + "/modules.json",
            R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
                {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
                {"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}])");
  std::filesystem::create_directories(dir_ + "/1_Pooling");
  WriteText(dir_ + "/1_Pooling/config.json",
            R"({"word_embedding_dimension":16,"pooling_mode_cls_token":true,
                "pooling_mode_mean_tokens":false,"pooling_mode_max_tokens":false})");
  WriteText(dir_ + "/sentence_bert_config.json", R"({"max_seq_length":32,"do_lower_case":false})");
  auto m = LoadModel(dir_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->info().default_pooling, Pooling::kCls);
  EXPECT_TRUE((*m)->info().default_normalize);
  EXPECT_EQ((*m)->info().max_seq_length, 32);

  WriteText(dir_ + "/1_Pooling/config.json", R"({"pooling_mode_lasttoken":true})");
  WriteText(dir_ + "/sentence_bert_config.json", R"({"max_seq_length":4096})");
  m = LoadModel(dir_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->info().default_pooling, Pooling::kLastToken);
  EXPECT_EQ((*m)->info().max_seq_length, tb.max_pos);  // capped by the position embeddings

  // sentence-transformers' other modes.
  for (const auto& [field, want] : {std::pair{"max_tokens", Pooling::kMax},
                                    std::pair{"mean_sqrt_len_tokens", Pooling::kMeanSqrtLen},
                                    std::pair{"weightedmean_tokens", Pooling::kWeightedMean}}) {
    WriteText(dir_ + "/1_Pooling/config.json",
              std::string(R"({"pooling_mode_)") + field + R"(":true})");
    m = LoadModel(dir_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ((*m)->info().default_pooling, want) << field;
  }
}

TEST_F(ModelLoaderTest, RejectsUnsupportedSentenceTransformersModules) {
  TinyBert tb;
  tb.Write(dir_);
  std::filesystem::create_directories(dir_ + "/1_Pooling");
  const std::string pooling_module =
      R"([{"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])";
  WriteText(dir_ + "/modules.json", pooling_module);
  WriteText(dir_ + "/1_Pooling/config.json",
            R"({"pooling_mode_mean_tokens":true,"pooling_mode_max_tokens":true})");
  ExpectLoadError(StatusCode::kCorrupt, {"1_Pooling/config.json", "another pooling mode"});
  WriteText(dir_ + "/1_Pooling/config.json",
            R"({"pooling_mode_mean_tokens":true,"pooling_mode_cls_token":true})");
  ExpectLoadError(StatusCode::kCorrupt, {"1_Pooling/config.json", "another pooling mode"});
  WriteText(dir_ + "/1_Pooling/config.json", R"({"pooling_mode_mean_tokens":"yes"})");
  ExpectLoadError(StatusCode::kCorrupt, {"1_Pooling/config.json", "pooling_mode_mean_tokens"});
  WriteText(dir_ + "/1_Pooling/config.json",
            R"({"pooling_mode_mean_tokens":true,"word_embedding_dimension":384})");
  ExpectLoadError(StatusCode::kCorrupt, {"word_embedding_dimension"});
  WriteText(dir_ + "/1_Pooling/config.json", R"({"pooling_mode_mean_tokens":true})");
  WriteText(dir_ + "/modules.json",
            R"([{"path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
                {"path":"2_Dense","type":"sentence_transformers.models.Dense"}])");
  // A Dense module: its config.json must exist, name Identity or Tanh, and its weights be
  // safetensors.
  ExpectLoadError(StatusCode::kNotFound, {"2_Dense/config.json"});
  std::filesystem::create_directories(dir_ + "/2_Dense");
  WriteText(dir_ + "/2_Dense/config.json",
            R"({"in_features":16,"out_features":8,"bias":true,)"
            R"("activation_function":"torch.nn.modules.activation.ReLU"})");
  ExpectLoadError(StatusCode::kCorrupt, {"2_Dense/config.json", "activation_function", "ReLU"});
  WriteText(dir_ + "/2_Dense/config.json",
            R"({"in_features":16,"out_features":8,"bias":true,)"
            R"("activation_function":"torch.nn.modules.linear.Identity"})");
  ExpectLoadError(StatusCode::kNotFound, {"2_Dense/model.safetensors"});
  WriteText(dir_ + "/modules.json", R"({"not":"an array"})");
  ExpectLoadError(StatusCode::kCorrupt, {"modules.json", "array"});
  WriteText(dir_ + "/modules.json",
            R"([{"path":"../../etc","type":"sentence_transformers.models.Pooling"}])");
  ExpectLoadError(StatusCode::kCorrupt, {"modules.json", "path"});
  WriteText(dir_ + "/modules.json", pooling_module);
  std::filesystem::remove(dir_ + "/1_Pooling/config.json");
  ExpectLoadError(StatusCode::kNotFound, {"1_Pooling/config.json"});
  WriteText(dir_ + "/1_Pooling/config.json", R"({"pooling_mode_mean_tokens":true})");
  WriteText(dir_ + "/sentence_bert_config.json", R"({"max_seq_length":"long"})");
  ExpectLoadError(StatusCode::kCorrupt, {"sentence_bert_config.json", "max_seq_length"});
}

TEST_F(ModelLoaderTest, ConfigErrorsNameTheFileAndField) {
  ExpectLoadError(StatusCode::kNotFound, {"config.json"});
  TinyBert tb;
  tb.Write(dir_);
  const std::string good = tb.ConfigJson();
  auto with = [&](const std::string& from, const std::string& to) {
    std::string c = good;
    const size_t at = c.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    c.replace(at, from.size(), to);
    WriteText(dir_ + "/config.json", c);
  };
  with("\"BertModel\"", "\"GPT2Model\"");
  ExpectLoadError(StatusCode::kInvalidArgument, {"config.json", "GPT2Model", "supported: BERT"});
  with("\"hidden_act\":\"gelu\"", "\"hidden_act\":\"relu\"");
  ExpectLoadError(StatusCode::kCorrupt, {"config.json", "hidden_act", "relu"});
  with("\"hidden_size\":16", "\"hidden_size\":15");
  ExpectLoadError(StatusCode::kCorrupt, {"config.json", "num_attention_heads"});
  with("\"hidden_size\":16", "\"hidden_size\":-16");
  ExpectLoadError(StatusCode::kCorrupt, {"config.json", "hidden_size"});
  with("\"hidden_size\":16", "\"hidden_size\":\"16\"");
  ExpectLoadError(StatusCode::kCorrupt, {"config.json", "hidden_size", "integer"});
  with("\"hidden_size\":16,", "");
  ExpectLoadError(StatusCode::kCorrupt, {"config.json", "hidden_size", "missing"});
  with("\"layer_norm_eps\":1e-12", "\"layer_norm_eps\":-1");
  ExpectLoadError(StatusCode::kCorrupt, {"config.json", "layer_norm_eps"});
  // id2label: the ids 0..n-1, each once, each named by a string.
  for (const char* labels : {R"({"0":"a","2":"b"})", R"({"0":"a","00":"b"})", R"({"x":"a"})",
                             R"({"0":"a","1":5})", R"({})", R"({"-1":"a"})"}) {
    with("\"layer_norm_eps\":1e-12",
         std::string("\"layer_norm_eps\":1e-12,\"id2label\":") + labels);
    ExpectLoadError(StatusCode::kCorrupt, {"config.json", "id2label"});
  }
  WriteText(dir_ + "/config.json", "{\"vocab_size\": 5,");
  ExpectLoadError(StatusCode::kCorrupt, {"config.json", "JSON"});
  // Sizes that disagree with the weights: the tensor is named.
  with("\"intermediate_size\":24", "\"intermediate_size\":32");
  ExpectLoadError(StatusCode::kCorrupt,
                  {"model.safetensors", "encoder.layer.0.intermediate.dense.weight"});
  with("\"num_hidden_layers\":2", "\"num_hidden_layers\":3");
  ExpectLoadError(StatusCode::kNotFound, {"encoder.layer.2."});
}

TEST_F(ModelLoaderTest, MissingOrBrokenWeights) {
  TinyBert tb;
  tb.Write(dir_);
  std::filesystem::remove(dir_ + "/model.safetensors");
  ExpectLoadError(StatusCode::kNotFound, {"model.safetensors"});
  WriteText(dir_ + "/model.safetensors", "garbage");
  ExpectLoadError(StatusCode::kCorrupt, {"model.safetensors"});
  auto m = LoadModel(dir_ + "/nonexistent");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
}

// The tiny model through the engine: pooled, normalised, batched.
TEST_F(ModelLoaderTest, TinyBertThroughEngine) {
  TinyBert tb;
  tb.Write(dir_);
  auto m = LoadModel(dir_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto engine = MakeCpuEngine(std::move(m).value(), {.num_threads = 2});
  const std::vector<int32_t> a = {1, 2, 3, 4}, c = {9, 8};
  RaggedBatch b;
  b.Add(a.data(), 4, Pooling::kMean, true);
  b.Add(c.data(), 2, Pooling::kCls, false);
  auto r = engine->Submit(b).wait();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto ra = tb.Reference(a, {}), rc = tb.Reference(c, {});
  std::vector<double> mean(static_cast<size_t>(tb.hidden), 0.0);
  for (int t = 0; t < 4; ++t) {
    for (int d = 0; d < tb.hidden; ++d) mean[size_t(d)] += ra[size_t(t * tb.hidden + d)] / 4;
  }
  double norm = 0;
  for (double x : mean) norm += x * x;
  norm = std::sqrt(norm);
  for (int d = 0; d < tb.hidden; ++d) {
    EXPECT_NEAR(r->row(0)[d], mean[size_t(d)] / norm, 1e-5);
    EXPECT_NEAR(r->row(1)[d], rc[size_t(d)], 2e-4);
  }
}

}  // namespace
}  // namespace orchid
