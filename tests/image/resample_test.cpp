// Properties of Resize that hold for any input (the byte-exactness against Pillow is in
// image_golden_test.cpp): constant pictures stay constant under every filter, same-size resizes
// are copies, nearest picks Pillow's source pixels, orientation transposes are Pillow's.
#include "image/resample.h"

#include <gtest/gtest.h>

#include "image/orientation.h"

namespace orchid::image {
namespace {

RgbImage Gradient(int w, int h) {
  RgbImage img(w, h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = img.row(y) + 3 * x;
      p[0] = uint8_t(x * 7 + y);
      p[1] = uint8_t(y * 5);
      p[2] = uint8_t(x ^ y);
    }
  }
  return img;
}

TEST(ImageResample, ConstantStaysConstantForEveryFilter) {
  RgbImage img(37, 23);
  for (size_t i = 0; i < img.pixels.size(); i += 3) {
    img.pixels[i] = 200;
    img.pixels[i + 1] = 3;
    img.pixels[i + 2] = 128;
  }
  for (int f = 0; f <= 5; ++f) {
    for (auto [w, h] : {std::pair{5, 9}, {80, 41}, {37, 7}, {3, 23}, {1, 1}}) {
      auto out = Resize(img, w, h, *ResampleFromPil(f));
      ASSERT_TRUE(out.ok());
      ASSERT_EQ(out->width, w);
      ASSERT_EQ(out->height, h);
      for (size_t i = 0; i < out->pixels.size(); i += 3) {
        ASSERT_EQ(out->pixels[i], 200) << ResampleName(*ResampleFromPil(f)) << " " << w << "x" << h;
        ASSERT_EQ(out->pixels[i + 1], 3);
        ASSERT_EQ(out->pixels[i + 2], 128);
      }
    }
  }
}

TEST(ImageResample, SameSizeIsACopyAndBadSizesAreErrors) {
  const RgbImage img = Gradient(9, 4);
  auto same = Resize(img, 9, 4, Resample::kBicubic);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->pixels, img.pixels);
  EXPECT_FALSE(Resize(img, 0, 4, Resample::kBicubic).ok());
  EXPECT_FALSE(Resize(RgbImage(), 3, 3, Resample::kBilinear).ok());
  EXPECT_FALSE(ResampleFromPil(6).ok());  // Pillow 13's MKS2013
}

TEST(ImageResample, NearestPicksPillowsSourcePixels) {
  // 10 -> 4 columns: source positions 1.25, 3.75, 6.25, 8.75 truncate to 1, 3, 6, 8.
  const RgbImage img = Gradient(10, 1);
  auto out = Resize(img, 4, 1, Resample::kNearest);
  ASSERT_TRUE(out.ok());
  const int want[4] = {1, 3, 6, 8};
  for (int x = 0; x < 4; ++x) EXPECT_EQ(out->pixels[3 * x], img.pixels[3 * want[x]]) << x;
}

TEST(ImageOrientation, TransposesMatchPillowsDefinitions) {
  // A 3x2 picture with distinct pixels a b c / d e f (R channel 1..6).
  RgbImage img(3, 2);
  for (int i = 0; i < 6; ++i) img.pixels[size_t(3 * i)] = uint8_t(i + 1);
  auto r = [](const RgbImage& im) {
    std::vector<int> v;
    for (size_t i = 0; i < im.pixels.size(); i += 3) v.push_back(im.pixels[i]);
    return v;
  };
  EXPECT_EQ(r(ApplyOrientation(img, 1)), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(r(ApplyOrientation(img, 2)), (std::vector<int>{3, 2, 1, 6, 5, 4}));  // mirror
  EXPECT_EQ(r(ApplyOrientation(img, 3)), (std::vector<int>{6, 5, 4, 3, 2, 1}));  // 180
  EXPECT_EQ(r(ApplyOrientation(img, 4)), (std::vector<int>{4, 5, 6, 1, 2, 3}));  // flip
  EXPECT_EQ(r(ApplyOrientation(img, 5)), (std::vector<int>{1, 4, 2, 5, 3, 6}));  // transpose
  EXPECT_EQ(r(ApplyOrientation(img, 6)), (std::vector<int>{4, 1, 5, 2, 6, 3}));  // 90 cw
  EXPECT_EQ(r(ApplyOrientation(img, 7)), (std::vector<int>{6, 3, 5, 2, 4, 1}));  // transverse
  EXPECT_EQ(r(ApplyOrientation(img, 8)), (std::vector<int>{3, 6, 2, 5, 1, 4}));  // 90 ccw
  EXPECT_EQ(ApplyOrientation(img, 6).width, 2);
  EXPECT_EQ(r(ApplyOrientation(img, 9)), (std::vector<int>{1, 2, 3, 4, 5, 6}));
}

TEST(ImageOrientation, ExifAndXmpParsing) {
  // Big-endian TIFF, IFD0 with Orientation SHORT 6.
  const uint8_t be[] = {'E',  'x',  'i', 'f', 0, 0, 'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1,
                        0x01, 0x12, 0,   3,   0, 0, 0,   1,   0, 6,  0, 0, 0, 0, 0, 0};
  EXPECT_EQ(ExifOrientation(be), 6);
  // Little-endian, LONG 3.
  const uint8_t le[] = {'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 4,
                        0,   1,   0,  0, 0, 3, 0, 0, 0, 0, 0,    0,    0};
  EXPECT_EQ(ExifOrientation(le), 3);
  // BYTE-typed: Pillow reads bytes, which never match: present, no transpose.
  uint8_t byte_typed[sizeof le];
  std::copy(std::begin(le), std::end(le), byte_typed);
  byte_typed[12] = 1;
  EXPECT_EQ(ExifOrientation(byte_typed), 9);
  EXPECT_EQ(ExifOrientation(std::span<const uint8_t>(le, 12)), 0);  // IFD cut short
  const uint8_t junk[] = {'X', 'X', 42, 0, 8, 0, 0, 0};
  EXPECT_EQ(ExifOrientation(junk), 0);
  EXPECT_EQ(XmpOrientation(R"(<rdf:Description tiff:Orientation="8"/>)"), 8);
  EXPECT_EQ(XmpOrientation("<tiff:Orientation>5</tiff:Orientation>"), 5);
  EXPECT_EQ(XmpOrientation("tiff:Orientation=6"), 0);
}

}  // namespace
}  // namespace orchid::image
