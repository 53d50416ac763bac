#include "worker/token_budget_scheduler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <random>
#include <thread>

#include "worker/fake_engine.h"

namespace orchid {
namespace {

using testing::FakeEngine;
using namespace std::chrono_literals;

std::vector<int32_t> Seq(int32_t first, int len) {
  std::vector<int32_t> s(size_t(len), first);
  for (int i = 0; i < len; ++i) s[size_t(i)] = first + i;
  return s;
}

EmbedRequest Request(std::vector<std::vector<int32_t>> seqs) {
  EmbedRequest r;
  r.sequences = std::move(seqs);
  return r;
}

TokenBudgetSchedulerOptions Options(int budget, int64_t queue = 1 << 20, int in_flight = 2) {
  TokenBudgetSchedulerOptions o;
  o.max_batch_tokens = budget;
  o.max_queued_tokens = queue;
  o.max_batches_in_flight = in_flight;
  return o;
}

// Checks that rows are {first id, length, last id} of the given sequences, in order.
void ExpectRows(const Result<Embeddings>& r, const std::vector<std::vector<int32_t>>& seqs) {
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rows, int(seqs.size()));
  ASSERT_EQ(r->dim, FakeEngine::kDim);
  for (size_t i = 0; i < seqs.size(); ++i) {
    EXPECT_EQ(r->row(int(i))[0], float(seqs[i].front())) << "row " << i;
    EXPECT_EQ(r->row(int(i))[1], float(seqs[i].size())) << "row " << i;
    EXPECT_EQ(r->row(int(i))[2], float(seqs[i].back())) << "row " << i;
  }
}

bool Ready(std::future<Result<Embeddings>>& f) {
  return f.wait_for(0s) == std::future_status::ready;
}

TEST(TokenBudgetSchedulerTest, ReturnsRowsInRequestOrder) {
  FakeEngine engine(/*auto_complete=*/true);
  TokenBudgetScheduler scheduler(&engine, Options(64));
  std::vector<std::vector<int32_t>> seqs = {Seq(10, 3), Seq(20, 5), Seq(30, 1)};
  auto f = scheduler.Enqueue(Request(seqs));
  ExpectRows(f.get(), seqs);
}

// A model that accepts more tokens than one batch holds (long-context Qwen3) is served with its
// inputs capped at the batch budget, as text-embeddings-inference does.
TEST(TokenBudgetSchedulerTest, ModelInfoCapsInputsAtTheBatchBudget) {
  FakeEngine engine(/*auto_complete=*/true, /*vocab_size=*/1000, /*max_seq_length=*/1024);
  TokenBudgetScheduler capped(&engine, Options(512));
  EXPECT_EQ(capped.model_info().max_seq_length, 512);
  EXPECT_EQ(capped.model_info().max_position_embeddings, 1024);
  TokenBudgetScheduler roomy(&engine, Options(4096));
  EXPECT_EQ(roomy.model_info().max_seq_length, 1024);
}

TEST(TokenBudgetSchedulerTest, PassesPoolingAndNormalizeToTheBatch) {
  FakeEngine engine(/*auto_complete=*/true);
  TokenBudgetScheduler scheduler(&engine, Options(64));
  EmbedRequest r = Request({Seq(3, 4)});
  r.pooling = Pooling::kCls;
  r.normalize = true;
  auto result = scheduler.Enqueue(std::move(r)).get();
  ASSERT_TRUE(result.ok());
  const RaggedBatch b = engine.batch(0);
  EXPECT_EQ(b.pooling[0], Pooling::kCls);
  EXPECT_EQ(b.normalize[0], 1);
  EXPECT_EQ(b.positions, (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(TokenBudgetSchedulerTest, RequestSpansBatchesAndRowsComeBackInOrder) {
  FakeEngine engine(/*auto_complete=*/false);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/10, 1 << 20, /*in_flight=*/1));
  std::vector<std::vector<int32_t>> a = {Seq(100, 4), Seq(200, 4), Seq(300, 4), Seq(400, 2)};
  std::vector<std::vector<int32_t>> b = {Seq(500, 3)};
  auto fa = scheduler.Enqueue(Request(a));
  auto fb = scheduler.Enqueue(Request(b));
  ASSERT_TRUE(engine.WaitForBatches(1));
  // Batch 0 stops inside request a at the budget; batch 1 continues it, then takes b.
  EXPECT_EQ(engine.batch(0).num_sequences(), 2);
  EXPECT_EQ(engine.batch(0).num_tokens(), 8);
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  EXPECT_FALSE(Ready(fa));  // half of a is still running
  EXPECT_EQ(engine.batch(1).num_sequences(), 3);
  EXPECT_EQ(engine.batch(1).num_tokens(), 9);
  EXPECT_EQ(engine.batch(1).token_ids.front(), 300);
  EXPECT_EQ(engine.batch(1).token_ids.back(), 502);
  engine.Complete(1);
  ExpectRows(fa.get(), a);
  ExpectRows(fb.get(), b);
}

// Per-token output (kNone, /embed_all): one row per token, the request's sequences one after the
// other, also when the request spans batches and shares one with a pooled request.
TEST(TokenBudgetSchedulerTest, PerTokenRequestsGetEveryTokenInOrderAcrossBatches) {
  FakeEngine engine(/*auto_complete=*/true);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/10, 1 << 20, /*in_flight=*/1));
  // 11 tokens: more than one batch holds.
  EmbedRequest tokens = Request({Seq(100, 4), Seq(200, 4), Seq(300, 3)});
  tokens.pooling = Pooling::kNone;
  std::vector<std::vector<int32_t>> pooled = {Seq(500, 2)};
  auto ft = scheduler.Enqueue(std::move(tokens));
  auto fp = scheduler.Enqueue(Request(pooled));
  const Result<Embeddings> r = ft.get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rows, 11);
  ASSERT_EQ(r->dim, FakeEngine::kDim);
  int row = 0;
  for (int first : {100, 200, 300}) {
    for (int pos = 0; pos < (first == 300 ? 3 : 4); ++pos, ++row) {
      EXPECT_EQ(r->row(row)[0], float(first + pos)) << "row " << row;
      EXPECT_EQ(r->row(row)[1], float(pos)) << "row " << row;
      EXPECT_EQ(r->row(row)[2], 7.0f) << "row " << row;
    }
  }
  ExpectRows(fp.get(), pooled);
}

