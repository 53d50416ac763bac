// BertConfig: the fields of a post-LN encoder's config.json that the forward pass needs: BERT,
// RoBERTa / XLM-RoBERTa / CamemBERT (the same layer, positions offset), DistilBERT (its own field
// and tensor names, no token types) and MPNet (a relative position bias shared by all layers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace orchid {

struct BertConfig {
  // Whose tensor names (and extras) the checkpoint has.
  enum class Layout : uint8_t {
    kBert,        // BERT, RoBERTa, XLM-RoBERTa, CamemBERT
    kDistilBert,  // DistilBERT: transformer.layer.N.attention.q_lin, ..., no token types
    kMpnet,       // MPNet: encoder.layer.N.attention.attn.q, ..., encoder.relative_attention_bias
  };
  Layout layout = Layout::kBert;
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
    kBertPooler,            // BERT: classifier(tanh(pooler.dense(h_cls)))
    kRobertaClassifier,     // XLM-R, MPNet: classifier.out_proj(tanh(classifier.dense(h_cls)))
    kDistilBertClassifier,  // DistilBERT: classifier(relu(pre_classifier(h_cls)))
  };
  Head head = Head::kNone;
  // MPNet: buckets of the relative position bias (T5-style, bidirectional, max distance 128).
  int relative_attention_num_buckets = 0;
  int num_labels = 0;               // len(id2label) as transformers counts it (2 when absent)
  std::vector<std::string> labels;  // id2label's names by id (empty when id2label is absent)
  bool multi_label = false;         // problem_type "multi_label_classification"

  int head_dim() const { return hidden_size / num_attention_heads; }
};

// Reads and checks PATH (a config.json; DistilBERT's field names when model_type is
// "distilbert", MPNet's extras when "mpnet"): sizes positive and sane, hidden_size divisible by
// num_attention_heads, hidden_act "gelu", absolute position embeddings. Errors name the file
// and the field.
Result<BertConfig> ReadBertConfig(const std::string& path);

}  // namespace orchid
