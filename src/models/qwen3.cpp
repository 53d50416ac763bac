#include "models/qwen3.h"

#include <string>

#include "engine/cpu/attention.h"
#include "engine/cpu/embedding.h"
#include "engine/cpu/pooling.h"
#include "engine/cpu/rms_norm.h"
#include "engine/cpu/rope.h"
#include "engine/cpu/swiglu.h"
#include "models/weight_reader.h"

namespace orchid {

Result<std::unique_ptr<Qwen3Model>> Qwen3Model::Create(const Qwen3Config& config,
                                                       const SafetensorsFile& weights,
                                                       ModelInfo info, const ScoreTokens* score,
                                                       WeightType linear_weights) {
  const std::string anchor = "embed_tokens.weight";
  const std::optional<std::string> prefix = FindWeightPrefix(weights, anchor);
  if (!prefix) {
    return Status::Corrupt(weights.path() + ": no tensor named \"" + anchor +
                           "\" (with or without a prefix); not a Qwen3 checkpoint?");
  }
  const WeightReader r(weights, *prefix);
  const int64_t H = config.hidden_size, I = config.intermediate_size, D = config.head_dim;
  const int64_t Q = config.q_size(), KV = config.kv_size();

  std::unique_ptr<Qwen3Model> m(new Qwen3Model());
  m->config_ = config;
  ORCHID_ASSIGN_OR_RETURN(m->embed_tokens_, r.Read(anchor, {config.vocab_size, H}));
  ORCHID_ASSIGN_OR_RETURN(m->final_norm_, r.Read("norm.weight", {H}));
  m->layers_.resize(size_t(config.num_hidden_layers));
  for (int i = 0; i < config.num_hidden_layers; ++i) {
    Layer& l = m->layers_[size_t(i)];
    const std::string p = "layers." + std::to_string(i) + ".";
    Tensor q, k, v, w, g, u;
    ORCHID_ASSIGN_OR_RETURN(q, r.Read(p + "self_attn.q_proj.weight", {Q, H}));
    ORCHID_ASSIGN_OR_RETURN(k, r.Read(p + "self_attn.k_proj.weight", {KV, H}));
    ORCHID_ASSIGN_OR_RETURN(v, r.Read(p + "self_attn.v_proj.weight", {KV, H}));
    l.qkv_weight =
        PackedWeight::Pack(Concat0({&q, &k, &v}).data(), int(Q + 2 * KV), int(H), linear_weights);
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "self_attn.o_proj.weight", {H, Q}));
    l.o_weight = PackedWeight::Pack(w.data(), int(H), int(Q), linear_weights);
    ORCHID_ASSIGN_OR_RETURN(l.q_norm, r.Read(p + "self_attn.q_norm.weight", {D}));
    ORCHID_ASSIGN_OR_RETURN(l.k_norm, r.Read(p + "self_attn.k_norm.weight", {D}));
    ORCHID_ASSIGN_OR_RETURN(g, r.Read(p + "mlp.gate_proj.weight", {I, H}));
    ORCHID_ASSIGN_OR_RETURN(u, r.Read(p + "mlp.up_proj.weight", {I, H}));
    l.gate_up_weight =
        PackedWeight::Pack(Concat0({&g, &u}).data(), int(2 * I), int(H), linear_weights);
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "mlp.down_proj.weight", {H, I}));
    l.down_weight = PackedWeight::Pack(w.data(), int(H), int(I), linear_weights);
    ORCHID_ASSIGN_OR_RETURN(l.input_norm, r.Read(p + "input_layernorm.weight", {H}));
    ORCHID_ASSIGN_OR_RETURN(l.post_attention_norm,
                            r.Read(p + "post_attention_layernorm.weight", {H}));
  }

  if (score != nullptr) {
    for (int32_t id : {score->yes, score->no}) {
      if (id < 0 || id >= config.vocab_size) {
        return Status::InvalidArgument(weights.path() +
                                       ": the reranker's yes/no token ids are outside the "
                                       "vocabulary");
      }
    }
    // The output projection: lm_head when the checkpoint has one (untied), else the tied
    // embedding matrix.
    const Tensor* out = &m->embed_tokens_;
    Tensor lm_head;
    if (weights.Find("lm_head.weight") != nullptr) {
      ORCHID_ASSIGN_OR_RETURN(lm_head, r.ReadUnprefixed("lm_head.weight", {config.vocab_size, H}));
      out = &lm_head;
    } else if (!config.tie_word_embeddings) {
      return Status::Corrupt(weights.path() +
                             ": tie_word_embeddings is false but there is no lm_head.weight");
    }
    m->yes_minus_no_.resize(size_t(H));
    const float* yes = out->data() + size_t(score->yes) * size_t(H);
    const float* no = out->data() + size_t(score->no) * size_t(H);
    for (int64_t j = 0; j < H; ++j) m->yes_minus_no_[size_t(j)] = yes[j] - no[j];
    info.task = ModelTask::kScore;
    info.num_labels = 1;
    info.pair_format = PairFormat::kQwen3RerankerChat;
  }

  if (info.architecture.empty()) info.architecture = "Qwen3Model";
  info.vocab_size = config.vocab_size;
  info.hidden_size = config.hidden_size;
  info.max_position_embeddings = config.max_position_embeddings;
  info.causal = config.causal;
  m->info_ = std::move(info);
  return m;
}

