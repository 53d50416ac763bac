#include "models/bert.h"

#include <cmath>
#include <string>

#include "engine/cpu/attention.h"
#include "engine/cpu/embedding.h"
#include "engine/cpu/layer_norm.h"
#include "engine/cpu/pooling.h"
#include "models/weight_reader.h"

namespace orchid {
Result<std::unique_ptr<BertModel>> BertModel::Create(const BertConfig& config,
                                                     const SafetensorsFile& weights, ModelInfo info,
                                                     WeightType linear_weights) {
  // The prefix is whatever precedes the word embeddings' name ("", "bert.", "roberta.", ...).
  const std::string anchor = "embeddings.word_embeddings.weight";
  const std::optional<std::string> prefix = FindWeightPrefix(weights, anchor);
  if (!prefix) {
    return Status::Corrupt(weights.path() + ": no tensor named \"" + anchor +
                           "\" (with or without a prefix); not a BERT checkpoint?");
  }
  const WeightReader r(weights, *prefix);
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
    l.qkv_weight =
        PackedWeight::Pack(Concat0({&q, &k, &v}).data(), int(3 * H), int(H), linear_weights);
    l.qkv_bias = Concat0({&qb, &kb, &vb});
    Tensor w;
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "attention.output.dense.weight", {H, H}));
    l.attn_out_weight = PackedWeight::Pack(w.data(), int(H), int(H), linear_weights);
    ORCHID_ASSIGN_OR_RETURN(l.attn_out_bias, r.Read(p + "attention.output.dense.bias", {H}));
    ORCHID_RETURN_IF_ERROR(
        r.ReadNorm(p + "attention.output.LayerNorm", H, &l.attn_norm_gamma, &l.attn_norm_beta));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "intermediate.dense.weight", {I, H}));
    l.inter_weight = PackedWeight::Pack(w.data(), int(I), int(H), linear_weights);
    ORCHID_ASSIGN_OR_RETURN(l.inter_bias, r.Read(p + "intermediate.dense.bias", {I}));
    ORCHID_ASSIGN_OR_RETURN(w, r.Read(p + "output.dense.weight", {H, I}));
    l.out_weight = PackedWeight::Pack(w.data(), int(H), int(I), linear_weights);
    ORCHID_ASSIGN_OR_RETURN(l.out_bias, r.Read(p + "output.dense.bias", {H}));
    ORCHID_RETURN_IF_ERROR(
        r.ReadNorm(p + "output.LayerNorm", H, &l.out_norm_gamma, &l.out_norm_beta));
  }

  const int64_t L = config.num_labels;
  // The head stays fp32, on the same GEMM path as the encoder.
  const WeightType head_weights =
      linear_weights == WeightType::kBfloat16 ? WeightType::kFloat32 : linear_weights;
  switch (config.head) {
    case BertConfig::Head::kNone:
      break;
    case BertConfig::Head::kBertPooler: {
      Tensor w, o;
      ORCHID_ASSIGN_OR_RETURN(w, r.Read("pooler.dense.weight", {H, H}));
      ORCHID_ASSIGN_OR_RETURN(m->head_dense_bias_, r.Read("pooler.dense.bias", {H}));
      ORCHID_ASSIGN_OR_RETURN(o, r.ReadUnprefixed("classifier.weight", {L, H}));
      ORCHID_ASSIGN_OR_RETURN(m->head_out_bias_, r.ReadUnprefixed("classifier.bias", {L}));
      m->head_dense_ = PackedWeight::Pack(w.data(), int(H), int(H), head_weights);
      m->head_out_ = PackedWeight::Pack(o.data(), int(L), int(H), head_weights);
      break;
    }
    case BertConfig::Head::kRobertaClassifier: {
      Tensor w, o;
      ORCHID_ASSIGN_OR_RETURN(w, r.ReadUnprefixed("classifier.dense.weight", {H, H}));
      ORCHID_ASSIGN_OR_RETURN(m->head_dense_bias_, r.ReadUnprefixed("classifier.dense.bias", {H}));
      ORCHID_ASSIGN_OR_RETURN(o, r.ReadUnprefixed("classifier.out_proj.weight", {L, H}));
      ORCHID_ASSIGN_OR_RETURN(m->head_out_bias_, r.ReadUnprefixed("classifier.out_proj.bias", {L}));
      m->head_dense_ = PackedWeight::Pack(w.data(), int(H), int(H), head_weights);
      m->head_out_ = PackedWeight::Pack(o.data(), int(L), int(H), head_weights);
      break;
    }
  }

  if (info.architecture.empty()) info.architecture = "BertModel";
  info.vocab_size = config.vocab_size;
  info.type_vocab_size = config.type_vocab_size;
  info.hidden_size = config.hidden_size;
  // The engine checks positions against this: the offset uses up the first positions.
  info.max_position_embeddings = config.max_position_embeddings - config.position_offset;
  if (config.head != BertConfig::Head::kNone) {
    info.task = ModelTask::kScore;
    info.num_labels = config.num_labels;
    info.labels = config.labels;
    info.multi_label = config.multi_label;
  }
  m->info_ = std::move(info);
  return m;
}

