// The BERT family: post-LN encoders with absolute position embeddings and exact GELU, as
// Hugging Face's BertModel, RobertaModel / XLMRobertaModel / CamembertModel, DistilBertModel
// and MPNetModel, and the cross-encoders built on them (*ForSequenceClassification: a small
// classifier on the first token).
//
//   h = LayerNorm(word[id] + position[pos + offset] + token_type[type])   (no token types:
//                                                                DistilBERT, MPNet)
//   per layer:  h = LayerNorm(h + Attention(h));  h = LayerNorm(h + W2 gelu(W1 h + b1) + b2)
//   MPNet: every layer's attention scores get a learned bias by relative position bucket
//   (one table for all layers).
//
// The variants differ only in tensor names (Names below) and those extras.
// Q, K and V are fused into one [3H, H] projection. With CLS pooling (cross-encoders, most
// BERT embedders) the last layer computes keys and values for every token but everything after
// attention only for the rows pooling reads.
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/classifier_head.h"
#include "families/embedding_head.h"
#include "families/family_loaders.h"

namespace orchid {
namespace {

using ops::Buffer;
using ops::Epilogue;
using ops::Precision;
using ops::Rows;

class Bert final : public Family {
 public:
  Status Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b);
  Status Forward(ops::Backend& b) const override;

 private:
  struct Layer {
    ops::LinearWeight qkv, attn_out, inter, out;
    ops::NormWeight attn_norm, out_norm;
  };
  // Activations over all tokens, and over the pooled rows of a pruned last layer.
  struct Activations {
    Buffer x, ctx, ffn;
  };

