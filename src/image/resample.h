// Resizing an RGB picture exactly as Pillow's Image.resize does (reducing_gap=None, the call
// transformers' resize makes): the same filters, the same double-precision weights, the same
// rounding of weights to 22-bit fixed point, the same pass order and the same clipping, so the
// bytes are identical. Pass order (Pillow 13): horizontal over only the rows the vertical pass
// reads, then vertical; but vertical first when the height loses more than twice as many pixels
// as the width (each pass rounds to 8 bits, so the order shows in the result).
// Written from the algorithm of Pillow's libImaging/Resample.c and Geometry.c (nearest).
#pragma once

#include "core/status.h"
#include "image/image.h"

namespace orchid::image {

// PIL.Image.Resampling's numbers, as preprocessor_config.json's "resample" stores them.
enum class Resample {
  kNearest = 0,
  kLanczos = 1,
  kBilinear = 2,
  kBicubic = 3,
  kBox = 4,
  kHamming = 5,
};

// kInvalidArgument for a resample number Pillow 13 has that this does not (MKS2013, MKS2021)
// or one Pillow does not have.
Result<Resample> ResampleFromPil(int pil_number);
const char* ResampleName(Resample filter);

// The picture at width x height (both >= 1). Same size returns a copy, as Pillow does.
Result<RgbImage> Resize(const RgbImage& in, int width, int height, Resample filter);

}  // namespace orchid::image
