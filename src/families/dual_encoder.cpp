// Dual encoders: CLIP and SigLIP (fixed resolution), as transformers' CLIPModel and SiglipModel.
// Two pre-LN transformers in one family; a batch runs the text tower or, when it holds images
// (Backend::image_batch()), the vision tower. Both end in [sequences, projection] rows of one
// embedding space: get_text_features / get_image_features.
//
//   vision  h = word[id] + position[pos]        (id 1: CLIP's class embedding; id 0: zeros, or
//                                                SigLIP's patch-convolution bias)
//           h += pixels W_patch^T               (the strided convolution as a matmul over each
//                                                token's flattened patch; zeros for the class)
//           CLIP: h = LayerNorm_pre(h)
//   layers  h += Wo Attention(LN1(h));  h += W2 act(W1 LN2(h))     (text: causal for CLIP)
//   CLIP    text:   LayerNorm_final(h at the end-of-text token, the last of the sequence as the
//                   gateway cuts it: ModelInfo::TextInput) W_text^T
//           vision: LayerNorm_post(h of the class token) W_visual^T
//   SigLIP  text:   LayerNorm_final(h at the last position) W_head^T + b
//           vision: the attention-pooling head on LayerNorm_post(h): a learned probe attends
//                   over the image's tokens (nn.MultiheadAttention), then out = o + MLP(LN(o))
//
// SigLIP's head runs as ordinary ops: its query is the probe's, the same for every row, so the
// in-projection becomes a linear layer whose query rows are zero with the probe's projected
// query as their bias; every token then asks the probe's question, and pooling reads the
// answer at the image's first token.
#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/family_loaders.h"

namespace orchid {
namespace {

using ops::Buffer;
using ops::Epilogue;
using ops::Precision;
using ops::Rows;
using Act = DualEncoderConfig::Act;

class DualEncoder final : public Family {
 public:
  Status Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b);
  Status Forward(ops::Backend& b) const override;

 private:
  struct Layer {
    ops::NormWeight ln1, ln2;
    ops::LinearWeight qkv, out, fc1, fc2;
  };
  struct Activations {
    Buffer x, ln, ctx, ffn;
  };
  struct Tower {
    DualEncoderConfig::Tower c;
    ops::EmbedOp embed;
    ops::AttentionOptions attention;
    std::vector<Layer> layers;
    ops::NormWeight final_norm;  // text: final_layer_norm; vision: post_layernorm
    Buffer qkv, pooled;          // pooled: [sequences, hidden]
    Activations all, last;       // last: the pruned last layer's rows
  };

  Status LoadTower(const WeightReader& r, const std::string& p, const char* tower,
                   const DualEncoderConfig::Tower& c, bool causal, ops::Backend& b, Tower* t);
  Status LoadSiglipHead(const WeightReader& r, ops::Backend& b);
  Status Layers(ops::Backend& b, const Tower& t, bool prunable, const Activations** out) const;
  // residual += fc2(act(fc1(in))), through `ffn`.
  static Status Mlp(ops::Backend& b, Act act, ops::LinearWeight fc1, ops::LinearWeight fc2,
                    Buffer in, Buffer ffn, Buffer residual);

