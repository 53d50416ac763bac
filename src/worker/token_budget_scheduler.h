// TokenBudgetScheduler: the worker's request pool and batcher, in front of one Engine.
//
// Requests (token-id sequences + pooling + normalise flag + Scheduling) join a queue. One
// scheduler thread owns all queue state; Enqueue() and engine completions only post commands to
// it. While the engine is busy, requests accumulate; when a batch may be launched the scheduler
// takes sequences (a request's sequences may span several batches), submits the RaggedBatch and
// builds the next while the previous one runs. Rows come back to each request in its sequence
// order. Two policies:
//
//   kPriority (the default)  Requests are ordered by priority (lower first), then class:
//     queries (small requests, or marked so) go ahead of bulk work, first come first served
//     among themselves; bulk requests of one priority share the engine by tokens, flow by flow
//     (start-time fair queueing: each flow's turn is the tokens it has had, and a newcomer
//     starts level with the least served). With a batch-time target, a batch of bulk work
//     holds only as many tokens as the engine runs in that time at its observed rate, and the
//     next bulk batch is queued behind a running one only in its last tenth, so a query that
//     arrives waits about one such batch. A batch that starts with queries holds queries only,
//     up to max_batch_tokens.
//   kFcfs  Sequences in arrival order up to max_batch_tokens per batch, max_batches_in_flight
//     on the engine (the behaviour before priorities; kept for comparison).
//
// Either way, every launch first drops the unbatched sequences of requests that were cancelled
// or whose deadline passed, failing them once (Cancelled / DeadlineExceeded).
//
// This file is the queue and the thread; each policy has its own: embed_request.h (what a
// request is, and the checks it passes), fair_share.h (bulk flows' turns), batch_pacer.h (bulk
// batch size and timing from the engine's observed rate), batch_filler.h (a batch under its
// budgets), row_assembler.h (rows back to requests, Matryoshka truncation),
// scheduler_metrics.h (what is recorded).
//
// Thread safety: every public method may be called from any thread. Callbacks run on the
// scheduler thread, exactly once per accepted request; they must be quick (hand real work to
// another thread), must not call Shutdown(), and should not throw (exceptions are logged and
// dropped).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/metrics.h"
#include "core/status.h"
#include "engine/engine.h"
#include "worker/batch_filler.h"
#include "worker/batch_pacer.h"
#include "worker/embed_request.h"
#include "worker/fair_share.h"
#include "worker/pending_request.h"
#include "worker/scheduler_metrics.h"
#include "worker/scheduling.h"

namespace orchid {

enum class SchedulingPolicy : uint8_t { kPriority, kFcfs };

struct TokenBudgetSchedulerOptions {
  int max_batch_tokens = 16384;        // token budget of one engine batch
  int64_t max_queued_tokens = 262144;  // tokens waiting for a batch; beyond → ResourceExhausted
  int max_batches_in_flight = 2;       // submitted to the engine and not yet routed back
  int max_batch_sequences = 0;         // sequences per batch; 0 = no limit besides tokens
  SchedulerMetrics metrics;
  SchedulingPolicy policy = SchedulingPolicy::kPriority;
  // kPriority: the engine time a batch of bulk work should take (see above); zero = no bound
  // (bulk batches up to max_batch_tokens). The CLI measures a default (batch_calibration.h).
  std::chrono::microseconds max_batch_time{0};
  // The engine's speed at start, in seconds per token (from the calibration); 0 = unknown: the
  // first bulk batch is one sequence, and the rate is learned from the batches that run.
  double initial_seconds_per_token = 0;
  QueryThresholds query;  // what makes a request of class kAuto a query
};

class TokenBudgetScheduler {
 public:
  // `engine` must outlive the scheduler. Starts the scheduler thread.
  TokenBudgetScheduler(Engine* engine, TokenBudgetSchedulerOptions options);
  // Shutdown(), then joins.
  ~TokenBudgetScheduler();
  TokenBudgetScheduler(const TokenBudgetScheduler&) = delete;
  TokenBudgetScheduler& operator=(const TokenBudgetScheduler&) = delete;

  // The engine's model, with max_seq_length capped at max_batch_tokens (a sequence must fit in
  // one batch): what the HTTP layer truncates or refuses inputs against.
  const ModelInfo& model_info() const { return info_; }
  const TokenBudgetSchedulerOptions& options() const { return options_; }

  // Queues the request; `done` will be called once with its rows. Never blocks on the engine.
  // Errors, returned at once (and `done` is then never called):
  //   InvalidArgument   no sequences, an empty sequence, token_type_ids of the wrong shape
  //                     (ValidateEmbedRequest: every check)
  //   OutOfRange        a sequence longer than max_batch_tokens, or the request alone holds
  //                     more tokens than max_queued_tokens
  //   ResourceExhausted the queue has no room for the request's tokens now (retry later)
  //   Unavailable       after Shutdown()
  Status Enqueue(EmbedRequest request, EmbedCallback done);

