// BertModel: the BERT encoder (embeddings, then post-LN transformer layers with exact GELU),
// as Hugging Face's BertModel, without the pooler. Runs on the CPU ops in engine/cpu/.
// The same definition serves XLM-RoBERTa (RobertaEmbeddings: positions offset by
// padding_idx + 1) and the cross-encoders built on either (*ForSequenceClassification: a
// tanh-dense-then-linear classifier on the first token, run by Head()).
//
//   h = LayerNorm(word[id] + position[pos] + token_type[type])
//   per layer:  h = LayerNorm(h + Attention(h));  h = LayerNorm(h + W2 gelu(W1 h + b1) + b2)
//
// Weights are copied out of the safetensors mapping at load time (fp32; Q, K and V fused into
// one [3H, H] projection; linear weights packed for engine/cpu/linear.h). Scratch buffers grow to
// the largest batch seen and are reused. Thread safety: Forward() from one thread at a time (the
// engine thread).
#pragma once

#include <memory>
#include <vector>

#include "core/tensor.h"
#include "engine/cpu/linear.h"
#include "engine/cpu/pooling.h"
#include "engine/engine.h"
#include "models/bert_config.h"
#include "models/safetensors.h"

namespace orchid {

class BertModel : public Model {
 public:
  // Checks that every weight is present with the shape the config implies. Names may carry a
  // prefix ("bert." in BertFor* checkpoints) or none. `info` is filled in by the caller
  // (pooling, normalisation, max_seq_length); the sizes come from the config.
  // The encoder's linear layers are stored as `linear_weights` (the classifier head stays fp32).
  static Result<std::unique_ptr<BertModel>> Create(
      const BertConfig& config, const SafetensorsFile& weights, ModelInfo info,
      WeightType linear_weights = WeightType::kFloat32);

  const ModelInfo& info() const override { return info_; }
  Status Forward(const RaggedBatch& batch, float* hidden) override;
  Status Head(const float* pooled, int rows, float* logits) override;
  void SetThreadPool(ThreadPool* pool) override { pool_ = pool; }

 private:
  struct Layer {
    PackedWeight qkv_weight;       // [3H, H]: query, key and value stacked
    PackedWeight attn_out_weight;  // [H, H]
    PackedWeight inter_weight;     // [I, H]
    PackedWeight out_weight;       // [H, I]
    Tensor qkv_bias, attn_out_bias, inter_bias, out_bias;
    Tensor attn_norm_gamma, attn_norm_beta, out_norm_gamma, out_norm_beta;
  };

  BertModel() = default;
  Status CheckInputs(const RaggedBatch& batch) const;

  BertConfig config_;
  ModelInfo info_;
  ThreadPool* pool_ = nullptr;
  Tensor word_embeddings_, position_embeddings_, token_type_embeddings_;
  Tensor embed_norm_gamma_, embed_norm_beta_;
  std::vector<Layer> layers_;

  // Cross-encoder head (config_.head != kNone): dense [H, H] + tanh, then [num_labels, H].
  PackedWeight head_dense_, head_out_;
  Tensor head_dense_bias_, head_out_bias_;

  Buffer<float> qkv_, context_, intermediate_, scores_, head_scratch_;
  LastLayerRows last_rows_;  // the last layer on the pooled rows only (see Forward)
  std::vector<int32_t> shifted_positions_;
};

}  // namespace orchid
