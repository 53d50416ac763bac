#include "description/sentence_transformers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "models/safetensors_writer.h"

namespace orchid {
namespace {

using testing_util::FreshDir;
using testing_util::WriteText;

// sentence-transformers' current Pooling config (pooling_mode, embedding_dimension,
// include_prompt) and its legacy one without any mode set (mean, as it reads it).
TEST(SentenceTransformersConfigTest, CurrentPoolingFieldsAndIncludePrompt) {
  const std::string dir = FreshDir("st_pooling_current");
  WriteText(dir + "/modules.json",
            R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
            R"({"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])");
  std::filesystem::create_directories(dir + "/1_Pooling");
  const std::string pooling = dir + "/1_Pooling/config.json";
  WriteText(pooling,
            R"({"embedding_dimension": 32, "pooling_mode": "weightedmean", "include_prompt": false})");
  auto c = ReadSentenceTransformersConfig(dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->pooling, Pooling::kWeightedMean);
  EXPECT_EQ(c->word_embedding_dimension, 32);
  EXPECT_FALSE(c->include_prompt);
  WriteText(pooling, R"({"embedding_dimension": 32, "pooling_mode": ["lasttoken"]})");
  c = ReadSentenceTransformersConfig(dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->pooling, Pooling::kLastToken);
  EXPECT_TRUE(c->include_prompt);
  WriteText(pooling, R"({"word_embedding_dimension": 32, "pooling_mode_cls_token": false})");
  c = ReadSentenceTransformersConfig(dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->pooling, Pooling::kMean);
  for (const char* bad : {R"({"pooling_mode": ["mean", "max"]})", R"({"pooling_mode": "median"})",
                          R"({"pooling_mode": 3})"}) {
    WriteText(pooling, bad);
    c = ReadSentenceTransformersConfig(dir);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.status().message().find("pooling_mode"), std::string::npos) << c.status().message();
  }
}

TEST(EncodeConfigTest, ReadsNamedPromptsAndDefault) {
  const std::string dir = FreshDir("prompts_ok");
  WriteText(dir + "/config_sentence_transformers.json",
            R"({"prompts": {"query": "query: ", "document": ""}, "default_prompt_name": "query"})");
  Result<EncodeConfig> p = ReadEncodeConfig(dir);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->prompts.size(), 2u);
  EXPECT_EQ(p->prompts.at("query"), "query: ");
  EXPECT_EQ(p->default_prompt_name, "query");
}

TEST(EncodeConfigTest, AbsentFileOrFieldsMeanNoPrompts) {
  Result<EncodeConfig> none = ReadEncodeConfig(FreshDir("prompts_none"));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->prompts.empty());
  const std::string dir = FreshDir("prompts_version_only");
  WriteText(dir + "/config_sentence_transformers.json", R"({"__version__": {"x": "1"}})");
  ASSERT_TRUE(ReadEncodeConfig(dir).ok());
}

TEST(EncodeConfigTest, MalformedFilesNameTheFieldAndFile) {
  const std::string dir = FreshDir("prompts_bad");
  const std::string path = dir + "/config_sentence_transformers.json";
  for (const char* text : {R"({"prompts": ["a"]})", R"({"prompts": {"q": 1}})",
                           R"({"prompts": {"q": "x"}, "default_prompt_name": "other"})",
                           R"({"default_prompt_name": 5})", "not json"}) {
    WriteText(path, text);
    Result<EncodeConfig> p = ReadEncodeConfig(dir);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_NE(p.status().message().find("config_sentence_transformers.json"), std::string::npos)
        << p.status().ToString();
  }
}