  bool clip_ = true;
  Tower text_, vision_;
  ops::NormWeight pre_norm_;  // CLIP's pre_layrnorm
  ops::LinearWeight patch_, text_proj_, visual_proj_;
  Buffer pixels_;
  // SigLIP's attention-pooling head.
  struct {
    ops::LinearWeight qkv, out, fc1, fc2;
    ops::NormWeight norm;
    Buffer qkv_rows, ctx, ctx_pooled, ln, ffn;
  } head_;
};

Status DualEncoder::LoadTower(const WeightReader& r, const std::string& p, const char* tower,
                              const DualEncoderConfig::Tower& c, bool causal, ops::Backend& b,
                              Tower* t) {
  t->c = c;
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  t->attention = {c.num_attention_heads, c.num_attention_heads, c.head_dim(), causal};
  t->layers.resize(size_t(c.num_hidden_layers));
  Tensor g, beta;
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    Layer& l = t->layers[size_t(i)];
    const std::string lp = p + "encoder.layers." + std::to_string(i) + ".";
    Tensor q, k, v, qb, kb, vb, w, bias;
    ORCHID_ASSIGN_OR_RETURN(q, r.Read(lp + "self_attn.q_proj.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(k, r.Read(lp + "self_attn.k_proj.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(v, r.Read(lp + "self_attn.v_proj.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(qb, r.Read(lp + "self_attn.q_proj.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(kb, r.Read(lp + "self_attn.k_proj.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(vb, r.Read(lp + "self_attn.v_proj.bias", {H}));
    const Tensor qkv_bias = Concat0({&qb, &kb, &vb});
    ORCHID_ASSIGN_OR_RETURN(l.qkv, b.AddLinear(Concat0({&q, &k, &v}), &qkv_bias));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(lp + "self_attn.out_proj.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(bias, r.Read(lp + "self_attn.out_proj.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(l.out, b.AddLinear(w, &bias));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(lp + "mlp.fc1.weight", {I, H}));
    ORCHID_ASSIGN_OR_RETURN(bias, r.Read(lp + "mlp.fc1.bias", {I}));
    ORCHID_ASSIGN_OR_RETURN(l.fc1, b.AddLinear(w, &bias));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(lp + "mlp.fc2.weight", {H, I}));
    ORCHID_ASSIGN_OR_RETURN(bias, r.Read(lp + "mlp.fc2.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(l.fc2, b.AddLinear(w, &bias, {.outlier_input = true}));
    ORCHID_RETURN_IF_ERROR(r.ReadNorm(lp + "layer_norm1", H, &g, &beta));
    ORCHID_ASSIGN_OR_RETURN(l.ln1,
                            b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, c.layer_norm_eps));
    ORCHID_RETURN_IF_ERROR(r.ReadNorm(lp + "layer_norm2", H, &g, &beta));
    ORCHID_ASSIGN_OR_RETURN(l.ln2,
                            b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, c.layer_norm_eps));
  }
  t->qkv = b.AddBuffer(std::string(tower) + " qkv", Rows::kTokens, int(3 * H));
  for (Rows rows : {Rows::kTokens, Rows::kPooled}) {
    Activations& a = rows == Rows::kTokens ? t->all : t->last;
    const std::string n = std::string(tower) + (rows == Rows::kTokens ? " " : " pooled ");
    a.x = b.AddBuffer(n + "hidden", rows, int(H));
    a.ln = b.AddBuffer(n + "normed", rows, int(H));
    a.ctx = b.AddBuffer(n + "context", rows, int(H));
    a.ffn = b.AddBuffer(n + "intermediate", rows, int(I));
  }
  t->pooled = b.AddBuffer(std::string(tower) + " pooled", Rows::kSequences, int(H),
                          Precision::kAccumulator);
  return Status::Ok();
}

Status DualEncoder::LoadSiglipHead(const WeightReader& r, ops::Backend& b) {
  const int64_t H = vision_.c.hidden_size, I = vision_.c.intermediate_size;
  const std::string p = "vision_model.head.";
  Tensor probe, in_w, in_b, w, bias, g, beta;
  ORCHID_ASSIGN_OR_RETURN(probe, r.Read(p + "probe", {1, 1, H}));
  ORCHID_ASSIGN_OR_RETURN(in_w, r.Read(p + "attention.in_proj_weight", {3 * H, H}));
  ORCHID_ASSIGN_OR_RETURN(in_b, r.Read(p + "attention.in_proj_bias", {3 * H}));
  // The probe's query, q = probe Wq^T + bq (in double, then rounded once), becomes the bias of
  // zero query rows: every token's "query" is the probe's.
  for (int64_t n = 0; n < H; ++n) {
    double acc = in_b.data()[n];
    for (int64_t k = 0; k < H; ++k) acc += double(in_w.data()[n * H + k]) * probe.data()[k];
    in_b.data()[n] = float(acc);
  }
  std::memset(in_w.data(), 0, size_t(H * H) * sizeof(float));
  ORCHID_ASSIGN_OR_RETURN(head_.qkv, b.AddLinear(in_w, &in_b));
  ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "attention.out_proj.weight", {H, H}));
  ORCHID_ASSIGN_OR_RETURN(bias, r.Read(p + "attention.out_proj.bias", {H}));
  ORCHID_ASSIGN_OR_RETURN(head_.out, b.AddLinear(w, &bias));
  ORCHID_RETURN_IF_ERROR(r.ReadNorm(p + "layernorm", H, &g, &beta));
  ORCHID_ASSIGN_OR_RETURN(head_.norm,
                          b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, vision_.c.layer_norm_eps));
  ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "mlp.fc1.weight", {I, H}));
  ORCHID_ASSIGN_OR_RETURN(bias, r.Read(p + "mlp.fc1.bias", {I}));
  ORCHID_ASSIGN_OR_RETURN(head_.fc1, b.AddLinear(w, &bias));
  ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "mlp.fc2.weight", {H, I}));
  ORCHID_ASSIGN_OR_RETURN(bias, r.Read(p + "mlp.fc2.bias", {H}));
  ORCHID_ASSIGN_OR_RETURN(head_.fc2, b.AddLinear(w, &bias, {.outlier_input = true}));
  head_.qkv_rows = b.AddBuffer("head qkv", Rows::kTokens, int(3 * H));
  head_.ctx = b.AddBuffer("head context", Rows::kTokens, int(H));
  head_.ctx_pooled =
      b.AddBuffer("head pooled context", Rows::kSequences, int(H), Precision::kAccumulator);
  head_.ln = b.AddBuffer("head normed", Rows::kSequences, int(H), Precision::kAccumulator);
  head_.ffn = b.AddBuffer("head intermediate", Rows::kSequences, int(I), Precision::kAccumulator);
  return Status::Ok();
}

