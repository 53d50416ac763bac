// The ModernBERT family, as Hugging Face's ModernBertModel and
// ModernBertForSequenceClassification (gte-modernbert, modernbert-embed, ModernBERT
// cross-encoders): a pre-LN encoder with rotary positions.
//
//   h = LayerNorm(tok_embeddings[id])
//   per layer:  h += Wo Attention(RoPE(Wqkv LN(h)))      (layer 0 has no attention norm; local
//                                                           layers: |i - j| <= local_attention / 2
//                                                           and their own rotary theta)
//               h += Wo' (gelu(a) * g), [a | g] = Wi LN(h)  (GeGLU with exact GELU)
//   out = LayerNorm(h)
//   cross-encoders: classifier(LN(gelu(dense(pool(out)))))  (pool: cls or mean, per config)
//
// LayerNorms and linear layers have biases only where the config says (none by default).
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

class ModernBert final : public Family {
 public:
  Status Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b);
  Status Forward(ops::Backend& b) const override;

 private:
  struct Layer {
    ops::NormWeight attn_norm, mlp_norm;  // attn_norm invalid on layer 0 (Identity)
    ops::LinearWeight qkv, o, wi, wo;
    int window = 0;
  };
  struct Activations {
    Buffer residual, x, ctx, gate_up, act;
  };

  ModernBertConfig c_;
  bool classifier_ = false;
  ops::EmbedOp embed_;
  std::vector<Layer> layers_;
  ops::NormWeight final_norm_;
  ClassifierHead classifier_head_;
  EmbeddingHead embedding_;
  ops::AttentionOptions attention_;
  ops::RopeOptions rope_;
  Buffer qkv_;
  Activations all_, pooled_;
};

Status ModernBert::Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b) {
  c_ = spec.modernbert;
  classifier_ = spec.head == HeadKind::kModernBertHead;
  if (spec.head != HeadKind::kNone && !classifier_) {
    return Status::Internal("the ModernBERT family has no head of this kind");
  }
  const std::string anchor = "embeddings.tok_embeddings.weight";
  ORCHID_ASSIGN_OR_RETURN(const WeightReader r, FamilyWeights(file, anchor, "ModernBERT"));
  const int64_t H = c_.hidden_size, I = c_.intermediate_size;
  // A LayerNorm [H] (its bias zeros without norm_bias).
  auto norm = [&](const std::string& base) -> Result<ops::NormWeight> {
    Tensor g, beta;
    ORCHID_ASSIGN_OR_RETURN(g, r.Read(base + ".weight", {H}));
    if (c_.norm_bias) {
      ORCHID_ASSIGN_OR_RETURN(beta, r.Read(base + ".bias", {H}));
    } else {
      beta = Tensor({H});  // zeros: the op contract's LayerNorm always has a bias
    }
    return b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, c_.norm_eps);
  };
  // A linear layer [n, k], its bias only when `bias`.
  auto linear = [&](const std::string& base, int64_t n, int64_t k, bool bias,
                    ops::LinearOptions o = {}) -> Result<ops::LinearWeight> {
    Tensor w, bv;
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(base + ".weight", {n, k}));
    if (bias) {
      ORCHID_ASSIGN_OR_RETURN(bv, r.Read(base + ".bias", {n}));
    }
    return b.AddLinear(w, bias ? &bv : nullptr, o);
  };

  Tensor t;
  ORCHID_ASSIGN_OR_RETURN(t, r.Read(anchor, {c_.vocab_size, H}));
  ORCHID_ASSIGN_OR_RETURN(embed_.word, b.AddTable(std::move(t)));
  ORCHID_ASSIGN_OR_RETURN(embed_.norm, norm("embeddings.norm"));
  layers_.resize(size_t(c_.num_hidden_layers));
  for (int i = 0; i < c_.num_hidden_layers; ++i) {
    Layer& l = layers_[size_t(i)];
    const std::string p = "layers." + std::to_string(i) + ".";
    if (i > 0) {
      ORCHID_ASSIGN_OR_RETURN(l.attn_norm, norm(p + "attn_norm"));
    }
    ORCHID_ASSIGN_OR_RETURN(l.qkv, linear(p + "attn.Wqkv", 3 * H, H, c_.attention_bias));
    ORCHID_ASSIGN_OR_RETURN(l.o, linear(p + "attn.Wo", H, H, c_.attention_bias));
    ORCHID_ASSIGN_OR_RETURN(l.mlp_norm, norm(p + "mlp_norm"));
    ORCHID_ASSIGN_OR_RETURN(l.wi, linear(p + "mlp.Wi", 2 * I, H, c_.mlp_bias));
    ORCHID_ASSIGN_OR_RETURN(l.wo, linear(p + "mlp.Wo", H, I, c_.mlp_bias, {.outlier_input = true}));
    l.window = c_.layer_window[size_t(i)];
  }
  ORCHID_ASSIGN_OR_RETURN(final_norm_, norm("final_norm"));

  const int heads = c_.num_attention_heads;
  attention_ = {heads, heads, c_.head_dim(), false};
  rope_.num_heads = rope_.num_kv_heads = heads;
  rope_.head_dim = c_.head_dim();
  qkv_ = b.AddBuffer("qkv", Rows::kTokens, int(3 * H));
  for (Rows rows : {Rows::kTokens, Rows::kPooled}) {
    Activations& a = rows == Rows::kTokens ? all_ : pooled_;
    a.residual = b.AddBuffer("residual", rows, int(H), Precision::kAccumulator);
    a.x = b.AddBuffer("normed", rows, int(H));
    a.ctx = b.AddBuffer("context", rows, int(H));
    a.gate_up = b.AddBuffer("gate_up", rows, int(2 * I));
    a.act = b.AddBuffer("mlp", rows, int(I));
  }
  hidden_ = all_.x;  // after the final norm
  if (classifier_) {
    // ModernBertPredictionHead (dense, GELU, LayerNorm) and the classifier.
    ClassifierHeadLayout head;
    head.dense = "head.dense";
    head.dense_bias = c_.classifier_bias;
    head.activation = ops::Activation::kGelu;
    head.norm = "head.norm";
    head.norm_eps = c_.norm_eps;
    head.norm_bias = c_.norm_bias;
    ORCHID_RETURN_IF_ERROR(classifier_head_.Load(head, r, H, c_.num_labels, b));
    output_ = classifier_head_.output();
  } else {
    ORCHID_RETURN_IF_ERROR(embedding_.Load(spec, b));
    output_ = embedding_.output();
    if (embedding_.tokens().valid()) hidden_ = embedding_.tokens();
  }
  return Status::Ok();
}

