// DecoderConfig: the fields of a Hugging Face Llama-style decoder's config.json (model_type
// qwen3, qwen2, mistral or llama: Qwen3Model / Qwen3ForCausalLM, Qwen2Model, MistralModel,
// LlamaModel) that the forward pass needs. They share one layer (pre-RMSNorm, RoPE, grouped-query
// attention, SwiGLU) and differ in a few switches: Qwen3's per-head QK-norm, Qwen2's q/k/v
// biases, Llama's optional attention and MLP biases, Mistral's sliding window.
// Qwen3-Embedding, gte-Qwen2 and e5-mistral use causal attention; pplx-embed-v1 turns it off
// (`use_bidirectional_attention: true` or `is_causal: false`).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "description/rope_scaling.h"

namespace orchid {

struct DecoderConfig {
  int vocab_size = 0;
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;  // grouped-query attention: divides num_attention_heads
  int head_dim = 0;             // from config ("head_dim"), not hidden_size / heads
  int intermediate_size = 0;
  int max_position_embeddings = 0;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 1000000.0;
  RopeScaling rope_scaling;  // linear, dynamic, llama3 or yarn (Gemma 3: default only)
  bool tie_word_embeddings = true;
  bool causal = true;
  bool qk_norm = false;   // Qwen3: RMSNorm over each q and k head before RoPE
  bool qkv_bias = false;  // biases on q_proj, k_proj, v_proj (Qwen2; Llama/Qwen3 with
                          // attention_bias)
  bool o_bias = false;    // a bias on o_proj (Llama/Qwen3 with attention_bias)
  bool mlp_bias = false;  // biases on gate/up/down_proj (Llama with mlp_bias)
  // Gemma 3 (model_type gemma3_text: EmbeddingGemma): embeddings scaled by sqrt(hidden_size),
  // RMSNorm weights applied as (1 + w), a norm after each sublayer as well (before its residual
  // add), a GeGLU MLP with GELU's tanh form, scores scaled by query_pre_attn_scalar^-1/2, and
  // local layers with a sliding window and their own rotary theta.
  bool gemma = false;
  float attention_scale = 0.0f;  // 0: 1 / sqrt(head_dim)
  // Per layer: the AttentionOptions window, 0 for full attention. Sliding windows as
  // transformers applies them: Mistral's on every layer, Qwen2 / Qwen3's (use_sliding_window) on
  // the layers from max_window_layers on, Gemma 3's on its local layers (with their own theta).
  std::vector<int> layer_window;
  double local_rope_theta = 10000.0;

  int q_size() const { return num_attention_heads * head_dim; }
  int kv_size() const { return num_key_value_heads * head_dim; }
};

// Reads and checks PATH (a config.json whose model_type is qwen3, qwen2, mistral, llama or
// gemma3_text; other values read as qwen3): sizes positive and sane, heads divisible by kv heads,
// hidden_act "silu", rotary scaling of a type transformers implements (rope_config.h). Errors
// name the file and the field.
Result<DecoderConfig> ReadDecoderConfig(const std::string& path);

}  // namespace orchid
