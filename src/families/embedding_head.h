// The end of every family's embedder, as sentence-transformers defines it after the transformer:
// pooling, then any Dense modules (a linear layer with Identity or Tanh on the pooled vector,
// EmbeddingGemma's 768 -> 3072 -> 768), then L2 normalisation where the batch asks. A PyLate
// ColBERT's projection (spec.token_dense) is a head too: it maps every token's hidden state to
// its late-interaction vector (tokens()), when the pass kept every token's row.
#pragma once

#include <vector>

#include "core/status.h"
#include "description/registry.h"
#include "ops/backend.h"

namespace orchid {

class EmbeddingHead {
 public:
  // Declares the head's buffers and loads the spec's Dense modules onto the backend.
  Status Load(const ModelSpec& spec, ops::Backend& b);
  // Pools `hidden` (kTokens or kPooled) by the batch's modes into output().
  Status Forward(ops::Backend& b, ops::Buffer hidden) const;
  // [kSequences, info.output_dim()] kAccumulator.
  ops::Buffer output() const { return out_.empty() ? pooled_ : out_.back(); }
  // [kTokens, info.token_dim()] kAccumulator: each token's projected vector (not normalised);
  // invalid when the model has no per-token projection.
  ops::Buffer tokens() const { return token_out_.empty() ? ops::Buffer{} : token_out_.back(); }

 private:
  struct Dense {
    ops::LinearWeight linear;
    bool tanh = false;
  };
  ops::Buffer pooled_;
  std::vector<Dense> dense_;
  std::vector<ops::Buffer> out_;  // each Dense module's output
  std::vector<ops::LinearWeight> token_dense_;
  std::vector<ops::Buffer> token_out_;  // each per-token projection's output
};

}  // namespace orchid