// The similarity function: sentence-transformers' names, cosine by default (2.x wrote none) and
// for a name 6.3 does not know; the four formulas.
TEST(EncodeConfigTest, SimilarityFunctionNameAndFormulas) {
  const std::string dir = FreshDir("similarity");
  const std::string path = dir + "/config_sentence_transformers.json";
  for (const auto& [text, want] : std::vector<std::pair<std::string, SimilarityFunction>>{
           {R"({})", SimilarityFunction::kCosine},
           {R"({"similarity_fn_name": null})", SimilarityFunction::kCosine},
           {R"({"similarity_fn_name": "dot"})", SimilarityFunction::kDot},
           {R"({"similarity_fn_name": "euclidean"})", SimilarityFunction::kEuclidean},
           {R"({"similarity_fn_name": "manhattan"})", SimilarityFunction::kManhattan},
           {R"({"similarity_fn_name": "maxsim"})", SimilarityFunction::kCosine}}) {
    WriteText(path, text);
    Result<EncodeConfig> c = ReadEncodeConfig(dir);
    ASSERT_TRUE(c.ok()) << text << ": " << c.status().ToString();
    EXPECT_EQ(c->similarity, want) << text;
  }
  const float a[] = {3, 0, 4}, b[] = {0, 1, 0};
  EXPECT_DOUBLE_EQ(Similarity(SimilarityFunction::kCosine, a, a, 3), 1.0);
  EXPECT_DOUBLE_EQ(Similarity(SimilarityFunction::kCosine, a, b, 3), 0.0);
  EXPECT_DOUBLE_EQ(Similarity(SimilarityFunction::kDot, a, a, 3), 25.0);
  EXPECT_DOUBLE_EQ(Similarity(SimilarityFunction::kEuclidean, a, b, 3), -std::sqrt(26.0));
  EXPECT_DOUBLE_EQ(Similarity(SimilarityFunction::kManhattan, a, b, 3), -8.0);
}

// A model directory with a Transformer module (modules.json) whose config files are as the
// given releases wrote them.
std::string StDir(const std::string& name, const std::string& sbert_file = "",
                  const std::string& sbert = "", const std::string& tokenizer_config = "") {
  const std::string dir = FreshDir(name);
  WriteText(dir + "/modules.json",
            R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.base.modules.)"
            R"(transformer.Transformer"}])");
  if (!sbert_file.empty()) WriteText(dir + "/" + sbert_file, sbert);
  if (!tokenizer_config.empty()) WriteText(dir + "/tokenizer_config.json", tokenizer_config);
  return dir;
}

MaxInputLength Resolve(const std::string& dir, int config_max = 512, int usable = 512) {
  auto st = ReadSentenceTransformersConfig(dir);
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  auto r = ResolveMaxInputLength(dir, *st, config_max, usable);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : MaxInputLength{};
}

// sentence-transformers' rule for where inputs are cut, file by file (ResolveMaxInputLength).
TEST(MaxInputLengthTest, FollowsSentenceTransformersPrecedence) {
  // 2.x-5.x: sentence_bert_config.json max_seq_length, taken as given (not capped at
  // max_position_embeddings, only at what the engine embeds).
  MaxInputLength m = Resolve(StDir("len_sbert", "sentence_bert_config.json",
                                   R"({"max_seq_length": 128, "do_lower_case": false})",
                                   R"({"model_max_length": 512})"));
  EXPECT_EQ(m.tokens, 128);
  EXPECT_EQ(m.source, "sentence_bert_config.json max_seq_length");
  // 6.x wrote none there: tokenizer_config.json's model_max_length, capped at the config's
  // max_position_embeddings.
  m = Resolve(StDir("len_tokenizer", "sentence_bert_config.json",
                    R"({"transformer_task": "feature-extraction"})",
                    R"({"model_max_length": 40})"));
  EXPECT_EQ(m.tokens, 40);
  EXPECT_EQ(m.source, "tokenizer_config.json model_max_length");
  m = Resolve(StDir("len_tokenizer_big", "", "", R"({"model_max_length": 8192})"), 512, 512);
  EXPECT_EQ(m.tokens, 512);
  EXPECT_NE(m.source.find("config.json max_position_embeddings"), std::string::npos) << m.source;
  // transformers' "no limit" (int(1e30), an integer simdjson cannot hold) and no file at all:
  // max_position_embeddings; an XLM-R table of 514 rows embeds 512 of them.
  m = Resolve(
      StDir(
          "len_unset", "", "",
          R"({"model_max_length": 1000000000000000019884624838656, "x": "9999999999999999999999"})"),
      514, 512);
  EXPECT_EQ(m.tokens, 512);
  EXPECT_NE(m.source.find("sets no model_max_length"), std::string::npos) << m.source;
  EXPECT_NE(m.source.find("capped at the 512 positions"), std::string::npos) << m.source;
  EXPECT_EQ(Resolve(StDir("len_none"), 514, 512).tokens, 512);
  // No max_position_embeddings either: the engine's positions.
  m = Resolve(StDir("len_nothing"), 0, 2048);
  EXPECT_EQ(m.tokens, 2048);
  // 6.x: processor_kwargs (tokenizer_args before) model_max_length wins over max_seq_length.
  m = Resolve(StDir("len_args", "sentence_bert_config.json",
                    R"({"max_seq_length": 128, "processor_kwargs": {"model_max_length": 64}})"));
  EXPECT_EQ(m.tokens, 64);
  EXPECT_EQ(m.source, "sentence_bert_config.json processor_kwargs.model_max_length");
  m = Resolve(StDir("len_targs", "sentence_bert_config.json",
                    R"({"max_seq_length": 128, "tokenizer_args": {"model_max_length": 100}})"));
  EXPECT_EQ(m.tokens, 100);
  // sentence-transformers 0.x's names for the same file.
  m = Resolve(StDir("len_legacy", "sentence_xlm-roberta_config.json", R"({"max_seq_length": 77})"));
  EXPECT_EQ(m.tokens, 77);
  EXPECT_EQ(m.source, "sentence_xlm-roberta_config.json max_seq_length");
  // Without modules.json sentence-transformers never reads sentence_bert_config.json.
  const std::string plain = FreshDir("len_plain");
  WriteText(plain + "/sentence_bert_config.json", R"({"max_seq_length": 16})");
  WriteText(plain + "/tokenizer_config.json", R"({"model_max_length": 256})");
  EXPECT_EQ(Resolve(plain).tokens, 256);
  // do_lower_case is read with it.
  auto st = ReadSentenceTransformersConfig(
      StDir("len_lower", "sentence_bert_config.json", R"({"do_lower_case": true})"));
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->do_lower_case);
  // Malformed values name the file and field.
  for (const char* bad : {R"({"max_seq_length": -1})", R"({"max_seq_length": "512"})",
                          R"({"processor_kwargs": {"model_max_length": 0}})"}) {
    auto r = ReadSentenceTransformersConfig(StDir("len_bad", "sentence_bert_config.json", bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("sentence_bert_config.json"), std::string::npos);
  }
  const std::string bad = StDir("len_bad_tc", "", "", R"({"model_max_length": "long"})");
  auto sbad = ReadSentenceTransformersConfig(bad);
  ASSERT_TRUE(sbad.ok());
  auto r = ResolveMaxInputLength(bad, *sbad, 512, 512);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tokenizer_config.json"), std::string::npos);
}