Status Qwen3Model::Forward(const RaggedBatch& batch, float* hidden) {
  ORCHID_RETURN_IF_ERROR(batch.Validate(config_.vocab_size));
  const int T = batch.num_tokens();
  if (T == 0) return Status::Ok();
  const int H = config_.hidden_size, I = config_.intermediate_size, D = config_.head_dim;
  const int Q = config_.q_size(), KV = config_.kv_size();
  const int ld_qkv = Q + 2 * KV;
  const float eps = config_.rms_norm_eps;
  ThreadPool* pool = pool_;

  x_.Reserve(size_t(T) * H);
  qkv_.Reserve(size_t(T) * ld_qkv);
  context_.Reserve(size_t(T) * Q);
  gate_up_.Reserve(size_t(T) * 2 * I);
  act_.Reserve(size_t(T) * I);

  EmbeddingLookup(pool, embed_tokens_.data(), H, batch.token_ids.data(), T, hidden, false);
  const AttentionShape shape{
      config_.num_attention_heads, config_.num_key_value_heads, D, config_.causal,
      !layers_.empty() && layers_[0].qkv_weight.type() == WeightType::kFloat32Blas};
  // The last layer's output is only read at the rows pooling reads: when that is fewer than all
  // (CLS / last-token pooling), the last layer computes keys and values for every token but
  // everything after attention for those rows only, gathered together (`h`, `rows`).
  const bool prune = last_rows_.Plan(batch);
  float* h = hidden;
  int rows = T;
  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    const bool last = li + 1 == layers_.size();
    RmsNorm(pool, hidden, H, T, H, l.input_norm.data(), eps, x_.data(), H);
    Linear(pool, x_.data(), T, H, l.qkv_weight, nullptr, qkv_.data(), ld_qkv,
           LinearEpilogue::kNone);
    float* q = qkv_.data();
    float* k = q + Q;
    RmsNormHeads(pool, q, ld_qkv, T, config_.num_attention_heads, D, l.q_norm.data(), eps);
    RmsNormHeads(pool, k, ld_qkv, T, config_.num_key_value_heads, D, l.k_norm.data(), eps);
    ApplyRope(pool, q, ld_qkv, T, config_.num_attention_heads, D, batch.positions.data(),
              config_.rope_theta);
    ApplyRope(pool, k, ld_qkv, T, config_.num_key_value_heads, D, batch.positions.data(),
              config_.rope_theta);
    const float* context = context_.data();
    if (last && prune) {
      RaggedAttention(pool, qkv_.data(), batch.cu_seqlens.data(), batch.num_sequences(), shape,
                      context_.data(), &scores_, last_rows_.query_rows());
      last_rows_.Gather(pool, context_.data(), Q, hidden, H);
      context = last_rows_.context();
      h = last_rows_.hidden();
      rows = last_rows_.size();
    } else {
      RaggedAttention(pool, qkv_.data(), batch.cu_seqlens.data(), batch.num_sequences(), shape,
                      context_.data(), &scores_);
    }
    Linear(pool, context, rows, Q, l.o_weight, nullptr, h, H, LinearEpilogue::kAccumulate);
    RmsNorm(pool, h, H, rows, H, l.post_attention_norm.data(), eps, x_.data(), H);
    Linear(pool, x_.data(), rows, H, l.gate_up_weight, nullptr, gate_up_.data(), 2 * I,
           LinearEpilogue::kNone);
    SwiGlu(pool, gate_up_.data(), rows, I, act_.data());
    Linear(pool, act_.data(), rows, I, l.down_weight, nullptr, h, H, LinearEpilogue::kAccumulate);
  }
  RmsNorm(pool, h, H, rows, H, final_norm_.data(), eps, h, H);
  if (h != hidden) last_rows_.Scatter(H, hidden);
  return Status::Ok();
}

Status Qwen3Model::Head(const float* pooled, int rows, float* logits) {
  if (yes_minus_no_.empty()) return Model::Head(pooled, rows, logits);
  const int H = config_.hidden_size;
  for (int r = 0; r < rows; ++r) {
    const float* h = pooled + size_t(r) * size_t(H);
    double dot = 0;
    for (int j = 0; j < H; ++j) dot += double(h[j]) * double(yes_minus_no_[size_t(j)]);
    logits[r] = float(dot);
  }
  return Status::Ok();
}

}  // namespace orchid
