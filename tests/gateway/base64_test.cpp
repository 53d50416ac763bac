#include "gateway/base64.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace orchid {
namespace {

TEST(Base64Test, Rfc4648Vectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(Base64Test, DecodeRoundTripsAndRejectsGarbage) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "\x00\x01\x02\xff"}) {
    auto d = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(*d, s);
  }
  EXPECT_FALSE(Base64Decode("abc").has_value());
  EXPECT_FALSE(Base64Decode("ab!d").has_value());
  EXPECT_FALSE(Base64Decode("a=bc").has_value());
}

TEST(Base64Test, FloatsAreLittleEndianFloat32) {
  const float v[] = {1.0f, -2.0f, 0.5f};
  std::string out;
  AppendBase64Floats(&out, v, 3);
  // 1.0f = 00 00 80 3f, -2.0f = 00 00 00 c0, 0.5f = 00 00 00 3f
  EXPECT_EQ(out, Base64Encode(std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\x00\x3f", 12)));
  auto back = Base64Decode(out);
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->size(), sizeof(v));
  EXPECT_EQ(std::memcmp(back->data(), v, sizeof(v)), 0);
}

}  // namespace
}  // namespace orchid
