// ClassifierHead: the sequence-classification head of a cross-encoder
// (*ForSequenceClassification), once for every family that has one. The pooled row (the first
// token's, or as the batch pools), a dense layer [H, H] and its activation (BERT's pooler:
// tanh; DistilBERT: ReLU; DeBERTa's ContextPooler and ModernBERT's prediction head: GELU), for
// ModernBERT a LayerNorm, then the classifier [num_labels, H]:
//
//   logits = classifier(norm?(act(dense(pool(h)))))
//
// The families differ only in tensor names and those choices (ClassifierHeadLayout). Its
// weights are at full precision (LinearOptions::full_precision).
//
// Thread safety: Load once; Forward from one pass at a time (the backend's contract).
#pragma once

#include <cstdint>
#include <string>

#include "checkpoint/weight_reader.h"
#include "core/status.h"
#include "ops/backend.h"

namespace orchid {

struct ClassifierHeadLayout {
  // The dense layer's "<dense>.weight" [H, H] and "<dense>.bias" [H].
  std::string dense = "pooler.dense";
  bool dense_under_prefix = false;  // read under the model's prefix (BERT's pooler), or outside
  bool dense_bias = true;
  ops::Activation activation = ops::Activation::kTanh;
  // A LayerNorm after the activation ("<norm>.weight", and "<norm>.bias" with norm_bias, else
  // zeros), outside the prefix; empty: none.
  std::string norm;
  float norm_eps = 0;
  bool norm_bias = true;
  // The classifier's "<out>.weight" [num_labels, H] and "<out>.bias", outside the prefix.
  std::string out = "classifier";
};

class ClassifierHead {
 public:
  // Reads the head's weights with `r` (hidden width `hidden`, `labels` outputs), loads them
  // onto `b` and declares its buffers.
  Status Load(const ClassifierHeadLayout& layout, const WeightReader& r, int64_t hidden,
              int64_t labels, ops::Backend& b);
  // Pools `hidden` (kTokens or kPooled) by the batch's modes, then the head, into output().
  Status Forward(ops::Backend& b, ops::Buffer hidden) const;
  // [kSequences, labels] kAccumulator: the logits.
  ops::Buffer output() const { return logits_; }

 private:
  ops::LinearWeight dense_, out_;
  ops::NormWeight norm_;
  bool has_norm_ = false;
  ops::Activation activation_ = ops::Activation::kTanh;
  ops::Buffer pooled_, hidden_, logits_;
};

}  // namespace orchid
