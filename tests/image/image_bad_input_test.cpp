// Bad input to src/image: damaged files (tests/fixtures/images/bad, with Pillow's verdict in
// goldens.json), unsupported formats, the DecodeLimits bounds, every prefix of every fixture
// (no crash, no hang: the ASan tree runs this too), and bad processor configs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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

std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

TEST(ImageBadInput, EveryDamagedFileIsAClearError) {
  for (auto [name, verdict] : simdjson::dom::object(Goldens()["bad"])) {
    SCOPED_TRACE(std::string(name) + " (Pillow: " + std::string(std::string_view(verdict)) + ")");
    auto img = DecodeImage(ReadBytes(FixtureDir() + "/bad/" + std::string(name)));
    ASSERT_FALSE(img.ok());
    const StatusCode code = img.status().code();
    EXPECT_TRUE(code == StatusCode::kInvalidArgument || code == StatusCode::kOutOfRange)
        << img.status().ToString();
    EXPECT_FALSE(img.status().message().empty());
    // Pillow loads lying_height.png (its missing rows left as zeros); every other file it
    // refuses as well.
    if (name != "lying_height.png") {
      EXPECT_TRUE(std::string_view(verdict).starts_with("error")) << name;
    }
  }
}

TEST(ImageBadInput, HugeDimensionsAreRefusedFromTheHeader) {
  for (const char* name : {"huge_dimensions.png", "huge_dimensions.jpg", "huge_dimensions.gif"}) {
    auto img = DecodeImage(ReadBytes(FixtureDir() + "/bad/" + name));
    ASSERT_FALSE(img.ok()) << name;
    EXPECT_EQ(img.status().code(), StatusCode::kOutOfRange) << img.status().ToString();
    EXPECT_NE(img.status().message().find("pixels"), std::string::npos);
  }
}

TEST(ImageBadInput, UnsupportedFormatsAreNamed) {
  auto svg = DecodeImage(ReadBytes(FixtureDir() + "/bad/image.svg"));
  ASSERT_FALSE(svg.ok());
  EXPECT_EQ(svg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(svg.status().message().find("SVG"), std::string::npos) << svg.status().ToString();
  auto bmp = DecodeImage(Bytes("BM\x36\x00\x00\x00\x00\x00"));
  ASSERT_FALSE(bmp.ok());
  EXPECT_NE(bmp.status().message().find("BMP"), std::string::npos);
  auto heic =
      DecodeImage(Bytes(std::string("\0\0\0\x18"
                                    "ftypheic\0\0\0\0",
                                    16)));
  ASSERT_FALSE(heic.ok());
  EXPECT_NE(heic.status().message().find("HEI"), std::string::npos);
  auto empty = DecodeImage({});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
}

TEST(ImageBadInput, EncodedBytesLimit) {
  const auto bytes = ReadBytes(FixtureDir() + "/files/jpeg_420.jpg");
  DecodeLimits limits;
  limits.max_encoded_bytes = bytes.size() - 1;
  auto img = DecodeImage(bytes, limits);
  ASSERT_FALSE(img.ok());
  EXPECT_EQ(img.status().code(), StatusCode::kOutOfRange);
  limits.max_encoded_bytes = bytes.size();
  EXPECT_TRUE(DecodeImage(bytes, limits).ok());
}

TEST(ImageBadInput, DecodedPixelLimitForEveryFormat) {
  for (const char* name : {"jpeg_large.jpg", "png_rgb8.png", "webp_lossy.webp", "gif.gif"}) {
    const auto bytes = ReadBytes(FixtureDir() + "/files/" + name);
    auto header = ReadImageHeader(bytes);
    ASSERT_TRUE(header.ok()) << name;
    DecodeLimits limits;
    limits.max_pixels = uint64_t(header->width) * uint64_t(header->height) - 1;
    auto img = DecodeImage(bytes, limits);
    ASSERT_FALSE(img.ok()) << name;
    EXPECT_EQ(img.status().code(), StatusCode::kOutOfRange) << img.status().ToString();
    limits.max_pixels += 1;
    EXPECT_TRUE(DecodeImage(bytes, limits).ok()) << name;
    limits.max_dimension = std::max(header->width, header->height) - 1;
    EXPECT_EQ(DecodeImage(bytes, limits).status().code(), StatusCode::kOutOfRange) << name;
  }
}

TEST(ImageBadInput, ProgressiveJpegScanLimit) {
  const auto bytes = ReadBytes(FixtureDir() + "/files/jpeg_progressive.jpg");
  DecodeLimits limits;
  limits.max_jpeg_scans = 2;
  auto img = DecodeImage(bytes, limits);
  ASSERT_FALSE(img.ok());
  EXPECT_EQ(img.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(img.status().message().find("scans"), std::string::npos);
  EXPECT_TRUE(DecodeImage(bytes).ok());  // Pillow's progressive JPEGs have ~10 scans
  // Baseline JPEGs have one scan and pass any limit.
  EXPECT_TRUE(DecodeImage(ReadBytes(FixtureDir() + "/files/jpeg_420.jpg"), limits).ok());
}

// Every prefix of every fixture: an error or a picture, never a crash or a hang. (PNG and JPEG
// prefixes that stop after the image data still decode, as in Pillow.)
TEST(ImageBadInput, EveryPrefixOfEveryFixture) {
  for (const auto& entry : std::filesystem::directory_iterator(FixtureDir() + "/files")) {
    const auto bytes = ReadBytes(entry.path().string());
    if (bytes.size() > 20000) continue;
    const size_t step = bytes.size() > 4000 ? 7 : 1;
    for (size_t n = 0; n < bytes.size(); n += step) {
      auto img = DecodeImage(std::span(bytes.data(), n));
      if (!img.ok()) {
        EXPECT_TRUE(img.status().code() == StatusCode::kInvalidArgument ||
                    img.status().code() == StatusCode::kOutOfRange)
            << entry.path() << " prefix " << n << ": " << img.status().ToString();
      }
    }
  }
}

TEST(ImageBadInput, ProcessorConfigErrorsNameTheKey) {
  auto unknown = ParseImageProcessorConfig(R"({"image_processor_type": "ViTImageProcessor"})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(unknown.status().message().find("ViTImageProcessor"), std::string::npos);

  auto missing = ParseImageProcessorConfig(R"({"size": 224})");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("image_processor_type"), std::string::npos);

  auto resample =
      ParseImageProcessorConfig(R"({"image_processor_type": "CLIPImageProcessor", "resample": 6})");
  ASSERT_FALSE(resample.ok());
  EXPECT_NE(resample.status().message().find("resample"), std::string::npos);

  // SiglipImageProcessor reads size["height"]: a shortest_edge size is an error there.
  auto siglip = ParseImageProcessorConfig(
      R"({"image_processor_type": "SiglipImageProcessor", "size": {"shortest_edge": 224}})");
  ASSERT_FALSE(siglip.ok());
  EXPECT_NE(siglip.status().message().find("size"), std::string::npos);

  auto mean = ParseImageProcessorConfig(
      R"({"image_processor_type": "CLIPImageProcessor", "image_mean": [0.5, 0.5]})");
  ASSERT_FALSE(mean.ok());
  EXPECT_NE(mean.status().message().find("image_mean"), std::string::npos);

  EXPECT_FALSE(ParseImageProcessorConfig("not json").ok());
  EXPECT_FALSE(
      ParseImageProcessorConfig(
          R"({"image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 0}})")
          .ok());
}

