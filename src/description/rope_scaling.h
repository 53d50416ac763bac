// RopeScaling: a model's rotary-embedding scaling as config.json names it (transformers'
// rope_parameters, rope_scaling before transformers 5). Plain data: the config readers fill it
// (rope_config.h), the op contract carries it (ops/rope.h computes the frequencies).
#pragma once

#include <cstdint>

namespace orchid {

enum class RopeType : uint8_t {
  kDefault,  // 1 / theta^(2i/d)
  kLinear,   // every frequency divided by factor (position interpolation)
  kDynamic,  // NTK-aware: a sequence longer than max_positions gets a larger theta, grown with
             // its length (transformers recomputes it from the longest position of the batch)
  kLlama3,   // Llama 3.1: low frequencies divided by factor, high ones kept, a smooth band between
  kYarn,     // YaRN: a ramp between interpolated and original frequencies, and cos / sin scaled
};

inline const char* RopeTypeName(RopeType t) {
  switch (t) {
    case RopeType::kDefault:
      return "default";
    case RopeType::kLinear:
      return "linear";
    case RopeType::kDynamic:
      return "dynamic";
    case RopeType::kLlama3:
      return "llama3";
    case RopeType::kYarn:
      return "yarn";
  }
  return "?";
}

struct RopeScaling {
  RopeType type = RopeType::kDefault;
  double factor = 1.0;             // linear, dynamic, llama3, yarn
  int max_positions = 0;           // config.json max_position_embeddings (dynamic's threshold)
  int original_max_positions = 0;  // llama3, yarn: the context the model was trained with
  double low_freq_factor = 1.0;    // llama3
  double high_freq_factor = 4.0;   // llama3
  double beta_fast = 32.0;         // yarn
  double beta_slow = 1.0;          // yarn
  double attention_factor = 0.0;   // yarn: cos / sin multiplier; 0: from factor and the mscales
  double mscale = 0.0;             // yarn (DeepSeek style, with mscale_all_dim)
  double mscale_all_dim = 0.0;     // yarn
  bool truncate = true;            // yarn: correction range rounded to whole dimensions
};

}  // namespace orchid
