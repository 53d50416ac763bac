#include "description/sentence_transformers.h"

#include <gtest/gtest.h>

#include "models/safetensors_writer.h"

namespace orchid {
namespace {

using testing_util::FreshDir;
using testing_util::WriteText;

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