TEST(TokenBudgetSchedulerTest, BatchesRespectTheBudgetAndArrivalOrder) {
  FakeEngine engine(/*auto_complete=*/true);
  const int budget = 37;
  TokenBudgetScheduler scheduler(&engine, Options(budget));
  std::mt19937 rng(7);
  std::vector<std::vector<std::vector<int32_t>>> requests;
  std::vector<std::future<Result<Embeddings>>> futures;
  int32_t next_id = 1;
  for (int r = 0; r < 200; ++r) {
    std::vector<std::vector<int32_t>> seqs;
    const int n = 1 + int(rng() % 5);
    for (int s = 0; s < n; ++s) {
      const int len = 1 + int(rng() % budget);
      seqs.push_back(Seq(next_id, len));
      next_id += len;
    }
    requests.push_back(seqs);
    futures.push_back(scheduler.Enqueue(Request(seqs)));
  }
  for (size_t r = 0; r < futures.size(); ++r) ExpectRows(futures[r].get(), requests[r]);
  // Every batch within budget; the concatenation of all batches is the arrival order.
  std::vector<int32_t> all;
  for (size_t i = 0; i < engine.num_batches(); ++i) {
    const RaggedBatch b = engine.batch(i);
    EXPECT_LE(b.num_tokens(), budget);
    EXPECT_GT(b.num_sequences(), 0);
    all.insert(all.end(), b.token_ids.begin(), b.token_ids.end());
  }
  ASSERT_EQ(all.size(), size_t(next_id - 1));
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], int32_t(i + 1));
  EXPECT_EQ(scheduler.queued_tokens(), 0);
}

TEST(TokenBudgetSchedulerTest, AccumulatesWhileTwoBatchesAreInFlight) {
  FakeEngine engine(/*auto_complete=*/false);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/100));
  auto fa = scheduler.Enqueue(Request({Seq(1, 2)}));
  ASSERT_TRUE(engine.WaitForBatches(1));
  auto fb = scheduler.Enqueue(Request({Seq(2, 2)}));  // pipelined: launched while batch 0 runs
  ASSERT_TRUE(engine.WaitForBatches(2));
  auto fc = scheduler.Enqueue(Request({Seq(3, 2)}));
  auto fd = scheduler.Enqueue(Request({Seq(4, 2), Seq(5, 2)}));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(engine.num_batches(), 2u);  // c and d wait: two batches in flight
  EXPECT_EQ(scheduler.queued_tokens(), 6);
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(3));
  EXPECT_EQ(engine.batch(2).num_sequences(), 3);  // c and d together
  ExpectRows(fa.get(), {Seq(1, 2)});
  engine.Complete(1);
  engine.Complete(2);
  ExpectRows(fb.get(), {Seq(2, 2)});
  ExpectRows(fc.get(), {Seq(3, 2)});
  ExpectRows(fd.get(), {Seq(4, 2), Seq(5, 2)});
}

