// The settings of a CLIP or SigLIP image processor, as transformers reads them from
// preprocessor_config.json (the hubs' checkpoints) or from the "image_processor" object of
// processor_config.json (where transformers 5 and sentence-transformers 6 save them), with the
// defaults each processor class applies to keys the file leaves out.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "core/status.h"
#include "image/resample.h"

namespace orchid::image {

enum class ImageProcessorKind {
  kClip,    // CLIPImageProcessor: shortest-edge resize, centre crop
  kSiglip,  // SiglipImageProcessor: fixed height x width resize
};

struct ImageProcessorConfig {
  ImageProcessorKind kind = ImageProcessorKind::kClip;
  std::string type_name;  // image_processor_type as written ("CLIPImageProcessor", ...)

  bool do_resize = true;
  int shortest_edge = 0;  // > 0: CLIP's {"shortest_edge": n} (aspect ratio kept)
  int height = 0;         // else: resize to height x width
  int width = 0;
  Resample resample = Resample::kBicubic;

  bool do_center_crop = false;
  int crop_height = 0;
  int crop_width = 0;

  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool do_normalize = true;
  std::array<double, 3> image_mean{};
  std::array<double, 3> image_std{};

  // The (height, width) of pixel_values for an input of in_height x in_width.
  std::pair<int, int> OutputSize(int in_height, int in_width) const;
};

// Parses preprocessor_config.json, or processor_config.json (its "image_processor" object).
// SOURCE names the file in error messages. kInvalidArgument / kUnimplemented name the key.
Result<ImageProcessorConfig> ParseImageProcessorConfig(std::string_view json,
                                                       std::string_view source = "config");

// MODEL_DIR/preprocessor_config.json when present, else MODEL_DIR/processor_config.json's
// "image_processor"; kNotFound when neither exists.
Result<ImageProcessorConfig> LoadImageProcessorConfig(const std::string& model_dir);

}  // namespace orchid::image
