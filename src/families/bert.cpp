// The BERT family: BERT and XLM-RoBERTa encoders (embeddings, then post-LN transformer layers
// with exact GELU), as Hugging Face's BertModel / XLMRobertaModel, and the cross-encoders
// built on them (*ForSequenceClassification: a tanh-dense-then-linear classifier on the first
// token).
//
//   h = LayerNorm(word[id] + position[pos + offset] + token_type[type])
//   per layer:  h = LayerNorm(h + Attention(h));  h = LayerNorm(h + W2 gelu(W1 h + b1) + b2)
//
// Q, K and V are fused into one [3H, H] projection. With CLS pooling (cross-encoders, most
// BERT embedders) the last layer computes keys and values for every token but everything after
// attention only for the rows pooling reads.
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "checkpoint/weight_reader.h"
#include "families/family_loaders.h"

namespace orchid {
namespace {

using ops::Buffer;
using ops::Epilogue;
using ops::Precision;
using ops::Rows;

class Bert final : public Family {
 public:
  Status Load(const ModelSpec& spec, const SafetensorsFile& file, ops::Backend& b);
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
  ops::LinearWeight head_dense_, head_out_;
  ops::AttentionOptions attention_;
  Buffer qkv_;
  Activations all_, pooled_;
  Buffer pooled_vec_, head_hidden_;
};

Status Bert::Load(const ModelSpec& spec, const SafetensorsFile& file, ops::Backend& b) {
  c_ = spec.bert;
  head_ = spec.head;
  // The prefix is whatever precedes the word embeddings' name ("", "bert.", "roberta.", ...).
  const std::string anchor = "embeddings.word_embeddings.weight";
  const std::optional<std::string> prefix = FindWeightPrefix(file, anchor);
  if (!prefix) {
    return Status::Corrupt(file.path() + ": no tensor named \"" + anchor +
                           "\" (with or without a prefix); not a BERT checkpoint?");
  }
  const WeightReader r(file, *prefix);
  const int64_t H = c_.hidden_size, I = c_.intermediate_size;
  const float eps = c_.layer_norm_eps;
  Tensor t, g, beta;
  ORCHID_ASSIGN_OR_RETURN(t, r.Read(anchor, {c_.vocab_size, H}));
  ORCHID_ASSIGN_OR_RETURN(embed_.word, b.AddTable(std::move(t)));
  ORCHID_ASSIGN_OR_RETURN(
      t, r.Read("embeddings.position_embeddings.weight", {c_.max_position_embeddings, H}));
  ORCHID_ASSIGN_OR_RETURN(embed_.position, b.AddTable(std::move(t)));
  embed_.position_offset = c_.position_offset;
  ORCHID_ASSIGN_OR_RETURN(
      t, r.Read("embeddings.token_type_embeddings.weight", {c_.type_vocab_size, H}));
  ORCHID_ASSIGN_OR_RETURN(embed_.type, b.AddTable(std::move(t)));
  ORCHID_RETURN_IF_ERROR(r.ReadNorm("embeddings.LayerNorm", H, &g, &beta));
  ORCHID_ASSIGN_OR_RETURN(embed_.norm, b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, eps));

