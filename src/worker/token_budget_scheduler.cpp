#include "worker/token_budget_scheduler.h"

#include <algorithm>
#include <chrono>
#include <tuple>
#include <utility>

#include "worker/row_assembler.h"

namespace orchid {
namespace {

ModelInfo CapInputs(ModelInfo info, int max_batch_tokens) {
  int max_len = info.max_seq_length > 0 ? info.max_seq_length : info.max_position_embeddings;
  if (max_batch_tokens > 0 && max_len > max_batch_tokens) max_len = max_batch_tokens;
  info.max_seq_length = max_len;
  return info;
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TokenBudgetScheduler::TokenBudgetScheduler(Engine* engine, TokenBudgetSchedulerOptions options)
    : engine_(engine),
      options_(options),
      info_(CapInputs(engine->info(), options.max_batch_tokens)),
      priority_(options.policy == SchedulingPolicy::kPriority),
      pacer_(priority_ ? options.max_batch_time : std::chrono::microseconds(0),
             options.max_batch_tokens, options.initial_seconds_per_token) {
  bulk_budget_ = pacer_.BulkBudget();
  scheduler_ = std::thread([this] { RunScheduler(); });
}

TokenBudgetScheduler::~TokenBudgetScheduler() { Shutdown(); }

Status TokenBudgetScheduler::Enqueue(EmbedRequest request, EmbedCallback done) {
  int64_t total = 0;
  ORCHID_RETURN_IF_ERROR(ValidateEmbedRequest(
      request, engine_->info(), {options_.max_batch_tokens, options_.max_queued_tokens}, &total));
  auto entry = std::make_shared<PendingRequest>();
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

void TokenBudgetScheduler::RunScheduler() {
  for (;;) {
    int completed = 0;
    bool drain_expired = false;
    std::vector<EntryPtr> arrived;
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

void TokenBudgetScheduler::Admit(EntryPtr entry) {
  entry->arrival = arrivals_++;
  fair_share_.Admit(entry.get(), priority_ && !entry->query);
  pending_.push_back(std::move(entry));
}

void TokenBudgetScheduler::Retire(PendingRequest& e) {
  if (e.retired) return;
  e.retired = true;
  fair_share_.Retire(e);
}

void TokenBudgetScheduler::DropAbandoned(Clock::time_point now) {
  int64_t dequeued = 0;
  int64_t requests = 0;
  for (const EntryPtr& entry : pending_) {
    PendingRequest& e = *entry;
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
    CountMetric(counter, double(e.SequencesLeft()));
    dequeued += e.TokensLeft();
    ++requests;
    Retire(e);
  }
  if (requests == 0) return;
  std::erase_if(pending_, [](const EntryPtr& e) { return e->retired; });
  std::lock_guard<std::mutex> lock(mu_);
  queued_tokens_ -= dequeued;
  queued_requests_ -= requests;
}

bool TokenBudgetScheduler::MayLaunch(Clock::time_point now, Clock::time_point* wake_at) const {
  *wake_at = Clock::time_point::max();
  if (pending_.empty()) return false;
  if (in_flight_.size() >= size_t(std::max(1, options_.max_batches_in_flight))) return false;
  if (!pacer_.paced() || in_flight_.empty()) return true;
  // Would the next batch be a query batch? (The best pending request is a query.)
  const PendingRequest* best = nullptr;
  for (const EntryPtr& e : pending_) {
    if (best == nullptr || std::make_tuple(e->request.scheduling.priority, !e->query) <
                               std::make_tuple(best->request.scheduling.priority, !best->query)) {
      best = e.get();
    }
  }
  if (best->query) return true;
  double work_in_flight = 0;
  for (const InFlight& b : in_flight_) work_in_flight += b.estimated_seconds;
  return pacer_.BulkMayQueue(now, work_in_flight, wake_at);
}

// Fails every request still waiting for a batch (their batched parts are dropped on return).
void TokenBudgetScheduler::FailPending(const Status& status) {
  int64_t dequeued = 0;
  int64_t dropped = 0;
  for (const EntryPtr& e : pending_) {
    dequeued += e->TokensLeft();
    dropped += int64_t(e->SequencesLeft());
    Retire(*e);
  }
  CountMetric(options_.metrics.shutdown_sequences, double(dropped));
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_tokens_ -= dequeued;
    queued_requests_ -= int64_t(pending_.size());
  }
  std::vector<EntryPtr> failed;
  failed.swap(pending_);
  for (const EntryPtr& entry : failed) entry->Fail(status);
}

std::pair<int32_t, int> TokenBudgetScheduler::Level(const PendingRequest& e) const {
  return priority_ ? std::make_pair(e.request.scheduling.priority, int(!e.query))
                   : std::make_pair(0, 0);
}

std::vector<TokenBudgetScheduler::EntryPtr> TokenBudgetScheduler::ServiceOrder() const {
  std::vector<EntryPtr> order;
  order.reserve(pending_.size());
  for (const EntryPtr& e : pending_) {
    if (!e->failed) order.push_back(e);
  }
  if (priority_) {
    std::stable_sort(order.begin(), order.end(),
                     [&](const EntryPtr& a, const EntryPtr& b) { return Level(*a) < Level(*b); });
  }
  return order;
}

void TokenBudgetScheduler::FillBatch(const std::vector<EntryPtr>& order, bool bulk_batch,
                                     BatchFiller* batch) {
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && Level(*order[j]) == Level(*order[i])) ++j;
    const std::span<const EntryPtr> group(order.data() + i, j - i);
    const bool fair = priority_ && !order[i]->query;
    if (fair && !bulk_batch) return;  // a batch that starts with queries holds queries only
    // Queries (and FCFS): whole requests in order. Bulk: a sequence at a time by fair share.
    if (!(fair ? fair_share_.Fill(group, batch) : batch->TakeAll(group))) return;  // full
    i = j;
  }
}

void TokenBudgetScheduler::LaunchBatch() {
  const std::vector<EntryPtr> order = ServiceOrder();
  if (order.empty()) return;
  const bool bulk = priority_ && !order.front()->query;
  const int64_t budget = bulk ? pacer_.BulkBudget() : options_.max_batch_tokens;
  BatchFiller filler(budget, options_.max_batch_tokens, options_.max_batch_sequences,
                     /*round_to_budget=*/bulk && budget < options_.max_batch_tokens);
  FillBatch(order, bulk, &filler);

  const auto now = Clock::now();
  std::vector<BatchSlice> slices = filler.TakeSlices();
  for (const BatchSlice& s : slices) {
    if (s.first != 0) continue;  // the request's first sequence: it waited until now
    const PendingRequest& e = *s.entry;
    ObserveMetric(
        e.query ? options_.metrics.queue_seconds_query : options_.metrics.queue_seconds_bulk,
        SecondsSince(e.enqueued_at));
  }
  RaggedBatch batch = MakeRaggedBatch(slices);
  RetireBatched(filler.tokens(), !slices.empty());
  if (slices.empty()) return;
  Submit(std::move(batch), std::move(slices), filler.tokens(), bulk, now);
}

void TokenBudgetScheduler::RetireBatched(int64_t tokens, bool launched) {
  int64_t done_requests = 0;
  for (const EntryPtr& e : pending_) {
    if (!e->has_more()) {
      Retire(*e);
      ++done_requests;
    }
  }
  std::erase_if(pending_, [](const EntryPtr& e) { return e->retired; });
  std::lock_guard<std::mutex> lock(mu_);
  queued_tokens_ -= tokens;
  queued_requests_ -= done_requests;
  if (launched) ++batches_in_flight_;
}

void TokenBudgetScheduler::Submit(RaggedBatch batch, std::vector<BatchSlice> slices, int64_t tokens,
                                  bool bulk, Clock::time_point now) {
  ObserveMetric(options_.metrics.batch_sequences, double(batch.num_sequences()));
  ObserveMetric(options_.metrics.batch_tokens, double(tokens));
  pacer_.Submitted(now, /*engine_idle=*/in_flight_.empty());
  InFlight flight;
  flight.slices = std::move(slices);
  flight.tokens = tokens;
  flight.bulk = bulk;
  flight.submitted_at = now;
  flight.estimated_seconds = pacer_.EstimateSeconds(tokens);
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
    ObserveMetric(options_.metrics.engine_seconds,
                  std::chrono::duration<double>(ready - submitted_at).count());
    std::lock_guard<std::mutex> lock(mu_);
    timing->ready_at = ready;
    ++completed_batches_;
    cv_.notify_one();
  });
}

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
      pacer_.FrontDone(ready_at, in_flight_.empty() ? nullptr : &in_flight_.front().submitted_at);
  ObserveMetric(options_.metrics.batch_seconds, seconds);
  if (result.ok() && pacer_.Learn(seconds, batch.tokens, batch.bulk)) {
    const int budget = pacer_.BulkBudget();
    std::lock_guard<std::mutex> lock(mu_);
    bulk_budget_ = budget;
  }
  DeliverRows(result, batch.slices, engine_->info().bge_m3);
}

}  // namespace orchid
