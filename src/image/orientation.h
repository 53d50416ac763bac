// EXIF orientation: reading the tag (from an EXIF block or an XMP packet, as Pillow's
// Image.getexif does) and applying it (ImageOps.exif_transpose's transposes).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "image/image.h"

namespace orchid::image {

// The Orientation tag (0x0112) of IFD0 in an EXIF block (a TIFF structure, optionally behind
// "Exif\0\0" prefixes). 0 when the block has none or cannot be read; any other value as stored
// (callers apply only 2..8).
int ExifOrientation(std::span<const uint8_t> exif);

// The first tiff:Orientation="N" or <tiff:Orientation>N in an XMP packet; 0 when none.
int XmpOrientation(std::string_view xmp);

// The picture seen upright: orientation 2..8 flips / rotates as Pillow's Transpose methods do
// (2 FLIP_LEFT_RIGHT, 3 ROTATE_180, 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE, 6 ROTATE_270,
// 7 TRANSVERSE, 8 ROTATE_90); any other value returns the picture unchanged.
RgbImage ApplyOrientation(RgbImage image, int orientation);

}  // namespace orchid::image
