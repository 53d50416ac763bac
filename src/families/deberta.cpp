// DeBERTa-v2 / v3, as Hugging Face's DebertaV2Model and DebertaV2ForSequenceClassification
// (DeBERTa-v3 rerankers, NLI and zero-shot classifiers): a post-LN encoder with disentangled
// attention.
//
//   h = LayerNorm(word[id] (+ position[pos]) (+ token_type[type]))   (v3: word only)
//   per layer:  h = LayerNorm(h + Wo Attention(h));  h = LayerNorm(h + W2 gelu(W1 h + b1) + b2)
//   Attention: score(i, j) = (q_i . k_j + q_i . Kr[r] + k_j . Qr[r]) / sqrt(d x (1 + terms))
//              r = the (log-)bucketed distance i - j; Kr, Qr: this layer's Wk, Wq (or its own
//              pos_key_proj, pos_query_proj) applied to the relative embeddings every layer
//              shares (LayerNorm-ed first in v3). Kr and Qr depend on the weights only, so they
//              are computed once here, at load, with the score scale folded in.
//   cross-encoders: classifier(gelu(pooler.dense(h_cls)))
#include <cmath>
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
using ops::Rows;

// LayerNorm of every row of x [rows, n], in place, accumulated in double.
void LayerNormRows(Tensor* x, const Tensor& gamma, const Tensor& beta, float eps) {
  const int64_t rows = x->dim(0), n = x->dim(1);
  for (int64_t r = 0; r < rows; ++r) {
    float* v = x->data() + r * n;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += v[i];
    mean /= double(n);
    for (int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean);
    var /= double(n);
    const double inv = 1.0 / std::sqrt(var + double(eps));
    for (int64_t i = 0; i < n; ++i) {
      v[i] = float((v[i] - mean) * inv) * gamma.data()[i] + beta.data()[i];
    }
  }
}

// (x W^T + b) * scale: x [rows, k], W [n, k], b [n]. Load time only (2 x span rows per layer).
Tensor Project(const Tensor& x, const Tensor& w, const Tensor& b, float scale) {
  const int64_t rows = x.dim(0), k = x.dim(1), n = w.dim(0);
  Tensor out({rows, n});
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * k;
    for (int64_t c = 0; c < n; ++c) {
      const float* wc = w.data() + c * k;
      float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // independent partial sums: vectorises
      int64_t i = 0;
      for (; i + 8 <= k; i += 8) {
        for (int l = 0; l < 8; ++l) lane[l] += xr[i + l] * wc[i + l];
      }
      float sum = 0;
      for (; i < k; ++i) sum += xr[i] * wc[i];
      for (float l : lane) sum += l;
      out.data()[r * n + c] = (sum + b.data()[c]) * scale;
    }
  }
  return out;
}

class Deberta final : public Family {
 public:
  Status Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b);
  Status Forward(ops::Backend& b) const override;

 private:
  struct Layer {
    ops::LinearWeight qkv, attn_out, inter, out;
    ops::NormWeight attn_norm, out_norm;
    ops::AttentionOptions attention;
  };
  struct Activations {
    Buffer x, ctx, ffn;
  };

  DebertaConfig c_;
  bool classifier_ = false;
  ops::EmbedOp embed_;
  std::vector<Layer> layers_;
  ClassifierHead classifier_head_;
  EmbeddingHead embedding_;
  Buffer qkv_;
  Activations all_, pooled_;
};

