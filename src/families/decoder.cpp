// The decoder family: Llama-style decoders as embedders or rerankers, as Hugging Face's
// Qwen3Model, Qwen2Model, MistralModel and LlamaModel (Qwen3-Embedding, Qwen3-Reranker,
// pplx-embed-v1, gte-Qwen2, e5-mistral, SFR-Embedding, Llama-based embedders).
//
//   h = embed_tokens[id]                                   (an fp32 residual stream)
//   per layer:  x = RMSNorm(h)
//               q, k, v = x Wq^T, x Wk^T, x Wv^T      (+ biases where the config has them; k, v
//                                                       with num_kv_heads heads)
//               q, k = RoPE(RMSNorm_head(q)), RoPE(RMSNorm_head(k))   (neox layout, scaled
//                                                       as the config says; the per-head
//                                                       RMSNorm is Qwen3's only)
//               h += Wo Attention(q, k, v)             (causal, or bidirectional per config;
//                                                       grouped-query heads; a sliding window
//                                                       on the layers the config names)
//               h += Wdown (silu(x' Wgate^T) * x' Wup^T), x' = RMSNorm(h)
//   out = RMSNorm(h)
//
// Gemma 3 (EmbeddingGemma) is the same loop with its switches (DecoderConfig::gemma): embeddings
// times sqrt(hidden), (1 + w) norm weights, a norm after each sublayer before its residual add,
// a GeGLU (tanh GELU) MLP, its own score scale, and sliding-window local layers with their own
// rotary theta.
//
// Q, K, V are fused into one projection, gate and up into another. As a reranker
// (Qwen3-Reranker) the head maps the pooled last token to
// logit(yes) - logit(no) = h . (E[yes] - E[no]), from the two rows of the output projection
// (the tied embedding matrix, or lm_head when untied) instead of the full vocabulary.
#include <cmath>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/embedding_head.h"
#include "families/family_loaders.h"

namespace orchid {
namespace {

using ops::Buffer;
using ops::Epilogue;
using ops::Precision;
using ops::Rows;

class Decoder final : public Family {
 public:
  Status Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b);
  Status Forward(ops::Backend& b) const override;

 private:
  struct Layer {
    ops::NormWeight input_norm, post_attention_norm;
    ops::NormWeight pre_feedforward_norm, post_feedforward_norm;  // Gemma 3
    int window = 0;  // a sliding window (Mistral, Qwen2 / Qwen3 layers, Gemma 3's local layers)
    ops::LinearWeight qkv, o, gate_up, down;
    ops::NormWeight q_norm, k_norm;
  };
  struct Activations {
    Buffer residual, x, ctx, gate_up, act;
    Buffer sublayer;  // Gemma 3: a sublayer's output, normed before its residual add
  };
  Status ForwardGemmaLayer(ops::Backend& b, const Layer& l, const Activations& a) const;

