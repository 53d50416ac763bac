#include "image/preprocess.h"

#include <algorithm>
#include <cstring>

namespace orchid::image {
namespace {

int FloorDiv2(int v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// transformers' center_crop: the crop box at ((h - ch) // 2, (w - cw) // 2); where the crop is
// larger than the picture, the picture is first centred on zeros (ceil of half the padding
// before it) and the box moved by the padding.
RgbImage CenterCrop(const RgbImage& in, int ch, int cw) {
  int top = FloorDiv2(in.height - ch), left = FloorDiv2(in.width - cw);
  const int new_h = std::max(ch, in.height), new_w = std::max(cw, in.width);
  const int top_pad = (new_h - in.height + 1) / 2, left_pad = (new_w - in.width + 1) / 2;
  if (top < 0 || left < 0) {
    top += top_pad;
    left += left_pad;
  } else {
    // Inside the picture: no padding.
    RgbImage out(cw, ch);
    for (int y = 0; y < ch; ++y) {
      std::memcpy(out.row(y), in.row(top + y) + size_t(left) * 3, size_t(cw) * 3);
    }
    return out;
  }
  const int y0 = std::max(0, top), y1 = std::min(new_h, top + ch);
  const int x0 = std::max(0, left), x1 = std::min(new_w, left + cw);
  RgbImage out(x1 - x0, y1 - y0);  // zero-filled
  for (int y = y0; y < y1; ++y) {
    const int sy = y - top_pad;
    if (sy < 0 || sy >= in.height) continue;
    for (int x = x0; x < x1; ++x) {
      const int sx = x - left_pad;
      if (sx < 0 || sx >= in.width) continue;
      std::memcpy(out.row(y - y0) + size_t(x - x0) * 3, in.row(sy) + size_t(sx) * 3, 3);
    }
  }
  return out;
}

}  // namespace

Result<RgbImage> ResizeAndCrop(const RgbImage& image, const ImageProcessorConfig& config) {
  if (image.width < 1 || image.height < 1) {
    return Status::InvalidArgument("empty image");
  }
  RgbImage current;
  const RgbImage* src = &image;
  if (config.do_resize) {
    ImageProcessorConfig resize_only = config;
    resize_only.do_center_crop = false;
    const auto [h, w] = resize_only.OutputSize(image.height, image.width);
    if (h < 1 || w < 1) {
      return Status::InvalidArgument("image of " + std::to_string(image.width) + "x" +
                                     std::to_string(image.height) + " resizes to nothing");
    }
    ORCHID_ASSIGN_OR_RETURN(current, Resize(image, w, h, config.resample));
    src = &current;
  }
  if (config.do_center_crop) return CenterCrop(*src, config.crop_height, config.crop_width);
  if (src == &image) return image;
  return current;
}

Tensor ToPixelValues(const RgbImage& image, const ImageProcessorConfig& config) {
  const int h = image.height, w = image.width;
  Tensor out({3, h, w});
  float* dst = out.data();
  const size_t plane = size_t(h) * size_t(w);
  float mean[3], stdv[3];
  for (int c = 0; c < 3; ++c) {
    mean[c] = float(config.image_mean[size_t(c)]);
    stdv[c] = float(config.image_std[size_t(c)]);
  }
  // Per byte value, the result is a function of (value, channel): a 256-entry table each.
  float table[3][256];
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      float x = config.do_rescale ? float(double(v) * config.rescale_factor) : float(v);
      if (config.do_normalize) x = (x - mean[c]) / stdv[c];
      table[c][v] = x;
    }
  }
  const uint8_t* px = image.pixels.data();
  for (size_t i = 0; i < plane; ++i) {
    dst[i] = table[0][px[3 * i]];
    dst[plane + i] = table[1][px[3 * i + 1]];
    dst[2 * plane + i] = table[2][px[3 * i + 2]];
  }
  return out;
}

Result<Tensor> Preprocess(const RgbImage& image, const ImageProcessorConfig& config) {
  ORCHID_ASSIGN_OR_RETURN(RgbImage resized, ResizeAndCrop(image, config));
  return ToPixelValues(resized, config);
}

}  // namespace orchid::image