Status BertModel::CheckInputs(const RaggedBatch& batch) const {
  ORCHID_RETURN_IF_ERROR(batch.Validate(config_.vocab_size));
  for (size_t i = 0; i < batch.positions.size(); ++i) {
    const int32_t p = batch.positions[i];
    if (p < 0 || p >= config_.max_position_embeddings - config_.position_offset) {
      return Status::OutOfRange(
          "position " + std::to_string(p) + " is outside the model's " +
          std::to_string(config_.max_position_embeddings - config_.position_offset) +
          " usable position embeddings");
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
  const int32_t* positions = batch.positions.data();
  if (config_.position_offset != 0) {
    shifted_positions_.resize(size_t(T));
    for (int i = 0; i < T; ++i)
      shifted_positions_[size_t(i)] = positions[i] + config_.position_offset;
    positions = shifted_positions_.data();
  }
  EmbeddingLookup(pool, position_embeddings_.data(), H, positions, T, hidden, true);
  EmbeddingLookup(pool, token_type_embeddings_.data(), H,
                  batch.token_type_ids.empty() ? nullptr : batch.token_type_ids.data(), T, hidden,
                  true);
  LayerNorm(pool, hidden, T, H, embed_norm_gamma_.data(), embed_norm_beta_.data(), eps);

  // The last layer's output is only read at the rows pooling reads: when that is fewer than all
  // (CLS pooling, cross-encoders), the last layer computes keys and values for every token but
  // everything after attention for those rows only, gathered together (`h`, `rows`).
  const bool prune = last_rows_.Plan(batch);
  float* h = hidden;
  int rows = T;
  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    const bool blas = l.qkv_weight.type() == WeightType::kFloat32Blas;
    Linear(pool, hidden, T, H, l.qkv_weight, l.qkv_bias.data(), qkv_.data(), 3 * H,
           LinearEpilogue::kNone);
    const float* context = context_.data();
    if (li + 1 == layers_.size() && prune) {
      RaggedAttention(pool, qkv_.data(), batch.cu_seqlens.data(), batch.num_sequences(),
                      {heads, heads, H / heads, false, blas}, context_.data(), &scores_,
                      last_rows_.query_rows());
      last_rows_.Gather(pool, context_.data(), H, hidden, H);
      context = last_rows_.context();
      h = last_rows_.hidden();
      rows = last_rows_.size();
    } else {
      RaggedSelfAttention(pool, qkv_.data(), batch.cu_seqlens.data(), batch.num_sequences(), heads,
                          H / heads, context_.data(), &scores_, blas);
    }
    Linear(pool, context, rows, H, l.attn_out_weight, l.attn_out_bias.data(), h, H,
           LinearEpilogue::kAccumulate);
    LayerNorm(pool, h, rows, H, l.attn_norm_gamma.data(), l.attn_norm_beta.data(), eps);
    Linear(pool, h, rows, H, l.inter_weight, l.inter_bias.data(), intermediate_.data(), I,
           LinearEpilogue::kGelu);
    Linear(pool, intermediate_.data(), rows, I, l.out_weight, l.out_bias.data(), h, H,
           LinearEpilogue::kAccumulate);
    LayerNorm(pool, h, rows, H, l.out_norm_gamma.data(), l.out_norm_beta.data(), eps);
  }
  if (h != hidden) last_rows_.Scatter(H, hidden);
  return Status::Ok();
}

Status BertModel::Head(const float* pooled, int rows, float* logits) {
  if (config_.head == BertConfig::Head::kNone) return Model::Head(pooled, rows, logits);
  const int H = config_.hidden_size;
  head_scratch_.Reserve(size_t(rows) * size_t(H));
  float* t = head_scratch_.data();
  Linear(pool_, pooled, rows, H, head_dense_, head_dense_bias_.data(), t, H, LinearEpilogue::kNone);
  for (size_t i = 0; i < size_t(rows) * size_t(H); ++i) t[i] = std::tanh(t[i]);
  Linear(pool_, t, rows, H, head_out_, head_out_bias_.data(), logits, config_.num_labels,
         LinearEpilogue::kNone);
  return Status::Ok();
}

}  // namespace orchid