Status Deberta::Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b) {
  c_ = spec.deberta;
  classifier_ = spec.head == HeadKind::kDebertaPooler;
  if (spec.head != HeadKind::kNone && !classifier_) {
    return Status::Internal("the DeBERTa family has no head of this kind");
  }
  const std::string anchor = "embeddings.word_embeddings.weight";
  ORCHID_ASSIGN_OR_RETURN(const WeightReader r, FamilyWeights(file, anchor, "DeBERTa-v2"));
  const int64_t H = c_.hidden_size, I = c_.intermediate_size;
  const float eps = c_.layer_norm_eps;
  auto norm = [&](const std::string& base) -> Result<ops::NormWeight> {
    Tensor g, beta;
    ORCHID_RETURN_IF_ERROR(r.ReadNorm(base, H, &g, &beta));
    return b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, eps);
  };
  auto read_linear = [&](const std::string& base, int64_t n, int64_t k, Tensor* w,
                         Tensor* bias) -> Status {
    ORCHID_ASSIGN_OR_RETURN(*w, r.Read(base + ".weight", {n, k}));
    ORCHID_ASSIGN_OR_RETURN(*bias, r.Read(base + ".bias", {n}));
    return Status::Ok();
  };
  auto linear = [&](const std::string& base, int64_t n, int64_t k,
                    ops::LinearOptions o = {}) -> Result<ops::LinearWeight> {
    Tensor w, bias;
    ORCHID_RETURN_IF_ERROR(read_linear(base, n, k, &w, &bias));
    return b.AddLinear(w, &bias, o);
  };

  Tensor t;
  ORCHID_ASSIGN_OR_RETURN(t, r.Read(anchor, {c_.vocab_size, H}));
  ORCHID_ASSIGN_OR_RETURN(embed_.word, b.AddTable(std::move(t)));
  if (c_.position_biased_input) {
    ORCHID_ASSIGN_OR_RETURN(
        t, r.Read("embeddings.position_embeddings.weight", {c_.max_position_embeddings, H}));
    ORCHID_ASSIGN_OR_RETURN(embed_.position, b.AddTable(std::move(t)));
  }
  if (c_.type_vocab_size > 0) {
    ORCHID_ASSIGN_OR_RETURN(
        t, r.Read("embeddings.token_type_embeddings.weight", {c_.type_vocab_size, H}));
    ORCHID_ASSIGN_OR_RETURN(embed_.type, b.AddTable(std::move(t)));
  }
  ORCHID_ASSIGN_OR_RETURN(embed_.norm, norm("embeddings.LayerNorm"));

  // The relative embeddings every layer shares, LayerNorm-ed when the config says so.
  const bool relative = c_.c2p || c_.p2c;
  const int64_t span = c_.span();
  Tensor rel;
  if (relative) {
    ORCHID_ASSIGN_OR_RETURN(rel, r.Read("encoder.rel_embeddings.weight", {2 * span, H}));
    if (c_.norm_rel_embeddings) {
      Tensor g, beta;
      ORCHID_RETURN_IF_ERROR(r.ReadNorm("encoder.LayerNorm", H, &g, &beta));
      LayerNormRows(&rel, g, beta, eps);
    }
  }
  const float scale = 1.0f / std::sqrt(float(c_.head_dim() * c_.scale_factor()));

  const int heads = c_.num_attention_heads;
  layers_.resize(size_t(c_.num_hidden_layers));
  for (int i = 0; i < c_.num_hidden_layers; ++i) {
    Layer& l = layers_[size_t(i)];
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    Tensor q, k, v, qb, kb, vb;
    ORCHID_RETURN_IF_ERROR(read_linear(p + "attention.self.query_proj", H, H, &q, &qb));
    ORCHID_RETURN_IF_ERROR(read_linear(p + "attention.self.key_proj", H, H, &k, &kb));
    ORCHID_RETURN_IF_ERROR(read_linear(p + "attention.self.value_proj", H, H, &v, &vb));
    const Tensor qkv_bias = Concat0({&qb, &kb, &vb});
    ORCHID_ASSIGN_OR_RETURN(l.qkv, b.AddLinear(Concat0({&q, &k, &v}), &qkv_bias));
    l.attention = {heads, heads, c_.head_dim(), false};
    l.attention.scale = scale;
    l.attention.position_buckets = c_.position_buckets;
    l.attention.max_relative_positions = c_.max_relative_positions;
    if (c_.c2p) {
      Tensor w = std::move(k), bias = std::move(kb);
      if (!c_.share_att_key) {
        ORCHID_RETURN_IF_ERROR(read_linear(p + "attention.self.pos_key_proj", H, H, &w, &bias));
      }
      ORCHID_ASSIGN_OR_RETURN(l.attention.pos_key, b.AddTable(Project(rel, w, bias, scale)));
    }
    if (c_.p2c) {
      Tensor w = std::move(q), bias = std::move(qb);
      if (!c_.share_att_key) {
        ORCHID_RETURN_IF_ERROR(read_linear(p + "attention.self.pos_query_proj", H, H, &w, &bias));
      }
      ORCHID_ASSIGN_OR_RETURN(l.attention.pos_query, b.AddTable(Project(rel, w, bias, scale)));
    }
    ORCHID_ASSIGN_OR_RETURN(l.attn_out, linear(p + "attention.output.dense", H, H));
    ORCHID_ASSIGN_OR_RETURN(l.attn_norm, norm(p + "attention.output.LayerNorm"));
    ORCHID_ASSIGN_OR_RETURN(l.inter, linear(p + "intermediate.dense", I, H));
    ORCHID_ASSIGN_OR_RETURN(l.out, linear(p + "output.dense", H, I, {.outlier_input = true}));
    ORCHID_ASSIGN_OR_RETURN(l.out_norm, norm(p + "output.LayerNorm"));
  }

  qkv_ = b.AddBuffer("qkv", Rows::kTokens, int(3 * H));
  for (Rows rows : {Rows::kTokens, Rows::kPooled}) {
    Activations& a = rows == Rows::kTokens ? all_ : pooled_;
    a.x = b.AddBuffer("hidden", rows, int(H));
    a.ctx = b.AddBuffer("context", rows, int(H));
    a.ffn = b.AddBuffer("intermediate", rows, int(I));
  }
  hidden_ = all_.x;
  if (classifier_) {
    // ContextPooler (dense + GELU on the first token) and the classifier, outside the prefix.
    ClassifierHeadLayout head;
    head.activation = ops::Activation::kGelu;
    ORCHID_RETURN_IF_ERROR(classifier_head_.Load(head, r, H, c_.num_labels, b));
    output_ = classifier_head_.output();
  } else {
    ORCHID_RETURN_IF_ERROR(embedding_.Load(spec, b));
    output_ = embedding_.output();
    if (embedding_.tokens().valid()) hidden_ = embedding_.tokens();
  }
  return Status::Ok();
}

