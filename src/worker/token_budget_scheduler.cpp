#include "worker/token_budget_scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace orchid {

void TruncateDimensions(Embeddings* m, int dims, bool renormalize) {
  const size_t d = size_t(dims);
  for (int r = 0; r < m->rows; ++r) {
    const float* src = m->row(r);
    float* dst = m->data.data() + size_t(r) * d;  // rows move down in place: dst <= src
    double sq = 0;
    for (size_t c = 0; c < d; ++c) sq += double(src[c]) * double(src[c]);
    const double norm = std::sqrt(sq);
    const float scale = !renormalize ? 1.0f : norm > 0 ? float(1.0 / norm) : 0.0f;
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
  auto with = [&labels](const char* key, const char* value) {
    MetricLabels l = labels;
    l.emplace_back(key, value);
    return l;
  };
  SchedulerMetrics m;
  m.batch_sequences =
      registry->GetHistogram("orchid_scheduler_batch_sequences", "Sequences per engine batch",
                             ExponentialBuckets(1, 2, 14), labels);
  m.batch_tokens =
      registry->GetHistogram("orchid_scheduler_batch_tokens", "Tokens per engine batch",
                             ExponentialBuckets(16, 2, 14), labels);
  const char* queue_help =
      "Time from a request's arrival until its first sequence is put in a batch, by class "
      "(query: small or marked input_type query; bulk: the rest)";
  m.queue_seconds_query = registry->GetHistogram("orchid_scheduler_queue_seconds", queue_help,
                                                 LatencyBuckets(), with("class", "query"));
  m.queue_seconds_bulk = registry->GetHistogram("orchid_scheduler_queue_seconds", queue_help,
                                                LatencyBuckets(), with("class", "bulk"));
  m.engine_seconds = registry->GetHistogram(
      "orchid_scheduler_engine_seconds", "Time from submitting a batch until its result is ready",
      LatencyBuckets(), labels);
  m.batch_seconds = registry->GetHistogram(
      "orchid_scheduler_batch_seconds",
      "The engine's time on one batch: from when it starts (submitted to an idle engine, or the "
      "previous batch done) until its result is ready",
      LatencyBuckets(), labels);
  const char* dropped_help =
      "Sequences dropped before reaching a batch, by reason (cancelled: the client went away; "
      "deadline: its deadline passed; shutdown: the server stopped first)";
  m.cancelled_sequences = registry->GetCounter("orchid_scheduler_dropped_sequences_total",
                                               dropped_help, with("reason", "cancelled"));
  m.expired_sequences = registry->GetCounter("orchid_scheduler_dropped_sequences_total",
                                             dropped_help, with("reason", "deadline"));
  m.shutdown_sequences = registry->GetCounter("orchid_scheduler_dropped_sequences_total",
                                              dropped_help, with("reason", "shutdown"));
  return m;
}

struct TokenBudgetScheduler::Entry {
  EmbedRequest request;
  EmbedCallback done;
  Clock::time_point enqueued_at;
  uint64_t arrival = 0;               // arrival order
  bool query = false;                 // class (scheduling.h), decided at Enqueue
  std::pair<int32_t, uint64_t> flow;  // (priority, flow): bulk fair-share key
  bool in_flow = false;               // counted in flow_entries_ (bulk, priority policy)
  size_t next_seq = 0;                // first sequence not yet put in a batch
  size_t rows_done = 0;               // rows routed back so far
  Embeddings out;                     // sized when the first rows arrive
  std::vector<size_t> token_start;    // kNone: each sequence's first token row, and the total
  bool failed = false;
  bool retired = false;  // out of pending_ (wholly batched or failed); scheduler thread only

  void Fail(const Status& status) {
    if (failed) return;
    failed = true;
    EmbedCallback cb = std::move(done);
    Invoke(cb, status);
  }
  int64_t TokensLeft() const {
    int64_t t = 0;
    for (size_t i = next_seq; i < request.sequences.size(); ++i) {
      t += int64_t(request.sequences[i].size());
    }
    return t;
  }
};

namespace {

ModelInfo CapInputs(ModelInfo info, int max_batch_tokens) {
  int max_len = info.max_seq_length > 0 ? info.max_seq_length : info.max_position_embeddings;
  if (max_batch_tokens > 0 && max_len > max_batch_tokens) max_len = max_batch_tokens;
  info.max_seq_length = max_len;
  return info;
}

// The next bulk batch may be queued behind the work in flight once this share of the
// batch-time target is left of it: the engine never idles between bulk batches, and a query
// that arrives waits at most about 1.1 batches.
constexpr double kBulkLeadFraction = 0.1;
// Weight of the newest bulk batch in the engine's observed seconds per token.
constexpr double kRateSmoothing = 0.25;

}  // namespace

TokenBudgetScheduler::TokenBudgetScheduler(Engine* engine, TokenBudgetSchedulerOptions options)
    : engine_(engine),
      options_(options),
      info_(CapInputs(engine->info(), options.max_batch_tokens)),
      seconds_per_token_(std::max(0.0, options.initial_seconds_per_token)) {
  bulk_budget_ = BulkBudget();
  scheduler_ = std::thread([this] { RunScheduler(); });
}

TokenBudgetScheduler::~TokenBudgetScheduler() { Shutdown(); }

Status TokenBudgetScheduler::Enqueue(EmbedRequest request, EmbedCallback done) {
  if (request.sequences.empty()) return Status::InvalidArgument("request has no sequences");
  // Checked here for the same reason as the token types below: one batch, many requests.
  if (request.adapter < 0 || size_t(request.adapter) > engine_->info().tasks.size()) {
    return Status::InvalidArgument("task adapter " + std::to_string(request.adapter) +
                                   " is out of range (the model has " +
                                   std::to_string(engine_->info().tasks.size()) + ")");
  }
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
  // Attended lengths (a ColBERT query's [MASK] expansion), for the same reason.
  if (!request.attend_lens.empty()) {
    if (request.attend_lens.size() != request.sequences.size()) {
      return Status::InvalidArgument("attend_lens must have one entry per sequence");
    }
    for (size_t i = 0; i < request.sequences.size(); ++i) {
      const int32_t a = request.attend_lens[i];
      if (a < 0 || size_t(a) > request.sequences[i].size() || (a > 0 && engine_->info().causal)) {
        return Status::InvalidArgument("sequence " + std::to_string(i) + ": attended length " +
                                       std::to_string(a) + " is out of range");
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
  entry->query = Classify(request.scheduling.request_class, request.sequences.size(), total,
                          options_.query) == RequestClass::kQuery;
  if (request.pooling == Pooling::kNone) {
    // Where each sequence's token rows go in the answer (the sequences are freed once batched).
    entry->token_start.reserve(request.sequences.size() + 1);
    entry->token_start.push_back(0);
    for (const auto& seq : request.sequences) {
      entry->token_start.push_back(entry->token_start.back() + seq.size());
    }
  }
  entry->request = std::move(request);
  entry->done = std::move(done);
  entry->enqueued_at = Clock::now();
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

int TokenBudgetScheduler::bulk_batch_tokens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bulk_budget_;
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
  registry->AddGaugeCallback(
      "orchid_scheduler_batch_time_target_seconds",
      "Engine time a batch of bulk work is sized for (0: no bound, batches up to the token budget)",
      labels, [this] { return std::chrono::duration<double>(options_.max_batch_time).count(); });
  registry->AddGaugeCallback(
      "orchid_scheduler_bulk_batch_tokens",
      "Token budget of the next bulk batch: the batch-time target at the engine's observed rate",
      labels, [this] { return double(bulk_batch_tokens()); });
}

int TokenBudgetScheduler::BulkBudget() const {
  if (options_.policy == SchedulingPolicy::kFcfs || options_.max_batch_time.count() <= 0) {
    return options_.max_batch_tokens;
  }
  if (seconds_per_token_ <= 0) return 1;  // unknown speed: one sequence, then measure
  const double tokens =
      std::chrono::duration<double>(options_.max_batch_time).count() / seconds_per_token_;
  return int(std::clamp(tokens, 1.0, double(options_.max_batch_tokens)));
}

void TokenBudgetScheduler::RunScheduler() {
  for (;;) {
    int completed = 0;
    bool drain_expired = false;
    std::vector<std::shared_ptr<Entry>> arrived;
    Clock::time_point wake_at = Clock::time_point::max();
    if (!pending_.empty()) {
      // A bulk batch held back until the work in flight is nearly done: when to look again.
      MayLaunch(Clock::now(), &wake_at);
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto has_work = [&] {
        if (!inbox_.empty() || completed_batches_ > 0) return true;
        if (Clock::now() >= wake_at) return true;
        if (!stopping_) return false;
        if (pending_.empty() && in_flight_.empty()) return true;  // time to exit
        return !pending_.empty() && Clock::now() >= drain_deadline_;
      };
      while (!has_work()) {
        Clock::time_point until = wake_at;
        if (stopping_ && !pending_.empty()) until = std::min(until, drain_deadline_);
        if (until != Clock::time_point::max()) {
          cv_.wait_until(lock, until);
        } else {
          cv_.wait(lock);
        }
      }
      while (!inbox_.empty()) {
        arrived.push_back(std::move(inbox_.front()));
        inbox_.pop_front();
      }
      completed = std::exchange(completed_batches_, 0);
      drain_expired = stopping_ && Clock::now() >= drain_deadline_;
      if (stopping_ && completed == 0 && arrived.empty() && pending_.empty() &&
          in_flight_.empty()) {
        return;
      }
    }
    for (auto& e : arrived) Admit(std::move(e));
    for (int i = 0; i < completed; ++i) RouteFront();
    if (drain_expired) FailPending(Status::Unavailable("the server is shutting down"));
    DropAbandoned(Clock::now());
    Clock::time_point ignored;
    while (MayLaunch(Clock::now(), &ignored)) LaunchBatch();
  }
}

void TokenBudgetScheduler::Admit(std::shared_ptr<Entry> entry) {
  entry->arrival = arrivals_++;
  const Scheduling& s = entry->request.scheduling;
  const uint64_t flow = s.flow != 0 ? s.flow : --next_own_flow_;  // own flows count down from max
  entry->flow = {s.priority, flow};
  if (!entry->query && options_.policy == SchedulingPolicy::kPriority) {
    entry->in_flow = true;
    if (flow_entries_[entry->flow]++ == 0) {
      // A new flow starts level with the least served flow of its priority.
      double start = 0;
      bool any = false;
      for (auto it = flow_turn_.lower_bound({s.priority, 0});
           it != flow_turn_.end() && it->first.first == s.priority; ++it) {
        start = any ? std::min(start, it->second) : it->second;
        any = true;
      }
      flow_turn_[entry->flow] = start;
    }
  }
  pending_.push_back(std::move(entry));
}

void TokenBudgetScheduler::Retire(size_t index) {
  Entry& e = *pending_[index];
  if (e.retired) return;
  e.retired = true;
  if (!e.in_flow) return;
  auto it = flow_entries_.find(e.flow);
  if (it != flow_entries_.end() && --it->second == 0) {
    flow_entries_.erase(it);
    flow_turn_.erase(e.flow);
  }
}

void TokenBudgetScheduler::DropAbandoned(Clock::time_point now) {
  int64_t dequeued = 0;
  int64_t requests = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    Entry& e = *pending_[i];
    Counter* counter = nullptr;
    if (!e.failed) {
      if (now >= e.request.scheduling.deadline) {
        e.Fail(Status::DeadlineExceeded(
            "the request's deadline passed before the engine could start it"));
        counter = options_.metrics.expired_sequences;
      } else if (e.request.scheduling.cancelled()) {
        e.Fail(Status::Cancelled("the request was cancelled while it waited"));
        counter = options_.metrics.cancelled_sequences;
      }
    }
    if (!e.failed) continue;  // (failed without a counter: an engine error ended it)
    if (counter != nullptr) counter->Inc(double(e.request.sequences.size() - e.next_seq));
    dequeued += e.TokensLeft();
    ++requests;
    Retire(i);
  }
  if (requests == 0) return;
  std::erase_if(pending_, [](const std::shared_ptr<Entry>& e) { return e->retired; });
  std::lock_guard<std::mutex> lock(mu_);
  queued_tokens_ -= dequeued;
  queued_requests_ -= requests;
}

bool TokenBudgetScheduler::MayLaunch(Clock::time_point now, Clock::time_point* wake_at) const {
  *wake_at = Clock::time_point::max();
  if (pending_.empty()) return false;
  if (in_flight_.size() >= size_t(std::max(1, options_.max_batches_in_flight))) return false;
  if (options_.policy == SchedulingPolicy::kFcfs || options_.max_batch_time.count() <= 0 ||
      in_flight_.empty()) {
    return true;
  }
  // Would the next batch be a query batch? (The best pending request is a query.)
  const Entry* best = nullptr;
  for (const auto& e : pending_) {
    if (best == nullptr || std::make_tuple(e->request.scheduling.priority, !e->query) <
                               std::make_tuple(best->request.scheduling.priority, !best->query)) {
      best = e.get();
    }
  }
  if (best->query) return true;
  double left = 0;  // estimated engine work in flight
  for (const InFlight& b : in_flight_) left += b.estimated_seconds;
  const auto done_at = front_started_at_ + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(left));
  const auto lead =
      std::chrono::duration_cast<Clock::duration>(options_.max_batch_time * kBulkLeadFraction);
  if (now >= done_at - lead) return true;
  *wake_at = done_at - lead;
  return false;
}

// Fails every request still waiting for a batch (their batched parts are dropped on return).
void TokenBudgetScheduler::FailPending(const Status& status) {
  int64_t dequeued = 0;
  int64_t dropped = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    const Entry& e = *pending_[i];
    dequeued += e.TokensLeft();
    dropped += int64_t(e.request.sequences.size() - e.next_seq);
    Retire(i);
  }
  if (options_.metrics.shutdown_sequences != nullptr && dropped > 0) {
    options_.metrics.shutdown_sequences->Inc(double(dropped));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_tokens_ -= dequeued;
    queued_requests_ -= int64_t(pending_.size());
  }
  std::vector<std::shared_ptr<Entry>> failed;
  failed.swap(pending_);
  for (const std::shared_ptr<Entry>& entry : failed) entry->Fail(status);
}

// Takes the next batch's sequences (see the header for the order) and submits them.
void TokenBudgetScheduler::LaunchBatch() {
  const bool priority = options_.policy == SchedulingPolicy::kPriority;
  // Pending entries (indices into pending_) in the order they are served: arrival (FCFS), or
  // priority, class, arrival.
  std::vector<size_t> order;
  order.reserve(pending_.size());
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (!pending_[i]->failed) order.push_back(i);
  }
  if (order.empty()) return;
  auto entry = [this](size_t i) { return pending_[i].get(); };
  auto level = [&](size_t i) {
    const Entry* e = entry(i);
    return priority ? std::make_pair(e->request.scheduling.priority, int(!e->query))
                    : std::make_pair(0, 0);
  };
  if (priority) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return level(a) < level(b); });
  }
  const bool bulk_batch = priority && !entry(order.front())->query;
  const int64_t budget = bulk_batch ? BulkBudget() : options_.max_batch_tokens;
  const size_t max_seqs = options_.max_batch_sequences > 0 ? size_t(options_.max_batch_sequences)
                                                           : std::numeric_limits<size_t>::max();

  std::vector<Slice> slices;
  std::unordered_map<size_t, size_t> slice_of;  // pending_ index → its slice
  int64_t batch_tokens = 0;
  size_t batch_seqs = 0;
  // Puts pending_[i]'s next sequence in the batch if it fits (the first one always does).
  // A time-sized bulk budget is a target, not a cap: a sequence goes in when at least half of it
  // fits, so that bulk batches average the budget instead of falling short of it by half a
  // sequence (a 144-token document and a 512-token budget: 3.5 documents, not 3). The token
  // budget (max_batch_tokens) stays a cap.
  const bool round = bulk_batch && budget < options_.max_batch_tokens;
  auto take = [&](size_t i) {
    Entry* e = entry(i);
    const int64_t n = int64_t(e->request.sequences[e->next_seq].size());
    const int64_t counted = round ? (n + 1) / 2 : n;
    if (batch_seqs > 0 &&
        (batch_tokens + counted > budget || batch_tokens + n > options_.max_batch_tokens ||
         batch_seqs >= max_seqs)) {
      return false;
    }
    auto [it, fresh] = slice_of.try_emplace(i, slices.size());
    if (fresh) slices.push_back(Slice{pending_[i], e->next_seq, 0});
    ++slices[it->second].count;
    ++e->next_seq;
    batch_tokens += n;
    ++batch_seqs;
    return true;
  };
  auto has_more = [](const Entry* e) { return e->next_seq < e->request.sequences.size(); };

  bool full = false;
  for (size_t i = 0; i < order.size() && !full;) {
    size_t j = i + 1;
    while (j < order.size() && level(order[j]) == level(order[i])) ++j;
    const bool fair = priority && !entry(order[i])->query;
    if (fair && !bulk_batch) break;  // a batch that starts with queries holds queries only
    if (!fair) {
      for (size_t k = i; k < j && !full; ++k) {
        while (has_more(entry(order[k]))) {
          if (!take(order[k])) {
            full = true;
            break;
          }
        }
      }
    } else {
      // Bulk: a sequence at a time from the flow that has had the fewest tokens; within a
      // flow, its requests in arrival order.
      using FlowKey = std::pair<int32_t, uint64_t>;
      std::map<FlowKey, std::deque<size_t>> flows;
      for (size_t k = i; k < j; ++k) flows[entry(order[k])->flow].push_back(order[k]);
      using Turn = std::tuple<double, uint64_t, FlowKey>;
      std::priority_queue<Turn, std::vector<Turn>, std::greater<Turn>> turns;
      for (const auto& [key, members] : flows) {
        turns.emplace(flow_turn_[key], entry(members.front())->arrival, key);
      }
      while (!turns.empty()) {
        const auto [turn, arrival, key] = turns.top();
        turns.pop();
        std::deque<size_t>& members = flows[key];
        const size_t k = members.front();
        const Entry* e = entry(k);
        const double n = double(e->request.sequences[e->next_seq].size());
        if (!take(k)) {
          full = true;
          break;
        }
        flow_turn_[key] = turn + n;
        if (!has_more(e)) members.pop_front();
        if (!members.empty()) turns.emplace(turn + n, entry(members.front())->arrival, key);
      }
    }
    i = j;
  }

  const auto now = Clock::now();
  RaggedBatch batch;
  int64_t done_requests = 0;
  for (Slice& s : slices) {
    Entry& e = *s.entry;
    if (s.first == 0) {
      Histogram* h =
          e.query ? options_.metrics.queue_seconds_query : options_.metrics.queue_seconds_bulk;
      if (h != nullptr) h->Observe(SecondsSince(e.enqueued_at));
    }
    auto& types = e.request.token_type_ids;
    for (size_t q = s.first; q < s.first + s.count; ++q) {
      std::vector<int32_t>& seq = e.request.sequences[q];
      std::vector<int32_t>* seq_types = types.empty() ? nullptr : &types[q];
      const int32_t* type_ids =
          seq_types == nullptr || seq_types->empty() ? nullptr : seq_types->data();
      batch.Add(seq.data(), int(seq.size()), e.request.pooling, e.request.normalize, type_ids,
                e.request.pool_skip, e.request.attend_lens.empty() ? 0 : e.request.attend_lens[q],
                e.request.adapter);
      std::vector<int32_t>().swap(seq);  // the batch has its own copy now
      if (seq_types != nullptr) std::vector<int32_t>().swap(*seq_types);
    }
  }
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (!has_more(pending_[i].get())) {
      Retire(i);
      ++done_requests;
    }
  }
  std::erase_if(pending_, [](const std::shared_ptr<Entry>& e) { return e->retired; });
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_tokens_ -= batch_tokens;
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
  if (in_flight_.empty()) front_started_at_ = now;
  InFlight flight;
  flight.slices = std::move(slices);
  flight.tokens = batch_tokens;
  flight.bulk = bulk_batch;
  flight.submitted_at = now;
  flight.estimated_seconds = double(batch_tokens) * seconds_per_token_;
  flight.timing = std::make_shared<BatchTiming>();
  flight.result = engine_->Submit(std::move(batch));
  LazyResult result = flight.result;
  std::shared_ptr<BatchTiming> timing = flight.timing;
  in_flight_.push_back(std::move(flight));
  // On the engine's thread (or here, if the batch is already done). It notifies under the lock:
  // once it lets go of mu_ it touches nothing of the scheduler, which may then route the batch,
  // finish and be destroyed.
  result.OnReady([this, timing, submitted_at = now] {
    const auto ready = Clock::now();
    if (options_.metrics.engine_seconds != nullptr) {
      options_.metrics.engine_seconds->Observe(
          std::chrono::duration<double>(ready - submitted_at).count());
    }
    std::lock_guard<std::mutex> lock(mu_);
    timing->ready_at = ready;
    ++completed_batches_;
    cv_.notify_one();
  });
}

