#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "backends/cpu/attention.h"
#include "backends/cpu/embedding.h"
#include "backends/cpu/gelu.h"
#include "backends/cpu/l2_normalize.h"
#include "backends/cpu/layer_norm.h"
#include "backends/cpu/pooling.h"
#include "backends/cpu/rms_norm.h"
#include "backends/cpu/rope.h"
#include "backends/cpu/swiglu.h"

namespace orchid {
namespace {

Tensor Copy(const Tensor& t) {
  Tensor c(t.shape());
  std::memcpy(c.data(), t.data(), t.numel() * sizeof(float));
  return c;
}

}  // namespace

void CpuBackend::Begin(const RaggedBatch& batch, bool allow_prune) {
  batch_ = &batch;
  prune_ = PooledRows(batch, &query_rows_, &pooled_rows_) && allow_prune;
  const int S = batch.num_sequences();
  pooled_cu_.assign(size_t(S) + 1, 0);
  for (int s = 0; s < S; ++s) {
    pooled_cu_[size_t(s) + 1] =
        pooled_cu_[size_t(s)] + query_rows_[2 * size_t(s) + 1] - query_rows_[2 * size_t(s)];
  }
  seq_of_token_.clear();
  seq_of_pooled_.clear();
  if (!batch.adapters.empty()) {
    seq_of_token_.resize(size_t(batch.num_tokens()));
    for (int s = 0; s < S; ++s) {
      std::fill(seq_of_token_.begin() + batch.cu_seqlens[size_t(s)],
                seq_of_token_.begin() + batch.cu_seqlens[size_t(s) + 1], s);
    }
    for (int32_t t : pooled_rows_) seq_of_pooled_.push_back(seq_of_token_[size_t(t)]);
  }
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const ops::Buffer b{int(i)};
    if (decl(b).rows == ops::Rows::kPooled && !prune_) continue;
    buffers_[i].Reserve(size_t(rows(b)) * size_t(decl(b).width));
  }
}

int CpuBackend::rows(ops::Buffer b) const {
  switch (decl(b).rows) {
    case ops::Rows::kTokens:
      return batch_->num_tokens();
    case ops::Rows::kPooled:
      return int(pooled_rows_.size());
    case ops::Rows::kSequences:
      return batch_->num_sequences();
  }
  return 0;
}

Result<int> CpuBackend::DoAddLinear(const Tensor& w, const Tensor* bias, ops::LinearOptions o) {
  WeightType type = linear_weights_;
  if (o.full_precision &&
      (linear_weights_ == WeightType::kBfloat16 || linear_weights_ == WeightType::kInt8)) {
    type = WeightType::kFloat32;
  }
  LinearLayer l;
  l.final_type = type;
  l.outlier_input = o.outlier_input;
  if (calibrating_ && type != WeightType::kFloat32) {
    // Packed fp32 until FinishInt8 quantizes it (unpacking one layer at a time).
    type = WeightType::kFloat32;
    l.input_amax.assign(size_t(w.dim(1)), 0.0f);
  }
  l.weight = PackedWeight::Pack(w.data(), int(w.dim(0)), int(w.dim(1)), type);
  if (bias != nullptr) {
    l.bias = Copy(*bias);
    l.has_bias = true;
  }
  linears_.push_back(std::move(l));
  return int(linears_.size()) - 1;
}

std::vector<std::vector<float>> CpuBackend::Int8InputRanges() const {
  std::vector<std::vector<float>> out;
  if (!calibrating_) return out;
  for (const LinearLayer& l : linears_) {
    if (l.final_type == WeightType::kInt8) out.push_back(l.input_amax);
  }
  return out;
}

