// BertConfig: the fields of a Hugging Face BertModel config.json that the forward pass needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
  // Added to every position before the position-embedding lookup. 0 for BERT; XLM-RoBERTa
  // numbers positions from padding_idx + 1 (pad_token_id + 1 = 2), so it has 2 fewer usable
  // positions than max_position_embeddings.
  int position_offset = 0;
  int pad_token_id = 0;
  // Cross-encoders (*ForSequenceClassification): the classifier on the first token.
  enum class Head : uint8_t {
    kNone,
    kBertPooler,        // BERT: classifier(tanh(pooler.dense(h_cls)))
    kRobertaClassifier  // XLM-R: classifier.out_proj(tanh(classifier.dense(h_cls)))
  };
  Head head = Head::kNone;
  int num_labels = 0;  // len(id2label) as transformers counts it (2 when absent)
  std::vector<std::string> labels;  // id2label's names by id (empty when id2label is absent)
  bool multi_label = false;         // problem_type "multi_label_classification"

  int head_dim() const { return hidden_size / num_attention_heads; }
};

// Reads and checks PATH (a config.json): sizes positive and sane, hidden_size divisible by
// num_attention_heads, hidden_act "gelu", absolute position embeddings. Errors name the file
// and the field.
Result<BertConfig> ReadBertConfig(const std::string& path);

}  // namespace orchid
