// ReadDecoderConfig on config.json variants: transformers 4.x (rope_theta, rope_scaling: null) and
// 5.x (rope_parameters), bidirectional flags, head_dim, each model_type's switches (QK-norm,
// biases, sliding window), and the errors for what we cannot run.
#include "description/decoder_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace orchid {
namespace {

const char* kBase = R"("vocab_size":1000,"hidden_size":64,"num_hidden_layers":2,)"
                    R"("num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,)"
                    R"("max_position_embeddings":4096)";

Result<DecoderConfig> Read(const std::string& extra, const std::string& type = "qwen3") {
  // One file per test: ctest runs the tests of this suite in parallel processes.
  const std::string path = ::testing::TempDir() + "/orchid_decoder_config_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                           ".json";
  {
    std::ofstream out(path);
    out << R"({"model_type":")" << type << "\"," << kBase << (extra.empty() ? "" : ",") << extra
        << "}";
  }
  auto r = ReadDecoderConfig(path);
  std::filesystem::remove(path);
  return r;
}

TEST(DecoderConfigTest, DefaultsAndTransformers4Fields) {
  auto c = Read(R"("rope_theta":1000000,"rope_scaling":null,"sliding_window":null)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->head_dim, 16);  // hidden / heads when head_dim is absent
  EXPECT_EQ(c->num_key_value_heads, 2);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_TRUE(c->causal);
  EXPECT_TRUE(c->tie_word_embeddings);
}

TEST(DecoderConfigTest, Transformers5RopeParameters) {
  auto c = Read(R"("head_dim":32,"rope_parameters":{"rope_theta":500000.0,"rope_type":"default"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->rope_theta, 5e5);
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_EQ(c->q_size(), 128);
  EXPECT_EQ(c->kv_size(), 64);
}

TEST(DecoderConfigTest, BidirectionalFlags) {
  EXPECT_FALSE(Read(R"("use_bidirectional_attention":true)")->causal);
  EXPECT_FALSE(Read(R"("is_causal":false)")->causal);
  EXPECT_TRUE(Read(R"("use_bidirectional_attention":false)")->causal);
}

TEST(DecoderConfigTest, RejectsWhatTheForwardPassCannotRun) {
  for (const char* bad :
       {R"("rope_scaling":{"type":"longrope","factor":4})",
        R"("rope_parameters":{"rope_theta":1e6,"rope_type":"yarn"})",  // no factor
        R"("hidden_act":"gelu")", R"("attention_bias":1)", R"("head_dim":15)",
        R"("rope_parameters":{"rope_theta":5e5,"rope_type":"llama3","factor":8})",  // no lf/hf
        R"("rope_parameters":{"rope_type":"linear","factor":-2})", R"("rope_parameters":"x")",
        R"("rope_scaling":{"rope_type":"dynamic","factor":"2"})", R"("rope_theta":0.5)",
        R"("use_sliding_window":true,"max_window_layers":-1)"}) {
    SCOPED_TRACE(bad);
    auto c = Read(bad);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find(".json: field"), std::string::npos)
        << c.status().ToString();
  }
}

// What each model_type switches on: the layer's optional parts as transformers builds them.
TEST(DecoderConfigTest, ModelTypeSwitches) {
  auto qwen3 = Read(R"("attention_bias":true)");  // kBase is model_type qwen3
  ASSERT_TRUE(qwen3.ok()) << qwen3.status().ToString();
  EXPECT_TRUE(qwen3->qk_norm);
  EXPECT_TRUE(qwen3->qkv_bias && qwen3->o_bias);
  EXPECT_FALSE(qwen3->mlp_bias);
  auto Swap = [](const std::string& type, const std::string& extra) { return Read(extra, type); };
  // Qwen2: q/k/v biases always, none on o; no QK-norm; sliding_window ignored without
  // use_sliding_window.
  auto qwen2 = Swap("qwen2", R"("sliding_window":4096,"attention_bias":false)");
  ASSERT_TRUE(qwen2.ok()) << qwen2.status().ToString();
  EXPECT_FALSE(qwen2->qk_norm);
  EXPECT_TRUE(qwen2->qkv_bias);
  EXPECT_FALSE(qwen2->o_bias);
  EXPECT_EQ(qwen2->layer_window, (std::vector<int>{0, 0}));
  // Mistral: no biases, its sliding window on every layer (4096 when absent, none when null);
  // "head_dim": null is hidden / heads.
  auto mistral = Swap("mistral", R"("sliding_window":1024,"head_dim":null,"attention_bias":true)");
  ASSERT_TRUE(mistral.ok()) << mistral.status().ToString();
  EXPECT_FALSE(mistral->qk_norm || mistral->qkv_bias || mistral->o_bias || mistral->mlp_bias);
  EXPECT_EQ(mistral->layer_window, (std::vector<int>{1024, 1024}));
  EXPECT_EQ(mistral->head_dim, 16);
  EXPECT_EQ(Swap("mistral", R"("sliding_window":null)")->layer_window, (std::vector<int>{0, 0}));
  EXPECT_EQ(Swap("mistral", "")->layer_window, (std::vector<int>{4096, 4096}));
  // Llama: attention_bias on all four projections, mlp_bias on the MLP.
  auto llama = Swap("llama", R"("attention_bias":true,"mlp_bias":true)");
  ASSERT_TRUE(llama.ok()) << llama.status().ToString();
  EXPECT_FALSE(llama->qk_norm);
  EXPECT_TRUE(llama->qkv_bias && llama->o_bias && llama->mlp_bias);
}

// Qwen2 / Qwen3 (transformers 5: Qwen2Config.layer_types): with use_sliding_window, the layers from
// max_window_layers on get sliding_window (keys j with 0 <= i - j < W); an explicit layer_types
// names them instead; bidirectional configs see |i - j| <= W.
TEST(DecoderConfigTest, QwenSlidingWindowLayers) {
  for (const char* type : {"qwen2", "qwen3"}) {
    SCOPED_TRACE(type);
    auto c = Read(R"("use_sliding_window":true,"sliding_window":8,"max_window_layers":1)", type);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->layer_window, (std::vector<int>{0, 8}));
    c = Read(R"("use_sliding_window":true,"sliding_window":8)", type);  // default 28 full layers
    EXPECT_EQ(c->layer_window, (std::vector<int>{0, 0}));
    c = Read(R"("use_sliding_window":true,"sliding_window":8,"max_window_layers":0,)"
             R"("is_causal":false)",
             type);
    EXPECT_EQ(c->layer_window, (std::vector<int>{9, 9}));
    c = Read(R"("use_sliding_window":true,"sliding_window":8,)"
             R"("layer_types":["sliding_attention","full_attention"])",
             type);
    EXPECT_EQ(c->layer_window, (std::vector<int>{8, 0}));
    c = Read(R"("use_sliding_window":false,"sliding_window":8,"max_window_layers":0)", type);
    EXPECT_EQ(c->layer_window, (std::vector<int>{0, 0}));
  }
}

