#include "image/decode.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "image/decoders.h"
#include "image/orientation.h"

namespace orchid::image {
namespace {

bool StartsWith(std::span<const uint8_t> b, const char* sig, size_t n, size_t at = 0) {
  return b.size() >= at + n && std::memcmp(b.data() + at, sig, n) == 0;
}

// What a buffer that is no image we read looks like, for the error message.
std::string DescribeUnsupported(std::span<const uint8_t> b) {
  if (b.empty()) return "empty input";
  size_t i = 0;
  while (i < b.size() && i < 256 && std::isspace(b[i])) ++i;
  const std::span<const uint8_t> t = b.subspan(i);
  if (StartsWith(t, "<svg", 4) || StartsWith(t, "<?xml", 5) || StartsWith(t, "<!DOCTYPE svg", 13))
    return "SVG / XML (vector images are not supported)";
  if (StartsWith(b, "BM", 2)) return "BMP";
  if (StartsWith(b, "II*\0", 4) || StartsWith(b, "MM\0*", 4)) return "TIFF";
  if (StartsWith(b, "ftyp", 4, 4)) {
    if (StartsWith(b, "avif", 4, 8) || StartsWith(b, "avis", 4, 8)) return "AVIF";
    if (StartsWith(b, "hei", 3, 8) || StartsWith(b, "mif1", 4, 8)) return "HEIF / HEIC";
    return "an ISO media file";
  }
  if (StartsWith(b, "%PDF", 4)) return "PDF";
  if (StartsWith(b, "\0\0\1\0", 4)) return "ICO";
  if (StartsWith(b, "\xff\x0a", 2) || StartsWith(b, "\0\0\0\x0cJXL ", 8)) return "JPEG XL";
  if (StartsWith(b, "RIFF", 4)) return "a RIFF file that is not WebP";
  return "unknown data";
}

}  // namespace

const char* ImageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kGif:
      return "GIF";
  }
  return "?";
}

Result<ImageFormat> SniffImageFormat(std::span<const uint8_t> bytes) {
  if (StartsWith(bytes, "\xff\xd8\xff", 3)) return ImageFormat::kJpeg;
  if (StartsWith(bytes, "\x89PNG\r\n\x1a\n", 8)) return ImageFormat::kPng;
  if (StartsWith(bytes, "GIF87a", 6) || StartsWith(bytes, "GIF89a", 6)) return ImageFormat::kGif;
  if (StartsWith(bytes, "RIFF", 4) && StartsWith(bytes, "WEBP", 4, 8)) return ImageFormat::kWebp;
  return Status::InvalidArgument("unsupported image format: " + DescribeUnsupported(bytes) +
                                 " (JPEG, PNG, WebP and GIF are read)");
}

Result<ImageHeader> ReadImageHeader(std::span<const uint8_t> bytes) {
  ORCHID_ASSIGN_OR_RETURN(ImageFormat format, SniffImageFormat(bytes));
  switch (format) {
    case ImageFormat::kJpeg:
      return internal::ReadJpegHeader(bytes);
    case ImageFormat::kPng:
      return internal::ReadPngHeader(bytes);
    case ImageFormat::kWebp:
      return internal::ReadWebpHeader(bytes);
    case ImageFormat::kGif:
      return internal::ReadGifHeader(bytes);
  }
  return Status::Internal("unreachable image format");
}

Result<DecodedImage> DecodeImageUnoriented(std::span<const uint8_t> bytes,
                                           const DecodeLimits& limits) {
  if (bytes.size() > limits.max_encoded_bytes) {
    return Status::OutOfRange("image is " + std::to_string(bytes.size()) +
                              " bytes encoded, more than the limit of " +
                              std::to_string(limits.max_encoded_bytes));
  }
  ORCHID_ASSIGN_OR_RETURN(ImageFormat format, SniffImageFormat(bytes));
  Result<internal::DecodedFrame> frame = Status::Internal("unreachable image format");
  switch (format) {
    case ImageFormat::kJpeg:
      frame = internal::DecodeJpeg(bytes, limits);
      break;
    case ImageFormat::kPng:
      frame = internal::DecodePng(bytes, limits);
      break;
    case ImageFormat::kWebp:
      frame = internal::DecodeWebp(bytes, limits);
      break;
    case ImageFormat::kGif:
      frame = internal::DecodeGif(bytes, limits);
      break;
  }
  if (!frame.ok()) return frame.status();
  DecodedImage out;
  // Pillow's getexif: the EXIF block's tag when it has one, else the XMP packet's.
  int orientation = frame->exif.empty() ? 0 : ExifOrientation(frame->exif);
  if (orientation == 0 && !frame->xmp.empty()) orientation = XmpOrientation(frame->xmp);
  out.orientation = orientation == 0 ? 1 : orientation;
  out.rgb = std::move(frame->rgb);
  return out;
}

Result<RgbImage> DecodeImage(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  ORCHID_ASSIGN_OR_RETURN(DecodedImage d, DecodeImageUnoriented(bytes, limits));
  return ApplyOrientation(std::move(d.rgb), d.orientation);
}

namespace internal {

Status CheckDimensions(const char* format, int64_t width, int64_t height,
                       const DecodeLimits& limits) {
  if (width <= 0 || height <= 0) {
    return Status::InvalidArgument(std::string(format) + " header states an empty image (" +
                                   std::to_string(width) + " x " + std::to_string(height) + ")");
  }
  if (width > limits.max_dimension || height > limits.max_dimension ||
      uint64_t(width) * uint64_t(height) > limits.max_pixels) {
    return Status::OutOfRange(std::string(format) + " image is " + std::to_string(width) + " x " +
                              std::to_string(height) + " pixels, past the limit of " +
                              std::to_string(limits.max_pixels) + " pixels and " +
                              std::to_string(limits.max_dimension) + " per side");
  }
  return Status::Ok();
}

}  // namespace internal
}  // namespace orchid::image
