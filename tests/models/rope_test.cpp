// Rotary frequencies against transformers (tests/fixtures/rope/reference.json, made by
// make_reference.py beside it): each rope type's config read by ReadDecoderConfig, in both
// layouts, then ops::RopeInverseFrequencies — within 2 ulp of torch's float32 values (torch's
// pow is itself not correctly rounded), and the same attention scaling.
#include "ops/rope.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "description/decoder_config.h"

namespace orchid {
namespace {

// The number of floats between a and b (both finite, same sign).
int64_t UlpDistance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::llabs(int64_t(ia) - int64_t(ib));
}

Result<DecoderConfig> ReadConfig(const std::string& json) {
  const std::string path = ::testing::TempDir() + "/orchid_rope_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                           ".json";
  {
    std::ofstream out(path);
    out << json;
  }
  auto c = ReadDecoderConfig(path);
  std::filesystem::remove(path);
  return c;
}

TEST(RopeTest, FrequenciesMatchTransformers) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc =
      parser.load(std::string(ORCHID_SOURCE_DIR) + "/tests/fixtures/rope/reference.json");
  int checked = 0;
  for (simdjson::dom::element c : doc["cases"]) {
    const std::string name{std::string_view(c["name"])};
    SCOPED_TRACE(name);
    const int64_t head_dim = c["head_dim"], mpe = c["max_position_embeddings"];
    const std::string params = simdjson::minify(c["rope_parameters"]);
    // transformers 5's rope_parameters, and for the scaled types 4.x's rope_scaling with a
    // top-level rope_theta ("type" for "rope_type"): the same frequencies.
    std::vector<std::string> layouts = {"\"rope_parameters\":" + params};
    double theta = c["rope_parameters"]["rope_theta"];
    std::string legacy = params;
    legacy.replace(legacy.find("\"rope_type\""), 11, "\"type\"");
    layouts.push_back("\"rope_theta\":" + std::to_string(theta) + ",\"rope_scaling\":" + legacy);
    for (const std::string& rope : layouts) {
      auto config = ReadConfig(
          R"({"model_type":"llama","vocab_size":10,"hidden_size":)" + std::to_string(2 * head_dim) +
          R"(,"num_hidden_layers":1,"num_attention_heads":2,"head_dim":)" +
          std::to_string(head_dim) + R"(,"intermediate_size":8,"max_position_embeddings":)" +
          std::to_string(mpe) + "," + rope + "}");
      ASSERT_TRUE(config.ok()) << rope << ": " << config.status().ToString();
      int64_t seq_len = 0;
      if (!c["seq_len"].is_null()) seq_len = c["seq_len"];
      std::vector<float> inv;
      float scale = 0;
      ops::RopeInverseFrequencies(config->rope_theta, config->head_dim, config->rope_scaling,
                                  int(seq_len), &inv, &scale);
      EXPECT_FLOAT_EQ(scale, float(double(c["attention_scaling"])));
      simdjson::dom::array want = c["inv_freq"];
      ASSERT_EQ(inv.size(), want.size());
      size_t i = 0;
      for (double w : want) {
        EXPECT_LE(UlpDistance(inv[i], float(w)), 2)
            << "frequency " << i << ": " << inv[i] << " vs " << float(w) << " (" << rope << ")";
        ++i;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

// Dynamic NTK scaling only grows past max_position_embeddings, per sequence length.
TEST(RopeTest, DynamicScalingGrowsWithTheSequence) {
  RopeScaling s;
  s.type = RopeType::kDynamic;
  s.factor = 2.0;
  s.max_positions = 32;
  std::vector<float> base, at32, at64, at128;
  float scale = 0;
  ops::RopeInverseFrequencies(5e5, 16, {}, 0, &base, &scale);
  ops::RopeInverseFrequencies(5e5, 16, s, 32, &at32, &scale);
  ops::RopeInverseFrequencies(5e5, 16, s, 64, &at64, &scale);
  ops::RopeInverseFrequencies(5e5, 16, s, 128, &at128, &scale);
  EXPECT_EQ(at32, base);
  EXPECT_EQ(at64[0], base[0]);  // 1 / theta^0 whatever theta
  for (size_t i = 1; i < base.size(); ++i) {
    EXPECT_LT(at64[i], base[i]) << i;
    EXPECT_LT(at128[i], at64[i]) << i;
  }
}

}  // namespace
}  // namespace orchid
