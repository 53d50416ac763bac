#include "worker/token_budget_scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <utility>

namespace orchid {

void TruncateDimensions(Embeddings* m, int dims) {
  const size_t d = size_t(dims);
  for (int r = 0; r < m->rows; ++r) {
    const float* src = m->row(r);
    float* dst = m->data.data() + size_t(r) * d;  // rows move down in place: dst <= src
    double sq = 0;
    for (size_t c = 0; c < d; ++c) sq += double(src[c]) * double(src[c]);
    const double norm = std::sqrt(sq);
    const float scale = norm > 0 ? float(1.0 / norm) : 0.0f;
    for (size_t c = 0; c < d; ++c) dst[c] = src[c] * scale;
  }
  m->dim = dims;
  m->data.resize(size_t(m->rows) * d);
}

namespace {

// A callback that throws must not take the scheduler thread down with it.
void Invoke(EmbedCallback& cb, Result<Embeddings> result) {
  try {
    cb(std::move(result));
  } catch (const std::exception& e) {
    spdlog::error("embed callback threw: {}", e.what());
  } catch (...) {
    spdlog::error("embed callback threw");
  }
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

SchedulerMetrics RegisterSchedulerMetrics(MetricsRegistry* registry, const MetricLabels& labels) {
  SchedulerMetrics m;
  m.batch_sequences =
      registry->GetHistogram("orchid_scheduler_batch_sequences", "Sequences per engine batch",
                             ExponentialBuckets(1, 2, 14), labels);
  m.batch_tokens =
      registry->GetHistogram("orchid_scheduler_batch_tokens", "Tokens per engine batch",
                             ExponentialBuckets(16, 2, 14), labels);
  m.queue_seconds = registry->GetHistogram(
      "orchid_scheduler_queue_seconds",
      "Time from a request's arrival until its first sequence is put in a batch", LatencyBuckets(),
      labels);
  m.engine_seconds = registry->GetHistogram(
      "orchid_scheduler_engine_seconds", "Time from submitting a batch until its result is ready",
      LatencyBuckets(), labels);
  m.dropped_sequences = registry->GetCounter(
      "orchid_scheduler_dropped_sequences_total",
      "Sequences dropped before reaching a batch (deadline passed, cancelled, shutdown)", labels);
  return m;
}

struct TokenBudgetScheduler::Entry {
  EmbedRequest request;
  EmbedCallback done;
  std::chrono::steady_clock::time_point enqueued_at;
  size_t next_seq = 0;   // first sequence not yet put in a batch
  size_t rows_done = 0;  // rows routed back so far
  Embeddings out;        // sized when the first rows arrive
  bool failed = false;

  void Fail(const Status& status) {
    if (failed) return;
    failed = true;
    EmbedCallback cb = std::move(done);
    Invoke(cb, status);
  }
};

namespace {

ModelInfo CapInputs(ModelInfo info, int max_batch_tokens) {
  int max_len = info.max_seq_length > 0 ? info.max_seq_length : info.max_position_embeddings;
  if (max_batch_tokens > 0 && max_len > max_batch_tokens) max_len = max_batch_tokens;
  info.max_seq_length = max_len;
  return info;
}

}  // namespace

TokenBudgetScheduler::TokenBudgetScheduler(Engine* engine, TokenBudgetSchedulerOptions options)
    : engine_(engine),
      options_(options),
      info_(CapInputs(engine->info(), options.max_batch_tokens)) {
  scheduler_ = std::thread([this] { RunScheduler(); });
}

TokenBudgetScheduler::~TokenBudgetScheduler() { Shutdown(); }

Status TokenBudgetScheduler::Enqueue(EmbedRequest request, EmbedCallback done) {
  if (request.sequences.empty()) return Status::InvalidArgument("request has no sequences");
  if (!request.token_type_ids.empty()) {
    if (request.token_type_ids.size() != request.sequences.size()) {
      return Status::InvalidArgument("token_type_ids must have one entry per sequence");
    }
    for (size_t i = 0; i < request.sequences.size(); ++i) {
      const size_t t = request.token_type_ids[i].size();
      if (t != 0 && t != request.sequences[i].size()) {
        return Status::InvalidArgument("sequence " + std::to_string(i) +
                                       ": token_type_ids and token ids differ in length");
      }
      // Checked here, not only in the model: one bad id would fail the whole engine batch,
      // and with it every other request that shares it.
      const int types = std::max(1, engine_->info().type_vocab_size);
      for (int32_t id : request.token_type_ids[i]) {
        if (id < 0 || id >= types) {
          return Status::InvalidArgument("sequence " + std::to_string(i) + ": token type id " +
                                         std::to_string(id) + " is out of range (the model has " +
                                         std::to_string(types) + " token type" +
                                         (types == 1 ? "" : "s") + ")");
        }
      }
    }
  }
  int64_t total = 0;
  for (size_t i = 0; i < request.sequences.size(); ++i) {
    const size_t n = request.sequences[i].size();
    if (n == 0) return Status::InvalidArgument("sequence " + std::to_string(i) + " is empty");
    if (n > size_t(options_.max_batch_tokens)) {
      return Status::OutOfRange("sequence " + std::to_string(i) + " has " + std::to_string(n) +
                                " tokens, more than the batch budget of " +
                                std::to_string(options_.max_batch_tokens));
    }
    total += int64_t(n);
  }
  if (total > options_.max_queued_tokens) {
    return Status::OutOfRange(
        "request has " + std::to_string(total) + " tokens, more than the queue holds (" +
        std::to_string(options_.max_queued_tokens) + "); split it into smaller requests");
  }
  if (request.dimensions < 0) return Status::InvalidArgument("dimensions must not be negative");
  if (request.dimensions > engine_->info().output_dim()) {
    return Status::InvalidArgument("dimensions " + std::to_string(request.dimensions) +
                                   " is more than the model's " +
                                   std::to_string(engine_->info().output_dim()));
  }
  auto entry = std::make_shared<Entry>();
  entry->request = std::move(request);
  entry->done = std::move(done);
  entry->enqueued_at = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Status::Unavailable("the server is shutting down");
    if (queued_tokens_ + total > options_.max_queued_tokens) {
      return Status::ResourceExhausted("queue full: " + std::to_string(queued_tokens_) +
                                       " tokens waiting; retry later");
    }
    queued_tokens_ += total;
    ++queued_requests_;
    inbox_.push_back(std::move(entry));
  }
  cv_.notify_one();
  return Status::Ok();
}

std::future<Result<Embeddings>> TokenBudgetScheduler::Enqueue(EmbedRequest request) {
  auto promise = std::make_shared<std::promise<Result<Embeddings>>>();
  auto future = promise->get_future();
  Status st = Enqueue(std::move(request),
                      [promise](Result<Embeddings> r) { promise->set_value(std::move(r)); });
  if (!st.ok()) promise->set_value(std::move(st));
  return future;
}

void TokenBudgetScheduler::Shutdown(std::chrono::milliseconds drain_timeout) {
  using Clock = std::chrono::steady_clock;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    // Beyond ~100 years counts as "never" (and keeps now + timeout from overflowing).
    if (drain_timeout < std::chrono::hours(24 * 365 * 100)) {
      drain_deadline_ = std::min(drain_deadline_, Clock::now() + drain_timeout);
    }
  }
  cv_.notify_one();
  std::lock_guard<std::mutex> serial(shutdown_mu_);
  if (scheduler_.joinable()) scheduler_.join();
}

int64_t TokenBudgetScheduler::queued_tokens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_tokens_;
}