Status CpuBackend::SetInt8InputRanges(const std::vector<std::vector<float>>& ranges) {
  if (!calibrating_) return Status::FailedPrecondition("int8 input ranges: not calibrating");
  size_t i = 0;
  for (const LinearLayer& l : linears_) {
    if (l.final_type != WeightType::kInt8) continue;
    if (i >= ranges.size() || ranges[i].size() != l.input_amax.size()) {
      return Status::InvalidArgument("int8 input ranges: layer " + std::to_string(i) +
                                     " does not match the model");
    }
    for (float v : ranges[i]) {
      if (!std::isfinite(v) || v < 0) {
        return Status::InvalidArgument("int8 input ranges: layer " + std::to_string(i) +
                                       " has a negative or non-finite range");
      }
    }
    ++i;
  }
  if (i != ranges.size()) {
    return Status::InvalidArgument("int8 input ranges: " + std::to_string(ranges.size()) +
                                   " layers given, the model has " + std::to_string(i));
  }
  i = 0;
  for (LinearLayer& l : linears_) {
    if (l.final_type == WeightType::kInt8) l.input_amax = ranges[i++];
  }
  return Status::Ok();
}

size_t CpuBackend::CalibrationBytes() const {
  size_t bytes = 0;
  for (const LinearLayer& l : linears_) {
    bytes += l.input_amax.capacity() * sizeof(float);
  }
  return bytes;
}

void CpuBackend::FinishInt8(float alpha, int column_slices) {
  if (!calibrating_) return;
  calibrating_ = false;
  for (LinearLayer& l : linears_) {
    if (l.final_type != WeightType::kInt8) continue;  // the heads: fp32 from the start
    const int n = l.weight.n(), k = l.weight.k();
    // The layer's fp32 weights row-major, only while it is quantized: the packed copy the
    // calibration ran on is the only one kept until then (a second would double the peak).
    std::vector<float> rows(size_t(n) * size_t(k));
    UnpackRows(l.weight.view(), 0, n, rows.data());
    const float* w = rows.data();
    // SmoothQuant: c = amax_x^alpha / amax_w^(1 - alpha) per input channel.
    std::vector<float> c(size_t(k), 1.0f);
    bool calibrated = false;
    for (int j = 0; j < k; ++j) calibrated = calibrated || l.input_amax[size_t(j)] > 0;
    if (calibrated) {
      std::vector<float> wmax(size_t(k), 0.0f);
      for (int r = 0; r < n; ++r) {
        for (int j = 0; j < k; ++j) {
          wmax[size_t(j)] = std::max(wmax[size_t(j)], std::fabs(w[size_t(r) * size_t(k) + j]));
        }
      }
      for (int j = 0; j < k; ++j) {
        const float xa = l.input_amax[size_t(j)], wa = wmax[size_t(j)];
        if (xa > 0 && wa > 0) {
          c[size_t(j)] =
              std::pow(std::max(xa, 1e-5f), alpha) / std::pow(std::max(wa, 1e-5f), 1 - alpha);
        }
      }
    }
    std::vector<int> outliers;
    // The channels whose smoothed inputs still reach furthest stay out of int8 (their
    // products run in fp32): 1% of a layer's inputs, 0.5% of the FFN output projection's
    // (which has 4x as many). Measured on all-MiniLM-L6-v2 / all-mpnet-base-v2, mean cosine
    // against fp32 over the gate texts: none 0.99931 / 0.99862, these 0.99967 / 0.99955.
    const int count = std::min(256, int((l.outlier_input ? 0.005f : 0.01f) * float(k)));
    if (calibrated && count > 0) {
      std::vector<std::pair<float, int>> a;
      for (int j = 0; j < k; ++j) a.emplace_back(l.input_amax[size_t(j)] / c[size_t(j)], j);
      std::partial_sort(a.begin(), a.begin() + count, a.end(), std::greater<>());
      for (int i = 0; i < count; ++i) outliers.push_back(a[size_t(i)].second);
      std::sort(outliers.begin(), outliers.end());
    }
    l.weight = PackedWeight::QuantizeInt8(w, n, k, calibrated ? c.data() : nullptr, outliers,
                                          column_slices);
    // Released, not just emptied (`v = {}` is assign() from an empty list: it keeps the
    // capacity; a row-major fp32 copy of each layer so kept for the life of the process was
    // most of int8's memory until 6656972).
    std::vector<float>().swap(l.input_amax);
  }
}

