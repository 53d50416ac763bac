#include "gateway/parallel_slices.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace orchid {

std::optional<ApiError> RunSlices(const Executor& executor, int parallelism, size_t n,
                                  size_t min_per_slice, const SliceFn& fn, int64_t* count) {
  const size_t slices =
      std::min(size_t(std::max(1, parallelism)), n / std::max<size_t>(1, min_per_slice));
  if (slices <= 1) return fn(0, n, count);

  struct Slice {
    std::atomic<bool> claimed{false};
    std::optional<ApiError> error;
    int64_t count = 0;
  };
  struct Shared {
    explicit Shared(size_t k) : slices(k) {}
    std::vector<Slice> slices;
    std::mutex mu;
    std::condition_variable cv;
    size_t finished = 0;
  };
  auto shared = std::make_shared<Shared>(slices);
  // Claims slice k and runs it; only the winner of the claim touches `fn`, and this frame does
  // not return before every claimed slice has finished, so `fn` outlives its uses.
  auto run = [n, slices](Shared& sh, const SliceFn& f, size_t k) {
    if (sh.slices[k].claimed.exchange(true)) return;
    sh.slices[k].error = f(n * k / slices, n * (k + 1) / slices, &sh.slices[k].count);
    std::lock_guard<std::mutex> lock(sh.mu);
    ++sh.finished;
    sh.cv.notify_all();
  };
  for (size_t k = 1; k < slices; ++k) {
    executor([shared, f = &fn, run, k] { run(*shared, *f, k); });
  }
  for (size_t k = 0; k < slices; ++k) run(*shared, fn, k);
  {
    std::unique_lock<std::mutex> lock(shared->mu);
    shared->cv.wait(lock, [&] { return shared->finished == slices; });
  }
  for (Slice& sl : shared->slices) {
    if (sl.error) return std::move(sl.error);  // the lowest failing slice first
    *count += sl.count;
  }
  return std::nullopt;
}

}  // namespace orchid
