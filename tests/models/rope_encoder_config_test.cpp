// ReadRopeEncoderConfig on NomicBERT's and GTE's config.json variants: the published configs'
// own fields (nomic's n_embd / rotary_emb_base; NewModel's rope_theta / rope_scaling) and
// transformers' (hidden_size, rope_parameters), NTK scaling, and the errors for what the
// forward pass cannot run.
#include "description/rope_encoder_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

namespace orchid {
namespace {

using Variant = RopeEncoderConfig::Variant;

Result<RopeEncoderConfig> Read(const std::string& body, Variant variant) {
  // One file per test: ctest runs the tests of this suite in parallel processes.
  const std::string path = ::testing::TempDir() + "/orchid_rope_encoder_config_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                           ".json";
  {
    std::ofstream out(path);
    out << "{" << body << "}";
  }
  auto r = ReadRopeEncoderConfig(path, variant);
  std::filesystem::remove(path);
  return r;
}

// "name" of a `"name":value` field.
std::string KeyOf(const std::string& field) { return field.substr(1, field.find(':') - 2); }

// `body` with `field` instead of the field of the same name (no duplicate keys).
std::string WithField(std::string body, const std::string& field) {
  const size_t at = body.find("\"" + KeyOf(field) + "\":");
  if (at != std::string::npos) {
    // Fields here hold scalars or flat objects: the field ends at the next top-level comma.
    size_t end = at, depth = 0;
    for (; end < body.size(); ++end) {
      if (body[end] == '{') ++depth;
      if (body[end] == '}') --depth;
      if (body[end] == ',' && depth == 0) break;
    }
    body.erase(at, end < body.size() ? end - at + 1 : std::string::npos);
    if (!body.empty() && body.back() == ',') body.pop_back();
  }
  return body + "," + field;
}

const char* kNomicPublished =
    R"("model_type":"nomic_bert","vocab_size":30528,"n_embd":768,"n_layer":12,"n_head":12,)"
    R"("n_inner":3072,"n_positions":8192,"layer_norm_epsilon":1e-12,"type_vocab_size":2,)"
    R"("rotary_emb_base":1000,"rotary_emb_fraction":1.0,"rotary_emb_interleaved":false,)"
    R"("rotary_scaling_factor":null,"activation_function":"swiglu","qkv_proj_bias":false,)"
    R"("mlp_fc1_bias":false,"mlp_fc2_bias":false,"prenorm":false,"causal":false)";
const char* kNomicTransformers =
    R"("model_type":"nomic_bert","vocab_size":30528,"hidden_size":768,"num_hidden_layers":12,)"
    R"("num_attention_heads":12,"intermediate_size":3072,"max_position_embeddings":8192,)"
    R"("layer_norm_eps":1e-12,"type_vocab_size":2,"hidden_act":"silu",)"
    R"("rope_parameters":{"rope_type":"default","rope_theta":1000.0})";

TEST(RopeEncoderConfigTest, NomicPublishedAndTransformersFieldsAgree) {
  auto a = Read(kNomicPublished, Variant::kNomic);
  auto b = Read(kNomicTransformers, Variant::kNomic);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  for (const RopeEncoderConfig* c : {&*a, &*b}) {
    EXPECT_EQ(c->hidden_size, 768);
    EXPECT_EQ(c->num_hidden_layers, 12);
    EXPECT_EQ(c->num_attention_heads, 12);
    EXPECT_EQ(c->intermediate_size, 3072);
    EXPECT_EQ(c->max_position_embeddings, 8192);
    EXPECT_EQ(c->type_vocab_size, 2);
    EXPECT_FLOAT_EQ(c->layer_norm_eps, 1e-12f);
    EXPECT_DOUBLE_EQ(c->rope_theta, 1000.0);
    EXPECT_DOUBLE_EQ(c->rope_inv_freq_divisor, 1.0);
    EXPECT_EQ(c->gate, RopeEncoderConfig::Gate::kSilu);
    EXPECT_FALSE(c->qkv_bias || c->mlp_in_bias || c->mlp_out_bias);
  }
}

TEST(RopeEncoderConfigTest, NomicRefusesWhatItCannotRun) {
  const std::string base = std::string(kNomicPublished);
  for (const char* bad : {R"("moe_every_n_layers":2)", R"("rotary_emb_fraction":0.5)",
                          R"("rotary_emb_interleaved":true)", R"("prenorm":true)",
                          R"("rotary_scaling_factor":2.0)", R"("use_rms_norm":true)"}) {
    SCOPED_TRACE(bad);
    const std::string key = KeyOf(bad);
    const std::string body = WithField(kNomicPublished, bad);
    auto c = Read(body, Variant::kNomic);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find(key), std::string::npos) << c.status().message();
  }
}

const char* kGteNew =
    R"("model_type":"new","vocab_size":30528,"hidden_size":768,"num_hidden_layers":12,)"
    R"("num_attention_heads":12,"intermediate_size":3072,"hidden_act":"gelu",)"
    R"("max_position_embeddings":8192,"type_vocab_size":0,"layer_norm_type":"layer_norm",)"
    R"("layer_norm_eps":1e-12,"position_embedding_type":"rope","rope_theta":500000,)"
    R"("logn_attention_scale":false,"logn_attention_clip1":false,"pack_qkv":true)";

TEST(RopeEncoderConfigTest, GteNtkScalingMultipliesThetaAndDividesFrequencies) {
  auto plain = Read(kGteNew, Variant::kGte);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_DOUBLE_EQ(plain->rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(plain->rope_inv_freq_divisor, 1.0);
  EXPECT_EQ(plain->type_vocab_size, 0);
  EXPECT_EQ(plain->gate, RopeEncoderConfig::Gate::kGelu);
  EXPECT_TRUE(plain->qkv_bias && plain->mlp_out_bias && !plain->mlp_in_bias);
  auto ntk =
      Read(std::string(kGteNew) + R"(,"rope_scaling":{"type":"ntk","factor":2.0})", Variant::kGte);
  ASSERT_TRUE(ntk.ok()) << ntk.status().ToString();
  EXPECT_DOUBLE_EQ(ntk->rope_theta, 1000000.0);
  EXPECT_DOUBLE_EQ(ntk->rope_inv_freq_divisor, std::pow(2.0, 2.0 / 64.0));  // head_dim 64
}

TEST(RopeEncoderConfigTest, GteTransformersFields) {
  auto c = Read(R"("model_type":"gte","vocab_size":250048,"hidden_size":768,)"
                R"("num_hidden_layers":12,"num_attention_heads":12,"intermediate_size":3072,)"
                R"("max_position_embeddings":8192,"type_vocab_size":1,)"
                R"("rope_parameters":{"rope_type":"default","rope_theta":160000.0})",
                Variant::kGte);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->rope_theta, 160000.0);
  EXPECT_EQ(c->type_vocab_size, 1);
  EXPECT_EQ(c->gate, RopeEncoderConfig::Gate::kGelu);  // GteConfig's default hidden_act
}

TEST(RopeEncoderConfigTest, GteRefusesWhatItCannotRun) {
  for (const char* bad :
       {R"("rope_scaling":{"type":"linear","factor":2.0})", R"("rope_scaling":{"type":"ntk"})",
        R"("logn_attention_scale":true)", R"("pack_qkv":false)", R"("layer_norm_type":"rms_norm")",
        R"("position_embedding_type":"absolute")", R"("hidden_act":"relu")"}) {
    SCOPED_TRACE(bad);
    const std::string key = KeyOf(bad);
    const std::string body = WithField(kGteNew, bad);
    auto c = Read(body, Variant::kGte);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find(key), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace orchid
