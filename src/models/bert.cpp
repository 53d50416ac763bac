#include "models/bert.h"

#include <cstring>
#include <string>

#include "engine/cpu/attention.h"
#include "engine/cpu/embedding.h"
#include "engine/cpu/layer_norm.h"

namespace orchid {
namespace {

class WeightReader {
 public:
  WeightReader(const SafetensorsFile& file, std::string prefix)
      : file_(file), prefix_(std::move(prefix)) {}

  // Reads prefix+name as fp32 and checks its shape.
  Result<Tensor> Read(const std::string& name, std::vector<int64_t> shape) const {
    ORCHID_ASSIGN_OR_RETURN(Tensor t, file_.ReadF32(prefix_ + name));
    if (t.shape() != shape) {
      std::string s = "[";
      for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
      return Status::Corrupt(file_.path() + ": tensor \"" + prefix_ + name + "\" has shape " +
                             t.ShapeString() + ", config.json implies " + s + "]");
    }
    return t;
  }

  // LayerNorm parameters: "weight"/"bias", or the older "gamma"/"beta".
  Status ReadNorm(const std::string& base, int64_t dim, Tensor* gamma, Tensor* beta) const {
    const bool old_names = file_.Find(prefix_ + base + ".weight") == nullptr &&
                           file_.Find(prefix_ + base + ".gamma") != nullptr;
    ORCHID_ASSIGN_OR_RETURN(*gamma, Read(base + (old_names ? ".gamma" : ".weight"), {dim}));
    ORCHID_ASSIGN_OR_RETURN(*beta, Read(base + (old_names ? ".beta" : ".bias"), {dim}));
    return Status::Ok();
  }

