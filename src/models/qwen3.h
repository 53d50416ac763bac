// Qwen3Model: the Qwen3 decoder as an embedder or reranker (Qwen3-Embedding, Qwen3-Reranker,
// pplx-embed-v1), as Hugging Face's Qwen3Model, on the CPU ops in engine/cpu/.
//
//   h = embed_tokens[id]
//   per layer:  x = RMSNorm(h)
//               q, k, v = x Wq^T, x Wk^T, x Wv^T      (no biases; k, v with num_kv_heads heads)
//               q, k = RoPE(RMSNorm_head(q)), RoPE(RMSNorm_head(k))   (neox layout)
//               h += Wo Attention(q, k, v)             (causal, or bidirectional per config;
//                                                       grouped-query heads)
//               h += Wdown (silu(x' Wgate^T) * x' Wup^T), x' = RMSNorm(h)
//   out = RMSNorm(h)
//
// As a reranker (Qwen3-Reranker) Head() maps the pooled last token to
// logit(yes) - logit(no) = h · (E[yes] - E[no]), from the two rows of the output projection
// (the tied embedding matrix, or lm_head when untied) instead of the full vocabulary.
// Weights are copied to fp32 at load (bf16 checkpoints widened); Q, K, V fused into one
// projection, gate and up into another. Thread safety: Forward() from one thread at a time.
#pragma once

#include <memory>
#include <vector>

#include "core/tensor.h"
#include "engine/cpu/linear.h"
#include "engine/cpu/pooling.h"
#include "engine/engine.h"
#include "models/qwen3_config.h"
#include "models/safetensors.h"

namespace orchid {

class Qwen3Model : public Model {
 public:
  // Reranker: the ids of the "yes" and "no" tokens (Qwen3-Reranker's answer tokens).
  struct ScoreTokens {
    int32_t yes = -1;
    int32_t no = -1;
  };

  // Checks every weight against the config. Names may carry a prefix ("model." in
  // Qwen3ForCausalLM checkpoints) or none. With `score` set, the model is a scorer
  // (info.task = kScore, one label). `info` is completed from the config.
  // The decoder's linear layers are stored as `linear_weights`.
  static Result<std::unique_ptr<Qwen3Model>> Create(
      const Qwen3Config& config, const SafetensorsFile& weights, ModelInfo info,
      const ScoreTokens* score = nullptr, WeightType linear_weights = WeightType::kFloat32);

  const ModelInfo& info() const override { return info_; }
  Status Forward(const RaggedBatch& batch, float* hidden) override;
  Status Head(const float* pooled, int rows, float* logits) override;
  void SetThreadPool(ThreadPool* pool) override { pool_ = pool; }

 private:
  struct Layer {
    PackedWeight qkv_weight;      // [q_size + 2 kv_size, H]
    PackedWeight o_weight;        // [H, q_size]
    PackedWeight gate_up_weight;  // [2 I, H]: gate rows, then up rows
    PackedWeight down_weight;     // [H, I]
    Tensor q_norm, k_norm;        // [head_dim]
    Tensor input_norm, post_attention_norm;  // [H]
  };

  Qwen3Model() = default;

  Qwen3Config config_;
  ModelInfo info_;
  ThreadPool* pool_ = nullptr;
  Tensor embed_tokens_;  // [vocab, H]
  Tensor final_norm_;    // [H]
  std::vector<Layer> layers_;
  std::vector<float> yes_minus_no_;  // [H], rerankers only

  Buffer<float> x_, qkv_, context_, gate_up_, act_, scores_;
  LastLayerRows last_rows_;  // the last layer on the pooled rows only (see Forward)
};

}  // namespace orchid