Result<int> CpuBackend::DoAddNorm(ops::NormKind kind, const Tensor& weight, const Tensor* bias,
                                  float eps) {
  NormLayer n;
  n.kind = kind;
  n.weight = Copy(weight);
  if (bias != nullptr) n.bias = Copy(*bias);
  n.eps = eps;
  norms_.push_back(std::move(n));
  return int(norms_.size()) - 1;
}

Result<int> CpuBackend::DoAddTable(Tensor t) {
  tables_.push_back(std::move(t));
  return int(tables_.size()) - 1;
}

void CpuBackend::DoAddBuffer(const ops::BufferDecl& d) {
  (void)d;
  buffers_.emplace_back();
}

Status CpuBackend::DoEmbed(const ops::EmbedOp& op, ops::Buffer out) {
  const RaggedBatch& batch = *batch_;
  const int T = batch.num_tokens(), H = decl(out).width;
  float* y = mut(out);
  EmbeddingLookup(pool_, tables_[size_t(op.word.id)].data(), H, batch.token_ids.data(), T, y,
                  false);
  if (op.position.valid()) {
    const int32_t* positions = batch.positions.data();
    if (op.position_offset != 0) {
      shifted_positions_.resize(size_t(T));
      for (int i = 0; i < T; ++i) shifted_positions_[size_t(i)] = positions[i] + op.position_offset;
      positions = shifted_positions_.data();
    }
    EmbeddingLookup(pool_, tables_[size_t(op.position.id)].data(), H, positions, T, y, true);
  }
  if (op.type.valid()) {
    EmbeddingLookup(pool_, tables_[size_t(op.type.id)].data(), H,
                    batch.token_type_ids.empty() ? nullptr : batch.token_type_ids.data(), T, y,
                    true);
  }
  if (op.norm.valid()) return DoNorm(out, op.norm, out);
  return Status::Ok();
}

Status CpuBackend::DoLinear(ops::Buffer in, ops::LinearWeight w, ops::Buffer out, ops::Epilogue e) {
  LinearLayer& l = linears_[size_t(w.id)];
  if (recording_ && !l.input_amax.empty()) {  // calibrating an int8 layer: its input's range
    const float* x = data(in);
    const int k = decl(in).width;
    for (int r = 0; r < rows(in); ++r, x += k) {
      for (int j = 0; j < k; ++j) {
        l.input_amax[size_t(j)] = std::max(l.input_amax[size_t(j)], std::fabs(x[j]));
      }
    }
  }
  LinearEpilogue epilogue = LinearEpilogue::kNone;
  if (e == ops::Epilogue::kGelu) epilogue = LinearEpilogue::kGelu;
  if (e == ops::Epilogue::kResidualAdd) epilogue = LinearEpilogue::kAccumulate;
  orchid::Linear(pool_, data(in), rows(in), decl(in).width, l.weight,
                 l.has_bias ? l.bias.data() : nullptr, mut(out), decl(out).width, epilogue);
  return Status::Ok();
}

Status CpuBackend::DoNorm(ops::Buffer in, ops::NormWeight w, ops::Buffer out) {
  const NormLayer& n = norms_[size_t(w.id)];
  const int R = rows(in), H = w.width;
  if (n.kind == ops::NormKind::kRmsNorm) {
    RmsNorm(pool_, data(in), H, R, H, n.weight.data(), n.eps, mut(out), H);
    return Status::Ok();
  }
  if (in.id != out.id) std::memcpy(mut(out), data(in), size_t(R) * size_t(H) * sizeof(float));
  LayerNorm(pool_, mut(out), R, H, n.weight.data(), n.bias.data(), n.eps);
  return Status::Ok();
}