 private:
  const SafetensorsFile& file_;
  std::string prefix_;
};

// Stacks tensors with equal trailing shape along dimension 0.
Tensor Concat0(const std::vector<const Tensor*>& parts) {
  std::vector<int64_t> shape = parts[0]->shape();
  shape[0] = 0;
  for (const Tensor* p : parts) shape[0] += p->dim(0);
  Tensor out(shape);
  float* dst = out.data();
  for (const Tensor* p : parts) {
    std::memcpy(dst, p->data(), p->numel() * sizeof(float));
    dst += p->numel();
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<BertModel>> BertModel::Create(const BertConfig& config,
                                                     const SafetensorsFile& weights,
                                                     ModelInfo info) {
  // The prefix is whatever precedes the word embeddings' name ("", "bert.", ...).
  const std::string anchor = "embeddings.word_embeddings.weight";
  std::string prefix;
  bool found = false;
  for (const TensorInfo& t : weights.tensors()) {
    if (t.name.size() >= anchor.size() &&
        t.name.compare(t.name.size() - anchor.size(), anchor.size(), anchor) == 0) {
      std::string p = t.name.substr(0, t.name.size() - anchor.size());
      if (!p.empty() && p.back() != '.') continue;
      if (!found || p.size() < prefix.size()) prefix = p;
      found = true;
    }
  }
  if (!found) {
    return Status::Corrupt(weights.path() + ": no tensor named \"" + anchor +
                           "\" (with or without a prefix); not a BERT checkpoint?");
  }
  const WeightReader r(weights, prefix);
  const int64_t H = config.hidden_size, I = config.intermediate_size;

  std::unique_ptr<BertModel> m(new BertModel());
  m->config_ = config;
  ORCHID_ASSIGN_OR_RETURN(m->word_embeddings_,
                          r.Read("embeddings.word_embeddings.weight", {config.vocab_size, H}));
  ORCHID_ASSIGN_OR_RETURN(m->position_embeddings_, r.Read("embeddings.position_embeddings.weight",
                                                          {config.max_position_embeddings, H}));
  ORCHID_ASSIGN_OR_RETURN(
      m->token_type_embeddings_,
      r.Read("embeddings.token_type_embeddings.weight", {config.type_vocab_size, H}));
  ORCHID_RETURN_IF_ERROR(
      r.ReadNorm("embeddings.LayerNorm", H, &m->embed_norm_gamma_, &m->embed_norm_beta_));

  m->layers_.resize(size_t(config.num_hidden_layers));
  for (int i = 0; i < config.num_hidden_layers; ++i) {
    Layer& l = m->layers_[size_t(i)];
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    Tensor q, k, v, qb, kb, vb;
    ORCHID_ASSIGN_OR_RETURN(q, r.Read(p + "attention.self.query.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(k, r.Read(p + "attention.self.key.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(v, r.Read(p + "attention.self.value.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(qb, r.Read(p + "attention.self.query.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(kb, r.Read(p + "attention.self.key.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(vb, r.Read(p + "attention.self.value.bias", {H}));
    l.qkv_weight = PackedWeight::Pack(Concat0({&q, &k, &v}).data(), int(3 * H), int(H));
    l.qkv_bias = Concat0({&qb, &kb, &vb});
    Tensor w;
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "attention.output.dense.weight", {H, H}));
    l.attn_out_weight = PackedWeight::Pack(w.data(), int(H), int(H));
    ORCHID_ASSIGN_OR_RETURN(l.attn_out_bias, r.Read(p + "attention.output.dense.bias", {H}));
    ORCHID_RETURN_IF_ERROR(
        r.ReadNorm(p + "attention.output.LayerNorm", H, &l.attn_norm_gamma, &l.attn_norm_beta));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "intermediate.dense.weight", {I, H}));
    l.inter_weight = PackedWeight::Pack(w.data(), int(I), int(H));
    ORCHID_ASSIGN_OR_RETURN(l.inter_bias, r.Read(p + "intermediate.dense.bias", {I}));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "output.dense.weight", {H, I}));
    l.out_weight = PackedWeight::Pack(w.data(), int(H), int(I));
    ORCHID_ASSIGN_OR_RETURN(l.out_bias, r.Read(p + "output.dense.bias", {H}));
    ORCHID_RETURN_IF_ERROR(
        r.ReadNorm(p + "output.LayerNorm", H, &l.out_norm_gamma, &l.out_norm_beta));
  }

  info.architecture = "BertModel";
  info.vocab_size = config.vocab_size;
  info.hidden_size = config.hidden_size;
  info.max_position_embeddings = config.max_position_embeddings;
  m->info_ = std::move(info);
  return m;
}

Status BertModel::CheckInputs(const RaggedBatch& batch) const {
  ORCHID_RETURN_IF_ERROR(batch.Validate(config_.vocab_size));
  for (size_t i = 0; i < batch.positions.size(); ++i) {
    const int32_t p = batch.positions[i];
    if (p < 0 || p >= config_.max_position_embeddings) {
      return Status::OutOfRange("position " + std::to_string(p) + " is outside the model's " +
                                std::to_string(config_.max_position_embeddings) +
                                " position embeddings");
    }
  }
  for (size_t i = 0; i < batch.token_type_ids.size(); ++i) {
    const int32_t t = batch.token_type_ids[i];
    if (t < 0 || t >= config_.type_vocab_size) {
      return Status::InvalidArgument("token type id " + std::to_string(t) + " is outside [0, " +
                                     std::to_string(config_.type_vocab_size) + ")");
    }
  }
  return Status::Ok();
}

Status BertModel::Forward(const RaggedBatch& batch, float* hidden) {
  ORCHID_RETURN_IF_ERROR(CheckInputs(batch));
  const int T = batch.num_tokens();
  if (T == 0) return Status::Ok();
  const int H = config_.hidden_size, I = config_.intermediate_size;
  const int heads = config_.num_attention_heads;
  const float eps = config_.layer_norm_eps;
  ThreadPool* pool = pool_;

  qkv_.Reserve(size_t(T) * 3 * H);
  context_.Reserve(size_t(T) * H);
  intermediate_.Reserve(size_t(T) * I);

  EmbeddingLookup(pool, word_embeddings_.data(), H, batch.token_ids.data(), T, hidden, false);
  EmbeddingLookup(pool, position_embeddings_.data(), H, batch.positions.data(), T, hidden, true);
  EmbeddingLookup(pool, token_type_embeddings_.data(), H,
                  batch.token_type_ids.empty() ? nullptr : batch.token_type_ids.data(), T, hidden,
                  true);
  LayerNorm(pool, hidden, T, H, embed_norm_gamma_.data(), embed_norm_beta_.data(), eps);

  for (const Layer& l : layers_) {
    Linear(pool, hidden, T, H, l.qkv_weight, l.qkv_bias.data(), qkv_.data(), 3 * H,
           LinearEpilogue::kNone);
    RaggedSelfAttention(pool, qkv_.data(), batch.cu_seqlens.data(), batch.num_sequences(), heads,
                        H / heads, context_.data(), &scores_);
    Linear(pool, context_.data(), T, H, l.attn_out_weight, l.attn_out_bias.data(), hidden, H,
           LinearEpilogue::kAccumulate);
    LayerNorm(pool, hidden, T, H, l.attn_norm_gamma.data(), l.attn_norm_beta.data(), eps);
    Linear(pool, hidden, T, H, l.inter_weight, l.inter_bias.data(), intermediate_.data(), I,
           LinearEpilogue::kGelu);
    Linear(pool, intermediate_.data(), T, I, l.out_weight, l.out_bias.data(), hidden, H,
           LinearEpilogue::kAccumulate);
    LayerNorm(pool, hidden, T, H, l.out_norm_gamma.data(), l.out_norm_beta.data(), eps);
  }
  return Status::Ok();
}

}  // namespace orchid