TEST(TokenBudgetSchedulerTest, FullQueueIsRefusedAtOnce) {
  FakeEngine engine(/*auto_complete=*/false);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/8, /*queue=*/10, /*in_flight=*/1));
  auto fa = scheduler.Enqueue(Request({Seq(1, 5)}));
  ASSERT_TRUE(engine.WaitForBatches(1));  // a left the queue for the engine
  EXPECT_EQ(scheduler.queued_tokens(), 0);
  auto fb = scheduler.Enqueue(Request({Seq(2, 6)}));
  EXPECT_EQ(scheduler.queued_tokens(), 6);
  bool called = false;
  Status st = scheduler.Enqueue(Request({Seq(3, 5)}), [&](Result<Embeddings>) { called = true; });
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  auto fc = scheduler.Enqueue(Request({Seq(4, 4)}));  // still fits: 6 + 4 <= 10
  // Larger than the whole queue: never fits, so not "retry later".
  Status too_big = scheduler.Enqueue(Request({Seq(5, 6), Seq(6, 6)}), [](Result<Embeddings>) {});
  EXPECT_EQ(too_big.code(), StatusCode::kOutOfRange);
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  engine.Complete(1);
  ASSERT_TRUE(engine.WaitForBatches(3));
  engine.Complete(2);
  EXPECT_TRUE(fa.get().ok());
  EXPECT_TRUE(fb.get().ok());
  EXPECT_TRUE(fc.get().ok());
  EXPECT_FALSE(called);
  EXPECT_EQ(scheduler.queued_tokens(), 0);
}

TEST(TokenBudgetSchedulerTest, RejectsMalformedRequests) {
  FakeEngine engine(/*auto_complete=*/true);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/8));
  auto noop = [](Result<Embeddings>) {};
  EXPECT_EQ(scheduler.Enqueue(Request({}), noop).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(scheduler.Enqueue(Request({Seq(1, 2), {}}), noop).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(scheduler.Enqueue(Request({Seq(1, 9)}), noop).code(), StatusCode::kOutOfRange);
  auto f = scheduler.Enqueue(Request({}));
  EXPECT_EQ(f.get().status().code(), StatusCode::kInvalidArgument);
}

TEST(TokenBudgetSchedulerTest, EngineErrorFailsEachRequestOnceAndOthersContinue) {
  FakeEngine engine(/*auto_complete=*/false);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/4, /*queue=*/100, /*in_flight=*/1));
  int calls = 0;
  Status seen;
  std::promise<void> failed;
  // Spans three batches; the first fails, so the rest of it is dropped, not run.
  ASSERT_TRUE(scheduler
                  .Enqueue(Request({Seq(1, 4), Seq(2, 4), Seq(3, 4)}),
                           [&](Result<Embeddings> r) {
                             ++calls;
                             seen = r.status();
                             failed.set_value();
                           })
                  .ok());
  ASSERT_TRUE(engine.WaitForBatches(1));
  auto fb = scheduler.Enqueue(Request({Seq(9, 3)}));
  engine.Fail(0, Status::Internal("boom"));
  failed.get_future().wait();
  ASSERT_TRUE(engine.WaitForBatches(2));
  EXPECT_EQ(engine.batch(1).token_ids.front(), 9);  // the failed request's tail was dropped
  engine.Complete(1);
  ExpectRows(fb.get(), {Seq(9, 3)});
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen.code(), StatusCode::kInternal);
  EXPECT_EQ(scheduler.queued_tokens(), 0);
}

TEST(TokenBudgetSchedulerTest, ShutdownFinishesAcceptedRequestsThenRefuses) {
  FakeEngine engine(/*auto_complete=*/false);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/4));
  std::vector<std::future<Result<Embeddings>>> futures;
  for (int i = 0; i < 5; ++i) futures.push_back(scheduler.Enqueue(Request({Seq(i * 10, 3)})));
  std::thread completer([&] {
    for (size_t i = 0; i < futures.size(); ++i) {
      ASSERT_TRUE(engine.WaitForBatches(i + 1));
      engine.Complete(i);
    }
  });
  scheduler.Shutdown();
  completer.join();
  for (size_t i = 0; i < futures.size(); ++i) ExpectRows(futures[i].get(), {Seq(int(i) * 10, 3)});
  auto late = scheduler.Enqueue(Request({Seq(1, 1)}));
  EXPECT_EQ(late.get().status().code(), StatusCode::kUnavailable);
  scheduler.Shutdown();  // idempotent
}