Status Deberta::Forward(ops::Backend& b) const {
  ORCHID_RETURN_IF_ERROR(b.Embed(embed_, all_.x));
  const Activations* a = &all_;
  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    ORCHID_RETURN_IF_ERROR(b.Linear(all_.x, l.qkv, qkv_));
    ORCHID_ASSIGN_OR_RETURN(a, AttendPrunable(b, qkv_, l.attention, li + 1 == layers_.size(), all_,
                                              pooled_, &Activations::x));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->ctx, l.attn_out, a->x, Epilogue::kResidualAdd));
    ORCHID_RETURN_IF_ERROR(b.Norm(a->x, l.attn_norm, a->x));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->x, l.inter, a->ffn, Epilogue::kGelu));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->ffn, l.out, a->x, Epilogue::kResidualAdd));
    ORCHID_RETURN_IF_ERROR(b.Norm(a->x, l.out_norm, a->x));
  }
  return classifier_ ? classifier_head_.Forward(b, a->x) : embedding_.Forward(b, a->x);
}

}  // namespace

Result<std::unique_ptr<Family>> LoadDeberta(const ModelSpec& spec, const Checkpoint& file,
                                            ops::Backend& backend) {
  return LoadAs<Deberta>(spec, file, backend);
}

}  // namespace orchid
