// ReadQwen3Config on config.json variants: transformers 4.x (rope_theta, rope_scaling: null) and
// 5.x (rope_parameters), bidirectional flags, head_dim, and the errors for what we cannot run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "description/qwen3_config.h"

namespace orchid {
namespace {

const char* kBase =
    R"("model_type":"qwen3","vocab_size":1000,"hidden_size":64,"num_hidden_layers":2,)"
    R"("num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,)"
    R"("max_position_embeddings":4096)";

Result<Qwen3Config> Read(const std::string& extra) {
  const std::string path = ::testing::TempDir() + "/orchid_qwen3_config.json";
  {
    std::ofstream out(path);
    out << "{" << kBase << (extra.empty() ? "" : ",") << extra << "}";
  }
  auto r = ReadQwen3Config(path);
  std::filesystem::remove(path);
  return r;
}

TEST(Qwen3ConfigTest, DefaultsAndTransformers4Fields) {
  auto c = Read(R"("rope_theta":1000000,"rope_scaling":null,"sliding_window":null)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->head_dim, 16);  // hidden / heads when head_dim is absent
  EXPECT_EQ(c->num_key_value_heads, 2);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_TRUE(c->causal);
  EXPECT_TRUE(c->tie_word_embeddings);
}

TEST(Qwen3ConfigTest, Transformers5RopeParameters) {
  auto c = Read(R"("head_dim":32,"rope_parameters":{"rope_theta":500000.0,"rope_type":"default"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->rope_theta, 5e5);
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_EQ(c->q_size(), 128);
  EXPECT_EQ(c->kv_size(), 64);
}

TEST(Qwen3ConfigTest, BidirectionalFlags) {
  EXPECT_FALSE(Read(R"("use_bidirectional_attention":true)")->causal);
  EXPECT_FALSE(Read(R"("is_causal":false)")->causal);
  EXPECT_TRUE(Read(R"("use_bidirectional_attention":false)")->causal);
}

TEST(Qwen3ConfigTest, RejectsWhatTheForwardPassCannotRun) {
  for (const char* bad : {R"("rope_scaling":{"type":"yarn","factor":4})",
                          R"("rope_parameters":{"rope_theta":1e6,"rope_type":"yarn"})",
                          R"("hidden_act":"gelu")", R"("use_sliding_window":true)",
                          R"("attention_bias":true)", R"("head_dim":15)",
                          R"("rope_parameters":"x")", R"("rope_theta":0.5)"}) {
    SCOPED_TRACE(bad);
    auto c = Read(bad);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find("orchid_qwen3_config.json: field"), std::string::npos)
        << c.status().ToString();
  }
}

TEST(Qwen3ConfigTest, KeyValueHeadsMustDivideHeads) {
  const std::string path = ::testing::TempDir() + "/orchid_qwen3_kv.json";
  {
    std::ofstream out(path);
    out << R"({"vocab_size":10,"hidden_size":12,"num_hidden_layers":1,"num_attention_heads":4,)"
        << R"("num_key_value_heads":3,"intermediate_size":8,"max_position_embeddings":16})";
  }
  auto c = ReadQwen3Config(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("num_key_value_heads"), std::string::npos);
}

}  // namespace
}  // namespace orchid
