// Post-LN encoders with rotary positions and a gated MLP: NomicBERT (nomic-embed-text v1 /
// v1.5, nomic-bert-2048) and Alibaba's GTE v1.5 / gte-multilingual ("new"), embedders and GTE
// rerankers (*ForSequenceClassification), in the tensor names their published checkpoints use.
//
//   h = LayerNorm(word[id] + token_type[type])             (no position embeddings)
//   per layer:  h = LayerNorm(h + Wo Attention(RoPE(Wqkv h)))
//               h = LayerNorm(h + Wdown (act(Wgate h) * Wup h))   (NomicBERT: SiLU; GTE: the
//                                                                 config's hidden_act)
//   rerankers: classifier(tanh(pooler.dense(h_cls)))
//
// NomicBERT has no biases (unless its config's *_bias flags say so); GTE biases Wqkv, Wo and
// Wdown. With CLS pooling the last layer runs after attention on the pooled rows only.
//
// jina-embeddings-v3 (transformers' JinaEmbeddingsV3Model) is the same layer with biased Q/K/V/O
// and a plain MLP, h = LayerNorm(h + fc2(gelu(fc1 h))), rotary theta 20000, and task adapters:
// LoRA deltas of the word embeddings and of each layer's QKV, output, fc1 and fc2 projections,
// one set per task, picked per sequence (RaggedBatch::adapters). One base pass serves every
// task of a batch; each adapted layer adds its rank-r delta to the rows of its task's sequences
// (LoraAdd) before the layer's activation or norm: the word embeddings' before the embedding
// LayerNorm, fc1's before its GELU.
#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/classifier_head.h"
#include "families/embedding_head.h"
#include "families/family_loaders.h"
#include "families/lora_weights.h"

namespace orchid {
namespace {

using ops::Buffer;
using ops::Epilogue;
using ops::Rows;
using Variant = RopeEncoderConfig::Variant;

// [second half | first half] of a [2n, k] tensor's rows: GTE's up_gate_proj is [up | gate],
// the Glu op takes [gate | up].
Tensor SwapHalves(const Tensor& t) {
  const int64_t n = t.dim(0) / 2, k = t.rank() > 1 ? t.dim(1) : 1;
  Tensor out(t.shape());
  const size_t half = size_t(n * k) * sizeof(float);
  std::memcpy(out.data(), t.data() + n * k, half);
  std::memcpy(out.data() + n * k, t.data(), half);
  return out;
}

ops::Gate GateOf(RopeEncoderConfig::Gate g) {
  switch (g) {
    case RopeEncoderConfig::Gate::kGelu:
      return ops::Gate::kGelu;
    case RopeEncoderConfig::Gate::kGeluTanh:
      return ops::Gate::kGeluTanh;
    case RopeEncoderConfig::Gate::kSilu:
      break;
  }
  return ops::Gate::kSilu;
}

class RopeEncoder final : public Family {
 public:
  Status Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b);
  Status Forward(ops::Backend& b) const override;

 private:
  struct Layer {
    ops::LinearWeight qkv, o, gate_up, down;  // gate_up: [2I | I (plain MLP), H]
    ops::NormWeight attn_norm, mlp_norm;
    ops::LoraWeight lora_qkv, lora_o, lora_up, lora_down;  // task adapters (invalid: none)
  };
  struct Activations {
    Buffer x, ctx, gate_up, act;
  };

