// TokenBudgetScheduler's priority policy (issue 20): classes and priorities, bulk fair sharing,
// the batch-time bound, cancellation and deadlines; with a fake engine whose batches complete
// when the test says so.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "worker/fake_engine.h"
#include "worker/token_budget_scheduler.h"

namespace orchid {
namespace {

using testing::FakeEngine;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// `count` sequences of `len` tokens; sequence i's ids all start at first + 100 * i, so that a
// batch's first ids name the sequences in it.
std::vector<std::vector<int32_t>> Seqs(int32_t first, int count, int len) {
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> s(static_cast<size_t>(len));
    for (int t = 0; t < len; ++t) s[size_t(t)] = first + 100 * i + t;
    out.push_back(std::move(s));
  }
  return out;
}

EmbedRequest Request(std::vector<std::vector<int32_t>> seqs, RequestClass c = RequestClass::kAuto,
                     int32_t priority = 0, uint64_t flow = 0) {
  EmbedRequest r;
  r.sequences = std::move(seqs);
  r.scheduling.request_class = c;
  r.scheduling.priority = priority;
  r.scheduling.flow = flow;
  return r;
}

TokenBudgetSchedulerOptions Options(int budget, int in_flight = 1) {
  TokenBudgetSchedulerOptions o;
  o.max_batch_tokens = budget;
  o.max_queued_tokens = 1 << 20;
  o.max_batches_in_flight = in_flight;
  return o;
}

// The first id of every sequence of a batch.
std::vector<int32_t> Firsts(const RaggedBatch& b) {
  std::vector<int32_t> out;
  for (int s = 0; s < b.num_sequences(); ++s) out.push_back(b.token_ids[size_t(b.cu_seqlens[s])]);
  return out;
}

// How many of a batch's sequences come from the request whose ids start at `first`.
int From(const RaggedBatch& b, int32_t first) {
  int n = 0;
  for (int32_t id : Firsts(b)) n += id >= first && id < first + 10000;
  return n;
}

bool Ready(std::future<Result<Embeddings>>& f) {
  return f.wait_for(0s) == std::future_status::ready;
}

// Waits until batch `i` exists and `done()` is false (true), or `done()` holds (false); fails
// the test after 10 s. With one batch in flight, batch i exists only once the scheduler has
// routed batch i - 1, so `done()` is up to date when it is asked.
template <class Done>
bool NextBatch(FakeEngine& engine, size_t i, Done done) {
  const auto until = Clock::now() + 10s;
  while (Clock::now() < until) {
    const bool exists = engine.WaitForBatches(i + 1, 2ms);
    if (done()) return false;
    if (exists) return true;
  }
  ADD_FAILURE() << "no batch " << i << ", and the requests are not answered";
  return false;
}

TEST(PrioritySchedulingTest, ClassifiesBySizeUnlessTold) {
  QueryThresholds q{/*max_inputs=*/2, /*max_tokens=*/100};
  EXPECT_EQ(Classify(RequestClass::kAuto, 2, 100, q), RequestClass::kQuery);
  EXPECT_EQ(Classify(RequestClass::kAuto, 3, 30, q), RequestClass::kBulk);
  EXPECT_EQ(Classify(RequestClass::kAuto, 1, 101, q), RequestClass::kBulk);
  EXPECT_EQ(Classify(RequestClass::kQuery, 500, 50000, q), RequestClass::kQuery);
  EXPECT_EQ(Classify(RequestClass::kBulk, 1, 1, q), RequestClass::kBulk);
}

// Bulk work is queued; a query that arrives later goes in the next batch, alone.
TEST(PrioritySchedulingTest, QueriesGoAheadOfQueuedBulkWork) {
  FakeEngine engine(/*auto_complete=*/false, 100000);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/40));
  auto bulk_a = scheduler.Enqueue(Request(Seqs(10000, 20, 10)));  // 20 inputs: bulk by size
  ASSERT_TRUE(engine.WaitForBatches(1));
  auto bulk_b = scheduler.Enqueue(Request(Seqs(30000, 20, 10)));
  auto query = scheduler.Enqueue(Request(Seqs(50000, 1, 5)));
  std::this_thread::sleep_for(20ms);  // both are in the queue before the engine frees up
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  EXPECT_EQ(Firsts(engine.batch(1)), std::vector<int32_t>{50000});  // the query, and only it
  engine.Complete(1);
  ASSERT_TRUE(query.get().ok());
  EXPECT_FALSE(Ready(bulk_a));
  for (size_t i = 2; NextBatch(engine, i, [&] { return Ready(bulk_a) && Ready(bulk_b); }); ++i) {
    engine.Complete(i);
  }
  EXPECT_TRUE(bulk_a.get().ok());
  EXPECT_TRUE(bulk_b.get().ok());
}

