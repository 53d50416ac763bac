#include "worker/embed_request.h"

#include <algorithm>
#include <string>

namespace orchid {

Status CheckRequestShape(const EmbedRequest& request) {
  if (request.sequences.empty()) return Status::InvalidArgument("request has no sequences");
  if (!request.token_type_ids.empty() &&
      request.token_type_ids.size() != request.sequences.size()) {
    return Status::InvalidArgument("token_type_ids must have one entry per sequence");
  }
  if (!request.attend_lens.empty() && request.attend_lens.size() != request.sequences.size()) {
    return Status::InvalidArgument("attend_lens must have one entry per sequence");
  }
  if (request.images()) {
    if (request.pixels.size() != request.sequences.size()) {
      return Status::InvalidArgument("pixels must have one entry per sequence");
    }
    if (!request.token_type_ids.empty() || !request.attend_lens.empty() || request.adapter != 0 ||
        request.pool_skip != 0 || request.pooling == Pooling::kNone) {
      return Status::InvalidArgument(
          "images take no token types, attended lengths, task adapter, prompt or per-token "
          "output");
    }
  }
  return Status::Ok();
}

Status ValidateEmbedRequest(const EmbedRequest& request, const ModelInfo& model,
                            const RequestLimits& limits, int64_t* tokens) {
  ORCHID_RETURN_IF_ERROR(CheckRequestShape(request));
  if (request.adapter < 0 || size_t(request.adapter) > model.tasks.size()) {
    return Status::InvalidArgument("task adapter " + std::to_string(request.adapter) +
                                   " is out of range (the model has " +
                                   std::to_string(model.tasks.size()) + ")");
  }
  const int types = std::max(1, model.type_vocab_size);
  for (size_t i = 0; i < request.token_type_ids.size(); ++i) {
    const size_t t = request.token_type_ids[i].size();
    if (t != 0 && t != request.sequences[i].size()) {
      return Status::InvalidArgument("sequence " + std::to_string(i) +
                                     ": token_type_ids and token ids differ in length");
    }
    for (int32_t id : request.token_type_ids[i]) {
      if (id < 0 || id >= types) {
        return Status::InvalidArgument("sequence " + std::to_string(i) + ": token type id " +
                                       std::to_string(id) + " is out of range (the model has " +
                                       std::to_string(types) + " token type" +
                                       (types == 1 ? "" : "s") + ")");
      }
    }
  }
  // Attended lengths (a ColBERT query's [MASK] expansion).
  for (size_t i = 0; i < request.attend_lens.size(); ++i) {
    const int32_t a = request.attend_lens[i];
    if (a < 0 || size_t(a) > request.sequences[i].size() || (a > 0 && model.causal)) {
      return Status::InvalidArgument("sequence " + std::to_string(i) + ": attended length " +
                                     std::to_string(a) + " is out of range");
    }
  }
  if (request.images()) {
    const ImageInput& im = model.image;
    if (!im.enabled()) {
      return Status::InvalidArgument("the model " + model.architecture +
                                     " has no vision tower: it takes text, not images");
    }
    for (size_t i = 0; i < request.sequences.size(); ++i) {
      const std::vector<int32_t>& ids = request.sequences[i];
      bool ok = ids.size() == size_t(im.tokens()) &&
                request.pixels[i].size() == ids.size() * size_t(im.patch_dim());
      for (size_t t = 0; ok && t < ids.size(); ++t) {
        ok = ids[t] == (im.class_token && t == 0 ? 1 : 0);
      }
      if (!ok) {
        return Status::InvalidArgument("image " + std::to_string(i) + " is not " +
                                       std::to_string(im.tokens()) + " tokens of " +
                                       std::to_string(im.patch_dim()) + " pixel values");
      }
    }
  }
  int64_t total = 0;
  for (size_t i = 0; i < request.sequences.size(); ++i) {
    const size_t n = request.sequences[i].size();
    if (n == 0) return Status::InvalidArgument("sequence " + std::to_string(i) + " is empty");
    if (n > size_t(limits.max_batch_tokens)) {
      return Status::OutOfRange("sequence " + std::to_string(i) + " has " + std::to_string(n) +
                                " tokens, more than the batch budget of " +
                                std::to_string(limits.max_batch_tokens));
    }
    total += int64_t(n);
  }
  if (total > limits.max_queued_tokens) {
    return Status::OutOfRange(
        "request has " + std::to_string(total) + " tokens, more than the queue holds (" +
        std::to_string(limits.max_queued_tokens) + "); split it into smaller requests");
  }
  if (request.dimensions < 0) return Status::InvalidArgument("dimensions must not be negative");
  if (request.dimensions > model.output_dim()) {
    return Status::InvalidArgument("dimensions " + std::to_string(request.dimensions) +
                                   " is more than the model's " +
                                   std::to_string(model.output_dim()));
  }
  *tokens = total;
  return Status::Ok();
}

}  // namespace orchid
