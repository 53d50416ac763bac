// Qwen3Config: the fields of a Hugging Face Qwen3 config.json (Qwen3Model / Qwen3ForCausalLM)
// that the forward pass needs. Qwen3-Embedding and Qwen3-Reranker use causal attention;
// pplx-embed-v1 turns it off (`use_bidirectional_attention: true` or `is_causal: false`).
#pragma once

#include <string>

#include "core/status.h"

namespace orchid {

struct Qwen3Config {
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
  bool tie_word_embeddings = true;
  bool causal = true;
  bool attention_bias = false;  // only false is supported (Qwen3 has no biases)

  int q_size() const { return num_attention_heads * head_dim; }
  int kv_size() const { return num_key_value_heads * head_dim; }
};

// Reads and checks PATH (a config.json): sizes positive and sane, heads divisible by kv heads,
// hidden_act "silu", no rope_scaling, no sliding window. Errors name the file and the field.
Result<Qwen3Config> ReadQwen3Config(const std::string& path);

}  // namespace orchid
