#include "description/model_files.h"

#include <filesystem>

namespace orchid {

bool HasWeights(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::exists(dir + "/" + kWeightsFile, ec) ||
         std::filesystem::exists(dir + "/" + kWeightsIndexFile, ec) ||
         std::filesystem::exists(dir + "/" + kTorchWeightsFile, ec);
}

Status NoWeightsIn(const std::string& dir) {
  return Status::NotFound(dir + ": none of " + kWeightsFile + ", " + kWeightsIndexFile +
                          " (a sharded checkpoint) or " + kTorchWeightsFile + " is there");
}

}  // namespace orchid