TEST(TokenBudgetSchedulerTest, ShutdownDeadlineFailsWaitingRequestsButFinishesBatches) {
  FakeEngine engine(/*auto_complete=*/false);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/4, 1 << 20, /*in_flight=*/1));
  auto fa = scheduler.Enqueue(Request({Seq(1, 3)}));
  ASSERT_TRUE(engine.WaitForBatches(1));
  auto fb = scheduler.Enqueue(Request({Seq(2, 3)}));
  auto fc = scheduler.Enqueue(Request({Seq(3, 1), Seq(4, 4)}));
  std::thread stopper([&] { scheduler.Shutdown(std::chrono::milliseconds(0)); });
  // b and c never reach the engine; a, already on it, completes normally.
  EXPECT_EQ(fb.get().status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(fc.get().status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(scheduler.queued_tokens(), 0);
  engine.Complete(0);
  stopper.join();
  ExpectRows(fa.get(), {Seq(1, 3)});
  EXPECT_EQ(engine.num_batches(), 1u);
}

TEST(TokenBudgetSchedulerTest, ManyThreadsEnqueueConcurrently) {
  FakeEngine engine(/*auto_complete=*/true);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/50));
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        const std::vector<std::vector<int32_t>> seqs = {Seq(t * 1000 + i, 1 + i % 7),
                                                        Seq(t * 1000 + i + 500, 2)};
        auto r = scheduler.Enqueue(Request(seqs)).get();
        if (!r.ok() || r->rows != 2 || r->row(0)[0] != float(seqs[0][0]) ||
            r->row(1)[0] != float(seqs[1][0]) || r->row(0)[1] != float(seqs[0].size())) {
          ++bad;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace orchid

namespace orchid {
namespace {

// Holds the engine with two batches so that later requests wait in the queue.
struct BusyEngine {
  explicit BusyEngine(TokenBudgetSchedulerOptions o) : scheduler(&engine, o) {
    first = scheduler.Enqueue(Request({Seq(1, 2)}));
    EXPECT_TRUE(engine.WaitForBatches(1));
    second = scheduler.Enqueue(Request({Seq(2, 2)}));
    EXPECT_TRUE(engine.WaitForBatches(2));
  }
  void Drain() {
    for (size_t i = 0; i < 8; ++i) {
      if (engine.WaitForBatches(i + 1, 200ms)) engine.Complete(i);
    }
  }
  FakeEngine engine{/*auto_complete=*/false};
  TokenBudgetScheduler scheduler;
  std::future<Result<Embeddings>> first, second;
};

TEST(TokenBudgetSchedulerTest, DeadlinePassedWhileWaitingDropsTheRequest) {
  BusyEngine busy(Options(100));
  EmbedRequest late = Request({Seq(3, 2)});
  late.scheduling.deadline = std::chrono::steady_clock::now() + 20ms;
  auto f_late = busy.scheduler.Enqueue(std::move(late));
  auto f_ok = busy.scheduler.Enqueue(Request({Seq(4, 2)}));
  std::this_thread::sleep_for(60ms);
  busy.Drain();
  Result<Embeddings> r = f_late.get();
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  ExpectRows(f_ok.get(), {Seq(4, 2)});
  EXPECT_EQ(busy.engine.batch(2).num_sequences(), 1);  // only the live request ran
  EXPECT_EQ(busy.scheduler.queued_tokens(), 0);
  EXPECT_EQ(busy.scheduler.queued_requests(), 0);
}

TEST(TokenBudgetSchedulerTest, CancelledWhileWaitingDropsTheRequest) {
  BusyEngine busy(Options(100));
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  EmbedRequest r = Request({Seq(3, 2), Seq(5, 3)});
  // A polled source, as the worker's gRPC calls give (ctx->IsCancelled()).
  r.scheduling.cancellation =
      std::make_shared<Cancellation>([cancelled] { return cancelled->load(); });
  auto f = busy.scheduler.Enqueue(std::move(r));
  cancelled->store(true);
  busy.Drain();
  EXPECT_EQ(f.get().status().code(), StatusCode::kCancelled);
  EXPECT_EQ(busy.scheduler.queued_tokens(), 0);
}

TEST(TokenBudgetSchedulerTest, MaxBatchSequencesSplitsBatches) {
  TokenBudgetSchedulerOptions o = Options(1000);
  o.max_batch_sequences = 2;
  BusyEngine busy(o);
  std::vector<std::vector<int32_t>> seqs = {Seq(10, 1), Seq(20, 1), Seq(30, 1), Seq(40, 1),
                                            Seq(50, 1)};
  auto f = busy.scheduler.Enqueue(Request(seqs));
  busy.Drain();
  ExpectRows(f.get(), seqs);
  ASSERT_GE(busy.engine.num_batches(), 5u);
  for (size_t i = 2; i < busy.engine.num_batches(); ++i) {
    EXPECT_LE(busy.engine.batch(i).num_sequences(), 2) << i;
  }
}

// `dimensions` on a normalised request truncates then re-normalises (OpenAI); on one that does
// not normalise it only truncates (sentence-transformers' truncate_dim).
TEST(TokenBudgetSchedulerTest, DimensionsTruncateAndRenormaliseOnlyWhenNormalising) {
  FakeEngine engine(/*auto_complete=*/true);
  TokenBudgetScheduler scheduler(&engine, Options(64));
  EmbedRequest r = Request({std::vector<int32_t>(4, 3)});  // row {3, 4, 3}
  r.dimensions = 2;
  r.normalize = true;
  Result<Embeddings> e = scheduler.Enqueue(std::move(r)).get();
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->dim, 2);
  EXPECT_FLOAT_EQ(e->row(0)[0], 0.6f);
  EXPECT_FLOAT_EQ(e->row(0)[1], 0.8f);
  EmbedRequest raw = Request({std::vector<int32_t>(4, 3)});
  raw.dimensions = 2;
  Result<Embeddings> t = scheduler.Enqueue(std::move(raw)).get();
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->dim, 2);
  EXPECT_FLOAT_EQ(t->row(0)[0], 3.0f);
  EXPECT_FLOAT_EQ(t->row(0)[1], 4.0f);
  EmbedRequest too_wide = Request({Seq(1, 1)});
  too_wide.dimensions = FakeEngine::kDim + 1;
  EXPECT_EQ(scheduler.Enqueue(std::move(too_wide)).get().status().code(),
            StatusCode::kInvalidArgument);
}

TEST(TokenBudgetSchedulerTest, MetricsRecordBatchesAndQueueTime) {
  MetricsRegistry registry;
  TokenBudgetSchedulerOptions o = Options(64);
  o.metrics = RegisterSchedulerMetrics(&registry);
  FakeEngine engine(/*auto_complete=*/true);
  TokenBudgetScheduler scheduler(&engine, o);
  scheduler.ExportGauges(&registry);
  ExpectRows(scheduler.Enqueue(Request({Seq(1, 3), Seq(2, 4)})).get(), {Seq(1, 3), Seq(2, 4)});
  EXPECT_EQ(o.metrics.batch_tokens->count(), 1u);
  EXPECT_EQ(o.metrics.batch_tokens->sum(), 7);
  EXPECT_EQ(o.metrics.batch_sequences->sum(), 2);
  EXPECT_EQ(o.metrics.queue_seconds_query->count(), 1u);  // 2 inputs, 7 tokens: a query
  EXPECT_EQ(o.metrics.queue_seconds_bulk->count(), 0u);
  const std::string text = registry.Render();
  EXPECT_NE(text.find("orchid_scheduler_queued_tokens 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("orchid_scheduler_batch_tokens_count 1\n"), std::string::npos) << text;
}

TEST(TokenBudgetSchedulerTest, CarriesTokenTypeIdsIntoTheBatch) {
  FakeEngine engine(/*auto_complete=*/false);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/6, 1 << 20, /*in_flight=*/1));
  // Request a: the first sequence has types, the second none (all zero); request b has no
  // types at all. a's second sequence spills into the second batch together with b.
  EmbedRequest a = Request({Seq(10, 4), Seq(20, 3)});
  a.token_type_ids = {{0, 0, 1, 1}, {}};
  EmbedRequest b = Request({Seq(30, 2)});
  auto fa = scheduler.Enqueue(std::move(a));
  auto fb = scheduler.Enqueue(std::move(b));
  ASSERT_TRUE(engine.WaitForBatches(1));
  EXPECT_EQ(engine.batch(0).token_type_ids, (std::vector<int32_t>{0, 0, 1, 1}));
  engine.Complete(0);
  ASSERT_TRUE(engine.WaitForBatches(2));
  // A batch where no sequence has types carries none (the engine reads that as all zero).
  EXPECT_TRUE(engine.batch(1).token_type_ids.empty());
  engine.Complete(1);
  EXPECT_TRUE(fa.get().ok());
  EXPECT_TRUE(fb.get().ok());
}

TEST(TokenBudgetSchedulerTest, ScorerRowsAreOneLogitWide) {
  FakeEngine engine(/*auto_complete=*/true);
  engine.MakeScorer();
  TokenBudgetScheduler scheduler(&engine, Options(64));
  EmbedRequest r = Request({Seq(1, 5), Seq(2, 3)});
  r.token_type_ids = {{0, 0, 1, 1, 1}, {0, 1, 1}};
  auto result = scheduler.Enqueue(std::move(r)).get();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->dim, 1);
  EXPECT_FLOAT_EQ(result->row(0)[0], FakeEngine::ScorerLogit(5, 3));
  EXPECT_FLOAT_EQ(result->row(1)[0], FakeEngine::ScorerLogit(3, 2));
}

