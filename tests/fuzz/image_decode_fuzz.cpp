// libFuzzer target over src/image (issue 43): decode any bytes as an image, then preprocess
// the picture with a CLIP or a SigLIP config (chosen by the input's length, so the committed
// seeds stay plain image files). Checks what must hold for any input: an error is
// kInvalidArgument or kOutOfRange with a message; a picture fits the limits; the header agrees
// with the decoded size; pixel_values have the config's shape and are finite.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "image/decode.h"
#include "image/orientation.h"
#include "image/preprocess.h"
#include "image/processor_config.h"

namespace {

const orchid::image::ImageProcessorConfig& Config(size_t which) {
  static const orchid::image::ImageProcessorConfig configs[4] = {
      *orchid::image::ParseImageProcessorConfig(
          R"({"image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 24},
              "crop_size": {"height": 20, "width": 18}, "image_mean": [0.4, 0.5, 0.6],
              "image_std": [0.2, 0.3, 0.25]})"),
      *orchid::image::ParseImageProcessorConfig(
          R"({"image_processor_type": "SiglipImageProcessor",
              "size": {"height": 16, "width": 28}, "resample": 2})"),
      *orchid::image::ParseImageProcessorConfig(
          R"({"image_processor_type": "CLIPImageProcessor", "size": 12, "crop_size": 20,
              "resample": 1})"),
      *orchid::image::ParseImageProcessorConfig(
          R"({"image_processor_type": "SiglipImageProcessor",
              "size": {"height": 9, "width": 5}, "resample": 0})"),
  };
  return configs[which % 4];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using orchid::StatusCode;
  orchid::image::DecodeLimits limits;
  limits.max_encoded_bytes = 1 << 20;
  limits.max_pixels = 1 << 22;  // keeps each run within libFuzzer's memory and time limits
  limits.max_dimension = 8192;
  limits.max_jpeg_scans = 50;
  const std::span<const uint8_t> bytes(data, size);
  auto decoded = orchid::image::DecodeImageUnoriented(bytes, limits);
  if (!decoded.ok()) {
    const StatusCode code = decoded.status().code();
    if (code != StatusCode::kInvalidArgument && code != StatusCode::kOutOfRange) std::abort();
    if (decoded.status().message().empty()) std::abort();
    return 0;
  }
  const orchid::image::RgbImage& rgb = decoded->rgb;
  if (rgb.width < 1 || rgb.height < 1 ||
      uint64_t(rgb.width) * uint64_t(rgb.height) > limits.max_pixels ||
      rgb.pixels.size() != size_t(rgb.width) * size_t(rgb.height) * 3) {
    std::abort();
  }
  auto header = orchid::image::ReadImageHeader(bytes);
  if (!header.ok()) std::abort();
  const bool gif = header->format == orchid::image::ImageFormat::kGif;  // its canvas may grow
  if (!gif && (header->width != rgb.width || header->height != rgb.height)) std::abort();

  const orchid::image::RgbImage upright =
      orchid::image::ApplyOrientation(decoded->rgb, decoded->orientation);
  const auto& config = Config(size);
  auto pixels = orchid::image::Preprocess(upright, config);
  if (!pixels.ok()) {
    // Only a resize to nothing (a 1-pixel side scaled down) may fail.
    if (pixels.status().code() != StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  const auto [h, w] = config.OutputSize(upright.height, upright.width);
  if (pixels->dim(0) != 3 || pixels->dim(1) != h || pixels->dim(2) != w) std::abort();
  for (size_t i = 0; i < pixels->numel(); ++i) {
    if (!std::isfinite(pixels->data()[i])) std::abort();
  }
  return 0;
}