Status DualEncoder::Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b) {
  const DualEncoderConfig& c = spec.dual_encoder;
  clip_ = c.kind == DualEncoderConfig::Kind::kClip;
  const std::string anchor = "text_model.embeddings.token_embedding.weight";
  ORCHID_ASSIGN_OR_RETURN(const WeightReader r,
                          FamilyWeights(file, anchor, clip_ ? "CLIP" : "SigLIP"));
  const int64_t Ht = c.text.hidden_size, Hv = c.vision.hidden_size, P = c.projection_dim;
  const int64_t side = c.image_size / c.patch_size, patches = side * side;
  const int64_t patch_dim = 3 * int64_t(c.patch_size) * c.patch_size;
  Tensor t, g, beta, bias;

  // Text tower.
  ORCHID_ASSIGN_OR_RETURN(t, r.Read(anchor, {c.vocab_size, Ht}));
  ORCHID_ASSIGN_OR_RETURN(text_.embed.word, b.AddTable(std::move(t)));
  ORCHID_ASSIGN_OR_RETURN(t, r.Read("text_model.embeddings.position_embedding.weight",
                                    {c.max_position_embeddings, Ht}));
  ORCHID_ASSIGN_OR_RETURN(text_.embed.position, b.AddTable(std::move(t)));
  ORCHID_RETURN_IF_ERROR(LoadTower(r, "text_model.", "text", c.text, clip_, b, &text_));
  ORCHID_RETURN_IF_ERROR(r.ReadNorm("text_model.final_layer_norm", Ht, &g, &beta));
  ORCHID_ASSIGN_OR_RETURN(text_.final_norm,
                          b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, c.text.layer_norm_eps));
  if (clip_) {
    ORCHID_ASSIGN_OR_RETURN(t, r.Read("text_projection.weight", {P, Ht}));
    ORCHID_ASSIGN_OR_RETURN(text_proj_, b.AddLinear(t, nullptr));
  } else {
    ORCHID_ASSIGN_OR_RETURN(t, r.Read("text_model.head.weight", {P, Ht}));
    ORCHID_ASSIGN_OR_RETURN(bias, r.Read("text_model.head.bias", {P}));
    ORCHID_ASSIGN_OR_RETURN(text_proj_, b.AddLinear(t, &bias));
  }

  // Vision tower: the token "vocabulary" is {patch, class}: row 0 is what every patch starts
  // from (SigLIP's convolution bias; zeros for CLIP), row 1 CLIP's class embedding.
  Tensor word({2, Hv});
  if (clip_) {
    ORCHID_ASSIGN_OR_RETURN(t, r.Read("vision_model.embeddings.class_embedding", {Hv}));
    std::memcpy(word.data() + Hv, t.data(), size_t(Hv) * sizeof(float));
  } else {
    ORCHID_ASSIGN_OR_RETURN(t, r.Read("vision_model.embeddings.patch_embedding.bias", {Hv}));
    std::memcpy(word.data(), t.data(), size_t(Hv) * sizeof(float));
  }
  ORCHID_ASSIGN_OR_RETURN(vision_.embed.word, b.AddTable(std::move(word)));
  const int64_t positions = patches + (clip_ ? 1 : 0);
  ORCHID_ASSIGN_OR_RETURN(
      t, r.Read("vision_model.embeddings.position_embedding.weight", {positions, Hv}));
  ORCHID_ASSIGN_OR_RETURN(vision_.embed.position, b.AddTable(std::move(t)));
  ORCHID_ASSIGN_OR_RETURN(t, r.Read("vision_model.embeddings.patch_embedding.weight",
                                    {Hv, 3, c.patch_size, c.patch_size}));
  Tensor patch({Hv, patch_dim});  // [Hv, 3, p, p] read as [Hv, 3 p p]: the same bytes
  std::memcpy(patch.data(), t.data(), t.numel() * sizeof(float));
  ORCHID_ASSIGN_OR_RETURN(patch_, b.AddLinear(patch, nullptr));
  ORCHID_RETURN_IF_ERROR(LoadTower(r, "vision_model.", "vision", c.vision, false, b, &vision_));
  if (clip_) {
    ORCHID_RETURN_IF_ERROR(r.ReadNorm("vision_model.pre_layrnorm", Hv, &g, &beta));
    ORCHID_ASSIGN_OR_RETURN(
        pre_norm_, b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, c.vision.layer_norm_eps));
  }
  ORCHID_RETURN_IF_ERROR(r.ReadNorm("vision_model.post_layernorm", Hv, &g, &beta));
  ORCHID_ASSIGN_OR_RETURN(vision_.final_norm,
                          b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, c.vision.layer_norm_eps));
  if (clip_) {
    ORCHID_ASSIGN_OR_RETURN(t, r.Read("visual_projection.weight", {P, Hv}));
    ORCHID_ASSIGN_OR_RETURN(visual_proj_, b.AddLinear(t, nullptr));
  } else {
    ORCHID_RETURN_IF_ERROR(LoadSiglipHead(r, b));
  }
  pixels_ = b.AddBuffer("pixels", Rows::kTokens, int(patch_dim));
  output_ = b.AddBuffer("embedding", Rows::kSequences, int(P), Precision::kAccumulator);
  hidden_ = text_.all.x;
  return Status::Ok();
}

