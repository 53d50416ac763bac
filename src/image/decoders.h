// The per-format decoders behind DecodeImage (decode.h); internal to src/image. Each returns the
// picture converted to RGB as Pillow's convert("RGB") would, plus the metadata blocks that hold an
// orientation. The caller has already checked the encoded size and sniffed the format.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "image/decode.h"
#include "image/image.h"

namespace orchid::image::internal {

struct DecodedFrame {
  RgbImage rgb;
  std::vector<uint8_t> exif;  // as Pillow's info["exif"] (may start with "Exif\0\0")
  std::string xmp;            // as info["xmp"] / info["XML:com.adobe.xmp"]
};

// Header-only size reads (no pixel allocation).
Result<ImageHeader> ReadJpegHeader(std::span<const uint8_t> bytes);
Result<ImageHeader> ReadPngHeader(std::span<const uint8_t> bytes);
Result<ImageHeader> ReadWebpHeader(std::span<const uint8_t> bytes);
Result<ImageHeader> ReadGifHeader(std::span<const uint8_t> bytes);

Result<DecodedFrame> DecodeJpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits);
Result<DecodedFrame> DecodePng(std::span<const uint8_t> bytes, const DecodeLimits& limits);
Result<DecodedFrame> DecodeWebp(std::span<const uint8_t> bytes, const DecodeLimits& limits);
Result<DecodedFrame> DecodeGif(std::span<const uint8_t> bytes, const DecodeLimits& limits);

// kOutOfRange when width x height passes the limits (shared by the decoders).
Status CheckDimensions(const char* format, int64_t width, int64_t height,
                       const DecodeLimits& limits);

}  // namespace orchid::image::internal
