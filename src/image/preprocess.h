// The image processors' arithmetic after load_image: resize (Pillow's resampling), centre crop,
// rescale and normalise, in the order and the float precision of transformers'
// CLIPImageProcessor / SiglipImageProcessor (the PIL "slow" path):
//   resized  = Pillow resize of the uint8 picture (CLIP: shortest edge to N, the long edge
//              int(N * long / short); SigLIP: height x width), then numpy's centre crop (zero
//              padding where the crop is larger);
//   rescaled = float32(double(u8) * rescale_factor)          (rescale: float64 product, cast)
//   pixel    = (rescaled - float32(mean)) / float32(std)     (normalize: float32 ops)
// pixel_values are channels-first, [3, height, width], in orchid's Tensor.
//
// One transformers behaviour is not copied: numpy arrays whose height is 1 or 3 make
// infer_channel_dimension_format guess "channels first" (the array is (H, W, 3) and H is a
// plausible channel count), so transformers processes such pictures transposed. Preprocess
// treats every picture as (H, W, 3), which is what the picture is.
#pragma once

#include "core/status.h"
#include "core/tensor.h"
#include "image/image.h"
#include "image/processor_config.h"

namespace orchid::image {

// The uint8 picture after resize and centre crop: what transformers' PIL path holds before
// rescale.
Result<RgbImage> ResizeAndCrop(const RgbImage& image, const ImageProcessorConfig& config);

// Rescale + normalise of an already resized / cropped picture into a [3, H, W] tensor.
Tensor ToPixelValues(const RgbImage& image, const ImageProcessorConfig& config);

// ResizeAndCrop then ToPixelValues.
Result<Tensor> Preprocess(const RgbImage& image, const ImageProcessorConfig& config);

}  // namespace orchid::image