Status DualEncoder::Mlp(ops::Backend& b, Act act, ops::LinearWeight fc1, ops::LinearWeight fc2,
                        Buffer in, Buffer ffn, Buffer residual) {
  if (act == Act::kGelu) {
    ORCHID_RETURN_IF_ERROR(b.Linear(in, fc1, ffn, Epilogue::kGelu));
  } else {
    ORCHID_RETURN_IF_ERROR(b.Linear(in, fc1, ffn));
    ORCHID_RETURN_IF_ERROR(b.Activate(
        ffn, act == Act::kQuickGelu ? ops::Activation::kQuickGelu : ops::Activation::kGeluTanh));
  }
  return b.Linear(ffn, fc2, residual, Epilogue::kResidualAdd);
}

// The pre-LN layers on t.all.x; with `prunable`, the last one only for the pooled rows (then
// *out is t.last).
Status DualEncoder::Layers(ops::Backend& b, const Tower& t, bool prunable,
                           const Activations** out) const {
  const Activations* a = &t.all;
  for (size_t li = 0; li < t.layers.size(); ++li) {
    const Layer& l = t.layers[li];
    ORCHID_RETURN_IF_ERROR(b.Norm(t.all.x, l.ln1, t.all.ln));
    ORCHID_RETURN_IF_ERROR(b.Linear(t.all.ln, l.qkv, t.qkv));
    ORCHID_ASSIGN_OR_RETURN(
        a, AttendPrunable(b, t.qkv, t.attention, prunable && li + 1 == t.layers.size(), t.all,
                          t.last, &Activations::x));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->ctx, l.out, a->x, Epilogue::kResidualAdd));
    ORCHID_RETURN_IF_ERROR(b.Norm(a->x, l.ln2, a->ln));
    ORCHID_RETURN_IF_ERROR(Mlp(b, t.c.act, l.fc1, l.fc2, a->ln, a->ffn, a->x));
  }
  *out = a;
  return Status::Ok();
}

