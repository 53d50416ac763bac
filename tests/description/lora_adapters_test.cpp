// Task adapters' adapter_config.json (description/lora_adapters.h): what is read, what is
// refused (anything but plain LoRA), the task names and their order, and the fixture's five.
#include "description/lora_adapters.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace orchid {
namespace {

class LoraAdaptersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("orchid-lora-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // DIR/folder/adapter_config.json (and an empty adapter_model.safetensors unless told not to).
  void Adapter(const std::string& folder, const std::string& config, bool weights = true) {
    std::filesystem::create_directories(dir_ / folder);
    std::ofstream(dir_ / folder / "adapter_config.json") << config;
    if (weights) std::ofstream(dir_ / folder / "adapter_model.safetensors") << "";
  }
  Result<LoraAdapterConfig> Parse(const std::string& config) {
    Adapter("a", config);
    return ReadLoraAdapterConfig((dir_ / "a" / "adapter_config.json").string(), "a");
  }

  std::filesystem::path dir_;
};

TEST_F(LoraAdaptersTest, ReadsPlainLora) {
  auto c = Parse(R"({"peft_type": "LORA", "r": 4, "lora_alpha": 1, "bias": "none",
                     "target_modules": ["q_proj", "fc1"], "use_dora": false,
                     "rank_pattern": {}, "alpha_pattern": {}, "modules_to_save": null})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rank, 4);
  EXPECT_DOUBLE_EQ(c->scale(), 0.25);
  EXPECT_EQ(c->target_modules, (std::vector<std::string>{"q_proj", "fc1"}));
  auto rs = Parse(R"({"r": 16, "lora_alpha": 8, "use_rslora": true, "target_modules": "fc1"})");
  ASSERT_TRUE(rs.ok()) << rs.status().ToString();
  EXPECT_DOUBLE_EQ(rs->scale(), 2.0);  // alpha / sqrt(r)
}

TEST_F(LoraAdaptersTest, RefusesWhatTheEngineDoesNotCompute) {
  for (const char* bad : {
           R"({"peft_type": "IA3", "r": 4})",
           R"({"r": 4, "use_dora": true})",
           R"({"r": 4, "bias": "all"})",
           R"({"r": 4, "fan_in_fan_out": true})",
           R"({"r": 4, "rank_pattern": {"fc1": 8}})",
           R"({"r": 4, "alpha_pattern": {"fc1": 8}})",
           R"({"r": 4, "modules_to_save": ["classifier"]})",
           R"({"r": 0})",
           R"({"lora_alpha": 1})",
           R"({"r": 4, "target_modules": [1]})",
           R"([1, 2])",
       }) {
    auto c = Parse(bad);
    EXPECT_FALSE(c.ok()) << bad;
    if (!c.ok()) {
      EXPECT_NE(c.status().ToString().find("adapter_config.json"), std::string::npos)
          << c.status().ToString();
    }
  }
}

TEST_F(LoraAdaptersTest, TaskNamesOrderAndMissingWeights) {
  const std::string config = R"({"r": 4, "lora_alpha": 1})";
  Adapter("text_matching", config);
  Adapter("my_task", config);
  Adapter("retrieval_query", config);
  Adapter("retrieval_passage", config);
  std::filesystem::create_directories(dir_ / "not_an_adapter");
  auto all = ReadLoraAdapters(dir_.string());
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::vector<std::string> tasks;
  for (const auto& a : *all) tasks.push_back(a.task);
  EXPECT_EQ(tasks, (std::vector<std::string>{"retrieval.query", "retrieval.passage",
                                             "text-matching", "my_task"}));
  Adapter("separation", config, /*weights=*/false);
  auto missing = ReadLoraAdapters(dir_.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().ToString().find("separation"), std::string::npos);
}

TEST_F(LoraAdaptersTest, NoAdaptersIsEmpty) {
  auto none = ReadLoraAdapters(dir_.string());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace orchid