  BertConfig c_;
  HeadKind head_ = HeadKind::kNone;
  ops::EmbedOp embed_;
  std::vector<Layer> layers_;
  // SPLADE: the masked-LM head (transform dense + GELU + LayerNorm, decoder over the vocabulary).
  ops::LinearWeight mlm_dense_, mlm_decoder_;
  ops::NormWeight mlm_norm_;
  int splade_log1p_ = 0;
  ClassifierHead classifier_head_;
  EmbeddingHead embedding_;
  ops::AttentionOptions attention_;
  Buffer qkv_;
  Activations all_, pooled_;
  Buffer mlm_;
};

// Where each variant keeps its tensors (relative to the checkpoint's prefix).
struct Names {
  const char* position;
  const char* token_type;  // nullptr: no token types
  const char* embed_norm;
  const char* layer;  // + N + "."
  const char *q, *k, *v, *attn_out, *attn_norm, *inter, *out, *out_norm;
};
constexpr Names kBertNames{"embeddings.position_embeddings.weight",
                           "embeddings.token_type_embeddings.weight",
                           "embeddings.LayerNorm",
                           "encoder.layer.",
                           "attention.self.query",
                           "attention.self.key",
                           "attention.self.value",
                           "attention.output.dense",
                           "attention.output.LayerNorm",
                           "intermediate.dense",
                           "output.dense",
                           "output.LayerNorm"};
constexpr Names kDistilBertNames{"embeddings.position_embeddings.weight",
                                 nullptr,
                                 "embeddings.LayerNorm",
                                 "transformer.layer.",
                                 "attention.q_lin",
                                 "attention.k_lin",
                                 "attention.v_lin",
                                 "attention.out_lin",
                                 "sa_layer_norm",
                                 "ffn.lin1",
                                 "ffn.lin2",
                                 "output_layer_norm"};
constexpr Names kMpnetNames{"embeddings.position_embeddings.weight",
                            nullptr,
                            "embeddings.LayerNorm",
                            "encoder.layer.",
                            "attention.attn.q",
                            "attention.attn.k",
                            "attention.attn.v",
                            "attention.attn.o",
                            "attention.LayerNorm",
                            "intermediate.dense",
                            "output.dense",
                            "output.LayerNorm"};

const Names& NamesOf(BertConfig::Layout layout) {
  switch (layout) {
    case BertConfig::Layout::kDistilBert:
      return kDistilBertNames;
    case BertConfig::Layout::kMpnet:
      return kMpnetNames;
    case BertConfig::Layout::kBert:
      break;
  }
  return kBertNames;
}

Status Bert::Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b) {
  c_ = spec.bert;
  head_ = spec.head;
  const Names& n = NamesOf(c_.layout);
  // The prefix is whatever precedes the word embeddings' name ("", "bert.", "roberta.", ...).
  const std::string anchor = "embeddings.word_embeddings.weight";
  ORCHID_ASSIGN_OR_RETURN(const WeightReader r, FamilyWeights(file, anchor, "BERT-family"));
  const int64_t H = c_.hidden_size, I = c_.intermediate_size;
  const float eps = c_.layer_norm_eps;
  Tensor t, g, beta;
  ORCHID_ASSIGN_OR_RETURN(t, r.Read(anchor, {c_.vocab_size, H}));
  ORCHID_ASSIGN_OR_RETURN(embed_.word, b.AddTable(std::move(t)));
  ORCHID_ASSIGN_OR_RETURN(t, r.Read(n.position, {c_.max_position_embeddings, H}));
  ORCHID_ASSIGN_OR_RETURN(embed_.position, b.AddTable(std::move(t)));
  embed_.position_offset = c_.position_offset;
  if (n.token_type != nullptr) {
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(n.token_type, {c_.type_vocab_size, H}));
    ORCHID_ASSIGN_OR_RETURN(embed_.type, b.AddTable(std::move(t)));
  }
  ORCHID_RETURN_IF_ERROR(r.ReadNorm(n.embed_norm, H, &g, &beta));
  ORCHID_ASSIGN_OR_RETURN(embed_.norm, b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, eps));

  const int heads = c_.num_attention_heads;
  attention_ = {heads, heads, c_.head_dim(), false};
  if (c_.layout == BertConfig::Layout::kMpnet) {
    const int64_t buckets = c_.relative_attention_num_buckets;
    ORCHID_ASSIGN_OR_RETURN(t, r.Read("encoder.relative_attention_bias.weight", {buckets, heads}));
    ORCHID_ASSIGN_OR_RETURN(attention_.relative_bias, b.AddTable(std::move(t)));
    // MPNetEncoder.compute_position_bias calls relative_position_bucket with its defaults (32
    // buckets, max_distance 128); the config's bucket count only sizes the table.
    attention_.relative_num_buckets = 32;
    attention_.relative_max_distance = 128;
  }

  layers_.resize(size_t(c_.num_hidden_layers));
  for (int i = 0; i < c_.num_hidden_layers; ++i) {
    Layer& l = layers_[size_t(i)];
    const std::string p = n.layer + std::to_string(i) + ".";
    auto name = [&p](const char* module, const char* what) { return p + module + "." + what; };
    Tensor q, k, v, qb, kb, vb, w, bias;
    ORCHID_ASSIGN_OR_RETURN(q, r.Read(name(n.q, "weight"), {H, H}));
    ORCHID_ASSIGN_OR_RETURN(k, r.Read(name(n.k, "weight"), {H, H}));
    ORCHID_ASSIGN_OR_RETURN(v, r.Read(name(n.v, "weight"), {H, H}));
    ORCHID_ASSIGN_OR_RETURN(qb, r.Read(name(n.q, "bias"), {H}));
    ORCHID_ASSIGN_OR_RETURN(kb, r.Read(name(n.k, "bias"), {H}));
    ORCHID_ASSIGN_OR_RETURN(vb, r.Read(name(n.v, "bias"), {H}));
    const Tensor qkv_bias = Concat0({&qb, &kb, &vb});
    ORCHID_ASSIGN_OR_RETURN(l.qkv, b.AddLinear(Concat0({&q, &k, &v}), &qkv_bias));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(name(n.attn_out, "weight"), {H, H}));
    ORCHID_ASSIGN_OR_RETURN(bias, r.Read(name(n.attn_out, "bias"), {H}));
    ORCHID_ASSIGN_OR_RETURN(l.attn_out, b.AddLinear(w, &bias));
    ORCHID_RETURN_IF_ERROR(r.ReadNorm(p + n.attn_norm, H, &g, &beta));
    ORCHID_ASSIGN_OR_RETURN(l.attn_norm, b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, eps));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(name(n.inter, "weight"), {I, H}));
    ORCHID_ASSIGN_OR_RETURN(bias, r.Read(name(n.inter, "bias"), {I}));
    ORCHID_ASSIGN_OR_RETURN(l.inter, b.AddLinear(w, &bias));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(name(n.out, "weight"), {H, I}));
    ORCHID_ASSIGN_OR_RETURN(bias, r.Read(name(n.out, "bias"), {H}));
    ORCHID_ASSIGN_OR_RETURN(l.out, b.AddLinear(w, &bias, {.outlier_input = true}));
    ORCHID_RETURN_IF_ERROR(r.ReadNorm(p + n.out_norm, H, &g, &beta));
    ORCHID_ASSIGN_OR_RETURN(l.out_norm, b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, eps));
  }

  // Cross-encoder heads on the first token: dense [H, H] + tanh (ReLU for DistilBERT), then
  // [num_labels, H].
  const int64_t L = c_.num_labels;
  ClassifierHeadLayout classifier;
  if (head_ == HeadKind::kSpladeMlm) {
    // The masked-LM head: transform (dense + GELU + LayerNorm), then the decoder over the
    // vocabulary, tied to the word embeddings unless the checkpoint has its own.
    const bool distil = c_.layout == BertConfig::Layout::kDistilBert;
    const std::string transform = distil ? "vocab_transform" : "cls.predictions.transform.dense";
    const std::string norm = distil ? "vocab_layer_norm" : "cls.predictions.transform.LayerNorm";
    const std::string decoder = distil ? "vocab_projector" : "cls.predictions.decoder";
    const std::string bias_name = distil ? "vocab_projector.bias"
                                  : file.Find("cls.predictions.bias") != nullptr
                                      ? "cls.predictions.bias"
                                      : "cls.predictions.decoder.bias";
    const int64_t V = c_.vocab_size;
    Tensor w, wb, dec, db;
    ORCHID_ASSIGN_OR_RETURN(w, r.ReadUnprefixed(transform + ".weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(wb, r.ReadUnprefixed(transform + ".bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(mlm_dense_, b.AddLinear(w, &wb));
    Tensor g2, beta2;
    ORCHID_RETURN_IF_ERROR(r.ReadNormUnprefixed(norm, H, &g2, &beta2));
    ORCHID_ASSIGN_OR_RETURN(mlm_norm_, b.AddNorm(ops::NormKind::kLayerNorm, g2, &beta2, eps));
    if (file.Find(decoder + ".weight") != nullptr) {
      ORCHID_ASSIGN_OR_RETURN(dec, r.ReadUnprefixed(decoder + ".weight", {V, H}));
    } else {
      ORCHID_ASSIGN_OR_RETURN(dec, r.Read(anchor, {V, H}));
    }
    ORCHID_ASSIGN_OR_RETURN(db, r.ReadUnprefixed(bias_name, {V}));
    ORCHID_ASSIGN_OR_RETURN(mlm_decoder_, b.AddLinear(dec, &db));
    splade_log1p_ = spec.splade_log1p;
  } else if (head_ != HeadKind::kNone) {
    switch (head_) {
      case HeadKind::kBertPooler:  // BERT's pooler sits under the model's prefix
        classifier.dense = "pooler.dense", classifier.dense_under_prefix = true;
        break;
      case HeadKind::kRobertaClassifier:
        classifier.dense = "classifier.dense", classifier.out = "classifier.out_proj";
        break;
      case HeadKind::kDistilBertClassifier:
        classifier.dense = "pre_classifier", classifier.activation = ops::Activation::kRelu;
        break;
      default:
        return Status::Internal("the BERT family has no head of this kind");
    }
  }

  qkv_ = b.AddBuffer("qkv", Rows::kTokens, int(3 * H));
  for (Rows rows : {Rows::kTokens, Rows::kPooled}) {
    Activations& a = rows == Rows::kTokens ? all_ : pooled_;
    a.x = b.AddBuffer("hidden", rows, int(H));
    a.ctx = b.AddBuffer("context", rows, int(H));
    a.ffn = b.AddBuffer("intermediate", rows, int(I));
  }
  hidden_ = all_.x;
  if (head_ == HeadKind::kNone) {
    ORCHID_RETURN_IF_ERROR(embedding_.Load(spec, b));
    output_ = embedding_.output();
    if (embedding_.tokens().valid()) hidden_ = embedding_.tokens();
  } else if (head_ == HeadKind::kSpladeMlm) {
    mlm_ = b.AddBuffer("mlm", Rows::kTokens, int(H));
    output_ = b.AddBuffer("terms", Rows::kSequences, c_.vocab_size, Precision::kAccumulator);
  } else {
    ORCHID_RETURN_IF_ERROR(classifier_head_.Load(classifier, r, H, L, b));
    output_ = classifier_head_.output();
  }
  return Status::Ok();
}

Status Bert::Forward(ops::Backend& b) const {
  ORCHID_RETURN_IF_ERROR(b.Embed(embed_, all_.x));
  const Activations* a = &all_;
  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    ORCHID_RETURN_IF_ERROR(b.Linear(all_.x, l.qkv, qkv_));
    ORCHID_ASSIGN_OR_RETURN(a, AttendPrunable(b, qkv_, attention_, li + 1 == layers_.size(), all_,
                                              pooled_, &Activations::x));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->ctx, l.attn_out, a->x, Epilogue::kResidualAdd));
    ORCHID_RETURN_IF_ERROR(b.Norm(a->x, l.attn_norm, a->x));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->x, l.inter, a->ffn, Epilogue::kGelu));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->ffn, l.out, a->x, Epilogue::kResidualAdd));
    ORCHID_RETURN_IF_ERROR(b.Norm(a->x, l.out_norm, a->x));
  }
  if (head_ == HeadKind::kNone) return embedding_.Forward(b, a->x);
  if (head_ == HeadKind::kSpladeMlm) {
    // SPLADE: max over the tokens of the MLM logits, then log1p(relu) (monotonic: the same as
    // the max of log1p(relu) of every logit, without a [tokens, vocabulary] buffer).
    ORCHID_RETURN_IF_ERROR(b.Linear(a->x, mlm_dense_, mlm_, Epilogue::kGelu));
    ORCHID_RETURN_IF_ERROR(b.Norm(mlm_, mlm_norm_, mlm_));
    ORCHID_RETURN_IF_ERROR(b.VocabMaxPool(mlm_, mlm_decoder_, output_));
    for (int i = 0; i < splade_log1p_; ++i) {
      ORCHID_RETURN_IF_ERROR(b.Activate(output_, ops::Activation::kLog1pRelu));
    }
    return Status::Ok();
  }
  return classifier_head_.Forward(b, a->x);
}

}  // namespace

Result<std::unique_ptr<Family>> LoadBert(const ModelSpec& spec, const Checkpoint& file,
                                         ops::Backend& backend) {
  return LoadAs<Bert>(spec, file, backend);
}

}  // namespace orchid
