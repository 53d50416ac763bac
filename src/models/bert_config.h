// BertConfig: the fields of a Hugging Face BertModel config.json that the forward pass needs.
#pragma once

#include <string>

#include "core/status.h"

namespace orchid {

struct BertConfig {
  int vocab_size = 0;
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int intermediate_size = 0;
  int max_position_embeddings = 0;
  int type_vocab_size = 2;
  float layer_norm_eps = 1e-12f;
  std::string hidden_act = "gelu";  // only exact (erf) GELU is supported

  int head_dim() const { return hidden_size / num_attention_heads; }
};

// Reads and checks PATH (a config.json): sizes positive and sane, hidden_size divisible by
// num_attention_heads, hidden_act "gelu", absolute position embeddings. Errors name the file
// and the field.
Result<BertConfig> ReadBertConfig(const std::string& path);

}  // namespace orchid