// input_type "query" (RequestClass::kQuery) counts as a query whatever its size; a small request
// marked bulk waits like bulk.
TEST(PrioritySchedulingTest, AnExplicitClassOverridesTheSize) {
  FakeEngine engine(/*auto_complete=*/false, 100000);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/1000));
  auto first = scheduler.Enqueue(Request(Seqs(10000, 1, 5)));
  ASSERT_TRUE(engine.WaitForBatches(1));
  auto small_bulk = scheduler.Enqueue(Request(Seqs(20000, 1, 5), RequestClass::kBulk));
  auto big_query = scheduler.Enqueue(Request(Seqs(30000, 50, 10), RequestClass::kQuery));
  std::this_thread::sleep_for(20ms);
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  EXPECT_EQ(From(engine.batch(1), 30000), 50);
  EXPECT_EQ(From(engine.batch(1), 20000), 0);  // a query batch holds queries only
  engine.Complete(1);
  ASSERT_TRUE(engine.WaitForBatches(3));
  EXPECT_EQ(Firsts(engine.batch(2)), std::vector<int32_t>{20000});
  engine.Complete(2);
  EXPECT_TRUE(first.get().ok());
  EXPECT_TRUE(small_bulk.get().ok());
  EXPECT_TRUE(big_query.get().ok());
}

// Lower priority values go first, across classes; equal priorities put queries first.
TEST(PrioritySchedulingTest, PriorityOrdersBeforeClass) {
  FakeEngine engine(/*auto_complete=*/false, 100000);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/1000));
  auto blocker = scheduler.Enqueue(Request(Seqs(10000, 1, 5)));
  ASSERT_TRUE(engine.WaitForBatches(1));
  std::vector<std::future<Result<Embeddings>>> fs;
  fs.push_back(scheduler.Enqueue(Request(Seqs(20000, 1, 5), RequestClass::kQuery, /*prio=*/1)));
  fs.push_back(scheduler.Enqueue(Request(Seqs(30000, 1, 5), RequestClass::kBulk, /*prio=*/0)));
  fs.push_back(scheduler.Enqueue(Request(Seqs(40000, 1, 5), RequestClass::kQuery, /*prio=*/0)));
  fs.push_back(scheduler.Enqueue(Request(Seqs(50000, 1, 5), RequestClass::kBulk, /*prio=*/-5)));
  std::this_thread::sleep_for(20ms);
  std::vector<int32_t> order;
  auto all_ready = [&] {
    for (auto& f : fs) {
      if (!Ready(f)) return false;
    }
    return true;
  };
  for (size_t i = 0; NextBatch(engine, i, all_ready); ++i) {
    if (i > 0) {
      for (int32_t id : Firsts(engine.batch(i))) order.push_back(id);
    }
    engine.Complete(i);
  }
  // -5 bulk; then priority 0: the query, then the bulk; then the priority-1 query. (A bulk batch
  // may take the levels after it along, in their order.)
  EXPECT_EQ(order, (std::vector<int32_t>{50000, 40000, 30000, 20000}));
  for (auto& f : fs) EXPECT_TRUE(f.get().ok());
  EXPECT_TRUE(blocker.get().ok());
}

