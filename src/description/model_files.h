// Where a Hugging Face model directory keeps its weights: one model.safetensors, or shards that
// model.safetensors.index.json lists (as save_pretrained writes big models), else one
// pytorch_model.bin (torch.save's zip format, read without running pickle code:
// checkpoint/torch_checkpoint.h). The registry checks that one is there before anything loads;
// checkpoint/checkpoint.h reads them.
#pragma once

#include <string>

#include "core/status.h"

namespace orchid {

inline constexpr const char* kWeightsFile = "model.safetensors";
inline constexpr const char* kWeightsIndexFile = "model.safetensors.index.json";
inline constexpr const char* kTorchWeightsFile = "pytorch_model.bin";

// Whether DIR holds one of these forms.
bool HasWeights(const std::string& dir);
// The kNotFound Status for a DIR that holds none.
Status NoWeightsIn(const std::string& dir);

}  // namespace orchid