int64_t TokenBudgetScheduler::queued_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_requests_;
}

int TokenBudgetScheduler::batches_in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_in_flight_;
}

void TokenBudgetScheduler::ExportGauges(MetricsRegistry* registry,
                                        const MetricLabels& labels) const {
  registry->AddGaugeCallback("orchid_scheduler_queued_tokens", "Tokens waiting for a batch", labels,
                             [this] { return double(queued_tokens()); });
  registry->AddGaugeCallback("orchid_scheduler_queued_requests",
                             "Requests with sequences waiting for a batch", labels,
                             [this] { return double(queued_requests()); });
  registry->AddGaugeCallback("orchid_scheduler_batches_in_flight",
                             "Batches submitted to the engine and not yet returned", labels,
                             [this] { return double(batches_in_flight()); });
}

void TokenBudgetScheduler::RunScheduler() {
  using Clock = std::chrono::steady_clock;
  const size_t max_in_flight = size_t(std::max(1, options_.max_batches_in_flight));
  for (;;) {
    int completed = 0;
    bool drain_expired = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto has_work = [&] {
        if (!inbox_.empty() || completed_batches_ > 0) return true;
        if (!stopping_) return false;
        if (pending_.empty() && in_flight_.empty()) return true;  // time to exit
        return !pending_.empty() && Clock::now() >= drain_deadline_;
      };
      while (!has_work()) {
        if (stopping_ && !pending_.empty() && drain_deadline_ != Clock::time_point::max()) {
          cv_.wait_until(lock, drain_deadline_);
        } else {
          cv_.wait(lock);
        }
      }
      while (!inbox_.empty()) {
        pending_.push_back(std::move(inbox_.front()));
        inbox_.pop_front();
      }
      completed = std::exchange(completed_batches_, 0);
      drain_expired = stopping_ && Clock::now() >= drain_deadline_;
      if (stopping_ && completed == 0 && pending_.empty() && in_flight_.empty()) return;
    }
    for (int i = 0; i < completed; ++i) RouteFront();
    if (drain_expired) FailPending(Status::Unavailable("the server is shutting down"));
    while (!pending_.empty() && in_flight_.size() < max_in_flight) LaunchBatch();
  }
}

