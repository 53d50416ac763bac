#include "gateway/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

namespace orchid {
namespace {

TEST(JsonWriterTest, WritesNestedStructureWithCommas) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("a").Int(1).Key("b").BeginArray().Bool(true).Null().String("x").EndArray();
  w.Key("c").BeginObject().EndObject().Key("d").BeginArray().EndArray().EndObject();
  EXPECT_EQ(out, R"({"a":1,"b":[true,null,"x"],"c":{},"d":[]})");
}

TEST(JsonWriterTest, EscapesStrings) {
  std::string out;
  AppendJsonString(&out, std::string("q\"b\\n\nt\tc\x01 \x1f") + "é");
  EXPECT_EQ(out, "\"q\\\"b\\\\n\\nt\\tc\\u0001 \\u001fé\"");
}

TEST(JsonWriterTest, FloatsAreShortestRoundTrip) {
  std::string out;
  AppendJsonFloat(&out, 0.1f);
  EXPECT_EQ(out, "0.1");
  out.clear();
  AppendJsonFloat(&out, -2.5f);
  EXPECT_EQ(out, "-2.5");
  out.clear();
  AppendJsonFloat(&out, 0.0f);
  EXPECT_EQ(out, "0");
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.2f);
  for (int i = 0; i < 10000; ++i) {
    const float v = i % 100 == 0 ? std::ldexp(dist(rng), -40) : dist(rng);
    out.clear();
    AppendJsonFloat(&out, v);
    const float back = std::strtof(out.c_str(), nullptr);
    ASSERT_EQ(std::memcmp(&back, &v, sizeof(v)), 0) << out;
  }
}

TEST(JsonWriterTest, NonFiniteFloatsBecomeNull) {
  std::string out;
  JsonWriter w(&out);
  const float v[] = {1.0f, std::numeric_limits<float>::quiet_NaN(),
                     std::numeric_limits<float>::infinity()};
  w.FloatArray(v, 3);
  EXPECT_EQ(out, "[1,null,null]");
}

}  // namespace
}  // namespace orchid
