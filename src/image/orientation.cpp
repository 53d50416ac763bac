#include "image/orientation.h"

#include <cstring>

namespace orchid::image {
namespace {

struct TiffReader {
  std::span<const uint8_t> d;
  bool big_endian = false;
  bool Has(size_t at, size_t n) const { return at <= d.size() && n <= d.size() - at; }
  uint32_t U16(size_t at) const {
    return big_endian ? uint32_t(d[at]) << 8 | d[at + 1] : uint32_t(d[at + 1]) << 8 | d[at];
  }
  uint32_t U32(size_t at) const {
    return big_endian ? uint32_t(d[at]) << 24 | uint32_t(d[at + 1]) << 16 |
                            uint32_t(d[at + 2]) << 8 | d[at + 3]
                      : uint32_t(d[at + 3]) << 24 | uint32_t(d[at + 2]) << 16 |
                            uint32_t(d[at + 1]) << 8 | d[at];
  }
};

}  // namespace

// Follows Pillow's Exif.load + ImageFileDirectory_v2.load: entries are read until the data runs
// out, a later entry with the same tag replaces an earlier one, a value stored past the end is
// skipped. Pillow decodes BYTE / UNDEFINED values as bytes, which never equal an orientation,
// so only the integer types SHORT, LONG, SBYTE, SSHORT and SLONG count. A tag that is present
// but holds no orientation yields 9: Pillow then neither transposes nor consults the XMP packet.
int ExifOrientation(std::span<const uint8_t> exif) {
  while (exif.size() >= 6 && std::memcmp(exif.data(), "Exif\0\0", 6) == 0) exif = exif.subspan(6);
  if (exif.size() < 8) return 0;
  TiffReader r{exif};
  if (exif[0] == 'M' && exif[1] == 'M') {
    r.big_endian = true;
  } else if (!(exif[0] == 'I' && exif[1] == 'I')) {
    return 0;
  }
  const uint32_t magic = r.U16(2);
  if (magic != 42 && magic != 0x2a00) return 0;
  const size_t ifd = r.U32(4);
  if (!r.Has(ifd, 2)) return 0;
  const uint32_t count = r.U16(ifd);
  int orientation = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t e = ifd + 2 + size_t(i) * 12;
    if (!r.Has(e, 12)) break;
    if (r.U16(e) != 0x0112) continue;
    const uint32_t type = r.U16(e + 2);
    const uint32_t n = r.U32(e + 4);
    size_t unit = 0;
    switch (type) {
      case 3:
      case 8:
        unit = 2;
        break;  // SHORT, SSHORT
      case 4:
      case 9:
        unit = 4;
        break;  // LONG, SLONG
      case 6:
        unit = 1;
        break;  // SBYTE
      case 1:
      case 2:
      case 5:
      case 7:
      case 10:
      case 11:
      case 12:
      case 13:
      case 16:
      case 17:
      case 18:
        orientation = 9;  // a type Pillow knows but decodes to no integer: present, no transpose
        continue;
      default:
        continue;  // a type Pillow skips
    }
    if (n == 0) continue;
    const uint64_t bytes = uint64_t(unit) * n;
    size_t at = e + 8;
    if (bytes > 4) {
      at = r.U32(e + 8);
      if (!r.Has(at, size_t(bytes))) continue;
    }
    int64_t v = 0;
    if (unit == 1)
      v = int8_t(exif[at]);
    else if (unit == 2)
      v = type == 8 ? int64_t(int16_t(r.U16(at))) : int64_t(r.U16(at));
    else
      v = type == 9 ? int64_t(int32_t(r.U32(at))) : int64_t(r.U32(at));
    orientation = v >= 1 && v <= 8 ? int(v) : 9;  // 9: present, but no transpose
  }
  return orientation;
}

int XmpOrientation(std::string_view xmp) {
  static constexpr std::string_view kTag = "tiff:Orientation";
  for (size_t p = xmp.find(kTag); p != std::string_view::npos; p = xmp.find(kTag, p + 1)) {
    size_t q = p + kTag.size();
    if (xmp.substr(q, 2) == "=\"")
      q += 2;
    else if (xmp.substr(q, 1) == ">")
      q += 1;
    else
      continue;
    if (q < xmp.size() && xmp[q] >= '0' && xmp[q] <= '9') {
      const int v = xmp[q] - '0';
      return v == 0 ? 9 : v;  // 0 is "present" but not an orientation
    }
  }
  return 0;
}

RgbImage ApplyOrientation(RgbImage in, int orientation) {
  if (orientation < 2 || orientation > 8) return in;
  const int w = in.width, h = in.height;
  const bool swap = orientation >= 5;
  RgbImage out(swap ? h : w, swap ? w : h);
  // For each output pixel (x, y), the input pixel it shows.
  for (int y = 0; y < out.height; ++y) {
    uint8_t* o = out.row(y);
    for (int x = 0; x < out.width; ++x) {
      int sx = x, sy = y;
      switch (orientation) {
        case 2:
          sx = w - 1 - x;
          break;  // FLIP_LEFT_RIGHT
        case 3:
          sx = w - 1 - x;
          sy = h - 1 - y;
          break;  // ROTATE_180
        case 4:
          sy = h - 1 - y;
          break;  // FLIP_TOP_BOTTOM
        case 5:
          sx = y;
          sy = x;
          break;  // TRANSPOSE
        case 6:
          sx = y;
          sy = h - 1 - x;
          break;  // ROTATE_270 (clockwise)
        case 7:
          sx = w - 1 - y;
          sy = h - 1 - x;
          break;  // TRANSVERSE
        case 8:
          sx = w - 1 - y;
          sy = x;
          break;  // ROTATE_90 (counter-clockwise)
      }
      std::memcpy(o + size_t(x) * 3, in.row(sy) + size_t(sx) * 3, 3);
    }
  }
  return out;
}

}  // namespace orchid::image
