// The worker's gRPC service and the gateway's ReplicaPool, in one process over loopback, with
// fake engines (row = {first id, length, last id}) so that routing and order are checkable.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gateway/replica_pool.h"
#include "rpc/convert.h"
#include "rpc/worker_service.h"
#include "worker/fake_engine.h"

namespace orchid {
namespace {

using testing::FakeEngine;
using namespace std::chrono_literals;

constexpr uint64_t kFingerprint = 0x1234;

// One fake worker: engine, scheduler and gRPC server on a free port.
struct FakeWorker {
  explicit FakeWorker(bool auto_complete = true, int64_t max_queued_tokens = 1024,
                      bool scorer = false, const LateInteraction* late = nullptr,
                      std::vector<std::string> tasks = {})
      : engine(auto_complete, /*vocab_size=*/1000, /*max_seq_length=*/16),
        scheduler(&engine, (engine.SetTasks(std::move(tasks)),
                            TokenBudgetSchedulerOptions{64, max_queued_tokens, 2})) {
    if (scorer) engine.MakeScorer();
    if (late != nullptr) engine.MakeLateInteraction(*late);
    rpc::WorkerServerOptions o;
    o.listen = "127.0.0.1:0";
    o.model.name = "fake-model";
    o.model.info = engine.info();
    o.model.max_input_tokens = 16;
    o.model.tokenizer_fingerprint = kFingerprint;
    server = std::make_unique<rpc::WorkerServer>(&scheduler, o);
    EXPECT_TRUE(server->Start().ok());
    address = "127.0.0.1:" + std::to_string(server->port());
  }
  ~FakeWorker() {
    server->Shutdown(0ms);
    scheduler.Shutdown(0ms);
  }
  std::unique_ptr<v1::Worker::Stub> Stub() const {
    return v1::Worker::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  }

