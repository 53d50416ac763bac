#include "worker/pending_request.h"

#include <spdlog/spdlog.h>

#include <exception>

namespace orchid {

void InvokeCallback(EmbedCallback& cb, Result<Embeddings> result) {
  try {
    cb(std::move(result));
  } catch (const std::exception& e) {
    spdlog::error("embed callback threw: {}", e.what());
  } catch (...) {
    spdlog::error("embed callback threw");
  }
}

void PendingRequest::Fail(const Status& status) {
  if (failed) return;
  failed = true;
  EmbedCallback cb = std::move(done);
  InvokeCallback(cb, status);
}

void PendingRequest::Succeed() {
  EmbedCallback cb = std::move(done);
  InvokeCallback(cb, std::move(out));
}

int64_t PendingRequest::TokensLeft() const {
  int64_t t = 0;
  for (size_t i = next_seq; i < request.sequences.size(); ++i) {
    t += int64_t(request.sequences[i].size());
  }
  return t;
}

}  // namespace orchid
