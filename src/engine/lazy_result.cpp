#include "engine/lazy_result.h"

namespace orchid {

std::pair<LazyResult, LazyResult::Promise> LazyResult::Make() {
  auto s = std::make_shared<State>();
  return {LazyResult(s), Promise(s)};
}

bool LazyResult::ready() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->done;
}

const Result<Embeddings>& LazyResult::wait() const& {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->done; });
  return state_->result;
}

Result<Embeddings> LazyResult::wait() && {
  const Result<Embeddings>& r = static_cast<const LazyResult&>(*this).wait();
  // The last handle (the promise is gone once done) may give its result away.
  if (state_.use_count() == 1) return std::move(state_->result);
  return r;
}

void LazyResult::OnReady(std::function<void()> callback) const {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->done) {
      state_->on_ready.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

void LazyResult::Promise::Set(Result<Embeddings> r) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->done) return;
    state_->result = std::move(r);
    state_->done = true;
    callbacks.swap(state_->on_ready);
  }
  state_->cv.notify_all();
  for (auto& callback : callbacks) callback();
}

}  // namespace orchid
