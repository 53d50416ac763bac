#include "description/model_files.h"

#include <filesystem>

namespace orchid {

bool HasWeights(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::exists(dir + "/" + kWeightsFile, ec) ||
         std::filesystem::exists(dir + "/" + kWeightsIndexFile, ec);
}

Status NoWeightsIn(const std::string& dir) {
  return Status::NotFound(dir + ": neither " + kWeightsFile + " nor " + kWeightsIndexFile +
                          " (a sharded checkpoint) is there; only safetensors checkpoints are "
                          "supported");
}

}  // namespace orchid
