#include "engine/ragged_batch.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace orchid {

void RaggedBatch::Add(const int32_t* ids, int n, Pooling pool, bool norm, const int32_t* type_ids,
                      int pool_skip, int attend_len, int adapter) {
  if (cu_seqlens.empty()) cu_seqlens.push_back(0);
  if (adapter != 0 && adapters.empty()) adapters.assign(pooling.size(), 0);
  if (adapter != 0 || !adapters.empty()) adapters.push_back(adapter);
  if (attend_len != 0 && attend_lens.empty()) attend_lens.assign(pooling.size(), 0);
  if (attend_len != 0 || !attend_lens.empty()) attend_lens.push_back(attend_len);
  if (pool_skip != 0 && pool_skips.empty()) pool_skips.assign(pooling.size(), 0);
  if (pool_skip != 0 || !pool_skips.empty()) pool_skips.push_back(pool_skip);
  const bool had_types = !token_type_ids.empty();
  if (type_ids != nullptr && !had_types) token_type_ids.assign(token_ids.size(), 0);
  token_ids.insert(token_ids.end(), ids, ids + n);
  if (type_ids != nullptr) {
    token_type_ids.insert(token_type_ids.end(), type_ids, type_ids + n);
  } else if (!token_type_ids.empty()) {
    token_type_ids.insert(token_type_ids.end(), n, 0);
  }
  for (int i = 0; i < n; ++i) positions.push_back(i);
  cu_seqlens.push_back(cu_seqlens.back() + n);
  pooling.push_back(pool);
  normalize.push_back(norm ? 1 : 0);
}

void RaggedBatch::AddImage(const int32_t* ids, int n, const float* pixel_rows, int width,
                           bool norm) {
  if (cu_seqlens.empty()) cu_seqlens.push_back(0);
  pixel_width = width;
  token_ids.insert(token_ids.end(), ids, ids + n);
  for (int i = 0; i < n; ++i) positions.push_back(i);
  pixels.insert(pixels.end(), pixel_rows, pixel_rows + size_t(n) * size_t(width));
  cu_seqlens.push_back(cu_seqlens.back() + n);
  pooling.push_back(Pooling::kCls);
  normalize.push_back(norm ? 1 : 0);
}

void RaggedBatch::Clear() {
  pixels.clear();
  pixel_width = 0;
  token_ids.clear();
  token_type_ids.clear();
  positions.clear();
  cu_seqlens.clear();
  pooling.clear();
  normalize.clear();
  pool_skips.clear();
  attend_lens.clear();
  adapters.clear();
}

