// src/image against the goldens transformers 4.57.6 + Pillow 13.0.0 computed from the committed
// test images (tests/fixtures/images/make_fixtures.py): the decoded picture, the uint8 picture
// after resize / centre crop, and pixel_values, each compared byte for byte (SHA-256 of the
// whole array, plus shape and sampled values so a failure says where).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "image/decode.h"
#include "image/image_fixtures.h"  // tests/image
#include "image/preprocess.h"
#include "image/processor_config.h"

namespace orchid::image {
namespace {

using testing::FixtureDir;
using testing::Goldens;
using testing::ReadBytes;
using testing::ReadText;
using testing::Sha256;

ImageProcessorConfig Config(std::string_view name) {
  const std::string file{std::string_view(Goldens()["configs"][name])};
  auto c = ParseImageProcessorConfig(ReadText(FixtureDir() + "/configs/" + file), file);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : ImageProcessorConfig{};
}

std::string HexFloat(float v) {
  // Python's float.hex() of the float32 widened to double: "0x1.8000000000000p-1" etc.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", double(v));
  return buf;
}

// Python writes 0x1.8000000000000p-1 (13 hex digits, trailing zeros) and 0x0.0p+0 for zero;
// compare by value instead of by spelling.
double ParseHex(std::string_view s) { return std::strtod(std::string(s).c_str(), nullptr); }

// Calls fn(config name, config, decoded fixture, its golden entry for that config) for every
// fixture under every config.
template <typename Fn>
void ForEachImageAndConfig(Fn fn) {
  for (const char* cname : {"clip", "clip_pad", "siglip", "siglip_processor"}) {
    const ImageProcessorConfig config = Config(cname);
    for (auto [name, entry] : simdjson::dom::object(Goldens()["images"])) {
      SCOPED_TRACE(std::string(cname) + " " + std::string(name));
      auto img = DecodeImage(ReadBytes(FixtureDir() + "/files/" + std::string(name)));
      ASSERT_TRUE(img.ok()) << img.status().ToString();
      fn(config, *img, entry["configs"][cname]);
    }
  }
}

TEST(ImageGolden, FixturesArePresent) {
  size_t n = 0;
  for (auto [name, entry] : simdjson::dom::object(Goldens()["images"])) {
    (void)entry;
    EXPECT_FALSE(ReadBytes(FixtureDir() + "/files/" + std::string(name)).empty()) << name;
    ++n;
  }
  EXPECT_GE(n, 40u);
  EXPECT_EQ(std::string_view(Goldens()["pillow"]), "13.0.0");
  EXPECT_EQ(std::string_view(Goldens()["transformers"]), "4.57.6");
}

TEST(ImageGolden, DecodedPixelsAreLoadImages) {
  for (auto [name, entry] : simdjson::dom::object(Goldens()["images"])) {
    SCOPED_TRACE(std::string(name));
    auto img = DecodeImage(ReadBytes(FixtureDir() + "/files/" + std::string(name)));
    ASSERT_TRUE(img.ok()) << img.status().ToString();
    const auto d = entry["decoded"];
    EXPECT_EQ(img->width, int64_t(d["width"]));
    EXPECT_EQ(img->height, int64_t(d["height"]));
    for (auto s : simdjson::dom::array(d["samples"])) {
      const int y = int(int64_t(s.at(0))), x = int(int64_t(s.at(1)));
      if (y >= img->height || x >= img->width) continue;  // a size mismatch, reported above
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(int(img->row(y)[3 * x + c]), int64_t(s.at(size_t(2 + c))))
            << "pixel (" << x << ", " << y << ") channel " << c;
      }
    }
    EXPECT_EQ(Sha256(img->pixels), std::string_view(d["sha256"]));
  }
}

TEST(ImageGolden, OrientationIsReadFromExifAndXmp) {
  int oriented = 0;
  for (auto [name, entry] : simdjson::dom::object(Goldens()["images"])) {
    SCOPED_TRACE(std::string(name));
    auto d = DecodeImageUnoriented(ReadBytes(FixtureDir() + "/files/" + std::string(name)));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->orientation, int64_t(entry["orientation"]));
    oriented += d->orientation != 1;
  }
  EXPECT_GE(oriented, 10);  // JPEG 2..8, XMP, PNG eXIf, WebP EXIF
}

TEST(ImageGolden, ResizedAndCroppedPixelsAreTransformers) {
  ForEachImageAndConfig(
      [](const ImageProcessorConfig& config, const RgbImage& img, simdjson::dom::element golden) {
        auto r = ResizeAndCrop(img, config);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        const auto g = golden["resized"];
        EXPECT_EQ(r->height, int64_t(g["height"]));
        EXPECT_EQ(r->width, int64_t(g["width"]));
        EXPECT_EQ(Sha256(r->pixels), std::string_view(g["sha256"]));
      });
}

TEST(ImageGolden, PixelValuesAreBitIdentical) {
  int compared = 0;
  ForEachImageAndConfig(
      [&](const ImageProcessorConfig& config, const RgbImage& img, simdjson::dom::element golden) {
        auto pv = Preprocess(img, config);
        ASSERT_TRUE(pv.ok()) << pv.status().ToString();
        const auto g = golden["pixel_values"];
        simdjson::dom::array shape = g["shape"];
        ASSERT_EQ(pv->rank(), 3);
        for (int i = 0; i < 3; ++i) EXPECT_EQ(pv->dim(i), int64_t(shape.at(size_t(i))));
        const int64_t h = pv->dim(1), w = pv->dim(2);
        for (auto s : simdjson::dom::array(g["samples"])) {
          const int64_t c = s.at(0), y = s.at(1), x = s.at(2);
          if (y >= h || x >= w) continue;
          const float got = pv->data()[(c * h + y) * w + x];
          const double want = ParseHex(std::string_view(s.at(3)));
          EXPECT_EQ(double(got), want)
              << "pixel_values[" << c << ", " << y << ", " << x << "] = " << HexFloat(got);
        }
        const auto* bytes = reinterpret_cast<const uint8_t*>(pv->data());
        EXPECT_EQ(Sha256({bytes, pv->numel() * sizeof(float)}), std::string_view(g["sha256"]));
        ++compared;
      });
  EXPECT_GE(compared, 160);
}

// The two fixtures 3 pixels tall are where transformers' channel-format guess differs: the
// goldens are the (H, W, 3) reading, and goldens.json records that transformers' default call
// gives something else there (and only there).
TEST(ImageGolden, OnlyThreeRowPicturesHitTransformersChannelGuess) {
  for (auto [name, entry] : simdjson::dom::object(Goldens()["images"])) {
    const bool three_rows = int64_t(entry["decoded"]["height"]) == 3;
    for (auto [cname, c] : simdjson::dom::object(entry["configs"])) {
      EXPECT_EQ(bool(c["default_format_equal"]), !three_rows) << name << " " << cname;
    }
  }
}

}  // namespace
}  // namespace orchid::image