// Routes the rows of the oldest in-flight batch (already complete) to their requests, and
// learns the engine's speed from it.
void TokenBudgetScheduler::RouteFront() {
  InFlight batch = std::move(in_flight_.front());
  in_flight_.pop_front();
  const Result<Embeddings>& result = batch.result.wait();
  Clock::time_point ready_at;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --batches_in_flight_;
    ready_at = batch.timing->ready_at;
  }
  const double seconds =
      std::max(0.0, std::chrono::duration<double>(ready_at - front_started_at_).count());
  if (!in_flight_.empty()) front_started_at_ = std::max(in_flight_.front().submitted_at, ready_at);
  if (options_.metrics.batch_seconds != nullptr) options_.metrics.batch_seconds->Observe(seconds);
  if (result.ok() && batch.tokens > 0 && (batch.bulk || seconds_per_token_ <= 0)) {
    const double sample = seconds / double(batch.tokens);
    seconds_per_token_ = seconds_per_token_ <= 0
                             ? sample
                             : (1 - kRateSmoothing) * seconds_per_token_ + kRateSmoothing * sample;
    const int budget = BulkBudget();
    std::lock_guard<std::mutex> lock(mu_);
    bulk_budget_ = budget;
  }
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
    if (e.request.pooling == Pooling::kNone) {
      // Per-token output: the slice's token rows, at their place among the request's tokens.
      if (!rows.has_tokens() || rows.token_offsets.size() != size_t(rows.rows) + 1) {
        e.Fail(Status::Internal("engine returned no per-token rows"));
        row += s.count;
        continue;
      }
      const size_t tdim = size_t(rows.token_dim);
      const size_t before = e.token_start[s.first], total = e.token_start.back();
      if (e.out.data.empty()) {
        e.out.rows = int(total);
        e.out.dim = int(tdim);
        e.out.data.resize(total * tdim);
      }
      const int32_t t0 = rows.token_offsets[row], t1 = rows.token_offsets[row + s.count];
      if (before + size_t(t1 - t0) > total || size_t(rows.tokens.size()) < size_t(t1) * tdim) {
        e.Fail(Status::Internal("engine returned per-token rows of the wrong shape"));
        row += s.count;
        continue;
      }
      std::memcpy(e.out.data.data() + before * tdim, rows.tokens.data() + size_t(t0) * tdim,
                  size_t(t1 - t0) * tdim * sizeof(float));
      if (engine_->info().bge_m3) {
        // Its pooled rows (the dense vectors) come with the token rows.
        if (e.out.pooled.empty()) e.out.pooled.resize(n * dim);
        std::memcpy(e.out.pooled.data() + s.first * dim, rows.row(int(row)),
                    s.count * dim * sizeof(float));
      }
      row += s.count;
      e.rows_done += s.count;
      if (e.rows_done == n) {
        EmbedCallback cb = std::move(e.done);
        Invoke(cb, std::move(e.out));
      }
      continue;
    }
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
        TruncateDimensions(&e.out, e.request.dimensions, e.request.normalize);
      }
      EmbedCallback cb = std::move(e.done);
      Invoke(cb, std::move(e.out));
    }
  }
}

}  // namespace orchid