// Rotary scaling in both layouts, with transformers 5's precedence: rope_scaling over
// rope_parameters, the object's rope_theta over the top-level one, rope_type over type.
TEST(DecoderConfigTest, RotaryScalingLayoutsAndPrecedence) {
  auto c = Read(R"("rope_theta":5e5,"rope_scaling":{"type":"linear","factor":2.0})", "llama");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rope_scaling.type, RopeType::kLinear);
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 2.0);
  EXPECT_DOUBLE_EQ(c->rope_theta, 5e5);
  c = Read(R"("rope_parameters":{"rope_type":"llama3","factor":8,"low_freq_factor":1,)"
           R"("high_freq_factor":4,"original_max_position_embeddings":8192,"rope_theta":5e5})",
           "llama");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rope_scaling.type, RopeType::kLlama3);
  EXPECT_EQ(c->rope_scaling.original_max_positions, 8192);
  EXPECT_DOUBLE_EQ(c->rope_scaling.high_freq_factor, 4.0);
  c = Read(R"("rope_theta":1e4,"rope_scaling":{"type":"yarn","rope_type":"dynamic","factor":4,)"
           R"("rope_theta":2e6},"rope_parameters":{"rope_type":"linear","factor":3})",
           "qwen2");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rope_scaling.type, RopeType::kDynamic);
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 4.0);
  EXPECT_DOUBLE_EQ(c->rope_theta, 2e6);
  EXPECT_EQ(c->rope_scaling.max_positions, 4096);
  c = Read(R"("rope_scaling":{"type":"yarn","factor":4,"beta_fast":null,"truncate":false})",
           "qwen2");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rope_scaling.type, RopeType::kYarn);
  EXPECT_EQ(c->rope_scaling.original_max_positions, 4096);  // max_position_embeddings
  EXPECT_FALSE(c->rope_scaling.truncate);
  c = Read(R"("rope_scaling":null,"rope_parameters":{"rope_theta":3e5,"rope_type":"default"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rope_scaling.type, RopeType::kDefault);
  EXPECT_DOUBLE_EQ(c->rope_theta, 3e5);
}

TEST(DecoderConfigTest, KeyValueHeadsMustDivideHeads) {
  const std::string path = ::testing::TempDir() + "/orchid_decoder_kv.json";
  {
    std::ofstream out(path);
    out << R"({"vocab_size":10,"hidden_size":12,"num_hidden_layers":1,"num_attention_heads":4,)"
        << R"("num_key_value_heads":3,"intermediate_size":8,"max_position_embeddings":16})";
  }
  auto c = ReadDecoderConfig(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("num_key_value_heads"), std::string::npos);
}

}  // namespace
}  // namespace orchid