// A cross-encoder's default activation, newest place first (CrossEncoder 6.3 reads them all).
TEST(CrossEncoderActivationTest, NewestFileWins) {
  const std::string dir = FreshDir("ce_activation");
  const std::string config = dir + "/config.json", st = dir + "/config_sentence_transformers.json";
  auto read = [&](int labels) {
    auto a = ReadCrossEncoderActivation(dir, labels);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? *a : ScoreActivation::kSigmoid;
  };
  WriteText(config, R"({"architectures": ["BertForSequenceClassification"]})");
  EXPECT_EQ(read(1), ScoreActivation::kSigmoid);  // no file says: sigmoid for one label
  EXPECT_EQ(read(3), ScoreActivation::kIdentity);
  // 2.x / 3.x: top-level sbert_ce_default_activation_function.
  WriteText(config,
            R"({"sbert_ce_default_activation_function": "torch.nn.modules.linear.Identity"})");
  EXPECT_EQ(read(1), ScoreActivation::kIdentity);
  // 4.x / 5.x: config.json sentence_transformers.activation_fn wins over it.
  WriteText(
      config,
      R"({"sbert_ce_default_activation_function": "torch.nn.modules.linear.Identity",)"
      R"("sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Sigmoid"}})");
  EXPECT_EQ(read(1), ScoreActivation::kSigmoid);
  // 6.x: config_sentence_transformers.json wins over both.
  WriteText(
      st, R"({"activation_fn": "torch.nn.modules.linear.Identity", "model_type": "CrossEncoder"})");
  EXPECT_EQ(read(1), ScoreActivation::kIdentity);
  // A class outside torch needs trust_remote_code: the reference keeps looking (here: config.json).
  WriteText(st, R"({"activation_fn": "my_package.Scaled"})");
  EXPECT_EQ(read(1), ScoreActivation::kSigmoid);
  WriteText(st, R"({"activation_fn": "torch.nn.modules.activation.Tanh"})");
  auto tanh = ReadCrossEncoderActivation(dir, 1);
  ASSERT_FALSE(tanh.ok());
  EXPECT_NE(tanh.status().message().find("activation_fn"), std::string::npos);
}

}  // namespace
}  // namespace orchid
