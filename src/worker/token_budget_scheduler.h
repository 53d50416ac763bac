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
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/metrics.h"
#include "core/status.h"
#include "engine/engine.h"
#include "worker/scheduling.h"

namespace orchid {

struct EmbedRequest {
  std::vector<std::vector<int32_t>> sequences;  // each non-empty, at most max_batch_tokens long
  // Token type (segment) ids: empty = all zero for every sequence; else one entry per sequence,
  // each empty (all zero) or exactly as long as its sequence (cross-encoder pairs).
  std::vector<std::vector<int32_t>> token_type_ids;
  Pooling pooling = Pooling::kMean;  // kNone: every token's last hidden state (see below)
  // Leading tokens of every sequence that pooling leaves out (the prompt, under
  // sentence-transformers' include_prompt: false); 0 = none.
  int pool_skip = 0;
  // [sequences] or empty: tokens of each sequence that are attended to (RaggedBatch::attend_lens;
  // 0: all).
  std::vector<int32_t> attend_lens;
  // The task adapter every sequence runs with (RaggedBatch::adapters): 1-based into
  // ModelInfo::tasks, 0 = none. A batch mixes requests of different adapters.
  int adapter = 0;
  bool normalize = false;
  // Matryoshka: keep the first `dimensions` values of each row (0 = the whole row), then
  // L2-normalise them when `normalize` is set (OpenAI's normalised embeddings); without it the
  // truncated row is returned as is (sentence-transformers' truncate_dim). At most the model's
  // output width (ModelInfo::output_dim()).
  int dimensions = 0;
  // Priority, class, fair-share flow, deadline and cancellation (see scheduling.h).
  Scheduling scheduling;
};

// Keeps the first `dims` values of every row and, with `renormalize`, L2-normalises them (rows
// of norm zero stay zero). Requires 1 <= dims <= m->dim.
void TruncateDimensions(Embeddings* m, int dims, bool renormalize);

// Receives one row per sequence of the request, in request order, or the error that ended it.
// With Pooling::kNone (per-token output): one row per token instead, hidden_size wide, the
// sequences' tokens one after the other in request order.
using EmbedCallback = std::function<void(Result<Embeddings>)>;

// Where the scheduler records what it does (all optional; null = not recorded).
struct SchedulerMetrics {
  Histogram* batch_sequences = nullptr;  // sequences per engine batch
  Histogram* batch_tokens = nullptr;     // tokens per engine batch
  // Enqueue → the request's first sequence is batched, by class.
  Histogram* queue_seconds_query = nullptr;
  Histogram* queue_seconds_bulk = nullptr;
  Histogram* engine_seconds = nullptr;   // submit → the batch's result is ready
  Histogram* batch_seconds = nullptr;    // the engine's time on one batch: start → ready
  // Sequences dropped before reaching a batch, by reason.
  Counter* cancelled_sequences = nullptr;
  Counter* expired_sequences = nullptr;   // deadline passed
  Counter* shutdown_sequences = nullptr;  // the server stopped before they ran
};

// Registers the scheduler's histograms and counters (orchid_scheduler_*) in `registry`, with
// `labels` (e.g. {"model", name} when one process runs several schedulers).
SchedulerMetrics RegisterSchedulerMetrics(MetricsRegistry* registry,
                                          const MetricLabels& labels = {});

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
  // outlive every later Render().
  void ExportGauges(MetricsRegistry* registry, const MetricLabels& labels = {}) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry;
  struct Slice {  // sequences [first, first + count) of one entry, in one batch
    std::shared_ptr<Entry> entry;
    size_t first = 0;
    size_t count = 0;
  };
  struct BatchTiming {  // written by the engine's completion callback, under mu_
    Clock::time_point ready_at;
  };
  struct InFlight {
    LazyResult result;
    std::vector<Slice> slices;
    int64_t tokens = 0;
    bool bulk = false;  // held bulk work (sized by the batch-time target)
    Clock::time_point submitted_at;
    double estimated_seconds = 0;
    std::shared_ptr<BatchTiming> timing;
  };
  void RunScheduler();  // the scheduler thread: owns pending_, in_flight_ and the rate
  // Moves arrivals into pending_ (classifying them, and starting new bulk flows level with the
  // least served flow of their priority).
  void Admit(std::shared_ptr<Entry> entry);
  // Fails and removes every pending request that was cancelled or whose deadline passed.
  void DropAbandoned(Clock::time_point now);
  // Whether the next batch may go now; if it may later, *wake_at is when.
  bool MayLaunch(Clock::time_point now, Clock::time_point* wake_at) const;
  void LaunchBatch();
  void FailPending(const Status& status);
  void RouteFront();
  int BulkBudget() const;  // tokens of the next bulk batch
  // Removes a failed or wholly batched entry from pending_ (and its flow when it was the last).
  void Retire(size_t index);

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
  int bulk_budget_ = 0;  // BulkBudget(), for readers on other threads
  bool stopping_ = false;
  // When stopping: the time after which waiting requests are failed (max() = never).
  std::chrono::steady_clock::time_point drain_deadline_ =
      std::chrono::steady_clock::time_point::max();

  // Owned by the scheduler thread alone.
  std::vector<std::shared_ptr<Entry>> pending_;  // in arrival order
  std::deque<InFlight> in_flight_;
  uint64_t arrivals_ = 0;
  // Bulk fair share: each flow's turn (tokens it has had, from its start), by (priority, flow).
  std::map<std::pair<int32_t, uint64_t>, double> flow_turn_;
  std::map<std::pair<int32_t, uint64_t>, int> flow_entries_;  // pending entries per flow
  uint64_t next_own_flow_ = 0;          // flows for requests without one (counting down from max)
  double seconds_per_token_ = 0;        // observed engine rate (EWMA); 0 = unknown
  int last_bulk_tokens_ = 0;            // tokens of the last bulk batch (its rate updates the EWMA)
  Clock::time_point front_started_at_;  // when in_flight_.front() began on the engine

  std::mutex shutdown_mu_;  // serialises Shutdown() callers
  std::thread scheduler_;
};

}  // namespace orchid