// A big bulk request does not hold back a small bulk request sent after it: from its arrival
// they alternate sequence by sequence (equal turns by tokens).
TEST(PrioritySchedulingTest, BulkRequestsShareTheEngineByTokens) {
  FakeEngine engine(/*auto_complete=*/false, 100000);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/40));
  auto big = scheduler.Enqueue(Request(Seqs(10000, 100, 10), RequestClass::kBulk));
  ASSERT_TRUE(engine.WaitForBatches(1));  // 4 of big's sequences
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  auto small = scheduler.Enqueue(Request(Seqs(50000, 8, 10), RequestClass::kBulk));
  std::this_thread::sleep_for(20ms);
  engine.Complete(1);
  size_t batches = 2;
  int small_seqs = 0, big_seqs = 0;
  while (NextBatch(engine, batches, [&] { return Ready(small); })) {
    const RaggedBatch b = engine.batch(batches);
    small_seqs += From(b, 50000);
    big_seqs += From(b, 10000);
    engine.Complete(batches++);
    ASSERT_LT(batches, 30u);
  }
  // Equal shares from its arrival: 8 of small's sequences against 8 of big's (give or take the
  // one in progress), in 4 batches — not after big's 25.
  EXPECT_EQ(small_seqs, 8);
  EXPECT_LE(std::abs(big_seqs - 8), 1) << big_seqs;
  EXPECT_LE(batches - 2, 5u);
  for (; NextBatch(engine, batches, [&] { return Ready(big); }); ++batches) {
    engine.Complete(batches);
  }
  EXPECT_TRUE(big.get().ok());
  EXPECT_TRUE(small.get().ok());
}

// Requests of one flow (the chunks of one client request, split by a gateway) share one turn:
// against another flow they get half the engine between them, not a half each.
TEST(PrioritySchedulingTest, RequestsOfOneFlowShareOneTurn) {
  FakeEngine engine(/*auto_complete=*/false, 100000);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/40));
  auto blocker = scheduler.Enqueue(Request(Seqs(1000, 1, 5)));
  ASSERT_TRUE(engine.WaitForBatches(1));
  auto chunk1 = scheduler.Enqueue(Request(Seqs(10000, 20, 10), RequestClass::kBulk, 0, 77));
  auto chunk2 = scheduler.Enqueue(Request(Seqs(30000, 20, 10), RequestClass::kBulk, 0, 77));
  auto other = scheduler.Enqueue(Request(Seqs(50000, 20, 10), RequestClass::kBulk, 0, 0));
  std::this_thread::sleep_for(20ms);
  engine.Complete(0);
  int flow = 0, own = 0;
  for (size_t i = 1; i <= 5; ++i) {  // 20 sequences in 5 batches
    ASSERT_TRUE(engine.WaitForBatches(i + 1));
    const RaggedBatch b = engine.batch(i);
    flow += From(b, 10000) + From(b, 30000);
    own += From(b, 50000);
    engine.Complete(i);
  }
  EXPECT_EQ(flow, 10);
  EXPECT_EQ(own, 10);
  for (size_t i = 6;
       NextBatch(engine, i, [&] { return Ready(chunk1) && Ready(chunk2) && Ready(other); }); ++i) {
    engine.Complete(i);
  }
  EXPECT_TRUE(chunk1.get().ok());
  EXPECT_TRUE(chunk2.get().ok());
  EXPECT_TRUE(other.get().ok());
  EXPECT_TRUE(blocker.get().ok());
}

