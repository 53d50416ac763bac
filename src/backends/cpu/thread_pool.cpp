#include "backends/cpu/thread_pool.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ORCHID_CPU_RELAX() _mm_pause()
#else
#define ORCHID_CPU_RELAX() std::this_thread::yield()
#endif

namespace orchid {
namespace {

// How long a worker spins for the next region before sleeping. Regions in a forward pass are
// microseconds to milliseconds apart; between batches the worker sleeps.
constexpr auto kSpinTime = std::chrono::microseconds(200);

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::Drain(int thread) {
  for (;;) {
    const int64_t b = next_.fetch_add(grain_, std::memory_order_relaxed);
    if (b >= n_) return;
    (*fn_)(thread, b, b + grain_ < n_ ? b + grain_ : n_);
  }
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    if (g == seen) {
      const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
      int spins = 0;
      while ((g = generation_.load(std::memory_order_acquire)) == seen) {
        ORCHID_CPU_RELAX();
        if (park_.load(std::memory_order_relaxed) ||
            (++spins % 64 == 0 && std::chrono::steady_clock::now() > deadline)) {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
          g = generation_.load(std::memory_order_acquire);
          break;
        }
      }
    }
    seen = g;
    if (stop_.load()) return;
    // Enter, then check the region is still open (seq_cst on both sides: either the caller
    // sees us busy and waits, or we see it closed and stay out).
    busy_.fetch_add(1);
    if (!closed_.load()) Drain(index);
    busy_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::Park() { park_.store(true, std::memory_order_relaxed); }

void ThreadPool::ParallelFor(int64_t n, int64_t grain, const RangeFn& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (workers_.empty() || n <= grain) return fn(0, 0, n);
  park_.store(false, std::memory_order_relaxed);
  fn_ = &fn;
  n_ = n;
  grain_ = grain;
  next_.store(0, std::memory_order_relaxed);
  closed_.store(false);  // publishes the fields above
  {
    // Under the lock so a worker between its check and its wait cannot miss the wake-up.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  Drain(0);
  closed_.store(true);
  // Only workers that entered can still be running chunks they claimed.
  int spins = 0;
  while (busy_.load() != 0) {
    ORCHID_CPU_RELAX();
    if (++spins > 1024) std::this_thread::yield();
  }
}

}  // namespace orchid
