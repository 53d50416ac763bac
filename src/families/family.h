// A model family: its parameters (tensor names, shapes, fusions), its layer loop and its heads,
// written once against the op contract (ops/backend.h) and run by every backend.
//
// LoadFamily reads the checkpoint named by the registry's ModelSpec, hands each weight to the
// backend (which stores it in its own form: packed fp32 / bf16 panels on the CPU, bf16 device
// memory on CUDA) and declares the activation buffers the forward pass uses. Forward() then
// issues the ops for the backend's current batch: embeddings, the layers, pooling and, for
// scorers, the head, leaving [sequences, info.output_dim()] fp32 rows in output().
#pragma once

#include <memory>

#include "core/status.h"
#include "description/registry.h"
#include "ops/backend.h"

namespace orchid {

class Family {
 public:
  virtual ~Family() = default;
  // One forward pass of the backend's current batch. Issues the same ops, on the same buffers,
  // for every batch of one bucket (token rows, sequence rows, prune_last_layer()).
  virtual Status Forward(ops::Backend& b) const = 0;
  // [kSequences, output_dim] kAccumulator: the pooled (normalised where asked) vectors of an
  // embedder, the logits of a scorer.
  ops::Buffer output() const { return output_; }
  // [kTokens, hidden_size]: the last layer's hidden states (every row, when the pass was not
  // pruned).
  ops::Buffer hidden() const { return hidden_; }

 protected:
  ops::Buffer output_, hidden_;
};

// One layer's attention, into its context buffer. On the last layer of a pruned pass (the
// backend's prune_last_layer(): CLS or last-token pooling) only the pooled rows' queries, into
// `pooled.ctx`, with the residual rows they continue from gathered into `pooled.*residual`.
// Returns the activations (every token's, or the pooled rows') the rest of the layer runs on.
template <class Activations>
Result<const Activations*> AttendPrunable(ops::Backend& b, ops::Buffer qkv,
                                          const ops::AttentionOptions& o, bool last_layer,
                                          const Activations& all, const Activations& pooled,
                                          ops::Buffer Activations::*residual) {
  if (last_layer && b.prune_last_layer()) {
    ORCHID_RETURN_IF_ERROR(b.Attention(qkv, pooled.ctx, o));
    ORCHID_RETURN_IF_ERROR(b.GatherPooled(all.*residual, pooled.*residual));
    return &pooled;
  }
  ORCHID_RETURN_IF_ERROR(b.Attention(qkv, all.ctx, o));
  return &all;
}

// The family the spec names, its weights loaded onto `backend` (checked against the spec's
// config: every tensor present with the implied shape; names with or without the
// checkpoint's prefix). The backend must outlive the family.
Result<std::unique_ptr<Family>> LoadFamily(const ModelSpec& spec, ops::Backend& backend);

}  // namespace orchid