  FakeEngine engine;
  TokenBudgetScheduler scheduler;
  std::unique_ptr<rpc::WorkerServer> server;
  std::string address;
};

v1::EmbedRequest Request(const std::vector<std::vector<int32_t>>& seqs) {
  v1::EmbedRequest r;
  for (const auto& s : seqs) r.add_sequences()->mutable_token_ids()->Add(s.begin(), s.end());
  return r;
}

// Sequence i = {i+1, ..., i+1} of length 1 + i % 5.
std::vector<std::vector<int32_t>> Sequences(int n) {
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < n; ++i) out.push_back(std::vector<int32_t>(size_t(1 + i % 5), i + 1));
  return out;
}

void ExpectRows(const Embeddings& e, const std::vector<std::vector<int32_t>>& seqs) {
  ASSERT_EQ(e.rows, int(seqs.size()));
  ASSERT_EQ(e.dim, 3);
  for (size_t i = 0; i < seqs.size(); ++i) {
    EXPECT_EQ(e.row(int(i))[0], float(seqs[i].front())) << i;
    EXPECT_EQ(e.row(int(i))[1], float(seqs[i].size())) << i;
    EXPECT_EQ(e.row(int(i))[2], float(seqs[i].back())) << i;
  }
}

TEST(WorkerService, InfoAndEmbed) {
  FakeWorker w;
  auto stub = w.Stub();
  {
    grpc::ClientContext ctx;
    v1::InfoResponse info;
    ASSERT_TRUE(stub->Info(&ctx, v1::InfoRequest(), &info).ok());
    EXPECT_EQ(info.model(), "fake-model");
    EXPECT_EQ(info.dim(), 3u);
    EXPECT_EQ(info.max_input_tokens(), 16u);
    EXPECT_EQ(info.tokenizer_fingerprint(), kFingerprint);
    EXPECT_EQ(info.vocab_size(), 1000);
  }
  {
    grpc::ClientContext ctx;
    v1::HealthResponse h;
    ASSERT_TRUE(stub->Health(&ctx, v1::HealthRequest(), &h).ok());
    EXPECT_EQ(h.status(), v1::HealthResponse::SERVING);
  }
  const auto seqs = Sequences(7);
  grpc::ClientContext ctx;
  v1::EmbedResponse resp;
  v1::EmbedRequest req = Request(seqs);
  req.set_model("fake-model");
  req.set_tokenizer_fingerprint(kFingerprint);
  ASSERT_TRUE(stub->Embed(&ctx, req, &resp).ok());
  Embeddings e;
  ASSERT_TRUE(rpc::FromProto(resp, &e).ok());
  ExpectRows(e, seqs);
  EXPECT_EQ(resp.prompt_tokens(), 1u + 2 + 3 + 4 + 5 + 1 + 2);
}

TEST(WorkerService, RefusesBadRequestsWithTheRightCode) {
  FakeWorker w;
  auto stub = w.Stub();
  auto code = [&](v1::EmbedRequest r) {
    grpc::ClientContext ctx;
    v1::EmbedResponse resp;
    return stub->Embed(&ctx, r, &resp).error_code();
  };
  EXPECT_EQ(code(v1::EmbedRequest()), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(Request({{}})), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(Request({{1, 1000}})), grpc::StatusCode::INVALID_ARGUMENT);  // out of vocab
  EXPECT_EQ(code(Request({std::vector<int32_t>(17, 1)})), grpc::StatusCode::OUT_OF_RANGE);
  v1::EmbedRequest r = Request({{1, 2}});
  r.set_model("other");
  EXPECT_EQ(code(r), grpc::StatusCode::NOT_FOUND);
  r = Request({{1, 2}});
  r.set_tokenizer_fingerprint(kFingerprint + 1);
  EXPECT_EQ(code(r), grpc::StatusCode::FAILED_PRECONDITION);
  r = Request({{1, 2}});
  r.set_dtype(v1::OUTPUT_DTYPE_INT8);
  EXPECT_EQ(code(r), grpc::StatusCode::UNIMPLEMENTED);
  r = Request({{1, 2}});
  r.set_dimensions(4);
  EXPECT_EQ(code(r), grpc::StatusCode::INVALID_ARGUMENT);
  // ... and it still serves.
  EXPECT_EQ(code(Request({{1, 2}})), grpc::StatusCode::OK);
}

TEST(WorkerService, DimensionsTruncateAndRenormalise) {
  FakeWorker w;
  auto stub = w.Stub();
  grpc::ClientContext ctx;
  v1::EmbedResponse resp;
  v1::EmbedRequest r = Request({{3, 3, 3, 3}});  // row {3, 4, 3}
  r.set_dimensions(2);
  ASSERT_TRUE(stub->Embed(&ctx, r, &resp).ok());
  Embeddings e;
  ASSERT_TRUE(rpc::FromProto(resp, &e).ok());
  ASSERT_EQ(e.dim, 2);
  EXPECT_FLOAT_EQ(e.row(0)[0], 3.0f);  // not normalised: truncated only
  EXPECT_FLOAT_EQ(e.row(0)[1], 4.0f);
  grpc::ClientContext ctx2;
  r.set_normalize(true);
  ASSERT_TRUE(stub->Embed(&ctx2, r, &resp).ok());
  ASSERT_TRUE(rpc::FromProto(resp, &e).ok());
  ASSERT_EQ(e.dim, 2);
  EXPECT_FLOAT_EQ(e.row(0)[0], 0.6f);
  EXPECT_FLOAT_EQ(e.row(0)[1], 0.8f);
}

TEST(WorkerService, StreamAnswersEveryRequestById) {
  FakeWorker w;
  auto stub = w.Stub();
  grpc::ClientContext ctx;
  auto stream = stub->EmbedStream(&ctx);
  constexpr int kRequests = 20;
  for (int i = 0; i < kRequests; ++i) {
    v1::EmbedRequest r = i == 5 ? Request({{}}) : Request(Sequences(1 + i % 4));
    r.set_request_id(uint64_t(100 + i));
    ASSERT_TRUE(stream->Write(r));
  }
  ASSERT_TRUE(stream->WritesDone());
  std::set<uint64_t> seen;
  v1::EmbedResponse resp;
  while (stream->Read(&resp)) {
    const int i = int(resp.request_id()) - 100;
    ASSERT_TRUE(i >= 0 && i < kRequests) << resp.request_id();
    EXPECT_TRUE(seen.insert(resp.request_id()).second);
    if (i == 5) {
      EXPECT_EQ(resp.error_code(), int(grpc::StatusCode::INVALID_ARGUMENT));
      continue;
    }
    EXPECT_EQ(resp.error_code(), 0) << resp.error_message();
    Embeddings e;
    ASSERT_TRUE(rpc::FromProto(resp, &e).ok());
    ExpectRows(e, Sequences(1 + i % 4));
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(seen.size(), size_t(kRequests));
}

ReplicaPoolOptions PoolOptions(const std::vector<const FakeWorker*>& workers) {
  ReplicaPoolOptions o;
  for (const FakeWorker* w : workers) o.backends.push_back(w->address);
  o.chunk_tokens = 6;
  o.health_interval = 50ms;
  o.tokenizer_fingerprint = kFingerprint;
  return o;
}

Result<Embeddings> Embed(ReplicaPool& pool, std::vector<std::vector<int32_t>> seqs) {
  std::promise<Result<Embeddings>> p;
  auto f = p.get_future();
  EmbedRequest r;
  r.sequences = std::move(seqs);
  pool.Embed(std::move(r), [&p](Result<Embeddings> rows) { p.set_value(std::move(rows)); });
  return f.get();
}

// Waits until the pool sees `n` healthy replicas.
bool WaitHealthy(const ReplicaPool& pool, size_t n) {
  for (int i = 0; i < 200; ++i) {
    size_t h = 0;
    for (const ReplicaState& r : pool.replicas()) h += r.healthy ? 1 : 0;
    if (h == n) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// A pool of `a` and `b`, after six health rounds (both replicas asked for their Info): how many
// it keeps healthy (1 when one of them serves another model than the pool's).
int HealthyInAPoolOf(FakeWorker* a, FakeWorker* b) {
  auto pool = ReplicaPool::Start(PoolOptions({a, b}), 5s);
  if (!pool.ok() || !WaitHealthy(**pool, 1)) return -1;
  std::this_thread::sleep_for(300ms);
  int healthy = 0;
  for (const ReplicaState& st : (*pool)->replicas()) healthy += st.healthy ? 1 : 0;
  return healthy;
}

TEST(ReplicaPool, ChunksAcrossReplicasAndKeepsOrder) {
  FakeWorker a, b, c;
  auto pool = ReplicaPool::Start(PoolOptions({&a, &b, &c}), 5s);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ((*pool)->model_name(), "fake-model");
  EXPECT_EQ((*pool)->model_info().hidden_size, 3);
  ASSERT_TRUE(WaitHealthy(**pool, 3));
  for (int round = 0; round < 5; ++round) {
    const auto seqs = Sequences(40);
    Result<Embeddings> e = Embed(**pool, seqs);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ExpectRows(*e, seqs);
  }
  int used = 0;
  for (const ReplicaState& r : (*pool)->replicas()) used += r.chunks_done > 0 ? 1 : 0;
  EXPECT_GE(used, 2) << "chunks should spread over replicas";
}

TEST(ReplicaPool, RetriesOnAnotherReplicaWhenOneGoesAway) {
  auto a = std::make_unique<FakeWorker>();
  FakeWorker b;
  auto pool = ReplicaPool::Start(PoolOptions({a.get(), &b}), 5s);
  ASSERT_TRUE(pool.ok());
  ASSERT_TRUE(WaitHealthy(**pool, 2));
  a.reset();  // gone without the pool noticing yet: its chunks fail and are retried on b
  for (int i = 0; i < 10; ++i) {
    const auto seqs = Sequences(12);
    Result<Embeddings> e = Embed(**pool, seqs);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ExpectRows(*e, seqs);
  }
  EXPECT_TRUE((*pool)->healthy());
}

// A worker shutting down can cancel a call that has just reached it (e2e: SIGTERM under
// load). The gateway did not cancel it, so the chunk is retried on another replica.
TEST(ReplicaPool, RetriesOnAnotherReplicaWhenTheWorkerCancels) {
  FakeWorker a(/*auto_complete=*/false);
  FakeWorker b;
  ReplicaPoolOptions o = PoolOptions({&a, &b});
  o.chunk_tokens = 1000;  // one chunk
  auto pool = ReplicaPool::Start(o, 5s);
  ASSERT_TRUE(pool.ok());
  ASSERT_TRUE(WaitHealthy(**pool, 2));
  const auto seqs = Sequences(6);
  auto p = std::make_shared<std::promise<Result<Embeddings>>>();
  auto f = p->get_future();
  EmbedRequest r;
  r.sequences = seqs;
  // Both replicas are idle: the pick goes to the first, `a`, whose engine holds the batch.
  (*pool)->Embed(std::move(r), [p](Result<Embeddings> rows) { p->set_value(std::move(rows)); });
  for (int t = 0; t < 500 && a.engine.num_batches() == 0; ++t) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(a.engine.num_batches(), 1u);
  a.engine.Fail(0, Status::Cancelled("cancelled by the worker"));
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  Result<Embeddings> e = f.get();
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ExpectRows(*e, seqs);
  EXPECT_EQ(b.engine.num_batches(), 1u);
}

// Starts `n` single-chunk requests of sequence {id, id} (a query each), each waited for until
// it is a batch on the worker's engine; two of them fill it (two batches in flight), so that
// later requests wait in its queue.
std::vector<std::future<Result<Embeddings>>> Occupy(ReplicaPool& pool, FakeWorker& w, int n) {
  std::vector<std::future<Result<Embeddings>>> out;
  const size_t before = w.engine.num_batches();
  for (int i = 0; i < n; ++i) {
    auto p = std::make_shared<std::promise<Result<Embeddings>>>();
    out.push_back(p->get_future());
    EmbedRequest r;
    r.sequences = {{900 + i, 900 + i}};
    pool.Embed(std::move(r), [p](Result<Embeddings> rows) { p->set_value(std::move(rows)); });
    EXPECT_TRUE(w.engine.WaitForBatches(before + size_t(i) + 1));
  }
  return out;
}

// The client of a request goes away (its HTTP connection closed): the gateway cancels the
// request's calls to the workers at once, answers it Cancelled, and the worker drops the
// sequences it had not started. The replica stays in rotation (the cancel was the gateway's).
TEST(ReplicaPool, ACancelledRequestCancelsItsWorkerCalls) {
  FakeWorker a(/*auto_complete=*/false);
  auto pool = ReplicaPool::Start(PoolOptions({&a}), 5s);
  ASSERT_TRUE(pool.ok());
  ASSERT_TRUE(WaitHealthy(**pool, 1));
  auto blockers = Occupy(**pool, a, 2);
  ASSERT_EQ(a.engine.num_batches(), 2u);
  auto cancel = std::make_shared<Cancellation>();
  EmbedRequest r;
  r.sequences = Sequences(20);  // 60 tokens: 10 chunks of at most 6
  r.scheduling.cancellation = cancel;
  auto p = std::make_shared<std::promise<Result<Embeddings>>>();
  auto f = p->get_future();
  (*pool)->Embed(std::move(r), [p](Result<Embeddings> rows) { p->set_value(std::move(rows)); });
  for (int t = 0; t < 500 && a.scheduler.queued_tokens() < 60; ++t)
    std::this_thread::sleep_for(5ms);
  ASSERT_EQ(a.scheduler.queued_tokens(), 60);
  cancel->Cancel();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(f.get().status().code(), StatusCode::kCancelled);
  // The worker's calls see the cancel once it crosses the connection (well within this), and
  // the scheduler drops their sequences at its next launch: when a batch comes back.
  std::this_thread::sleep_for(200ms);
  a.engine.Complete(0);
  a.engine.Complete(1);
  for (auto& b : blockers) EXPECT_TRUE(b.get().ok());
  for (int t = 0; t < 500 && a.scheduler.queued_tokens() > 0; ++t) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(a.scheduler.queued_tokens(), 0);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(a.engine.num_batches(), 2u);  // none of the cancelled sequences ran
  EXPECT_TRUE((*pool)->replicas()[0].healthy);
  // Cancelling after the answer changes nothing, and the pool goes on serving.
  cancel->Cancel();
  auto next = Occupy(**pool, a, 1);
  ASSERT_EQ(a.engine.num_batches(), 3u);
  a.engine.Complete(2);
  EXPECT_TRUE(next[0].get().ok());
}

// The gateway classes a request on the whole of it and gives every chunk that class and one
// flow: behind a busy engine, a later query goes ahead of every chunk of a bulk request, even
// its small last chunk (which a worker alone would take for a query).
TEST(ReplicaPool, ChunksCarryTheRequestsClass) {
  FakeWorker a(/*auto_complete=*/false);
  auto pool = ReplicaPool::Start(PoolOptions({&a}), 5s);
  ASSERT_TRUE(pool.ok());
  ASSERT_TRUE(WaitHealthy(**pool, 1));
  auto blockers = Occupy(**pool, a, 2);
  EmbedRequest bulk;
  bulk.sequences = Sequences(11);  // 31 tokens, 11 inputs: bulk; 6 chunks, each query-sized
  auto pb = std::make_shared<std::promise<Result<Embeddings>>>();
  auto fb = pb->get_future();
  (*pool)->Embed(std::move(bulk),
                 [pb](Result<Embeddings> rows) { pb->set_value(std::move(rows)); });
  for (int t = 0; t < 500 && a.scheduler.queued_tokens() < 31; ++t)
    std::this_thread::sleep_for(5ms);
  ASSERT_EQ(a.scheduler.queued_tokens(), 31);
  auto pq = std::make_shared<std::promise<Result<Embeddings>>>();
  auto fq = pq->get_future();
  EmbedRequest q;
  q.sequences = {{777, 777}};
  (*pool)->Embed(std::move(q), [pq](Result<Embeddings> rows) { pq->set_value(std::move(rows)); });
  for (int t = 0; t < 500 && a.scheduler.queued_tokens() < 33; ++t)
    std::this_thread::sleep_for(5ms);
  a.engine.Complete(0);
  ASSERT_TRUE(a.engine.WaitForBatches(3));
  const RaggedBatch next = a.engine.batch(2);
  ASSERT_EQ(next.num_sequences(), 1) << "the query batch holds the query only";
  EXPECT_EQ(next.token_ids.front(), 777);
  for (size_t i = 1; !(fb.wait_for(0s) == std::future_status::ready); ++i) {
    if (a.engine.WaitForBatches(i + 1, 20ms)) a.engine.Complete(i);
    ASSERT_LT(i, 100u);
  }
  EXPECT_TRUE(fq.get().ok());
  Result<Embeddings> e = fb.get();
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ExpectRows(*e, Sequences(11));
  for (auto& b : blockers) EXPECT_TRUE(b.get().ok());
}

TEST(ReplicaPool, UnavailableWhenNoReplicaIsHealthy) {
  auto a = std::make_unique<FakeWorker>();
  auto pool = ReplicaPool::Start(PoolOptions({a.get()}), 5s);
  ASSERT_TRUE(pool.ok());
  ASSERT_TRUE(WaitHealthy(**pool, 1));
  a.reset();
  ASSERT_TRUE(WaitHealthy(**pool, 0));
  EXPECT_FALSE((*pool)->healthy());
  Result<Embeddings> e = Embed(**pool, Sequences(3));
  EXPECT_EQ(e.status().code(), StatusCode::kUnavailable) << e.status().ToString();
}

TEST(ReplicaPool, ResourceExhaustedOnlyWhenEveryReplicaRefuses) {
  // Engines that hold their batches: queues fill up (64 tokens of room each).
  FakeWorker a(/*auto_complete=*/false, /*max_queued_tokens=*/64);
  FakeWorker b(/*auto_complete=*/false, /*max_queued_tokens=*/64);
  ReplicaPoolOptions o = PoolOptions({&a, &b});
  o.chunk_tokens = 1000;
  auto pool = ReplicaPool::Start(o, 5s);
  ASSERT_TRUE(pool.ok());
  ASSERT_TRUE(WaitHealthy(**pool, 2));
  // Two batches in flight per worker, then 64 queued tokens each: 4 × 16 + 2 × 64 tokens fit.
  std::vector<std::future<Result<Embeddings>>> held;
  auto send = [&](int tokens) {
    auto p = std::make_shared<std::promise<Result<Embeddings>>>();
    held.push_back(p->get_future());
    EmbedRequest r;
    for (int t = 0; t < tokens; t += 16) r.sequences.push_back(std::vector<int32_t>(16, 7));
    (*pool)->Embed(std::move(r), [p](Result<Embeddings> rows) { p->set_value(std::move(rows)); });
  };
  // One at a time, so that each becomes its own batch (two in flight per worker).
  for (int i = 0; i < 4; ++i) {
    send(16);
    for (int t = 0; t < 500 && a.engine.num_batches() + b.engine.num_batches() < size_t(i + 1); ++t) {
      std::this_thread::sleep_for(10ms);
    }
  }
  ASSERT_EQ(a.engine.num_batches(), 2u);
  ASSERT_EQ(b.engine.num_batches(), 2u);
  // Then one 64-token request queued on each worker (again one at a time, so none overtakes).
  for (int i = 1; i <= 2; ++i) {
    send(64);
    for (int t = 0; t < 500 && a.scheduler.queued_tokens() + b.scheduler.queued_tokens() < 64 * i;
         ++t) {
      std::this_thread::sleep_for(10ms);
    }
  }
  ASSERT_EQ(a.scheduler.queued_tokens(), 64);
  ASSERT_EQ(b.scheduler.queued_tokens(), 64);
  send(64);  // no room anywhere
  ASSERT_EQ(held.back().wait_for(5s), std::future_status::ready);
  Result<Embeddings> refused = held.back().get();
  held.pop_back();
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
  // Let everything finish: every held request then succeeds.
  for (int round = 0; round < 20; ++round) {
    for (FakeWorker* w : {&a, &b}) {
      for (size_t i = 0; i < w->engine.num_batches(); ++i) w->engine.Complete(i);
    }
    std::this_thread::sleep_for(20ms);
  }
  for (auto& f : held) {
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
    EXPECT_TRUE(f.get().ok());
  }
}

TEST(ReplicaPool, StartFailsWhenNoWorkerAnswers) {
  ReplicaPoolOptions o;
  o.backends = {"127.0.0.1:1"};
  auto pool = ReplicaPool::Start(o, 300ms);
  EXPECT_EQ(pool.status().code(), StatusCode::kUnavailable);
  o.backends = {"no-port"};
  EXPECT_EQ(ReplicaPool::Start(o, 300ms).status().code(), StatusCode::kInvalidArgument);
}

TEST(ReplicaPool, RefusesAWorkerWithAnotherTokenizer) {
  FakeWorker a;
  ReplicaPoolOptions o = PoolOptions({&a});
  o.tokenizer_fingerprint = kFingerprint + 1;
  auto pool = ReplicaPool::Start(o, 500ms);
  EXPECT_EQ(pool.status().code(), StatusCode::kUnavailable);
}

TEST(WorkerService, ScorerInfoAndTokenTypes) {
  FakeWorker w(/*auto_complete=*/true, 1024, /*scorer=*/true);
  auto stub = w.Stub();
  {
    grpc::ClientContext ctx;
    v1::InfoResponse info;
    ASSERT_TRUE(stub->Info(&ctx, v1::InfoRequest(), &info).ok());
    EXPECT_EQ(info.task(), v1::MODEL_TASK_SCORE);
    EXPECT_EQ(info.dim(), 1u);  // the row width: one logit
    EXPECT_EQ(info.hidden_size(), 3u);
    EXPECT_EQ(info.num_labels(), 1u);
    EXPECT_EQ(info.pair_format(), v1::PAIR_FORMAT_TOKENIZER_PAIR);
    Result<rpc::WorkerModel> m = rpc::FromProto(info);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->info.task, ModelTask::kScore);
    EXPECT_EQ(m->info.output_dim(), 1);
    EXPECT_EQ(m->info.hidden_size, 3);
  }
  v1::EmbedRequest req = Request({{1, 2, 3, 4}, {5, 6}});
  for (int t : {0, 0, 1, 1}) req.mutable_sequences(0)->add_token_type_ids(t);
  grpc::ClientContext ctx;
  v1::EmbedResponse resp;
  ASSERT_TRUE(stub->Embed(&ctx, req, &resp).ok());
  Embeddings e;
  ASSERT_TRUE(rpc::FromProto(resp, &e).ok());
  ASSERT_EQ(e.rows, 2);
  ASSERT_EQ(e.dim, 1);
  EXPECT_FLOAT_EQ(e.row(0)[0], FakeEngine::ScorerLogit(4, 2));
  EXPECT_FLOAT_EQ(e.row(1)[0], FakeEngine::ScorerLogit(2, 0));
  // Token types must match the sequence's length.
  v1::EmbedRequest bad = Request({{1, 2}});
  for (int t : {0, 1, 1}) bad.mutable_sequences(0)->add_token_type_ids(t);
  grpc::ClientContext ctx2;
  EXPECT_EQ(stub->Embed(&ctx2, bad, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(WorkerService, ScoreAnswersLogitsAndScoresForScorersOnly) {
  FakeWorker w(/*auto_complete=*/true, 1024, /*scorer=*/true);
  auto stub = w.Stub();
  v1::ScoreRequest req;
  v1::Sequence* a = req.add_pairs();
  for (int id : {1, 2, 3, 4}) a->add_token_ids(id);
  for (int t : {0, 0, 1, 1}) a->add_token_type_ids(t);
  v1::Sequence* b = req.add_pairs();
  for (int id : {5, 6}) b->add_token_ids(id);
  req.set_model("fake-model");
  req.set_tokenizer_fingerprint(kFingerprint);
  grpc::ClientContext ctx;
  v1::ScoreResponse resp;
  const grpc::Status st = stub->Score(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.num_labels(), 1u);
  EXPECT_EQ(resp.prompt_tokens(), 6u);
  ASSERT_EQ(resp.logits_size(), 2);
  ASSERT_EQ(resp.scores_size(), 2);
  const float logits[2] = {FakeEngine::ScorerLogit(4, 2), FakeEngine::ScorerLogit(2, 0)};
  for (int i = 0; i < 2; ++i) {
    EXPECT_FLOAT_EQ(resp.logits(i), logits[i]) << i;
    EXPECT_FLOAT_EQ(resp.scores(i), 1.0f / (1.0f + std::exp(-logits[i]))) << i;  // sigmoid head
  }
  Embeddings rows;
  ASSERT_TRUE(rpc::FromProto(resp, &rows).ok());
  EXPECT_EQ(rows.rows, 2);
  EXPECT_EQ(rows.dim, 1);
  // Refused like Embed: another tokenizer, types of the wrong length, no pairs.
  v1::ScoreRequest other = req;
  other.set_tokenizer_fingerprint(kFingerprint + 1);
  grpc::ClientContext c1;
  EXPECT_EQ(stub->Score(&c1, other, &resp).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  v1::ScoreRequest bad = req;
  bad.mutable_pairs(1)->add_token_type_ids(1);
  bad.mutable_pairs(1)->add_token_type_ids(1);
  bad.mutable_pairs(1)->add_token_type_ids(1);
  grpc::ClientContext c2;
  EXPECT_EQ(stub->Score(&c2, bad, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  grpc::ClientContext c3;
  EXPECT_EQ(stub->Score(&c3, v1::ScoreRequest(), &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // An embedder has no Score.
  FakeWorker embedder;
  grpc::ClientContext c4;
  req.clear_model();
  const grpc::Status refused = embedder.Stub()->Score(&c4, req, &resp);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(refused.error_message().find("call Embed"), std::string::npos)
      << refused.error_message();
}

// A worker seen through a forwarding proxy that counts Embed and Score calls; without Score it
// plays a worker older than that RPC (gRPC's default answer, UNIMPLEMENTED).
class ProxyWorker final : public v1::Worker::CallbackService {
 public:
  ProxyWorker(const FakeWorker& target, bool with_score)
      : stub_(target.Stub()), with_score_(with_score) {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(this);
    server_ = b.BuildAndStart();
    address = "127.0.0.1:" + std::to_string(port_);
  }
  ~ProxyWorker() override { server_->Shutdown(std::chrono::system_clock::now()); }

  grpc::ServerUnaryReactor* Embed(grpc::CallbackServerContext* ctx, const v1::EmbedRequest* req,
                                  v1::EmbedResponse* resp) override {
    ++embed_calls;
    return Forward(
        ctx, [&](grpc::ClientContext* c, auto done) { stub_->async()->Embed(c, req, resp, done); });
  }
  grpc::ServerUnaryReactor* Score(grpc::CallbackServerContext* ctx, const v1::ScoreRequest* req,
                                  v1::ScoreResponse* resp) override {
    ++score_calls;
    if (!with_score_) {
      auto* r = ctx->DefaultReactor();
      r->Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, ""));
      return r;
    }
    return Forward(
        ctx, [&](grpc::ClientContext* c, auto done) { stub_->async()->Score(c, req, resp, done); });
  }
  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* ctx, const v1::InfoRequest* req,
                                 v1::InfoResponse* resp) override {
    return Forward(
        ctx, [&](grpc::ClientContext* c, auto done) { stub_->async()->Info(c, req, resp, done); });
  }
  grpc::ServerUnaryReactor* Health(grpc::CallbackServerContext* ctx, const v1::HealthRequest* req,
                                   v1::HealthResponse* resp) override {
    return Forward(ctx, [&](grpc::ClientContext* c, auto done) {
      stub_->async()->Health(c, req, resp, done);
    });
  }

  std::string address;
  std::atomic<int> embed_calls{0}, score_calls{0};

 private:
  // The forwarded calls' client contexts live as long as the proxy, so that none is destroyed
  // from inside its own call's callback.
  template <class Call>
  grpc::ServerUnaryReactor* Forward(grpc::CallbackServerContext* ctx, Call call) {
    auto* reactor = ctx->DefaultReactor();
    grpc::ClientContext* client = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      clients_.push_back(std::make_unique<grpc::ClientContext>());
      client = clients_.back().get();
    }
    call(client, [reactor](grpc::Status s) { reactor->Finish(s); });
    return reactor;
  }

  std::unique_ptr<v1::Worker::Stub> stub_;
  bool with_score_;
  std::mutex mu_;
  std::vector<std::unique_ptr<grpc::ClientContext>> clients_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;  // destroyed first: no call is left to use the rest
};

// The pool scores through Score; a replica that answers UNIMPLEMENTED (older than Score) gets
// the same chunks through Embed, and the results are the same.
TEST(ReplicaPool, ScoresThroughScoreAndFallsBackToEmbedOnOlderWorkers) {
  FakeWorker w(true, 1024, /*scorer=*/true);
  for (const bool with_score : {true, false}) {
    ProxyWorker proxy(w, with_score);
    ReplicaPoolOptions o = PoolOptions({});
    o.backends = {proxy.address};
    auto pool = ReplicaPool::Start(o, 5s);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    ASSERT_TRUE(WaitHealthy(**pool, 1));
    for (int round = 0; round < 2; ++round) {
      const auto seqs = Sequences(8);  // 24 tokens: 4 chunks of at most 6
      Result<Embeddings> e = Embed(**pool, seqs);
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      ASSERT_EQ(e->rows, 8);
      for (int i = 0; i < 8; ++i) {
        EXPECT_FLOAT_EQ(e->row(i)[0], FakeEngine::ScorerLogit(int(seqs[size_t(i)].size()), 0));
      }
    }
    if (with_score) {
      EXPECT_GE(proxy.score_calls.load(), 8);
      EXPECT_EQ(proxy.embed_calls.load(), 0);
    } else {
      // Chunks already in flight when the first UNIMPLEMENTED came back each fall back once.
      EXPECT_GE(proxy.embed_calls.load(), 8);
      EXPECT_LE(proxy.score_calls.load(), 4);
    }
    (*pool)->Shutdown(0ms);
  }
}

TEST(ReplicaPool, ChunksCarryTokenTypesToScorers) {
  FakeWorker a(true, 1024, /*scorer=*/true), b(true, 1024, /*scorer=*/true);
  auto pool = ReplicaPool::Start(PoolOptions({&a, &b}), 5s);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ((*pool)->model_info().task, ModelTask::kScore);
  ASSERT_TRUE(WaitHealthy(**pool, 2));
  // 12 sequences of 1..4 tokens with i type-1 tokens each (capped by the length), in chunks of
  // at most 6 tokens: every row must be its own sequence's logit, in order.
  EmbedRequest r;
  std::vector<float> want;
  for (int i = 0; i < 12; ++i) {
    const int len = 1 + i % 4;
    const int ones = std::min(len, i % 3);
    r.sequences.push_back(std::vector<int32_t>(size_t(len), i + 1));
    std::vector<int32_t> types(size_t(len), 0);
    for (int k = 0; k < ones; ++k) types[size_t(len - 1 - k)] = 1;
    r.token_type_ids.push_back(types);
    want.push_back(FakeEngine::ScorerLogit(len, ones));
  }
  std::promise<Result<Embeddings>> p;
  auto f = p.get_future();
  (*pool)->Embed(std::move(r), [&p](Result<Embeddings> rows) { p.set_value(std::move(rows)); });
  Result<Embeddings> e = f.get();
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->rows, 12);
  ASSERT_EQ(e->dim, 1);
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(e->row(i)[0], want[size_t(i)]) << i;
}

// ColBERT through the split (issue 32): the workers' late-interaction settings reach the
// gateway's model, and every query keeps its attended length (its [MASK] expansion not attended
// to) whichever chunk and replica it lands in; per-token rows come back in order.
TEST(ReplicaPool, LateInteractionQueriesKeepTheirAttendedLengthsAcrossChunks) {
  LateInteraction li;
  li.query_prefix = "[unused0]";
  li.query_length = 8;
  li.document_length = 16;
  li.skiplist_words = {"."};
  FakeWorker a(true, 1024, false, &li), b(true, 1024, false, &li);
  auto pool = ReplicaPool::Start(PoolOptions({&a, &b}), 5s);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  const ModelInfo& info = (*pool)->model_info();
  EXPECT_TRUE(info.late_interaction == a.engine.info().late_interaction);
  EXPECT_TRUE(info.late_interaction.enabled);
  EXPECT_EQ(info.token_dim(), FakeEngine::kDim);
  ASSERT_TRUE(WaitHealthy(**pool, 2));
  // Sequence i: ids i + 1, 1 + i % 5 tokens, attending to its first i % length (0: all).
  EmbedRequest r;
  r.pooling = Pooling::kNone;
  r.sequences = Sequences(12);
  int total = 0;
  for (size_t i = 0; i < r.sequences.size(); ++i) {
    r.attend_lens.push_back(int32_t(i % r.sequences[i].size()));
    total += int(r.sequences[i].size());
  }
  const std::vector<int32_t> want = r.attend_lens;
  const std::vector<std::vector<int32_t>> seqs = r.sequences;
  std::promise<Result<Embeddings>> p;
  auto f = p.get_future();
  (*pool)->Embed(std::move(r), [&p](Result<Embeddings> rows) { p.set_value(std::move(rows)); });
  Result<Embeddings> e = f.get();
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->rows, total);
  ASSERT_EQ(e->dim, FakeEngine::kDim);
  int row = 0;
  for (const auto& seq : seqs) {
    for (size_t t = 0; t < seq.size(); ++t, ++row) {
      EXPECT_EQ(e->row(row)[0], float(seq[t])) << row;
      EXPECT_EQ(e->row(row)[1], float(t)) << row;
    }
  }
  int seen = 0;
  std::set<const FakeWorker*> used;
  for (FakeWorker* w : {&a, &b}) {
    for (size_t k = 0; k < w->engine.num_batches(); ++k) {
      const RaggedBatch batch = w->engine.batch(k);
      for (int s = 0; s < batch.num_sequences(); ++s, ++seen) {
        const size_t i = size_t(batch.token_ids[size_t(batch.cu_seqlens[size_t(s)])] - 1);
        ASSERT_LT(i, want.size());
        EXPECT_EQ(batch.attend_lens.empty() ? 0 : batch.attend_lens[size_t(s)], want[i]) << i;
        used.insert(w);
      }
    }
  }
  EXPECT_EQ(seen, 12);
  EXPECT_EQ(used.size(), 2u) << "the chunks should spread over both replicas";

  // The same model name without late interaction: whichever replica answers second is kept
  // out of the pool (it serves another model than the pool's).
  FakeWorker plain;
  EXPECT_EQ(HealthyInAPoolOf(&a, &plain), 1);
}

// A task adapter reaches the worker's engine in every chunk of a request (by name, numbered by
// the worker), and one the gateway does not know is refused before any call.
TEST(ReplicaPool, ChunksCarryTheTask) {
  FakeWorker a(/*auto_complete=*/true, 1024, false, nullptr, {"retrieval.query", "text-matching"});
  auto pool = ReplicaPool::Start(PoolOptions({&a}), 5s);
  ASSERT_TRUE(pool.ok());
  ASSERT_TRUE(WaitHealthy(**pool, 1));
  EXPECT_EQ((*pool)->model_info().tasks, a.engine.info().tasks);
  EmbedRequest r;
  r.sequences = Sequences(30);  // over the pool's chunk size: several chunks
  r.adapter = 2;
  auto p = std::make_shared<std::promise<Result<Embeddings>>>();
  auto f = p->get_future();
  (*pool)->Embed(std::move(r), [p](Result<Embeddings> rows) { p->set_value(std::move(rows)); });
  Result<Embeddings> e = f.get();
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ExpectRows(*e, Sequences(30));
  ASSERT_GE(a.engine.num_batches(), 2u);
  for (size_t i = 0; i < a.engine.num_batches(); ++i) {
    EXPECT_EQ(a.engine.batch(i).adapters,
              std::vector<int32_t>(size_t(a.engine.batch(i).num_sequences()), 2));
  }
  // The same model name without those adapters: whichever replica answers second is kept out of
  // the pool (a task would be taken or refused by whichever replica a chunk lands on).
  FakeWorker plain;
  EXPECT_EQ(HealthyInAPoolOf(&a, &plain), 1);

  EmbedRequest bad;
  bad.sequences = Sequences(1);
  bad.adapter = 3;
  auto pb = std::make_shared<std::promise<Result<Embeddings>>>();
  auto fb = pb->get_future();
  (*pool)->Embed(std::move(bad), [pb](Result<Embeddings> rows) { pb->set_value(std::move(rows)); });
  EXPECT_EQ(fb.get().status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace orchid
