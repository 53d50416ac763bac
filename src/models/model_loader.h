// Loading a Hugging Face model directory: config.json, model.safetensors (mmap'd, validated),
// sentence-transformers modules (modules.json, 1_Pooling/config.json, 2_Normalize,
// sentence_bert_config.json). Errors name the file and what is wrong.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "engine/cpu/linear.h"
#include "engine/engine.h"

namespace orchid {

// Builds the model for the architecture named in DIR/config.json (BertModel for now).
// The returned model's info() carries max_seq_length, default pooling and normalisation from
// the sentence-transformers files (falling back to mean pooling, no normalisation and
// max_position_embeddings when they are absent).
struct LoadOptions {
  // How the transformer's linear layers are stored and multiplied (linear.h).
  WeightType linear_weights = WeightType::kFloat32;
};
Result<std::unique_ptr<Model>> LoadModel(const std::string& dir, const LoadOptions& options = {});

// DIR/tokenizer.json.
std::string TokenizerPath(const std::string& dir);

}  // namespace orchid
