// ThreadPool: the CPU engine's compute threads, used by ops for data parallelism.
//
// ParallelFor() hands out chunks of an index range to the calling thread and to whichever
// workers turn up, and returns when every chunk is done. The caller never waits for a worker
// that has not started: on a busy machine, where the OS may not run a worker for a time
// slice, the caller simply does the work itself (it waits only for chunks a worker has
// already claimed). Workers spin briefly between regions (a forward pass issues dozens of
// short ones back to back), then sleep, so an idle engine costs no CPU.
//
// Thread safety: one caller at a time (the engine thread); fn must not call back into the pool.
// Ops accept a null ThreadPool* and then run serially on the caller.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace orchid {

class ThreadPool {
 public:
  // num_threads counts the caller; values < 1 mean 1 (no workers).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Calls fn(thread, begin, end) over [0, n) in chunks of `grain` items (the last may be
  // shorter). `thread` is in [0, size()), 0 being the caller, and no two concurrent calls
  // share it, so it can index per-thread scratch space.
  using RangeFn = std::function<void(int thread, int64_t begin, int64_t end)>;
  void ParallelFor(int64_t n, int64_t grain, const RangeFn& fn);

  // Tells the workers no region is coming soon: they stop spinning and sleep now rather than
  // after their spin time. The engine calls it when a batch ends with none queued, so that on a
  // small machine the threads that answer the request (the scheduler's, the server's) get the
  // cores at once. The next ParallelFor wakes them as usual.
  void Park();

 private:
  void WorkerLoop(int index);
  void Drain(int thread);  // claims and runs chunks until none are left

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};  // bumped to announce a region
  std::atomic<bool> stop_{false};
  std::atomic<bool> park_{false};  // set by Park(), cleared by the next ParallelFor

  // The current region; written by the caller only while no worker is inside (busy_ == 0,
  // closed_), read by workers only after they entered (busy_) and saw it open (!closed_).
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0, grain_ = 1;
  std::atomic<int64_t> next_{0};
  std::atomic<bool> closed_{true};
  std::atomic<int> busy_{0};
};

// The pool's size, or 1 for a null pool.
inline int PoolSize(const ThreadPool* pool) { return pool == nullptr ? 1 : pool->size(); }

// Runs fn(thread, begin, end) over [0, n): on the pool, or serially as thread 0.
inline void ParallelFor(ThreadPool* pool, int64_t n, int64_t grain, const ThreadPool::RangeFn& fn) {
  if (n <= 0) return;
  if (pool == nullptr || pool->size() == 1 || n <= grain) return fn(0, 0, n);
  pool->ParallelFor(n, grain, fn);
}

// Static split of [0, n) into `parts` contiguous ranges; range `i` is [*begin, *end).
// Boundaries are multiples of `align` (except the end).
inline void SplitRange(int64_t n, int parts, int i, int64_t align, int64_t* begin, int64_t* end) {
  const int64_t blocks = (n + align - 1) / align;
  const int64_t b0 = blocks * i / parts, b1 = blocks * (i + 1) / parts;
  *begin = b0 * align < n ? b0 * align : n;
  *end = b1 * align < n ? b1 * align : n;
}

}  // namespace orchid