  layers_.resize(size_t(c_.num_hidden_layers));
  for (int i = 0; i < c_.num_hidden_layers; ++i) {
    Layer& l = layers_[size_t(i)];
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    Tensor q, k, v, qb, kb, vb, w, bias;
    ORCHID_ASSIGN_OR_RETURN(q, r.Read(p + "attention.self.query.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(k, r.Read(p + "attention.self.key.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(v, r.Read(p + "attention.self.value.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(qb, r.Read(p + "attention.self.query.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(kb, r.Read(p + "attention.self.key.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(vb, r.Read(p + "attention.self.value.bias", {H}));
    const Tensor qkv_bias = Concat0({&qb, &kb, &vb});
    ORCHID_ASSIGN_OR_RETURN(l.qkv, b.AddLinear(Concat0({&q, &k, &v}), &qkv_bias));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "attention.output.dense.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(bias, r.Read(p + "attention.output.dense.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(l.attn_out, b.AddLinear(w, &bias));
    ORCHID_RETURN_IF_ERROR(r.ReadNorm(p + "attention.output.LayerNorm", H, &g, &beta));
    ORCHID_ASSIGN_OR_RETURN(l.attn_norm, b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, eps));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "intermediate.dense.weight", {I, H}));
    ORCHID_ASSIGN_OR_RETURN(bias, r.Read(p + "intermediate.dense.bias", {I}));
    ORCHID_ASSIGN_OR_RETURN(l.inter, b.AddLinear(w, &bias));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "output.dense.weight", {H, I}));
    ORCHID_ASSIGN_OR_RETURN(bias, r.Read(p + "output.dense.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(l.out, b.AddLinear(w, &bias));
    ORCHID_RETURN_IF_ERROR(r.ReadNorm(p + "output.LayerNorm", H, &g, &beta));
    ORCHID_ASSIGN_OR_RETURN(l.out_norm, b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, eps));
  }

  // Cross-encoder heads: dense [H, H] + tanh, then [num_labels, H], at full precision.
  const int64_t L = c_.num_labels;
  const ops::LinearOptions full{.full_precision = true};
  if (head_ == HeadKind::kBertPooler || head_ == HeadKind::kRobertaClassifier) {
    const bool bert = head_ == HeadKind::kBertPooler;
    Tensor w, o, wb, ob;
    if (bert) {
      ORCHID_ASSIGN_OR_RETURN(w, r.Read("pooler.dense.weight", {H, H}));
      ORCHID_ASSIGN_OR_RETURN(wb, r.Read("pooler.dense.bias", {H}));
      ORCHID_ASSIGN_OR_RETURN(o, r.ReadUnprefixed("classifier.weight", {L, H}));
      ORCHID_ASSIGN_OR_RETURN(ob, r.ReadUnprefixed("classifier.bias", {L}));
    } else {
      ORCHID_ASSIGN_OR_RETURN(w, r.ReadUnprefixed("classifier.dense.weight", {H, H}));
      ORCHID_ASSIGN_OR_RETURN(wb, r.ReadUnprefixed("classifier.dense.bias", {H}));
      ORCHID_ASSIGN_OR_RETURN(o, r.ReadUnprefixed("classifier.out_proj.weight", {L, H}));
      ORCHID_ASSIGN_OR_RETURN(ob, r.ReadUnprefixed("classifier.out_proj.bias", {L}));
    }
    ORCHID_ASSIGN_OR_RETURN(head_dense_, b.AddLinear(w, &wb, full));
    ORCHID_ASSIGN_OR_RETURN(head_out_, b.AddLinear(o, &ob, full));
  } else if (head_ != HeadKind::kNone) {
    return Status::Internal("the BERT family has no head of this kind");
  }

  const int heads = c_.num_attention_heads;
  attention_ = {heads, heads, c_.head_dim(), false};
  qkv_ = b.AddBuffer("qkv", Rows::kTokens, int(3 * H));
  for (Rows rows : {Rows::kTokens, Rows::kPooled}) {
    Activations& a = rows == Rows::kTokens ? all_ : pooled_;
    a.x = b.AddBuffer("hidden", rows, int(H));
    a.ctx = b.AddBuffer("context", rows, int(H));
    a.ffn = b.AddBuffer("intermediate", rows, int(I));
  }
  hidden_ = all_.x;
  if (head_ == HeadKind::kNone) {
    output_ = b.AddBuffer("embeddings", Rows::kSequences, int(H), Precision::kAccumulator);
  } else {
    pooled_vec_ = b.AddBuffer("pooled", Rows::kSequences, int(H), Precision::kAccumulator);
    head_hidden_ = b.AddBuffer("head", Rows::kSequences, int(H), Precision::kAccumulator);
    output_ = b.AddBuffer("logits", Rows::kSequences, int(L), Precision::kAccumulator);
  }
  return Status::Ok();
}

Status Bert::Forward(ops::Backend& b) const {
  ORCHID_RETURN_IF_ERROR(b.Embed(embed_, all_.x));
  const bool prune = b.prune_last_layer();
  const Activations* a = &all_;
  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    ORCHID_RETURN_IF_ERROR(b.Linear(all_.x, l.qkv, qkv_));
    if (li + 1 == layers_.size() && prune) {
      // The last layer after attention on the pooled rows only.
      ORCHID_RETURN_IF_ERROR(b.Attention(qkv_, pooled_.ctx, attention_));
      ORCHID_RETURN_IF_ERROR(b.GatherPooled(all_.x, pooled_.x));
      a = &pooled_;
    } else {
      ORCHID_RETURN_IF_ERROR(b.Attention(qkv_, all_.ctx, attention_));
    }
    ORCHID_RETURN_IF_ERROR(b.Linear(a->ctx, l.attn_out, a->x, Epilogue::kResidualAdd));
    ORCHID_RETURN_IF_ERROR(b.Norm(a->x, l.attn_norm, a->x));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->x, l.inter, a->ffn, Epilogue::kGelu));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->ffn, l.out, a->x, Epilogue::kResidualAdd));
    ORCHID_RETURN_IF_ERROR(b.Norm(a->x, l.out_norm, a->x));
  }
  if (head_ == HeadKind::kNone) return b.Pool(a->x, output_, true);
  ORCHID_RETURN_IF_ERROR(b.Pool(a->x, pooled_vec_, false));
  ORCHID_RETURN_IF_ERROR(b.Linear(pooled_vec_, head_dense_, head_hidden_));
  ORCHID_RETURN_IF_ERROR(b.Activate(head_hidden_, ops::Activation::kTanh));
  return b.Linear(head_hidden_, head_out_, output_);
}

}  // namespace

Result<std::unique_ptr<Family>> LoadBert(const ModelSpec& spec, const SafetensorsFile& file,
                                         ops::Backend& backend) {
  auto f = std::make_unique<Bert>();
  ORCHID_RETURN_IF_ERROR(f->Load(spec, file, backend));
  return std::unique_ptr<Family>(std::move(f));
}

}  // namespace orchid
