// DebertaConfig: the fields of a Hugging Face DeBERTa-v2 / v3 config.json (model_type
// "deberta-v2": DebertaV2Model, DebertaV2ForSequenceClassification — DeBERTa-v3 rerankers, NLI
// and zero-shot classifiers) that the forward pass needs: a post-LN encoder whose attention adds
// disentangled relative-position terms (content to position, position to content) from one
// table of relative embeddings shared by all layers, with log-bucketed distances.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace orchid {

struct DebertaConfig {
  int vocab_size = 0;
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int intermediate_size = 0;
  int max_position_embeddings = 0;
  int type_vocab_size = 0;
  float layer_norm_eps = 1e-7f;
  bool position_biased_input = true;  // absolute position embeddings added at the input
  bool relative_attention = false;
  bool c2p = false, p2c = false;     // pos_att_type
  bool share_att_key = false;        // the positions go through Wq / Wk (else pos_*_proj)
  bool norm_rel_embeddings = false;  // norm_rel_ebd "layer_norm"
  int position_buckets = -1;         // > 0: log buckets
  int max_relative_positions = 0;    // resolved: max_position_embeddings when < 1
  int pad_token_id = 0;
  // Cross-encoders: ContextPooler (dense + pooler_hidden_act on the first token), classifier.
  std::string pooler_hidden_act = "gelu";
  int num_labels = 0;
  std::vector<std::string> labels;
  bool multi_label = false;

  int head_dim() const { return hidden_size / num_attention_heads; }
  // Rows of the relative embeddings: 2 x (position_buckets, else max_relative_positions).
  int span() const { return position_buckets > 0 ? position_buckets : max_relative_positions; }
  // The attention scores' scale: 1 / sqrt(head_dim x (1 + number of position terms)).
  int scale_factor() const { return 1 + int(c2p) + int(p2c); }
};

// Reads and checks PATH: sizes positive and sane, GELU activations, no embedding projection
// (embedding_size = hidden_size), no convolution layer (DeBERTa-v2-xlarge's conv_kernel_size),
// pos_att_type of "c2p" / "p2c" only. Errors name the file and the field.
Result<DebertaConfig> ReadDebertaConfig(const std::string& path);

}  // namespace orchid
