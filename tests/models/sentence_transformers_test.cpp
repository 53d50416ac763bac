#include "description/sentence_transformers.h"

#include <gtest/gtest.h>

#include <filesystem>

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

TEST(PromptConfigTest, ReadsNamedPromptsAndDefault) {
  const std::string dir = FreshDir("prompts_ok");
  WriteText(dir + "/config_sentence_transformers.json",
            R"({"prompts": {"query": "query: ", "document": ""}, "default_prompt_name": "query"})");
  Result<PromptConfig> p = ReadPromptConfig(dir);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->prompts.size(), 2u);
  EXPECT_EQ(p->prompts.at("query"), "query: ");
  EXPECT_EQ(p->default_prompt_name, "query");
}

TEST(PromptConfigTest, AbsentFileOrFieldsMeanNoPrompts) {
  Result<PromptConfig> none = ReadPromptConfig(FreshDir("prompts_none"));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->prompts.empty());
  const std::string dir = FreshDir("prompts_version_only");
  WriteText(dir + "/config_sentence_transformers.json", R"({"__version__": {"x": "1"}})");
  ASSERT_TRUE(ReadPromptConfig(dir).ok());
}

TEST(PromptConfigTest, MalformedFilesNameTheFieldAndFile) {
  const std::string dir = FreshDir("prompts_bad");
  const std::string path = dir + "/config_sentence_transformers.json";
  for (const char* text : {R"({"prompts": ["a"]})", R"({"prompts": {"q": 1}})",
                           R"({"prompts": {"q": "x"}, "default_prompt_name": "other"})",
                           R"({"default_prompt_name": 5})", "not json"}) {
    WriteText(path, text);
    Result<PromptConfig> p = ReadPromptConfig(dir);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_NE(p.status().message().find("config_sentence_transformers.json"), std::string::npos)
        << p.status().ToString();
  }
}

}  // namespace
}  // namespace orchid
