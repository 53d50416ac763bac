// TokenBudgetScheduler: the worker's request pool and batcher, in front of one Engine.
//
// Requests (token-id sequences + pooling + normalise flag) join a queue. One scheduler thread
// owns all queue state; Enqueue() and engine completions only post commands to it. While the
// engine is busy, requests accumulate; when a batch slot is free the scheduler takes sequences
// in arrival order until max_batch_tokens (a request's sequences may span several batches),
// submits the RaggedBatch and, up to max_batches_in_flight, builds the next batch while the
// previous one runs. Rows come back to each request in its sequence order.
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
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/metrics.h"
#include "core/status.h"
#include "engine/engine.h"

namespace orchid {

struct EmbedRequest {
  std::vector<std::vector<int32_t>> sequences;  // each non-empty, at most max_batch_tokens long
  // Token type (segment) ids: empty = all zero for every sequence; else one entry per sequence,
  // each empty (all zero) or exactly as long as its sequence (cross-encoder pairs).
  std::vector<std::vector<int32_t>> token_type_ids;
  Pooling pooling = Pooling::kMean;
  bool normalize = false;
  // Matryoshka: keep the first `dimensions` values of each row, then L2-normalise them
  // (0 = the whole row). At most the model's output width (ModelInfo::output_dim()).
  int dimensions = 0;
  // Sequences not yet put in a batch when the deadline passes, or when `cancelled` (polled by
  // the scheduler thread, so it must be thread-safe) says so, are dropped and the request fails
  // with DeadlineExceeded or Cancelled.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::function<bool()> cancelled;
};

// Keeps the first `dims` values of every row and L2-normalises them (rows of norm zero stay
// zero). Requires 1 <= dims <= m->dim.
void TruncateDimensions(Embeddings* m, int dims);

// Receives one row per sequence of the request, in request order, or the error that ended it.
using EmbedCallback = std::function<void(Result<Embeddings>)>;

// Where the scheduler records what it does (all optional; null = not recorded).
struct SchedulerMetrics {
  Histogram* batch_sequences = nullptr;  // sequences per engine batch
  Histogram* batch_tokens = nullptr;     // tokens per engine batch
  Histogram* queue_seconds = nullptr;    // enqueue → the request's first sequence is batched
  Histogram* engine_seconds = nullptr;   // submit → the batch's result is ready
  Counter* dropped_sequences = nullptr;  // dropped unscheduled (deadline, cancel, shutdown)
};

// Registers the scheduler's histograms and counters (orchid_scheduler_*) in `registry`, with
// `labels` (e.g. {"model", name} when one process runs several schedulers).
SchedulerMetrics RegisterSchedulerMetrics(MetricsRegistry* registry,
                                          const MetricLabels& labels = {});

struct TokenBudgetSchedulerOptions {
  int max_batch_tokens = 16384;        // token budget of one engine batch
  int64_t max_queued_tokens = 262144;  // tokens waiting for a batch; beyond → ResourceExhausted
  int max_batches_in_flight = 2;       // submitted to the engine and not yet routed back
  int max_batch_sequences = 0;         // sequences per batch; 0 = no limit besides tokens
  SchedulerMetrics metrics;
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
  // Adds gauges read from this scheduler at scrape time (queue tokens and requests, batches in
  // flight) to `registry`; the scheduler must outlive every later Render().
  void ExportGauges(MetricsRegistry* registry, const MetricLabels& labels = {}) const;

 private:
  struct Entry;
  struct Slice {  // sequences [first, first + count) of one entry, in one batch
    std::shared_ptr<Entry> entry;
    size_t first = 0;
    size_t count = 0;
  };
  struct InFlight {
    LazyResult result;
    std::vector<Slice> slices;
  };
  void RunScheduler();  // the scheduler thread: owns pending_ and in_flight_
  void LaunchBatch();
  void FailPending(const Status& status);
  void RouteFront();

  Engine* const engine_;
  const TokenBudgetSchedulerOptions options_;
  const ModelInfo info_;

  // Mailbox: the only state shared with other threads, guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Entry>> inbox_;
  // Reported by each batch's LazyResult::OnReady callback (on the engine's thread), not yet
  // routed: the engine hands a finished batch straight to the scheduler thread.
  int completed_batches_ = 0;
  int64_t queued_tokens_ = 0;
  int64_t queued_requests_ = 0;  // accepted, not yet wholly batched or failed
  int batches_in_flight_ = 0;
  bool stopping_ = false;
  // When stopping: the time after which waiting requests are failed (max() = never).
  std::chrono::steady_clock::time_point drain_deadline_ =
      std::chrono::steady_clock::time_point::max();

  // Owned by the scheduler thread alone.
  std::deque<std::shared_ptr<Entry>> pending_;
  std::deque<InFlight> in_flight_;

  std::mutex shutdown_mu_;  // serialises Shutdown() callers
  std::thread scheduler_;
};

}  // namespace orchid
