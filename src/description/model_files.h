// Where a Hugging Face model directory keeps its weights: one model.safetensors, or shards that
// model.safetensors.index.json lists (as save_pretrained writes big models). The registry checks
// that one is there before anything loads; checkpoint/checkpoint.h reads them.
#pragma once

#include <string>

#include "core/status.h"

namespace orchid {

inline constexpr const char* kWeightsFile = "model.safetensors";
inline constexpr const char* kWeightsIndexFile = "model.safetensors.index.json";

// Whether DIR holds either form.
bool HasWeights(const std::string& dir);
// The kNotFound Status for a DIR that holds neither.
Status NoWeightsIn(const std::string& dir);

}  // namespace orchid