  RopeEncoderConfig c_;
  bool classifier_ = false;
  ops::EmbedOp embed_;
  // With a word-embedding adapter: the embedding sum without its norm, then the delta, then
  // the norm (embed_norm_).
  ops::LoraWeight lora_word_, lora_type_;
  ops::NormWeight embed_norm_;
  std::vector<Layer> layers_;
  ClassifierHead classifier_head_;
  EmbeddingHead embedding_;
  ops::AttentionOptions attention_;
  ops::RopeOptions rope_;
  ops::Gate gate_ = ops::Gate::kSilu;
  Buffer qkv_;
  Activations all_, pooled_;
};

Status RopeEncoder::Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b) {
  c_ = spec.rope_encoder;
  classifier_ = spec.head == HeadKind::kBertPooler;
  if (spec.head != HeadKind::kNone && !classifier_) {
    return Status::Internal("the rotary encoder family has no head of this kind");
  }
  const bool nomic = c_.variant == Variant::kNomic;
  const bool jina = c_.variant == Variant::kJinaV3;
  const std::string anchor = "embeddings.word_embeddings.weight";
  ORCHID_ASSIGN_OR_RETURN(const WeightReader r, FamilyWeights(file, anchor,
                                                              nomic  ? "NomicBERT"
                                                              : jina ? "jina-embeddings-v3"
                                                                     : "GTE"));
  const int64_t H = c_.hidden_size, I = c_.intermediate_size;
  const float eps = c_.layer_norm_eps;
  auto norm = [&](const std::string& base) -> Result<ops::NormWeight> {
    Tensor g, beta;
    ORCHID_RETURN_IF_ERROR(r.ReadNorm(base, H, &g, &beta));
    return b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, eps);
  };
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
  if (c_.type_vocab_size > 0) {
    ORCHID_ASSIGN_OR_RETURN(
        t, r.Read("embeddings.token_type_embeddings.weight", {c_.type_vocab_size, H}));
    ORCHID_ASSIGN_OR_RETURN(embed_.type, b.AddTable(std::move(t)));
  }
  // jina-embeddings-v3 as transformers saves it keeps jina's names (emb_ln,
  // encoder.layers.N.mixer.*, norm1 / norm2: the conversion mapping reverted); transformers'
  // own in-memory names are read too.
  const bool jina_saved = jina && r.Has("encoder.layers.0.mixer.Wqkv.weight");
  ORCHID_ASSIGN_OR_RETURN(embed_.norm,
                          norm(nomic || jina_saved ? "emb_ln" : "embeddings.LayerNorm"));

  layers_.resize(size_t(c_.num_hidden_layers));
  for (int i = 0; i < c_.num_hidden_layers; ++i) {
    Layer& l = layers_[size_t(i)];
    const std::string n = std::to_string(i);
    if (jina) {
      const std::string p = (jina_saved ? "encoder.layers." : "layers.") + n + ".";
      if (jina_saved) {
        ORCHID_ASSIGN_OR_RETURN(l.qkv, linear(p + "mixer.Wqkv", 3 * H, H, true));
      } else {
        Tensor q, k, v, qb, kb, vb;
        const std::string a = p + "self_attn.";
        ORCHID_ASSIGN_OR_RETURN(q, r.Read(a + "q_proj.weight", {H, H}));
        ORCHID_ASSIGN_OR_RETURN(k, r.Read(a + "k_proj.weight", {H, H}));
        ORCHID_ASSIGN_OR_RETURN(v, r.Read(a + "v_proj.weight", {H, H}));
        ORCHID_ASSIGN_OR_RETURN(qb, r.Read(a + "q_proj.bias", {H}));
        ORCHID_ASSIGN_OR_RETURN(kb, r.Read(a + "k_proj.bias", {H}));
        ORCHID_ASSIGN_OR_RETURN(vb, r.Read(a + "v_proj.bias", {H}));
        const Tensor bias = Concat0({&qb, &kb, &vb});
        ORCHID_ASSIGN_OR_RETURN(l.qkv, b.AddLinear(Concat0({&q, &k, &v}), &bias));
      }
      ORCHID_ASSIGN_OR_RETURN(
          l.o, linear(p + (jina_saved ? "mixer.out_proj" : "self_attn.o_proj"), H, H, true));
      ORCHID_ASSIGN_OR_RETURN(l.attn_norm,
                              norm(p + (jina_saved ? "norm1" : "post_attention_layernorm")));
      ORCHID_ASSIGN_OR_RETURN(l.gate_up, linear(p + "mlp.fc1", I, H, true));
      ORCHID_ASSIGN_OR_RETURN(l.down, linear(p + "mlp.fc2", H, I, true, {.outlier_input = true}));
      ORCHID_ASSIGN_OR_RETURN(l.mlp_norm, norm(p + (jina_saved ? "norm2" : "post_mlp_layernorm")));
    } else if (nomic) {
      const std::string p = "encoder.layers." + n + ".";
      ORCHID_ASSIGN_OR_RETURN(l.qkv, linear(p + "attn.Wqkv", 3 * H, H, c_.qkv_bias));
      ORCHID_ASSIGN_OR_RETURN(l.o, linear(p + "attn.out_proj", H, H, c_.qkv_bias));
      ORCHID_ASSIGN_OR_RETURN(l.attn_norm, norm(p + "norm1"));
      // fc11 is the up projection, fc12 the gated one (transformers' conversion mapping).
      Tensor up, gate, ub, gb;
      ORCHID_ASSIGN_OR_RETURN(up, r.Read(p + "mlp.fc11.weight", {I, H}));
      ORCHID_ASSIGN_OR_RETURN(gate, r.Read(p + "mlp.fc12.weight", {I, H}));
      if (c_.mlp_in_bias) {
        ORCHID_ASSIGN_OR_RETURN(ub, r.Read(p + "mlp.fc11.bias", {I}));
        ORCHID_ASSIGN_OR_RETURN(gb, r.Read(p + "mlp.fc12.bias", {I}));
      }
      const Tensor bias = c_.mlp_in_bias ? Concat0({&gb, &ub}) : Tensor();
      ORCHID_ASSIGN_OR_RETURN(l.gate_up,
                              b.AddLinear(Concat0({&gate, &up}), c_.mlp_in_bias ? &bias : nullptr));
      ORCHID_ASSIGN_OR_RETURN(
          l.down, linear(p + "mlp.fc2", H, I, c_.mlp_out_bias, {.outlier_input = true}));
      ORCHID_ASSIGN_OR_RETURN(l.mlp_norm, norm(p + "norm2"));
    } else {
      const std::string p = "encoder.layer." + n + ".";
      ORCHID_ASSIGN_OR_RETURN(l.qkv, linear(p + "attention.qkv_proj", 3 * H, H, c_.qkv_bias));
      ORCHID_ASSIGN_OR_RETURN(l.o, linear(p + "attention.o_proj", H, H, c_.qkv_bias));
      ORCHID_ASSIGN_OR_RETURN(l.attn_norm, norm(p + "attn_ln"));
      ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "mlp.up_gate_proj.weight", {2 * I, H}));
      ORCHID_ASSIGN_OR_RETURN(l.gate_up, b.AddLinear(SwapHalves(t), nullptr));
      ORCHID_ASSIGN_OR_RETURN(
          l.down, linear(p + "mlp.down_proj", H, I, c_.mlp_out_bias, {.outlier_input = true}));
      ORCHID_ASSIGN_OR_RETURN(l.mlp_norm, norm(p + "mlp_ln"));
    }
  }

  if (!spec.adapters.empty()) {
    ORCHID_ASSIGN_OR_RETURN(LoraWeights lora,
                            ReadLoraWeights(spec.adapters, c_.num_hidden_layers, int(H), int(I),
                                            c_.vocab_size, c_.type_vocab_size));
    ORCHID_ASSIGN_OR_RETURN(lora_word_,
                            b.AddLora(lora.word, int(H), c_.vocab_size, ops::LoraInput::kTokenIds));
    ORCHID_ASSIGN_OR_RETURN(
        lora_type_, b.AddLora(lora.type, int(H), c_.type_vocab_size, ops::LoraInput::kTypeIds));
    if (lora_word_.valid() || lora_type_.valid()) {
      std::swap(embed_norm_, embed_.norm);  // the norm after the deltas
    }
    for (size_t i = 0; i < layers_.size(); ++i) {
      const LoraLayerParts& p = lora.layers[i];
      Layer& l = layers_[i];
      ORCHID_ASSIGN_OR_RETURN(l.lora_qkv, b.AddLora(p.qkv, int(3 * H), int(H)));
      ORCHID_ASSIGN_OR_RETURN(l.lora_o, b.AddLora(p.o, int(H), int(H)));
      ORCHID_ASSIGN_OR_RETURN(l.lora_up, b.AddLora(p.fc1, int(I), int(H)));
      ORCHID_ASSIGN_OR_RETURN(l.lora_down, b.AddLora(p.fc2, int(H), int(I)));
    }
  }

  const int heads = c_.num_attention_heads;
  attention_ = {heads, heads, c_.head_dim(), false};
  rope_.num_heads = rope_.num_kv_heads = heads;
  rope_.head_dim = c_.head_dim();
  rope_.theta = c_.rope_theta;
  rope_.inv_freq_divisor = c_.rope_inv_freq_divisor;
  gate_ = GateOf(c_.gate);
  qkv_ = b.AddBuffer("qkv", Rows::kTokens, int(3 * H));
  for (Rows rows : {Rows::kTokens, Rows::kPooled}) {
    Activations& a = rows == Rows::kTokens ? all_ : pooled_;
    a.x = b.AddBuffer("hidden", rows, int(H));
    a.ctx = b.AddBuffer("context", rows, int(H));
    if (c_.gated) {
      a.gate_up = b.AddBuffer("gate_up", rows, int(2 * I));
      a.act = b.AddBuffer("mlp", rows, int(I));
    } else {
      a.act = b.AddBuffer("mlp", rows, int(I));
    }
  }
  hidden_ = all_.x;
  if (classifier_) {
    // BERT's pooler (under the model's prefix) and the classifier.
    ClassifierHeadLayout head;
    head.dense_under_prefix = true;
    ORCHID_RETURN_IF_ERROR(classifier_head_.Load(head, r, H, c_.num_labels, b));
    output_ = classifier_head_.output();
  } else {
    ORCHID_RETURN_IF_ERROR(embedding_.Load(spec, b));
    output_ = embedding_.output();
    if (embedding_.tokens().valid()) hidden_ = embedding_.tokens();
  }
  return Status::Ok();
}