TEST(ImageBadInput, ProcessorConfigDefaultsAndLayouts) {
  auto clip = ParseImageProcessorConfig(R"({"image_processor_type": "CLIPImageProcessorFast"})");
  ASSERT_TRUE(clip.ok()) << clip.status().ToString();
  EXPECT_EQ(clip->kind, ImageProcessorKind::kClip);
  EXPECT_EQ(clip->shortest_edge, 224);
  EXPECT_TRUE(clip->do_center_crop);
  EXPECT_EQ(clip->crop_height, 224);
  EXPECT_EQ(clip->resample, Resample::kBicubic);
  EXPECT_EQ(clip->image_mean[0], 0.48145466);
  EXPECT_EQ(clip->OutputSize(480, 640), (std::pair<int, int>{224, 224}));

  auto siglip = ParseImageProcessorConfig(
      R"({"image_processor": {"image_processor_type": "SiglipImageProcessor", "size": 384,
          "resample": 2, "image_std": 0.25}})");
  // transformers turns SigLIP's int size into {"shortest_edge": n} and then fails on
  // size["height"]: an error here too.
  ASSERT_FALSE(siglip.ok());
  EXPECT_NE(siglip.status().message().find("image_processor: \"size\""), std::string::npos)
      << siglip.status().ToString();

  // LoadImageProcessorConfig: preprocessor_config.json first, else processor_config.json.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("orchid_image_cfg_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  EXPECT_EQ(LoadImageProcessorConfig(dir.string()).status().code(), StatusCode::kNotFound);
  std::ofstream(dir / "processor_config.json")
      << R"({"image_processor": {"image_processor_type": "SiglipImageProcessor",
             "size": {"height": 50, "width": 70}}})";
  auto from_processor = LoadImageProcessorConfig(dir.string());
  ASSERT_TRUE(from_processor.ok()) << from_processor.status().ToString();
  EXPECT_EQ(from_processor->width, 70);
  std::ofstream(dir / "preprocessor_config.json")
      << R"({"image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 99}})";
  auto from_preprocessor = LoadImageProcessorConfig(dir.string());
  ASSERT_TRUE(from_preprocessor.ok());
  EXPECT_EQ(from_preprocessor->shortest_edge, 99);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace orchid::image