  DecoderConfig c_;
  bool reranker_ = false;
  ops::EmbedOp embed_;
  std::vector<Layer> layers_;
  ops::NormWeight final_norm_;
  EmbeddingHead embedding_;
  ops::LinearWeight yes_minus_no_;
  ops::AttentionOptions attention_;
  ops::RopeOptions rope_;
  Buffer qkv_;
  Activations all_, pooled_;
  Buffer pooled_vec_;
};

Status Decoder::Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b) {
  c_ = spec.decoder;
  reranker_ = spec.head == HeadKind::kYesNoLogit;
  if (spec.head != HeadKind::kNone && !reranker_) {
    return Status::Internal("the decoder family has no head of this kind");
  }
  const std::string anchor = "embed_tokens.weight";
  ORCHID_ASSIGN_OR_RETURN(const WeightReader r, FamilyWeights(file, anchor, "decoder"));
  const int64_t H = c_.hidden_size, I = c_.intermediate_size, D = c_.head_dim;
  const int64_t Q = c_.q_size(), KV = c_.kv_size();
  const float eps = c_.rms_norm_eps;
  const auto rms = ops::NormKind::kRmsNorm;
  // An RMSNorm's weight; Gemma's norms multiply by (1 + w).
  auto add_norm = [&](const std::string& name, int64_t width) -> Result<ops::NormWeight> {
    Tensor w;
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(name, {width}));
    if (c_.gemma) {
      for (int64_t j = 0; j < width; ++j) w.data()[j] += 1.0f;
    }
    return b.AddNorm(rms, w, nullptr, eps);
  };

  Tensor embed;
  ORCHID_ASSIGN_OR_RETURN(embed, r.Read(anchor, {c_.vocab_size, H}));
  if (reranker_) {
    // The output projection: lm_head when the checkpoint has one (untied), else the tied
    // embedding matrix. The head is its yes row minus its no row.
    const Tensor* out = &embed;
    Tensor lm_head;
    if (file.Find("lm_head.weight") != nullptr) {
      ORCHID_ASSIGN_OR_RETURN(lm_head, r.ReadUnprefixed("lm_head.weight", {c_.vocab_size, H}));
      out = &lm_head;
    } else if (!c_.tie_word_embeddings) {
      return Status::Corrupt(file.path() +
                             ": tie_word_embeddings is false but there is no lm_head.weight");
    }
    Tensor diff({1, H});
    const float* yes = out->data() + size_t(spec.yes_token) * size_t(H);
    const float* no = out->data() + size_t(spec.no_token) * size_t(H);
    for (int64_t j = 0; j < H; ++j) diff.data()[j] = yes[j] - no[j];
    ORCHID_ASSIGN_OR_RETURN(yes_minus_no_, b.AddLinear(diff, nullptr, {.full_precision = true}));
  }
  if (c_.gemma) {
    // Gemma3TextScaledWordEmbedding: the looked-up rows times sqrt(hidden_size), in fp32.
    const float scale = std::sqrt(float(H));
    for (size_t j = 0; j < embed.numel(); ++j) embed.data()[j] *= scale;
  }
  ORCHID_ASSIGN_OR_RETURN(embed_.word, b.AddTable(std::move(embed)));
  layers_.resize(size_t(c_.num_hidden_layers));
  for (int i = 0; i < c_.num_hidden_layers; ++i) {
    Layer& l = layers_[size_t(i)];
    const std::string p = "layers." + std::to_string(i) + ".";
    Tensor q, k, v, w, g, u, qb, kb, vb, bias, gb, ub;
    ORCHID_ASSIGN_OR_RETURN(q, r.Read(p + "self_attn.q_proj.weight", {Q, H}));
    ORCHID_ASSIGN_OR_RETURN(k, r.Read(p + "self_attn.k_proj.weight", {KV, H}));
    ORCHID_ASSIGN_OR_RETURN(v, r.Read(p + "self_attn.v_proj.weight", {KV, H}));
    if (c_.qkv_bias) {
      ORCHID_ASSIGN_OR_RETURN(qb, r.Read(p + "self_attn.q_proj.bias", {Q}));
      ORCHID_ASSIGN_OR_RETURN(kb, r.Read(p + "self_attn.k_proj.bias", {KV}));
      ORCHID_ASSIGN_OR_RETURN(vb, r.Read(p + "self_attn.v_proj.bias", {KV}));
      const Tensor qkv_bias = Concat0({&qb, &kb, &vb});
      ORCHID_ASSIGN_OR_RETURN(l.qkv, b.AddLinear(Concat0({&q, &k, &v}), &qkv_bias));
    } else {
      ORCHID_ASSIGN_OR_RETURN(l.qkv, b.AddLinear(Concat0({&q, &k, &v}), nullptr));
    }
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "self_attn.o_proj.weight", {H, Q}));
    if (c_.o_bias) {
      ORCHID_ASSIGN_OR_RETURN(bias, r.Read(p + "self_attn.o_proj.bias", {H}));
    }
    ORCHID_ASSIGN_OR_RETURN(l.o, b.AddLinear(w, c_.o_bias ? &bias : nullptr));
    if (c_.qk_norm) {
      ORCHID_ASSIGN_OR_RETURN(l.q_norm, add_norm(p + "self_attn.q_norm.weight", D));
      ORCHID_ASSIGN_OR_RETURN(l.k_norm, add_norm(p + "self_attn.k_norm.weight", D));
    }
    ORCHID_ASSIGN_OR_RETURN(g, r.Read(p + "mlp.gate_proj.weight", {I, H}));
    ORCHID_ASSIGN_OR_RETURN(u, r.Read(p + "mlp.up_proj.weight", {I, H}));
    if (c_.mlp_bias) {
      ORCHID_ASSIGN_OR_RETURN(gb, r.Read(p + "mlp.gate_proj.bias", {I}));
      ORCHID_ASSIGN_OR_RETURN(ub, r.Read(p + "mlp.up_proj.bias", {I}));
      const Tensor gate_up_bias = Concat0({&gb, &ub});
      ORCHID_ASSIGN_OR_RETURN(l.gate_up, b.AddLinear(Concat0({&g, &u}), &gate_up_bias));
      ORCHID_ASSIGN_OR_RETURN(bias, r.Read(p + "mlp.down_proj.bias", {H}));
    } else {
      ORCHID_ASSIGN_OR_RETURN(l.gate_up, b.AddLinear(Concat0({&g, &u}), nullptr));
    }
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "mlp.down_proj.weight", {H, I}));
    ORCHID_ASSIGN_OR_RETURN(l.down,
                            b.AddLinear(w, c_.mlp_bias ? &bias : nullptr, {.outlier_input = true}));
    ORCHID_ASSIGN_OR_RETURN(l.input_norm, add_norm(p + "input_layernorm.weight", H));
    ORCHID_ASSIGN_OR_RETURN(l.post_attention_norm,
                            add_norm(p + "post_attention_layernorm.weight", H));
    if (c_.gemma) {
      ORCHID_ASSIGN_OR_RETURN(l.pre_feedforward_norm,
                              add_norm(p + "pre_feedforward_layernorm.weight", H));
      ORCHID_ASSIGN_OR_RETURN(l.post_feedforward_norm,
                              add_norm(p + "post_feedforward_layernorm.weight", H));
    }
    // A window no shorter than the longest input cuts nothing (causal: i - j < W always;
    // bidirectional: |i - j| < W): dropped, so that backends without windows run it.
    l.window =
        c_.layer_window[size_t(i)] < spec.info.max_seq_length ? c_.layer_window[size_t(i)] : 0;
  }
  ORCHID_ASSIGN_OR_RETURN(final_norm_, add_norm("norm.weight", H));

  attention_ = {c_.num_attention_heads, c_.num_key_value_heads, c_.head_dim, c_.causal};
  attention_.scale = c_.attention_scale;
  rope_.num_heads = c_.num_attention_heads;
  rope_.num_kv_heads = c_.num_key_value_heads;
  rope_.head_dim = c_.head_dim;
  rope_.theta = c_.rope_theta;
  rope_.scaling = c_.rope_scaling;
  qkv_ = b.AddBuffer("qkv", Rows::kTokens, int(Q + 2 * KV));
  for (Rows rows : {Rows::kTokens, Rows::kPooled}) {
    Activations& a = rows == Rows::kTokens ? all_ : pooled_;
    a.residual = b.AddBuffer("residual", rows, int(H), Precision::kAccumulator);
    a.x = b.AddBuffer("normed", rows, int(H));
    a.ctx = b.AddBuffer("context", rows, int(Q));
    a.gate_up = b.AddBuffer("gate_up", rows, int(2 * I));
    a.act = b.AddBuffer("mlp", rows, int(I));
    if (c_.gemma) a.sublayer = b.AddBuffer("sublayer", rows, int(H));
  }
  hidden_ = all_.x;  // after the final norm
  if (reranker_) {
    pooled_vec_ = b.AddBuffer("pooled", Rows::kSequences, int(H), Precision::kAccumulator);
    output_ = b.AddBuffer("logits", Rows::kSequences, 1, Precision::kAccumulator);
  } else {
    ORCHID_RETURN_IF_ERROR(embedding_.Load(spec, b));
    output_ = embedding_.output();
    if (embedding_.tokens().valid()) hidden_ = embedding_.tokens();
  }
  return Status::Ok();
}