Status ModernBert::Forward(ops::Backend& b) const {
  ORCHID_RETURN_IF_ERROR(b.Embed(embed_, all_.residual));
  const Activations* a = &all_;
  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    ops::RopeOptions rope = rope_;
    ops::AttentionOptions attention = attention_;
    rope.theta = l.window > 0 ? c_.local_rope_theta : c_.global_rope_theta;
    attention.window = l.window;
    Buffer in = all_.residual;  // layer 0: no attention norm
    if (l.attn_norm.valid()) {
      ORCHID_RETURN_IF_ERROR(b.Norm(all_.residual, l.attn_norm, all_.x));
      in = all_.x;
    }
    ORCHID_RETURN_IF_ERROR(b.Linear(in, l.qkv, qkv_));
    ORCHID_RETURN_IF_ERROR(b.QkNormRope(qkv_, rope));
    ORCHID_ASSIGN_OR_RETURN(a, AttendPrunable(b, qkv_, attention, li + 1 == layers_.size(), all_,
                                              pooled_, &Activations::residual));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->ctx, l.o, a->residual, Epilogue::kResidualAdd));
    ORCHID_RETURN_IF_ERROR(b.Norm(a->residual, l.mlp_norm, a->x));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->x, l.wi, a->gate_up));
    ORCHID_RETURN_IF_ERROR(b.Glu(a->gate_up, a->act, ops::Gate::kGelu));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->act, l.wo, a->residual, Epilogue::kResidualAdd));
  }
  ORCHID_RETURN_IF_ERROR(b.Norm(a->residual, final_norm_, a->x));
  return classifier_ ? classifier_head_.Forward(b, a->x) : embedding_.Forward(b, a->x);
}

}  // namespace

Result<std::unique_ptr<Family>> LoadModernBert(const ModelSpec& spec, const Checkpoint& file,
                                               ops::Backend& backend) {
  return LoadAs<ModernBert>(spec, file, backend);
}

}  // namespace orchid