Status DualEncoder::Forward(ops::Backend& b) const {
  const Activations* a = nullptr;
  if (!b.image_batch()) {
    ORCHID_RETURN_IF_ERROR(b.Embed(text_.embed, text_.all.x));
    ORCHID_RETURN_IF_ERROR(Layers(b, text_, true, &a));
    ORCHID_RETURN_IF_ERROR(b.Pool(a->x, text_.pooled, false));
    ORCHID_RETURN_IF_ERROR(b.Norm(text_.pooled, text_.final_norm, text_.pooled));
    ORCHID_RETURN_IF_ERROR(b.Linear(text_.pooled, text_proj_, output_));
    return b.Normalize(output_);
  }
  const Tower& v = vision_;
  ORCHID_RETURN_IF_ERROR(b.Embed(v.embed, v.all.x));
  ORCHID_RETURN_IF_ERROR(b.Pixels(pixels_));
  ORCHID_RETURN_IF_ERROR(b.Linear(pixels_, patch_, v.all.x, Epilogue::kResidualAdd));
  if (clip_) ORCHID_RETURN_IF_ERROR(b.Norm(v.all.x, pre_norm_, v.all.x));
  // SigLIP's head reads every token of the last layer: no pruning.
  ORCHID_RETURN_IF_ERROR(Layers(b, v, clip_, &a));
  if (clip_) {
    ORCHID_RETURN_IF_ERROR(b.Pool(a->x, v.pooled, false));
    ORCHID_RETURN_IF_ERROR(b.Norm(v.pooled, v.final_norm, v.pooled));
    ORCHID_RETURN_IF_ERROR(b.Linear(v.pooled, visual_proj_, output_));
    return b.Normalize(output_);
  }
  ORCHID_RETURN_IF_ERROR(b.Norm(v.all.x, v.final_norm, v.all.ln));
  ORCHID_RETURN_IF_ERROR(b.Linear(v.all.ln, head_.qkv, head_.qkv_rows));
  ORCHID_RETURN_IF_ERROR(b.Attention(head_.qkv_rows, head_.ctx, v.attention));
  ORCHID_RETURN_IF_ERROR(b.Pool(head_.ctx, head_.ctx_pooled, false));
  ORCHID_RETURN_IF_ERROR(b.Linear(head_.ctx_pooled, head_.out, output_));
  ORCHID_RETURN_IF_ERROR(b.Norm(output_, head_.norm, head_.ln));
  ORCHID_RETURN_IF_ERROR(Mlp(b, v.c.act, head_.fc1, head_.fc2, head_.ln, head_.ffn, output_));
  return b.Normalize(output_);
}

}  // namespace

Result<std::unique_ptr<Family>> LoadDualEncoder(const ModelSpec& spec, const Checkpoint& file,
                                                ops::Backend& backend) {
  return LoadAs<DualEncoder>(spec, file, backend);
}

}  // namespace orchid
