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

const Result<Embeddings>& LazyResult::wait() const {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->done; });
  return state_->result;
}

void LazyResult::Promise::Set(Result<Embeddings> r) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->done) return;
    state_->result = std::move(r);
    state_->done = true;
  }
  state_->cv.notify_all();
}

}  // namespace orchid