// Gemma 3's layer after attention: the norm after each sublayer, before its residual add.
//   h += norm(o_proj(ctx));  h += norm(down(gelu_tanh(gate(x')) * up(x'))), x' = norm(h)
Status Decoder::ForwardGemmaLayer(ops::Backend& b, const Layer& l, const Activations& a) const {
  ORCHID_RETURN_IF_ERROR(b.Linear(a.ctx, l.o, a.sublayer));
  ORCHID_RETURN_IF_ERROR(b.Norm(a.sublayer, l.post_attention_norm, a.sublayer));
  ORCHID_RETURN_IF_ERROR(b.Add(a.sublayer, a.residual));
  ORCHID_RETURN_IF_ERROR(b.Norm(a.residual, l.pre_feedforward_norm, a.x));
  ORCHID_RETURN_IF_ERROR(b.Linear(a.x, l.gate_up, a.gate_up));
  ORCHID_RETURN_IF_ERROR(b.Glu(a.gate_up, a.act, ops::Gate::kGeluTanh));
  ORCHID_RETURN_IF_ERROR(b.Linear(a.act, l.down, a.sublayer));
  ORCHID_RETURN_IF_ERROR(b.Norm(a.sublayer, l.post_feedforward_norm, a.sublayer));
  return b.Add(a.sublayer, a.residual);
}

