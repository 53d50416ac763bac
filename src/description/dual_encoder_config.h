// DualEncoderConfig: a text tower and a vision tower that embed into one space, as transformers'
// CLIPModel and SiglipModel (fixed resolution) save them in config.json (text_config and
// vision_config, each with transformers' defaults for the fields it leaves out).
//
//   CLIP    vision: class token + patches + positions, pre-LayerNorm, pre-LN layers, the class
//           token's post-LayerNorm, visual_projection (no bias);
//           text: tokens + positions, causal pre-LN layers, final LayerNorm at the end-of-text
//           token, text_projection (no bias). quick_gelu or gelu.
//   SigLIP  vision: patches (a biased convolution) + positions, pre-LN layers, post-LayerNorm,
//           the attention-pooling head (a learned probe attends over the patches, then
//           LayerNorm + MLP with a residual); text: tokens + positions, bidirectional pre-LN
//           layers, final LayerNorm at the last position, a biased head. gelu_pytorch_tanh.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace orchid {

struct DualEncoderConfig {
  enum class Kind : uint8_t { kClip, kSiglip };
  enum class Act : uint8_t { kQuickGelu, kGelu, kGeluTanh };
  struct Tower {
    int hidden_size = 0;
    int intermediate_size = 0;
    int num_hidden_layers = 0;
    int num_attention_heads = 0;
    float layer_norm_eps = 1e-5f;
    Act act = Act::kQuickGelu;
    int head_dim() const { return hidden_size / num_attention_heads; }
  };

  Kind kind = Kind::kClip;
  Tower text, vision;
  int vocab_size = 0;
  int max_position_embeddings = 0;  // the text tower's
  int32_t eos_token_id = 0;         // CLIP: 2 means "pool at the largest id" (transformers)
  int32_t pad_token_id = 0;
  int image_size = 0;
  int patch_size = 0;
  int projection_dim = 0;  // CLIP's projections; SigLIP: the text head's width (= vision hidden)
};

// Reads config.json (model_type "clip" or "siglip"). Errors name the file and the field;
// what orchid does not run (an image of other than 3 channels, SigLIP without its pooling head,
// SigLIP2's NaFlex variable resolution) is refused by name.
Result<DualEncoderConfig> ReadDualEncoderConfig(const std::string& path);

}  // namespace orchid