// With a batch-time target, a bulk batch holds what the engine runs in that time at its rate:
// 10 ms at 10,000 tokens/s is 100 tokens, three sequences of 30. The rate is then learned from
// the batches: one that took 30 ms for 90 tokens lowers the budget.
TEST(PrioritySchedulingTest, BulkBatchesAreSizedByTheBatchTime) {
  FakeEngine engine(/*auto_complete=*/false, 100000, /*max_seq_length=*/64);
  TokenBudgetSchedulerOptions o = Options(/*budget=*/4096);
  o.max_batch_time = 10ms;
  o.initial_seconds_per_token = 1e-4;
  TokenBudgetScheduler scheduler(&engine, o);
  EXPECT_EQ(scheduler.bulk_batch_tokens(), 100);
  auto bulk = scheduler.Enqueue(Request(Seqs(10000, 40, 30)));
  ASSERT_TRUE(engine.WaitForBatches(1));
  EXPECT_EQ(engine.batch(0).num_sequences(), 3);
  std::this_thread::sleep_for(30ms);
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  // 30 ms / 90 tokens, weighted 1/4 against 1e-4 s/token: at least 1.58e-4 s/token, so at most
  // 63 tokens, two sequences.
  EXPECT_LE(scheduler.bulk_batch_tokens(), 64);
  EXPECT_EQ(engine.batch(1).num_sequences(), 2);
  // Queries are not held to the bulk budget: they fill up to max_batch_tokens.
  std::vector<std::future<Result<Embeddings>>> queries;
  for (int i = 0; i < 6; ++i)
    queries.push_back(scheduler.Enqueue(Request(Seqs(50000 + 1000 * i, 1, 30))));
  std::this_thread::sleep_for(20ms);
  engine.Complete(1);
  ASSERT_TRUE(engine.WaitForBatches(3));
  EXPECT_EQ(engine.batch(2).num_sequences(), 6);
  for (size_t i = 2; NextBatch(engine, i, [&] { return Ready(bulk); }); ++i) engine.Complete(i);
  for (auto& q : queries) EXPECT_TRUE(q.get().ok());
  EXPECT_TRUE(bulk.get().ok());
}

// A time-sized bulk budget is met on average, not only from below: a sequence goes in when half
// of it fits (budget 100: two sequences of 40 and half the third; max_batch_tokens still caps).
TEST(PrioritySchedulingTest, BulkBatchesRoundToTheNearestSequence) {
  FakeEngine engine(/*auto_complete=*/false, 100000, /*max_seq_length=*/64);
  TokenBudgetSchedulerOptions o = Options(/*budget=*/110);
  o.max_batch_time = 10ms;
  o.initial_seconds_per_token = 1e-4;  // 100 tokens
  TokenBudgetScheduler scheduler(&engine, o);
  auto bulk = scheduler.Enqueue(Request(Seqs(10000, 12, 40)));
  ASSERT_TRUE(engine.WaitForBatches(1));
  EXPECT_EQ(engine.batch(0).num_tokens(), 80);  // the first batch: two (a third would pass 110)
  engine.Complete(0);
  for (size_t i = 1; NextBatch(engine, i, [&] { return Ready(bulk); }); ++i) {
    EXPECT_LE(engine.batch(i).num_tokens(), 110);
    engine.Complete(i);
  }
  EXPECT_TRUE(bulk.get().ok());
  TokenBudgetSchedulerOptions roomy = Options(/*budget=*/4096);
  roomy.max_batch_time = 10ms;
  roomy.initial_seconds_per_token = 1e-4;
  FakeEngine engine2(/*auto_complete=*/false, 100000, /*max_seq_length=*/64);
  TokenBudgetScheduler scheduler2(&engine2, roomy);
  auto bulk2 = scheduler2.Enqueue(Request(Seqs(10000, 12, 40)));
  ASSERT_TRUE(engine2.WaitForBatches(1));
  EXPECT_EQ(engine2.batch(0).num_tokens(), 120);  // 80 + half of 40 fits in 100
  for (size_t i = 0; NextBatch(engine2, i, [&] { return Ready(bulk2); }); ++i) engine2.Complete(i);
  EXPECT_TRUE(bulk2.get().ok());
}