Status CpuBackend::DoQkNormRope(ops::Buffer qkv, const ops::RopeOptions& o) {
  const int T = rows(qkv), ld = decl(qkv).width;
  float* q = mut(qkv);
  float* k = q + o.num_heads * o.head_dim;
  if (o.q_norm.valid()) {
    const NormLayer& qn = norms_[size_t(o.q_norm.id)];
    const NormLayer& kn = norms_[size_t(o.k_norm.id)];
    RmsNormHeads(pool_, q, ld, T, o.num_heads, o.head_dim, qn.weight.data(), qn.eps);
    RmsNormHeads(pool_, k, ld, T, o.num_kv_heads, o.head_dim, kn.weight.data(), kn.eps);
  }
  const int32_t* positions = batch_->positions.data();
  float scale = 1.0f;
  auto rotate = [&](int first, int rows) {
    const size_t at = size_t(first) * size_t(ld);
    ApplyRope(pool_, q + at, ld, rows, o.num_heads, o.head_dim, positions + first,
              rope_inv_freq_.data(), scale);
    ApplyRope(pool_, k + at, ld, rows, o.num_kv_heads, o.head_dim, positions + first,
              rope_inv_freq_.data(), scale);
  };
  if (o.scaling.type == RopeType::kDynamic) {
    // Each sequence's own length decides its frequencies, as when it runs alone in transformers
    // (which grows them to the longest position of the whole batch).
    const RaggedBatch& batch = *batch_;
    for (int s = 0; s < batch.num_sequences(); ++s) {
      const int first = batch.cu_seqlens[size_t(s)];
      const int len = batch.cu_seqlens[size_t(s) + 1] - first;
      ops::RopeInverseFrequencies(o.theta, o.head_dim, o.scaling, len, &rope_inv_freq_, &scale);
      rotate(first, len);
    }
    return Status::Ok();
  }
  ops::RopeInverseFrequencies(o.theta, o.head_dim, o.scaling, 0, &rope_inv_freq_, &scale);
  if (o.inv_freq_divisor != 1.0) {
    for (float& f : rope_inv_freq_) f /= float(o.inv_freq_divisor);
  }
  rotate(0, T);
  return Status::Ok();
}

Status CpuBackend::DoAttention(ops::Buffer qkv, ops::Buffer out, const ops::AttentionOptions& o) {
  const RaggedBatch& batch = *batch_;
  AttentionShape shape{o.num_heads, o.num_kv_heads, o.head_dim, o.causal,
                       linear_weights_ == WeightType::kFloat32Blas};
  shape.scale = o.scale;
  shape.window = o.window;
  if (!batch.attend_lens.empty()) {
    if (o.causal) return Status::InvalidArgument("attended lengths on causal attention");
    shape.key_lens = batch.attend_lens.data();
  }
  // bfloat16 models multiply attention's products in bfloat16 too (Q, K, P and V rounded, fp32
  // sums and softmax); int8 models once calibrated (the start-up check's float32 reference
  // passes run before, in float32).
  shape.bf16 = linear_weights_ == WeightType::kBfloat16 ||
               (linear_weights_ == WeightType::kInt8 && !calibrating_);
  if (o.relative_bias.valid()) {
    // The bias of every relative position the batch has, per head: [heads, 2 span - 1].
    int span = 1;
    for (int s = 0; s < batch.num_sequences(); ++s) {
      span = std::max(span, batch.cu_seqlens[size_t(s) + 1] - batch.cu_seqlens[size_t(s)]);
    }
    const Tensor& table = tables_[size_t(o.relative_bias.id)];
    const int width = 2 * span - 1;
    relative_bias_.Reserve(size_t(o.num_heads) * size_t(width));
    for (int d = -(span - 1); d <= span - 1; ++d) {
      const float* row = table.data() + size_t(ops::RelativePositionBucket(
                                            d, o.relative_num_buckets, o.relative_max_distance)) *
                                            size_t(o.num_heads);
      for (int h = 0; h < o.num_heads; ++h) {
        relative_bias_.data()[size_t(h) * size_t(width) + size_t(d + span - 1)] = row[h];
      }
    }
    shape.relative_bias = relative_bias_.data();
    shape.span = span;
  }
  if (o.pos_key.valid() || o.pos_query.valid()) {
    // DeBERTa: the table row of every distance i - j the batch has.
    int max_len = 1;
    for (int s = 0; s < batch.num_sequences(); ++s) {
      max_len = std::max(max_len, batch.cu_seqlens[size_t(s) + 1] - batch.cu_seqlens[size_t(s)]);
    }
    const int span = (o.pos_key.valid() ? o.pos_key : o.pos_query).rows / 2;
    relative_index_.resize(size_t(2 * max_len - 1));
    for (int d = -(max_len - 1); d <= max_len - 1; ++d) {
      relative_index_[size_t(d + max_len - 1)] =
          ops::DebertaRelativeIndex(d, span, o.position_buckets, o.max_relative_positions);
    }
    shape.pos_index = relative_index_.data();
    if (o.pos_key.valid()) shape.pos_key = tables_[size_t(o.pos_key.id)].data();
    if (o.pos_query.valid()) shape.pos_query = tables_[size_t(o.pos_query.id)].data();
  }
  if (decl(out).rows == ops::Rows::kTokens) {
    RaggedAttention(pool_, data(qkv), batch.cu_seqlens.data(), batch.num_sequences(), shape,
                    mut(out), &scores_);
    return Status::Ok();
  }
  // Pooled rows: attention computes only their query rows (in place in a token-sized context),
  // then they are gathered together.
  const int width = decl(out).width;
  full_context_.Reserve(size_t(batch.num_tokens()) * size_t(width));
  RaggedAttention(pool_, data(qkv), batch.cu_seqlens.data(), batch.num_sequences(), shape,
                  full_context_.data(), &scores_, query_rows_.data());
  EmbeddingLookup(pool_, full_context_.data(), width, pooled_rows_.data(), int(pooled_rows_.size()),
                  mut(out), false);
  return Status::Ok();
}

