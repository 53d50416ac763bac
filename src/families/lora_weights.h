// The task adapters' LoRA weights of a jina-embeddings-v3 checkpoint, read from each adapter's
// adapter_model.safetensors (description/lora_adapters.h) and sorted by the layer they change:
// PEFT's key names, "base_model.model." then the module and lora_A.weight / lora_B.weight (a
// linear layer) or lora_embedding_A / lora_embedding_B (the word embeddings), in transformers'
// module names (layers.N.self_attn.q_proj, ...) or in the names jina's checkpoint and
// transformers' save_pretrained use (encoder.layers.N.mixer.Wqkv, ...). A key for any other
// module, a missing half of a pair, or a shape that does not fit the layer is an error naming
// the file and the tensor.
#pragma once

#include <deque>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "description/lora_adapters.h"
#include "ops/backend.h"

namespace orchid {

struct LoraLayerParts {
  std::vector<ops::LoraPart> qkv;  // the fused [3H, H] projection: q at 0, k at H, v at 2H
  std::vector<ops::LoraPart> o, fc1, fc2;
};

struct LoraWeights {
  std::vector<ops::LoraPart> word;  // the word embedding table (LoraPart::a is [r, vocab])
  std::vector<ops::LoraPart> type;  // the token type table (LoraPart::a is [r, types])
  std::vector<LoraLayerParts> layers;
  std::deque<Tensor> storage;  // what the parts point at
};

// adapters[i] becomes adapter i + 1. hidden / intermediate / vocab / types: the layer sizes.
// Adapters of the pooler (pooler.dense) are skipped: the embedding does not use it.
Result<LoraWeights> ReadLoraWeights(const std::vector<LoraAdapterConfig>& adapters, int layers,
                                    int hidden, int intermediate, int vocab, int types);

}  // namespace orchid