Status RopeEncoder::Forward(ops::Backend& b) const {
  ORCHID_RETURN_IF_ERROR(b.Embed(embed_, all_.x));
  if (embed_norm_.valid()) {  // word / token type adapters: their deltas before the norm
    if (lora_word_.valid()) ORCHID_RETURN_IF_ERROR(b.LoraAdd(Buffer{}, lora_word_, all_.x));
    if (lora_type_.valid()) ORCHID_RETURN_IF_ERROR(b.LoraAdd(Buffer{}, lora_type_, all_.x));
    ORCHID_RETURN_IF_ERROR(b.Norm(all_.x, embed_norm_, all_.x));
  }
  const Activations* a = &all_;
  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    ORCHID_RETURN_IF_ERROR(b.Linear(all_.x, l.qkv, qkv_));
    if (l.lora_qkv.valid()) ORCHID_RETURN_IF_ERROR(b.LoraAdd(all_.x, l.lora_qkv, qkv_));
    ORCHID_RETURN_IF_ERROR(b.QkNormRope(qkv_, rope_));
    ORCHID_ASSIGN_OR_RETURN(a, AttendPrunable(b, qkv_, attention_, li + 1 == layers_.size(), all_,
                                              pooled_, &Activations::x));
    ORCHID_RETURN_IF_ERROR(b.Linear(a->ctx, l.o, a->x, Epilogue::kResidualAdd));
    if (l.lora_o.valid()) ORCHID_RETURN_IF_ERROR(b.LoraAdd(a->ctx, l.lora_o, a->x));
    ORCHID_RETURN_IF_ERROR(b.Norm(a->x, l.attn_norm, a->x));
    if (!c_.gated) {
      // fc1's delta goes in before its GELU, so the GELU is not the GEMM's epilogue then.
      if (l.lora_up.valid()) {
        ORCHID_RETURN_IF_ERROR(b.Linear(a->x, l.gate_up, a->act));
        ORCHID_RETURN_IF_ERROR(b.LoraAdd(a->x, l.lora_up, a->act));
        ORCHID_RETURN_IF_ERROR(b.Activate(a->act, ops::Activation::kGelu));
      } else {
        ORCHID_RETURN_IF_ERROR(b.Linear(a->x, l.gate_up, a->act, Epilogue::kGelu));
      }
    } else {
      ORCHID_RETURN_IF_ERROR(b.Linear(a->x, l.gate_up, a->gate_up));
      ORCHID_RETURN_IF_ERROR(b.Glu(a->gate_up, a->act, gate_));
    }
    ORCHID_RETURN_IF_ERROR(b.Linear(a->act, l.down, a->x, Epilogue::kResidualAdd));
    if (l.lora_down.valid()) ORCHID_RETURN_IF_ERROR(b.LoraAdd(a->act, l.lora_down, a->x));
    ORCHID_RETURN_IF_ERROR(b.Norm(a->x, l.mlp_norm, a->x));
  }
  return classifier_ ? classifier_head_.Forward(b, a->x) : embedding_.Forward(b, a->x);
}

}  // namespace

Result<std::unique_ptr<Family>> LoadRopeEncoder(const ModelSpec& spec, const Checkpoint& file,
                                                ops::Backend& backend) {
  return LoadAs<RopeEncoder>(spec, file, backend);
}

}  // namespace orchid
