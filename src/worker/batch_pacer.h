// BatchPacer: how big a batch of bulk work is, and when it may be queued behind the batches
// on the engine, from a batch-time target and the engine's observed speed.
//
// With a target, a bulk batch holds as many tokens as the engine runs in that time at its
// observed rate (seconds per token, an exponentially weighted average over bulk batches), and
// the next bulk batch is queued behind the running ones only in the last tenth of their
// estimated time, so that a query arriving meanwhile waits about one such batch. Before any
// rate is known (and no initial one was given) a bulk batch is one sequence. Without a target
// (zero: also the FCFS policy) bulk batches are max_batch_tokens and may always be queued.
//
// Thread safety: none; the scheduler thread's alone (the scheduler publishes BulkBudget() to
// other threads itself).
#pragma once

#include <chrono>
#include <cstdint>

namespace orchid {

class BatchPacer {
 public:
  using Clock = std::chrono::steady_clock;

  // `target`: the engine time one bulk batch should take (zero: no bound);
  // `initial_seconds_per_token`: the engine's speed at start (0 = unknown).
  BatchPacer(std::chrono::microseconds target, int max_batch_tokens,
             double initial_seconds_per_token);

  bool paced() const { return target_.count() > 0; }
  // Tokens of the next bulk batch: between 1 and max_batch_tokens.
  int BulkBudget() const;
  // The engine time a batch of `tokens` should take at the observed rate (0 while unknown).
  double EstimateSeconds(int64_t tokens) const { return double(tokens) * seconds_per_token_; }

  // A batch was submitted at `now`; `engine_idle`: nothing else was in flight (it starts now).
  void Submitted(Clock::time_point now, bool engine_idle);
  // The oldest batch in flight was ready at `ready_at`; `next_submitted_at` is when the next
  // one in flight was submitted (null: none is). Returns the engine's time on the finished
  // batch (from when it started: submitted to an idle engine, or the batch before it done).
  double FrontDone(Clock::time_point ready_at, const Clock::time_point* next_submitted_at);
  // Learns the rate from a batch of `tokens` that took `seconds` (bulk batches, or any batch
  // while no rate is known). True when the rate, and so BulkBudget(), changed.
  bool Learn(double seconds, int64_t tokens, bool bulk);

  // Whether a bulk batch may be queued at `now` behind batches in flight whose estimated
  // engine time is `work_in_flight` seconds (counted from when the oldest of them started);
  // when not, *wake_at is when it may.
  bool BulkMayQueue(Clock::time_point now, double work_in_flight, Clock::time_point* wake_at) const;

 private:
  const std::chrono::microseconds target_;
  const int max_batch_tokens_;
  double seconds_per_token_ = 0;        // observed engine rate (EWMA); 0 = unknown
  Clock::time_point front_started_at_;  // when the oldest batch in flight began on the engine
};

}  // namespace orchid
