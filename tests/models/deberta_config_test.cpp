// ReadDebertaConfig on DeBERTa-v3's and v2's config.json variants (pos_att_type as a list or a
// "|" string, position buckets, max_relative_positions -1) and the errors for what the forward
// pass cannot run (convolution layer, embedding projection, other attention terms).
#include "description/deberta_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace orchid {
namespace {

const char* kV3 = R"("model_type":"deberta-v2","vocab_size":128100,"hidden_size":768,)"
                  R"("num_hidden_layers":12,"num_attention_heads":12,"intermediate_size":3072,)"
                  R"("hidden_act":"gelu","max_position_embeddings":512,"type_vocab_size":0,)"
                  R"("layer_norm_eps":1e-7,"relative_attention":true,)"
                  R"("max_relative_positions":-1,"position_buckets":256,)"
                  R"("norm_rel_ebd":"layer_norm","share_att_key":true,)"
                  R"("position_biased_input":false,"pad_token_id":0)";

Result<DebertaConfig> Read(const std::string& extra) {
  // One file per test: ctest runs the tests of this suite in parallel processes.
  const std::string path = ::testing::TempDir() + "/orchid_deberta_config_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                           ".json";
  {
    std::ofstream out(path);
    out << "{" << kV3 << "," << extra << "}";
  }
  auto r = ReadDebertaConfig(path);
  std::filesystem::remove(path);
  return r;
}

TEST(DebertaConfigTest, V3Fields) {
  auto c = Read(R"("pos_att_type":["p2c","c2p"])");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->c2p && c->p2c && c->share_att_key && c->norm_rel_embeddings);
  EXPECT_FALSE(c->position_biased_input);
  EXPECT_EQ(c->max_relative_positions, 512);  // -1: max_position_embeddings
  EXPECT_EQ(c->span(), 256);
  EXPECT_EQ(c->scale_factor(), 3);
  EXPECT_EQ(c->type_vocab_size, 0);
}

TEST(DebertaConfigTest, PosAttTypeAsAString) {
  auto c = Read(R"("pos_att_type":"c2p")");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->c2p);
  EXPECT_FALSE(c->p2c);
  EXPECT_EQ(c->scale_factor(), 2);
}

TEST(DebertaConfigTest, RefusesWhatTheForwardPassCannotRun) {
  for (const char* bad :
       {R"("pos_att_type":["p2p"])", R"("conv_kernel_size":3)", R"("embedding_size":128)",
        R"("pooler_hidden_act":"tanh")", R"("pos_att_type":7)"}) {
    SCOPED_TRACE(bad);
    auto c = Read(bad);
    ASSERT_FALSE(c.ok());
    const std::string field = std::string(bad).substr(1, std::string(bad).find(':') - 2);
    EXPECT_NE(c.status().message().find(field), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace orchid
