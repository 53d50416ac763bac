// RgbImage: an 8-bit RGB picture, the image a decoder hands to the processors. Pixels are
// interleaved R, G, B, row after row, no padding (what Pillow's np.asarray(image) holds for a
// mode "RGB" image). A plain value: movable, copyable, not thread-safe to mutate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace orchid::image {

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // width * height * 3 bytes

  RgbImage() = default;
  RgbImage(int w, int h) : width(w), height(h), pixels(size_t(w) * size_t(h) * 3) {}
  uint8_t* row(int y) { return pixels.data() + size_t(y) * size_t(width) * 3; }
  const uint8_t* row(int y) const { return pixels.data() + size_t(y) * size_t(width) * 3; }
};

}  // namespace orchid::image