Status CpuBackend::DoGlu(ops::Buffer gate_up, ops::Buffer out, ops::Gate gate) {
  const int n = rows(gate_up), width = decl(out).width;
  switch (gate) {
    case ops::Gate::kSilu:
      orchid::SwiGlu(pool_, data(gate_up), n, width, mut(out));
      break;
    case ops::Gate::kGeluTanh:
      GeluTanhGlu(pool_, data(gate_up), n, width, mut(out));
      break;
    case ops::Gate::kGelu:
      GeluGlu(pool_, data(gate_up), n, width, mut(out));
      break;
  }
  return Status::Ok();
}

Status CpuBackend::DoAdd(ops::Buffer in, ops::Buffer out) {
  const float* a = data(in);
  float* o = mut(out);
  const size_t n = size_t(rows(out)) * size_t(decl(out).width);
  for (size_t i = 0; i < n; ++i) o[i] += a[i];
  return Status::Ok();
}

Status CpuBackend::DoVocabMaxPool(ops::Buffer hidden, ops::LinearWeight w, ops::Buffer out) {
  // Each sequence's rows a block at a time through the linear layer into a [block, n] scratch,
  // then folded into the sequence's running maximum.
  constexpr int kBlock = 64;
  const LinearLayer& l = linears_[size_t(w.id)];
  const RaggedBatch& batch = *batch_;
  const int K = w.k, N = w.n;
  vocab_scratch_.Reserve(size_t(kBlock) * size_t(N));
  float* scratch = vocab_scratch_.data();
  for (int s = 0; s < batch.num_sequences(); ++s) {
    float* o = mut(out) + size_t(s) * size_t(N);
    std::fill(o, o + N, -INFINITY);
    for (int t0 = batch.cu_seqlens[size_t(s)]; t0 < batch.cu_seqlens[size_t(s) + 1]; t0 += kBlock) {
      const int n = std::min(kBlock, batch.cu_seqlens[size_t(s) + 1] - t0);
      orchid::Linear(pool_, data(hidden) + size_t(t0) * size_t(K), n, K, l.weight,
                     l.has_bias ? l.bias.data() : nullptr, scratch, N, LinearEpilogue::kNone);
      for (int r = 0; r < n; ++r) {
        const float* row = scratch + size_t(r) * size_t(N);
        for (int j = 0; j < N; ++j) o[j] = std::max(o[j], row[j]);
      }
    }
  }
  return Status::Ok();
}