Status RaggedBatch::Validate(int32_t vocab_size) const {
  const size_t n = token_ids.size();
  if (cu_seqlens.empty()) {
    return n == 0 ? Status::Ok() : Status::Internal("ragged batch: tokens without cu_seqlens");
  }
  const size_t s = cu_seqlens.size() - 1;
  if (positions.size() != n) return Status::Internal("ragged batch: positions size mismatch");
  if (!token_type_ids.empty() && token_type_ids.size() != n) {
    return Status::Internal("ragged batch: token_type_ids size mismatch");
  }
  if (pooling.size() != s || normalize.size() != s ||
      (!pool_skips.empty() && pool_skips.size() != s) ||
      (!attend_lens.empty() && attend_lens.size() != s) ||
      (!adapters.empty() && adapters.size() != s)) {
    return Status::Internal("ragged batch: per-sequence arrays size mismatch");
  }
  for (int32_t k : pool_skips) {
    if (k < 0) return Status::Internal("ragged batch: negative pool skip");
  }
  if (cu_seqlens[0] != 0 || size_t(cu_seqlens[s]) != n) {
    return Status::Internal("ragged batch: cu_seqlens must start at 0 and end at num_tokens");
  }
  for (size_t i = 0; i < s; ++i) {
    if (cu_seqlens[i + 1] <= cu_seqlens[i]) {
      return Status::Internal("ragged batch: sequence " + std::to_string(i) + " is empty");
    }
    if (!attend_lens.empty() &&
        (attend_lens[i] < 0 || attend_lens[i] > cu_seqlens[i + 1] - cu_seqlens[i])) {
      return Status::Internal("ragged batch: attended length out of range");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (token_ids[i] < 0 || token_ids[i] >= vocab_size) {
      return Status::InvalidArgument("token id " + std::to_string(token_ids[i]) +
                                     " is out of the vocabulary (size " +
                                     std::to_string(vocab_size) + ")");
    }
  }
  return Status::Ok();
}

namespace {

Status ValidateImages(const RaggedBatch& b, const ModelInfo& info) {
  const ImageInput& im = info.image;
  if (!im.enabled()) return Status::InvalidArgument("the model has no vision tower (images)");
  if (b.pixel_width != im.patch_dim()) {
    return Status::Internal("ragged batch: pixel rows of " + std::to_string(b.pixel_width) +
                            " values, the model's patches have " + std::to_string(im.patch_dim()));
  }
  if (b.pixels.size() != size_t(b.num_tokens()) * size_t(b.pixel_width)) {
    return Status::Internal("ragged batch: pixels size mismatch");
  }
  if (!b.token_type_ids.empty() || !b.adapters.empty() || !b.attend_lens.empty() ||
      !b.pool_skips.empty()) {
    return Status::Internal("ragged batch: an image batch with token types, adapters or skips");
  }
  for (int s = 0; s < b.num_sequences(); ++s) {
    if (b.seq_len(s) != im.tokens()) {
      return Status::InvalidArgument("image " + std::to_string(s) + " has " +
                                     std::to_string(b.seq_len(s)) + " tokens, the model takes " +
                                     std::to_string(im.tokens()));
    }
    if (b.pooling[size_t(s)] != Pooling::kCls) {
      return Status::Internal("ragged batch: an image is pooled at its first token");
    }
    for (int i = 0; i < im.tokens(); ++i) {
      const size_t t = size_t(b.cu_seqlens[size_t(s)] + i);
      const int want_id = im.class_token && i == 0 ? 1 : 0;
      if (b.token_ids[t] != want_id || b.positions[t] != i) {
        return Status::InvalidArgument("image " + std::to_string(s) +
                                       ": token ids or positions are not an image's");
      }
    }
  }
  for (float v : b.pixels) {
    if (!std::isfinite(v)) return Status::InvalidArgument("a pixel value is not finite");
  }
  return Status::Ok();
}

}  // namespace

Status RaggedBatch::Validate(const ModelInfo& info) const {
  if (image_batch()) {
    ORCHID_RETURN_IF_ERROR(Validate(2));
    return ValidateImages(*this, info);
  }
  if (!pixels.empty()) return Status::Internal("ragged batch: pixels without a pixel width");
  ORCHID_RETURN_IF_ERROR(Validate(info.vocab_size));
  for (int32_t p : positions) {
    if (p < 0 || p >= info.max_position_embeddings) {
      return Status::OutOfRange("position " + std::to_string(p) + " is outside [0, " +
                                std::to_string(info.max_position_embeddings) +
                                ") (the model's usable position embeddings)");
    }
  }
  // A model without token-type embeddings (type_vocab_size 0) takes type 0, which adds nothing.
  const int types = std::max(1, info.type_vocab_size);
  for (int32_t t : token_type_ids) {
    if (t < 0 || t >= types) {
      return Status::InvalidArgument("token type id " + std::to_string(t) + " is outside [0, " +
                                     std::to_string(types) + ")");
    }
  }
  for (int32_t a : adapters) {
    if (a < 0 || size_t(a) > info.tasks.size()) {
      return Status::InvalidArgument("task adapter " + std::to_string(a) + " is outside [0, " +
                                     std::to_string(info.tasks.size()) + "]");
    }
  }
  // Pooling::kNone (per-token output) is checked by each engine: only dense embedders have it.
  return Status::Ok();
}

}  // namespace orchid