// A second bulk batch waits until the first is estimated to be in its last tenth, so that a
// query arriving meanwhile runs right after the batch on the engine; with more batches allowed
// in flight, the query is submitted at once.
TEST(PrioritySchedulingTest, TheNextBulkBatchWaitsForTheEndOfTheRunningOne) {
  FakeEngine engine(/*auto_complete=*/false, 100000, /*max_seq_length=*/400);
  TokenBudgetSchedulerOptions o = Options(/*budget=*/4096, /*in_flight=*/3);
  o.max_batch_time = 1000ms;
  o.initial_seconds_per_token = 1e-3;  // 1000 tokens per batch: 3 sequences of 300, 0.9 s
  TokenBudgetScheduler scheduler(&engine, o);
  const auto start = Clock::now();
  auto bulk = scheduler.Enqueue(Request(Seqs(10000, 9, 300)));
  ASSERT_TRUE(engine.WaitForBatches(1));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(engine.num_batches(), 1u);  // the next bulk batch is held back
  auto query = scheduler.Enqueue(Request(Seqs(50000, 1, 5)));
  ASSERT_TRUE(engine.WaitForBatches(2));
  EXPECT_EQ(Firsts(engine.batch(1)), std::vector<int32_t>{50000});
  // The work in flight is estimated at 0.9 s + 5 ms: the bulk batch goes about 0.1 s before.
  ASSERT_TRUE(engine.WaitForBatches(3));
  EXPECT_GE(Clock::now() - start, 700ms);
  EXPECT_EQ(From(engine.batch(2), 10000), 3);
  for (size_t i = 0; NextBatch(engine, i, [&] { return Ready(bulk); }); ++i) engine.Complete(i);
  EXPECT_TRUE(query.get().ok());
  EXPECT_TRUE(bulk.get().ok());
}

// Cancelled before any of it ran: dropped at the next launch, wherever it is in the queue, its
// tokens freed, answered once; the requests around it are served.
TEST(PrioritySchedulingTest, CancelledWhileQueuedIsDroppedAndAnsweredOnce) {
  MetricsRegistry registry;
  FakeEngine engine(/*auto_complete=*/false, 100000);
  TokenBudgetSchedulerOptions o = Options(/*budget=*/40);
  o.metrics = RegisterSchedulerMetrics(&registry);
  TokenBudgetScheduler scheduler(&engine, o);
  auto blocker = scheduler.Enqueue(Request(Seqs(1000, 1, 5)));
  ASSERT_TRUE(engine.WaitForBatches(1));
  auto before = scheduler.Enqueue(Request(Seqs(10000, 12, 10)));
  auto cancel = std::make_shared<Cancellation>();
  EmbedRequest victim = Request(Seqs(30000, 12, 10));
  victim.scheduling.cancellation = cancel;
  std::atomic<int> calls{0};
  std::promise<Status> victim_status;
  ASSERT_TRUE(scheduler
                  .Enqueue(std::move(victim),
                           [&](Result<Embeddings> r) {
                             if (calls++ == 0) victim_status.set_value(r.status());
                           })
                  .ok());
  auto after = scheduler.Enqueue(Request(Seqs(50000, 12, 10)));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(scheduler.queued_tokens(), 360);
  cancel->Cancel();
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  EXPECT_EQ(victim_status.get_future().get().code(), StatusCode::kCancelled);
  for (size_t i = 1; NextBatch(engine, i, [&] { return Ready(before) && Ready(after); }); ++i) {
    EXPECT_EQ(From(engine.batch(i), 30000), 0);
    engine.Complete(i);
  }
  EXPECT_TRUE(before.get().ok());
  EXPECT_TRUE(after.get().ok());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(scheduler.queued_tokens(), 0);
  EXPECT_EQ(scheduler.queued_requests(), 0);
  EXPECT_EQ(o.metrics.cancelled_sequences->value(), 12);
}

