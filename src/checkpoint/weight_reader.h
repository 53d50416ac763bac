// WeightReader: reads a checkpoint's tensors as fp32 under a name prefix ("bert.", "model.",
// ...) and checks each against the shape the config implies; errors name the file, the tensor
// and both shapes. Shared by the model definitions in src/models/.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "checkpoint/checkpoint.h"

namespace orchid {

class WeightReader {
 public:
  WeightReader(const Checkpoint& file, std::string prefix)
      : file_(file), prefix_(std::move(prefix)) {}

  const std::string& prefix() const { return prefix_; }
  bool Has(const std::string& name) const { return file_.Find(prefix_ + name) != nullptr; }

  // Reads prefix+name as fp32 and checks its shape.
  Result<Tensor> Read(const std::string& name, std::vector<int64_t> shape) const;
  // The same without the prefix (tensors outside the base model, e.g. a classifier head).
  Result<Tensor> ReadUnprefixed(const std::string& name, std::vector<int64_t> shape) const;

  // LayerNorm parameters: "weight"/"bias", or the older "gamma"/"beta".
  Status ReadNorm(const std::string& base, int64_t dim, Tensor* gamma, Tensor* beta) const;
  // The same without the prefix.
  Status ReadNormUnprefixed(const std::string& base, int64_t dim, Tensor* gamma,
                            Tensor* beta) const;

 private:
  const Checkpoint& file_;
  std::string prefix_;
};

// The shortest prefix P such that P + anchor names a tensor of `file` (P empty or ending in
// '.'), or nullopt when there is none.
std::optional<std::string> FindWeightPrefix(const Checkpoint& file, const std::string& anchor);

// Stacks tensors with equal trailing shape along dimension 0.
Tensor Concat0(const std::vector<const Tensor*>& parts);

}  // namespace orchid