// Fails every request still waiting for a batch (their batched parts are dropped on return).
void TokenBudgetScheduler::FailPending(const Status& status) {
  int64_t dequeued = 0;
  int64_t dropped = 0;
  for (const std::shared_ptr<Entry>& entry : pending_) {
    const auto& seqs = entry->request.sequences;
    for (size_t i = entry->next_seq; i < seqs.size(); ++i) dequeued += int64_t(seqs[i].size());
    dropped += int64_t(seqs.size() - entry->next_seq);
  }
  if (options_.metrics.dropped_sequences != nullptr && dropped > 0) {
    options_.metrics.dropped_sequences->Inc(double(dropped));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_tokens_ -= dequeued;
    queued_requests_ -= int64_t(pending_.size());
  }
  std::deque<std::shared_ptr<Entry>> failed;
  failed.swap(pending_);
  for (const std::shared_ptr<Entry>& entry : failed) entry->Fail(status);
}

// Takes sequences in arrival order until the token budget is reached and submits them.
// May take nothing (when every pending entry has failed); it then empties pending_.
void TokenBudgetScheduler::LaunchBatch() {
  RaggedBatch batch;
  std::vector<Slice> slices;
  int64_t batch_tokens = 0;
  int64_t dequeued = 0;  // leaves the queue: batched, or dropped with a failed request
  int64_t done_requests = 0;  // wholly batched or failed: leave the request count
  const size_t max_seqs = options_.max_batch_sequences > 0 ? size_t(options_.max_batch_sequences)
                                                           : std::numeric_limits<size_t>::max();
  const auto now = std::chrono::steady_clock::now();
  while (!pending_.empty()) {
    std::shared_ptr<Entry> entry = pending_.front();
    auto& seqs = entry->request.sequences;
    if (!entry->failed) {
      if (now >= entry->request.deadline) {
        entry->Fail(Status::DeadlineExceeded("the request's deadline passed while it waited"));
      } else if (entry->request.cancelled && entry->request.cancelled()) {
        entry->Fail(Status::Cancelled("the request was cancelled while it waited"));
      }
    }
    if (entry->failed) {
      for (size_t i = entry->next_seq; i < seqs.size(); ++i) dequeued += int64_t(seqs[i].size());
      if (options_.metrics.dropped_sequences != nullptr) {
        options_.metrics.dropped_sequences->Inc(double(seqs.size() - entry->next_seq));
      }
      ++done_requests;
      pending_.pop_front();
      continue;
    }
    if (entry->next_seq == 0 && options_.metrics.queue_seconds != nullptr) {
      options_.metrics.queue_seconds->Observe(SecondsSince(entry->enqueued_at));
    }
    Slice slice{entry, entry->next_seq, 0};
    while (entry->next_seq < seqs.size()) {
      std::vector<int32_t>& seq = seqs[entry->next_seq];
      const int64_t n = int64_t(seq.size());
      if (batch_tokens + n > options_.max_batch_tokens) break;
      if (size_t(batch.num_sequences()) >= max_seqs) break;
      auto& types = entry->request.token_type_ids;
      std::vector<int32_t>* seq_types = types.empty() ? nullptr : &types[entry->next_seq];
      const int32_t* type_ids =
          seq_types == nullptr || seq_types->empty() ? nullptr : seq_types->data();
      batch.Add(seq.data(), int(n), entry->request.pooling, entry->request.normalize, type_ids);
      std::vector<int32_t>().swap(seq);  // the batch has its own copy now
      if (seq_types != nullptr) std::vector<int32_t>().swap(*seq_types);
      batch_tokens += n;
      ++entry->next_seq;
      ++slice.count;
    }
    if (slice.count > 0) slices.push_back(std::move(slice));
    if (entry->next_seq < seqs.size()) break;  // budget reached inside this request
    ++done_requests;
    pending_.pop_front();
  }
  dequeued += batch_tokens;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_tokens_ -= dequeued;
    queued_requests_ -= done_requests;
    if (!slices.empty()) ++batches_in_flight_;
  }
  if (slices.empty()) return;
  if (options_.metrics.batch_sequences != nullptr) {
    options_.metrics.batch_sequences->Observe(double(batch.num_sequences()));
  }
  if (options_.metrics.batch_tokens != nullptr) {
    options_.metrics.batch_tokens->Observe(double(batch_tokens));
  }
  const auto submitted_at = std::chrono::steady_clock::now();
  LazyResult result = engine_->Submit(std::move(batch));
  in_flight_.push_back(InFlight{result, std::move(slices)});
  // On the engine's thread (or here, if the batch is already done). It notifies under the lock:
  // once it lets go of mu_ it touches nothing of the scheduler, which may then route the batch,
  // finish and be destroyed.
  result.OnReady([this, submitted_at] {
    if (options_.metrics.engine_seconds != nullptr) {
      options_.metrics.engine_seconds->Observe(SecondsSince(submitted_at));
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++completed_batches_;
    cv_.notify_one();
  });
}