Status CpuBackend::DoNormalize(ops::Buffer x) {
  L2Normalize(mut(x), batch_->num_sequences(), decl(x).width, batch_->normalize.data());
  return Status::Ok();
}

Result<int> CpuBackend::DoAddLora(const std::vector<ops::LoraPart>& parts, int n, int k,
                                  ops::LoraInput input) {
  loras_.emplace_back(parts, n, k, input != ops::LoraInput::kRows);
  return int(loras_.size()) - 1;
}

Status CpuBackend::DoLoraAdd(ops::Buffer in, ops::LoraWeight w, ops::Buffer out) {
  const bool pooled = decl(out).rows == ops::Rows::kPooled;
  const int32_t* ids = batch_->token_ids.data();
  if (w.input == ops::LoraInput::kTypeIds) {
    if (batch_->token_type_ids.empty()) {
      zero_types_.assign(size_t(batch_->num_tokens()), 0);
      ids = zero_types_.data();
    } else {
      ids = batch_->token_type_ids.data();
    }
  }
  loras_[size_t(w.id)].Apply(pool_, in.valid() ? data(in) : nullptr, ids, rows(out),
                             pooled ? seq_of_pooled_.data() : seq_of_token_.data(),
                             batch_->adapters, mut(out));
  return Status::Ok();
}

Status CpuBackend::DoActivate(ops::Buffer x, ops::Activation a) {
  float* v = mut(x);
  const size_t n = size_t(rows(x)) * size_t(decl(x).width);
  if (a == ops::Activation::kTanh) {
    for (size_t i = 0; i < n; ++i) v[i] = std::tanh(v[i]);
  } else if (a == ops::Activation::kGelu) {
    Gelu(pool_, v, n);
  } else if (a == ops::Activation::kLog1pRelu) {
    for (size_t i = 0; i < n; ++i) v[i] = std::log1p(std::max(v[i], 0.0f));
  } else if (a == ops::Activation::kQuickGelu) {
    QuickGelu(pool_, v, n);
  } else if (a == ops::Activation::kGeluTanh) {
    GeluTanh(pool_, v, n);
  } else {
    for (size_t i = 0; i < n; ++i) v[i] = std::max(v[i], 0.0f);
  }
  return Status::Ok();
}

Status CpuBackend::DoPixels(ops::Buffer out) {
  const RaggedBatch& batch = *batch_;
  if (batch.pixel_width != decl(out).width) {
    return Status::Internal("cpu backend, Pixels: the batch's pixel rows are " +
                            std::to_string(batch.pixel_width) + " wide, the buffer " +
                            std::to_string(decl(out).width));
  }
  std::memcpy(mut(out), batch.pixels.data(), batch.pixels.size() * sizeof(float));
  return Status::Ok();
}

Status CpuBackend::DoGatherPooled(ops::Buffer tokens, ops::Buffer pooled) {
  EmbeddingLookup(pool_, data(tokens), decl(tokens).width, pooled_rows_.data(),
                  int(pooled_rows_.size()), mut(pooled), false);
  return Status::Ok();
}

Status CpuBackend::DoPool(ops::Buffer hidden, ops::Buffer out, bool normalize) {
  const RaggedBatch& batch = *batch_;
  const int S = batch.num_sequences(), H = decl(out).width;
  const int32_t* cu =
      decl(hidden).rows == ops::Rows::kPooled ? pooled_cu_.data() : batch.cu_seqlens.data();
  orchid::Pool(data(hidden), H, cu, S, batch.pooling.data(), mut(out),
               batch.pool_skips.empty() ? nullptr : batch.pool_skips.data());
  if (normalize) L2Normalize(mut(out), S, H, batch.normalize.data());
  return Status::Ok();
}

}  // namespace orchid