  // Convenience for callers that want to block: the future holds the rows or the error
  // (including the immediate errors of Enqueue).
  std::future<Result<Embeddings>> Enqueue(EmbedRequest request);

  // Stops accepting requests and answers every accepted one, then stops the scheduler thread.
  // Requests still waiting for a batch once `drain_timeout` has passed are failed with
  // Unavailable; batches already on the engine always finish. Idempotent (a later call can
  // only shorten the deadline); blocks until done.
  void Shutdown(std::chrono::milliseconds drain_timeout = kDrainForever);
  static constexpr std::chrono::milliseconds kDrainForever = std::chrono::milliseconds::max();

  // Tokens, and requests, waiting for a batch right now (for metrics and tests).
  int64_t queued_tokens() const;
  int64_t queued_requests() const;
  // Batches submitted to the engine and not yet routed back.
  int batches_in_flight() const;
  // The token budget of the next bulk batch (max_batch_tokens without a batch-time target).
  int bulk_batch_tokens() const;
  // Adds gauges read from this scheduler at scrape time (queue tokens and requests, batches in
  // flight, the batch-time target and the bulk batch budget) to `registry`; the scheduler must
  // outlive every later Render(). (Defined in scheduler_metrics.cpp.)
  void ExportGauges(MetricsRegistry* registry, const MetricLabels& labels = {}) const;

 private:
  using Clock = std::chrono::steady_clock;
  using EntryPtr = std::shared_ptr<PendingRequest>;
  struct BatchTiming {  // written by the engine's completion callback, under mu_
    Clock::time_point ready_at;
  };
  struct InFlight {
    LazyResult result;
    std::vector<BatchSlice> slices;
    int64_t tokens = 0;
    bool bulk = false;  // held bulk work (sized by the batch-time target)
    Clock::time_point submitted_at;
    double estimated_seconds = 0;
    std::shared_ptr<BatchTiming> timing;
  };
  void RunScheduler();  // the scheduler thread: owns pending_, in_flight_ and the pacer
  // Moves an arrival into pending_ (its flow, and its share when it is bulk work).
  void Admit(EntryPtr entry);
  // Fails and removes every pending request that was cancelled or whose deadline passed.
  void DropAbandoned(Clock::time_point now);
  // Whether the next batch may go now; if it may later, *wake_at is when.
  bool MayLaunch(Clock::time_point now, Clock::time_point* wake_at) const;
  // Takes the next batch's sequences (see the top of this file for the order) and submits
  // them, in the steps below.
  void LaunchBatch();
  // (priority, 0 for queries / 1 for bulk) under kPriority; the same for every request
  // under kFcfs. Requests are served by level, then arrival.
  std::pair<int32_t, int> Level(const PendingRequest& e) const;
  // The pending requests that are not failed, in the order they are served.
  std::vector<EntryPtr> ServiceOrder() const;
  // Fills `batch` from `order`, level by level: queries (and FCFS) in order, bulk work by fair
  // share. A batch that starts with queries holds queries only.
  void FillBatch(const std::vector<EntryPtr>& order, bool bulk_batch, BatchFiller* batch);
  // Retires the wholly batched requests and takes the batch's tokens off the queue.
  void RetireBatched(int64_t tokens, bool launched);
  // Hands the batch to the engine and tracks it until RouteFront().
  void Submit(RaggedBatch batch, std::vector<BatchSlice> slices, int64_t tokens, bool bulk,
              Clock::time_point now);
  void FailPending(const Status& status);
  // Routes the rows of the oldest batch in flight (already complete) to their requests, and
  // learns the engine's speed from it.
  void RouteFront();
  // Marks a failed or wholly batched entry for removal from pending_ (and from its flow).
  void Retire(PendingRequest& e);

  Engine* const engine_;
  const TokenBudgetSchedulerOptions options_;
  const ModelInfo info_;
  const bool priority_;  // options_.policy == kPriority

  // Mailbox: the only state shared with other threads, guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EntryPtr> inbox_;
  // Reported by each batch's LazyResult::OnReady callback (on the engine's thread), not yet
  // routed: the engine hands a finished batch straight to the scheduler thread.
  int completed_batches_ = 0;
  int64_t queued_tokens_ = 0;
  int64_t queued_requests_ = 0;  // accepted, not yet wholly batched or failed
  int batches_in_flight_ = 0;
  int bulk_budget_ = 0;  // pacer_.BulkBudget(), for readers on other threads
  bool stopping_ = false;
  // When stopping: the time after which waiting requests are failed (max() = never).
  std::chrono::steady_clock::time_point drain_deadline_ =
      std::chrono::steady_clock::time_point::max();

  // Owned by the scheduler thread alone.
  std::vector<EntryPtr> pending_;  // in arrival order
  std::deque<InFlight> in_flight_;
  uint64_t arrivals_ = 0;
  FairShare fair_share_;
  BatchPacer pacer_;

  std::mutex shutdown_mu_;  // serialises Shutdown() callers
  std::thread scheduler_;
};

}  // namespace orchid