TEST(TokenBudgetSchedulerTest, RejectsTokenTypeIdsOfTheWrongShape) {
  FakeEngine engine(/*auto_complete=*/true);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/8));
  auto noop = [](Result<Embeddings>) {};
  EmbedRequest wrong_count = Request({Seq(1, 2), Seq(3, 2)});
  wrong_count.token_type_ids = {{0, 1}};
  EXPECT_EQ(scheduler.Enqueue(std::move(wrong_count), noop).code(), StatusCode::kInvalidArgument);
  EmbedRequest wrong_length = Request({Seq(1, 2)});
  wrong_length.token_type_ids = {{0, 1, 1}};
  EXPECT_EQ(scheduler.Enqueue(std::move(wrong_length), noop).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.num_batches(), 0u);
}

// Attended lengths (ColBERT queries) of the wrong count or past their sequence are refused at the
// door too, rather than read past the list or failing a shared batch; good ones reach the batch.
TEST(TokenBudgetSchedulerTest, RejectsAttendedLengthsOfTheWrongShape) {
  FakeEngine engine(/*auto_complete=*/true);
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/8));
  auto noop = [](Result<Embeddings>) {};
  EmbedRequest wrong_count = Request({Seq(1, 2), Seq(3, 2)});
  wrong_count.attend_lens = {1};
  EXPECT_EQ(scheduler.Enqueue(std::move(wrong_count), noop).code(), StatusCode::kInvalidArgument);
  EmbedRequest too_long = Request({Seq(1, 2), Seq(3, 2)});
  too_long.attend_lens = {0, 3};
  EXPECT_EQ(scheduler.Enqueue(std::move(too_long), noop).code(), StatusCode::kInvalidArgument);
  EmbedRequest negative = Request({Seq(1, 2)});
  negative.attend_lens = {-1};
  EXPECT_EQ(scheduler.Enqueue(std::move(negative), noop).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.num_batches(), 0u);
  EmbedRequest good = Request({Seq(1, 2), Seq(3, 2)});
  good.attend_lens = {0, 1};
  ASSERT_TRUE(scheduler.Enqueue(std::move(good), noop).ok());
  scheduler.Shutdown();
  ASSERT_EQ(engine.num_batches(), 1u);
  EXPECT_EQ(engine.batch(0).attend_lens, (std::vector<int32_t>{0, 1}));
}

// A type id the model has no embedding for is refused at the door, so it cannot fail an engine
// batch shared with other requests; the others go through.
TEST(TokenBudgetSchedulerTest, RejectsTokenTypeIdsOutOfTheModelsRange) {
  FakeEngine engine(/*auto_complete=*/true);  // two token types, as BERT
  TokenBudgetScheduler scheduler(&engine, Options(/*budget=*/8));
  auto noop = [](Result<Embeddings>) {};
  for (int32_t bad : {2, -1, 1 << 30}) {
    EmbedRequest r = Request({Seq(1, 2), Seq(3, 2)});
    r.token_type_ids = {{0, 1}, {0, bad}};
    Status st = scheduler.Enqueue(std::move(r), noop);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("token type id " + std::to_string(bad)), std::string::npos)
        << st.message();
  }
  EmbedRequest good = Request({Seq(1, 2)});
  good.token_type_ids = {{0, 1}};
  auto result = scheduler.Enqueue(std::move(good)).get();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->rows, 1);
}

}  // namespace
}  // namespace orchid
