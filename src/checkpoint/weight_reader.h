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
  // A tensor outside the base model (a classifier head): `name` as it is, or under a leading
  // part of the prefix that wraps the whole checkpoint (transformers 5 re-saves a NewModel GTE
  // reranker as new.gte.* and new.classifier.*).
  Result<Tensor> ReadUnprefixed(const std::string& name, std::vector<int64_t> shape) const;

  // LayerNorm parameters: "weight"/"bias", or the older "gamma"/"beta".
  Status ReadNorm(const std::string& base, int64_t dim, Tensor* gamma, Tensor* beta) const;
  // The same outside the base model (as ReadUnprefixed).
  Status ReadNormUnprefixed(const std::string& base, int64_t dim, Tensor* gamma,
                            Tensor* beta) const;

 private:
  // "" when `name` exists as it is, else the shortest leading part of the prefix it exists
  // under ("" again when none: the error then names `name` itself).
  std::string Outer(const std::string& name) const;

  const Checkpoint& file_;
  std::string prefix_;
};

// The shortest prefix P such that P + anchor names a tensor of `file` (P empty or ending in
// '.'), or nullopt when there is none.
std::optional<std::string> FindWeightPrefix(const Checkpoint& file, const std::string& anchor);

// Stacks tensors with equal trailing shape along dimension 0.
Tensor Concat0(const std::vector<const Tensor*>& parts);

}  // namespace orchid