// Routes the rows of the oldest in-flight batch (already complete) to their requests.
void TokenBudgetScheduler::RouteFront() {
  InFlight batch = std::move(in_flight_.front());
  in_flight_.pop_front();
  {
    std::lock_guard<std::mutex> lock(mu_);
    --batches_in_flight_;
  }
  const Result<Embeddings>& result = batch.result.wait();
  size_t expected_rows = 0;
  for (const Slice& s : batch.slices) expected_rows += s.count;
  if (!result.ok() || size_t(result->rows) != expected_rows) {
    const Status error =
        result.ok() ? Status::Internal("engine returned " + std::to_string(result->rows) +
                                       " rows for " + std::to_string(expected_rows) + " sequences")
                    : result.status();
    for (Slice& s : batch.slices) s.entry->Fail(error);
    return;
  }
  const Embeddings& rows = *result;
  const size_t dim = size_t(rows.dim);
  size_t row = 0;
  for (Slice& s : batch.slices) {
    Entry& e = *s.entry;
    if (e.failed) {
      row += s.count;
      continue;
    }
    const size_t n = e.request.sequences.size();
    if (e.out.data.empty()) {
      e.out.rows = int(n);
      e.out.dim = rows.dim;
      e.out.data.resize(n * dim);
    } else if (e.out.dim != rows.dim) {
      e.Fail(Status::Internal("engine changed the embedding dimension between batches"));
      row += s.count;
      continue;
    }
    std::memcpy(e.out.data.data() + s.first * dim, rows.row(int(row)),
                s.count * dim * sizeof(float));
    row += s.count;
    e.rows_done += s.count;
    if (e.rows_done == n) {
      if (e.request.dimensions > 0 && e.request.dimensions < e.out.dim) {
        TruncateDimensions(&e.out, e.request.dimensions);
      }
      EmbedCallback cb = std::move(e.done);
      Invoke(cb, std::move(e.out));
    }
  }
}

}  // namespace orchid