// Cancelled while part of it is on the engine: the rest is dropped, the batch in flight
// finishes (its rows for the request are thrown away), and the request is answered once.
TEST(PrioritySchedulingTest, CancelledAfterPartRanIsAnsweredOnce) {
  FakeEngine engine(/*auto_complete=*/false, 100000);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/40));
  auto cancel = std::make_shared<Cancellation>();
  EmbedRequest r = Request(Seqs(10000, 20, 10));
  r.scheduling.cancellation = cancel;
  std::atomic<int> calls{0};
  std::promise<Status> status;
  ASSERT_TRUE(scheduler
                  .Enqueue(std::move(r),
                           [&](Result<Embeddings> res) {
                             if (calls++ == 0) status.set_value(res.status());
                           })
                  .ok());
  ASSERT_TRUE(engine.WaitForBatches(1));
  cancel->Cancel();
  auto next = scheduler.Enqueue(Request(Seqs(50000, 1, 5)));
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  EXPECT_EQ(Firsts(engine.batch(1)), std::vector<int32_t>{50000});
  engine.Complete(1);
  EXPECT_TRUE(next.get().ok());
  EXPECT_EQ(status.get_future().get().code(), StatusCode::kCancelled);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(engine.num_batches(), 2u);
  EXPECT_EQ(scheduler.queued_tokens(), 0);
}

