// ModernBertConfig: the fields of a Hugging Face ModernBERT config.json (ModernBertModel,
// ModernBertForSequenceClassification: gte-modernbert, modernbert-embed, ModernBERT
// cross-encoders) that the forward pass needs: a pre-LN encoder without position embeddings,
// rotary embeddings with a global and a local theta, global attention every few layers and a
// bidirectional sliding window in the others, a GeGLU (exact GELU) MLP, LayerNorms and linear
// layers without biases by default.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "description/model_info.h"

namespace orchid {

struct ModernBertConfig {
  int vocab_size = 0;
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int intermediate_size = 0;
  int max_position_embeddings = 0;
  float norm_eps = 1e-5f;
  bool norm_bias = false;
  bool attention_bias = false;
  bool mlp_bias = false;
  bool classifier_bias = false;
  double global_rope_theta = 160000.0;
  double local_rope_theta = 10000.0;
  // Per layer: the AttentionOptions window of a local layer (|i - j| <= local_attention / 2,
  // so local_attention / 2 + 1), 0 for a global one.
  std::vector<int> layer_window;
  // Cross-encoders: what the head pools ("cls" or "mean"), and the labels.
  Pooling classifier_pooling = Pooling::kCls;
  int num_labels = 0;
  std::vector<std::string> labels;
  bool multi_label = false;

  int head_dim() const { return hidden_size / num_attention_heads; }
};

// Reads and checks PATH: sizes positive and sane, hidden_size divisible by the heads, an even
// head_dim, exact GELU for the MLP and the classifier, default rotary embeddings. Errors name the
// file and the field.
Result<ModernBertConfig> ReadModernBertConfig(const std::string& path);

}  // namespace orchid