Status Decoder::Forward(ops::Backend& b) const {
  ORCHID_RETURN_IF_ERROR(b.Embed(embed_, all_.residual));
  const Activations* a = &all_;
  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    ops::RopeOptions rope = rope_;
    rope.q_norm = l.q_norm;
    rope.k_norm = l.k_norm;
    ops::AttentionOptions attention = attention_;
    attention.window = l.window;
    if (l.window > 0 && c_.gemma) rope.theta = c_.local_rope_theta;  // Gemma 3's local layers
    ORCHID_RETURN_IF_ERROR(b.Norm(all_.residual, l.input_norm, all_.x));
    ORCHID_RETURN_IF_ERROR(b.Linear(all_.x, l.qkv, qkv_));
    ORCHID_RETURN_IF_ERROR(b.QkNormRope(qkv_, rope));
    ORCHID_ASSIGN_OR_RETURN(a, AttendPrunable(b, qkv_, attention, li + 1 == layers_.size(), all_,
                                              pooled_, &Activations::residual));
    if (c_.gemma) {
      ORCHID_RETURN_IF_ERROR(ForwardGemmaLayer(b, l, *a));
      continue;
    }
    ORCHID_RETURN_IF_ERROR(b.Linear(a->ctx, l.o, a->residual, Epilogue::kResidualAdd));
    ORCHID_RETURN_IF_ERROR(b.Norm(a->residual, l.post_attention_norm, a->x));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->x, l.gate_up, a->gate_up));
    ORCHID_RETURN_IF_ERROR(b.Glu(a->gate_up, a->act));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->act, l.down, a->residual, Epilogue::kResidualAdd));
  }
  ORCHID_RETURN_IF_ERROR(b.Norm(a->residual, final_norm_, a->x));
  if (!reranker_) return embedding_.Forward(b, a->x);
  ORCHID_RETURN_IF_ERROR(b.Pool(a->x, pooled_vec_, false));
  return b.Linear(pooled_vec_, yes_minus_no_, output_);
}

}  // namespace

Result<std::unique_ptr<Family>> LoadDecoder(const ModelSpec& spec, const Checkpoint& file,
                                            ops::Backend& backend) {
  return LoadAs<Decoder>(spec, file, backend);
}

}  // namespace orchid