TEST(PrioritySchedulingTest, ExpiredWhileQueuedFailsWithDeadlineExceeded) {
  MetricsRegistry registry;
  FakeEngine engine(/*auto_complete=*/false, 100000);
  TokenBudgetSchedulerOptions o = Options(/*budget=*/40);
  o.metrics = RegisterSchedulerMetrics(&registry);
  TokenBudgetScheduler scheduler(&engine, o);
  auto blocker = scheduler.Enqueue(Request(Seqs(1000, 1, 5)));
  ASSERT_TRUE(engine.WaitForBatches(1));
  EmbedRequest late = Request(Seqs(10000, 3, 10), RequestClass::kBulk);
  late.scheduling.deadline = Clock::now() + 10ms;
  auto f_late = scheduler.Enqueue(std::move(late));
  EmbedRequest fine = Request(Seqs(30000, 3, 10), RequestClass::kBulk);
  fine.scheduling.deadline = Clock::now() + 60s;
  auto f_fine = scheduler.Enqueue(std::move(fine));
  std::this_thread::sleep_for(40ms);
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  engine.Complete(1);
  EXPECT_EQ(f_late.get().status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(f_fine.get().ok());
  EXPECT_EQ(From(engine.batch(1), 10000), 0);
  EXPECT_EQ(o.metrics.expired_sequences->value(), 3);
  EXPECT_EQ(o.metrics.queue_seconds_bulk->count(), 1u);  // `fine` only: `late` never ran
  const std::string text = registry.Render();
  EXPECT_NE(text.find("orchid_scheduler_dropped_sequences_total{reason=\"deadline\"} 3"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("orchid_scheduler_queue_seconds_count{class=\"bulk\"} 1"), std::string::npos)
      << text;
}

// The old policy stays selectable: arrival order, whatever the class.
TEST(PrioritySchedulingTest, FcfsKeepsArrivalOrder) {
  FakeEngine engine(/*auto_complete=*/false, 100000);
  TokenBudgetSchedulerOptions o = Options(/*budget=*/1000);
  o.policy = SchedulingPolicy::kFcfs;
  o.max_batch_time = 1ms;  // ignored by FCFS
  TokenBudgetScheduler scheduler(&engine, o);
  auto blocker = scheduler.Enqueue(Request(Seqs(1000, 1, 5)));
  ASSERT_TRUE(engine.WaitForBatches(1));
  auto bulk = scheduler.Enqueue(Request(Seqs(10000, 20, 10)));
  auto query = scheduler.Enqueue(Request(Seqs(50000, 1, 5), RequestClass::kQuery, -100));
  std::this_thread::sleep_for(20ms);
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  std::vector<int32_t> firsts = Firsts(engine.batch(1));
  ASSERT_EQ(firsts.size(), 21u);  // one batch, in arrival order
  EXPECT_EQ(firsts.front(), 10000);
  EXPECT_EQ(firsts.back(), 50000);
  engine.Complete(1);
  EXPECT_TRUE(bulk.get().ok());
  EXPECT_TRUE(query.get().ok());
  EXPECT_TRUE(blocker.get().ok());
}

// Many requests of random class, priority, flow and size, some cancelled, some expiring, under
// an engine that completes batches on its own: every request is answered exactly once, with its
// own rows in order unless it was cancelled or expired.
TEST(PrioritySchedulingTest, NothingLostNothingAnsweredTwice) {
  FakeEngine engine(/*auto_complete=*/true, 1 << 30);
  TokenBudgetSchedulerOptions o = Options(/*budget=*/64, /*in_flight=*/2);
  o.max_batch_time = 1ms;
  o.initial_seconds_per_token = 1e-5;
  o.query = QueryThresholds{2, 20};
  TokenBudgetScheduler scheduler(&engine, o);
  std::mt19937 rng(11);
  constexpr int kRequests = 400;
  std::vector<std::atomic<int>> answers(kRequests);
  std::vector<std::shared_ptr<Cancellation>> cancels;
  std::vector<std::vector<std::vector<int32_t>>> sent(kRequests);
  std::vector<Result<Embeddings>> results(kRequests, Result<Embeddings>(Status::Internal("none")));
  std::mutex mu;
  for (int i = 0; i < kRequests; ++i) {
    const int n = 1 + int(rng() % 6);
    sent[size_t(i)] = Seqs(i * 10000 + 1, n, 1 + int(rng() % 12));
    EmbedRequest r = Request(sent[size_t(i)], RequestClass(rng() % 3), int32_t(rng() % 3) - 1,
                             rng() % 4 == 0 ? 5 : 0);
    if (rng() % 5 == 0) {
      auto c = std::make_shared<Cancellation>();
      r.scheduling.cancellation = c;
      cancels.push_back(c);
    }
    if (rng() % 7 == 0)
      r.scheduling.deadline = Clock::now() + std::chrono::microseconds(rng() % 500);
    ASSERT_TRUE(scheduler
                    .Enqueue(std::move(r),
                             [&, i](Result<Embeddings> res) {
                               ++answers[size_t(i)];
                               std::lock_guard<std::mutex> lock(mu);
                               results[size_t(i)] = std::move(res);
                             })
                    .ok());
    if (!cancels.empty() && rng() % 3 == 0) cancels[rng() % cancels.size()]->Cancel();
  }
  scheduler.Shutdown();
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_EQ(answers[size_t(i)].load(), 1) << i;
    const Result<Embeddings>& r = results[size_t(i)];
    if (!r.ok()) {
      EXPECT_TRUE(r.status().code() == StatusCode::kCancelled ||
                  r.status().code() == StatusCode::kDeadlineExceeded)
          << r.status().ToString();
      continue;
    }
    ASSERT_EQ(r->rows, int(sent[size_t(i)].size()));
    for (int k = 0; k < r->rows; ++k) {
      EXPECT_EQ(r->row(k)[0], float(sent[size_t(i)][size_t(k)].front())) << i << " " << k;
      EXPECT_EQ(r->row(k)[1], float(sent[size_t(i)][size_t(k)].size()));
    }
  }
  EXPECT_EQ(scheduler.queued_tokens(), 0);
  EXPECT_EQ(scheduler.queued_requests(), 0);
}

}  // namespace
}  // namespace orchid
