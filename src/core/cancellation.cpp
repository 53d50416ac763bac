#include "core/cancellation.h"

#include <utility>

namespace orchid {

void Cancellation::Cancel() {
  std::vector<std::function<void()>> run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_.exchange(true)) return;
    run.swap(callbacks_);
  }
  for (auto& callback : run) callback();
}

bool Cancellation::cancelled() const {
  if (cancelled_.load(std::memory_order_acquire)) return true;
  return poll_ && poll_();
}

void Cancellation::OnCancel(std::function<void()> callback) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cancelled_.load()) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

}  // namespace orchid
