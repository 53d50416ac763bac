// Decoding an encoded image (JPEG, PNG, WebP, GIF) into the RGB picture transformers' load_image
// returns: Pillow's Image.open, ImageOps.exif_transpose and convert("RGB"), reproduced with
// Debian's libjpeg-turbo, libpng, libwebp (+ demux) and giflib.
//
// What "as Pillow does it" means for each kind of pixel (Pillow 13, transformers 4.57):
//  - grey (1/2/4/8-bit) is replicated into R = G = B, low bit depths scaled to 0..255;
//  - 16-bit grey is clipped, not scaled (Pillow's mode "I;16" to "RGB": values >= 256 become 255);
//  - 16-bit colour keeps the most significant byte of each sample;
//  - alpha is dropped without compositing (RGBA and LA, PNG and WebP alike);
//  - palette pixels take their palette entry's colour, the transparent one included (a tRNS or
//    GIF transparency index changes nothing; entries past the palette's end are black);
//  - CMYK JPEGs are read as Adobe-inverted CMYK and converted as Pillow's cmyk2rgb does;
//  - the EXIF orientation (JPEG APP1, PNG eXIf / "Raw profile type exif", WebP EXIF; else an XMP
//    tiff:Orientation) is applied; colour profiles and PNG gamma are ignored, as Pillow does;
//  - a GIF is its first frame on a canvas of the logical screen (grown to hold the frame), the
//    rest filled with the transparency index when there is one, else index 0.
//
// Every failure is a Status (never an exception, never an abort): kInvalidArgument for input
// that is not an image this build reads (unknown signature, SVG, truncated or corrupt data,
// headers that lie), kOutOfRange for input past a DecodeLimits bound. Dimensions are checked
// from the header before any pixel buffer is allocated. Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/status.h"
#include "image/image.h"

namespace orchid::image {

enum class ImageFormat { kJpeg, kPng, kWebp, kGif };
const char* ImageFormatName(ImageFormat format);

struct DecodeLimits {
  size_t max_encoded_bytes = size_t(32) << 20;  // 32 MiB of encoded input
  uint64_t max_pixels = uint64_t(64) << 20;     // 64 Mpx (width x height, canvas for a GIF)
  int max_dimension = 32768;                    // either side
  int max_jpeg_scans = 100;                     // progressive JPEG scans (a DoS vector)
};

// The format named by the first bytes, or kInvalidArgument naming what it looks like instead
// (SVG, HEIC, AVIF, TIFF, BMP, ...).
Result<ImageFormat> SniffImageFormat(std::span<const uint8_t> bytes);

// Width and height as the header states them, without decoding pixels (the canvas for GIF;
// before EXIF orientation).
struct ImageHeader {
  ImageFormat format = ImageFormat::kJpeg;
  int width = 0;
  int height = 0;
};
Result<ImageHeader> ReadImageHeader(std::span<const uint8_t> bytes);

// The picture load_image(...) returns: decoded, EXIF-oriented, converted to RGB.
Result<RgbImage> DecodeImage(std::span<const uint8_t> bytes, const DecodeLimits& limits = {});

// The steps of DecodeImage, for tests: the decoded RGB picture before orientation, and the
// EXIF orientation (1..8; 1 when absent or unreadable).
struct DecodedImage {
  RgbImage rgb;
  int orientation = 1;
};
Result<DecodedImage> DecodeImageUnoriented(std::span<const uint8_t> bytes,
                                           const DecodeLimits& limits = {});

}  // namespace orchid::image
