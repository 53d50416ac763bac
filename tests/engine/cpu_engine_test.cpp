// CpuEngine's mechanics with a fake model: validation, pooling and normalisation, ordering,
// errors, shutdown. (The real model through the engine: tests/models/bert_fidelity_test.cpp.)
#include "runtime/cpu_engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/cpu/l2_normalize.h"
#include "backends/cpu/pooling.h"

namespace orchid {
namespace {

// hidden[t][d] = token_id * (d + 1) + position: every pooling mode gives a distinct, known
// answer. Records the first token id of every batch it runs, to check the order.
class FakeModel : public Model {
 public:
  FakeModel() {
    info_.architecture = "Fake";
    info_.vocab_size = 100;
    info_.hidden_size = 3;
    info_.max_position_embeddings = 8;
    info_.max_seq_length = 8;
  }
  const ModelInfo& info() const override { return info_; }
  // The hidden states above, pooled and normalised by the CPU backend's kernels.
  Status Run(const RaggedBatch& batch, ThreadPool* pool, float* out, bool prune) override {
    (void)prune;
    got_pool = pool != nullptr || got_pool;
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(batch.token_ids[0]);
    }
    if (batch.token_ids[0] == 99) return Status::Internal("forward failed on purpose");
    std::vector<float> hidden(size_t(batch.num_tokens()) * 3);
    ORCHID_RETURN_IF_ERROR(Hidden(batch, pool, hidden.data()));
    Pool(hidden.data(), 3, batch.cu_seqlens.data(), batch.num_sequences(), batch.pooling.data(),
         out);
    L2Normalize(out, batch.num_sequences(), 3, batch.normalize.data());
    return Status::Ok();
  }
  Status Hidden(const RaggedBatch& batch, ThreadPool* pool, float* hidden) override {
    (void)pool;
    for (int t = 0; t < batch.num_tokens(); ++t) {
      for (int d = 0; d < 3; ++d) {
        hidden[t * 3 + d] =
            float(batch.token_ids[size_t(t)] * (d + 1) + batch.positions[size_t(t)]);
      }
    }
    return Status::Ok();
  }

  ModelInfo info_;
  int delay_ms = 0;
  std::mutex mu;
  std::vector<int32_t> order;
  std::atomic<bool> got_pool{false};
};

RaggedBatch One(std::vector<int32_t> ids, Pooling p = Pooling::kMean, bool norm = false) {
  RaggedBatch b;
  b.Add(ids.data(), int(ids.size()), p, norm);
  return b;
}

TEST(CpuEngineTest, PoolsAndNormalisesPerSequence) {
  auto model = std::make_unique<FakeModel>();
  FakeModel* fake = model.get();
  auto engine = MakeCpuEngine(std::move(model), {.num_threads = 2});
  EXPECT_EQ(engine->info().hidden_size, 3);
  RaggedBatch b;
  const int32_t a[] = {1, 2, 3}, c[] = {4, 5};
  b.Add(a, 3, Pooling::kMean, false);
  b.Add(a, 3, Pooling::kCls, false);
  b.Add(c, 2, Pooling::kLastToken, false);
  b.Add(c, 2, Pooling::kMean, true);
  auto r = engine->Submit(b).wait();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rows, 4);
  ASSERT_EQ(r->dim, 3);
  // mean over ids 1,2,3 at positions 0,1,2: mean(id)*(d+1) + 1
  for (int d = 0; d < 3; ++d) EXPECT_FLOAT_EQ(r->row(0)[d], 2.0f * float(d + 1) + 1.0f);
  for (int d = 0; d < 3; ++d) EXPECT_FLOAT_EQ(r->row(1)[d], 1.0f * float(d + 1));
  for (int d = 0; d < 3; ++d) EXPECT_FLOAT_EQ(r->row(2)[d], 5.0f * float(d + 1) + 1.0f);
  const float m[] = {4.5f + 0.5f, 9.0f + 0.5f, 13.5f + 0.5f};
  const float n = std::sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]);
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(r->row(3)[d], m[d] / n, 1e-6);
  EXPECT_TRUE(fake->got_pool.load());
}

// Pooling::kNone (TEI's /embed_all): every token's last hidden state, beside pooled sequences
// of the same batch; the per-token sequence's pooled row is zeros. Scorers refuse it.
TEST(CpuEngineTest, PerTokenOutputBesidePooledSequences) {
  auto engine = MakeCpuEngine(std::make_unique<FakeModel>(), {.num_threads = 1});
  RaggedBatch b;
  const std::vector<int32_t> a = {1, 2, 3}, c = {4, 5};
  b.Add(a.data(), 3, Pooling::kMean, false);
  b.Add(c.data(), 2, Pooling::kNone, false);
  Result<Embeddings> r = engine->Submit(std::move(b)).wait();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_tokens());
  EXPECT_EQ(r->token_offsets, (std::vector<int32_t>{0, 0, 2}));
  EXPECT_EQ(r->token_dim, 3);
  // hidden[t][d] = id * (d + 1) + position.
  EXPECT_EQ(r->tokens, (std::vector<float>{4, 8, 12, 6, 11, 16}));
  EXPECT_FLOAT_EQ(r->row(0)[0], 3.0f);  // mean of 1, 3, 5 (ids 1..3 plus positions 0..2)
  EXPECT_EQ(std::vector<float>(r->row(1), r->row(1) + 3), (std::vector<float>{0, 0, 0}));

  auto scorer = std::make_unique<FakeModel>();
  scorer->info_.task = ModelTask::kScore;
  auto scoring = MakeCpuEngine(std::move(scorer), {.num_threads = 1});
  EXPECT_EQ(scoring->Submit(One({1}, Pooling::kNone)).wait().status().code(),
            StatusCode::kInvalidArgument);
}

TEST(CpuEngineTest, InvalidBatchesCompleteWithErrors) {
  auto engine = MakeCpuEngine(std::make_unique<FakeModel>(), {.num_threads = 1});
  auto bad_id = engine->Submit(One({1, 100})).wait();
  EXPECT_EQ(bad_id.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_id.status().message().find("100"), std::string::npos);
  auto too_long = engine->Submit(One({1, 2, 3, 4, 5, 6, 7, 8, 9})).wait();
  EXPECT_EQ(too_long.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(too_long.status().message().find("position 8"), std::string::npos);
  RaggedBatch neg = One({1, 2});
  neg.positions[1] = -3;
  EXPECT_EQ(engine->Submit(neg).wait().status().code(), StatusCode::kOutOfRange);
  RaggedBatch broken = One({1, 2});
  broken.cu_seqlens.back() = 5;
  EXPECT_FALSE(engine->Submit(broken).wait().ok());
  auto failed = engine->Submit(One({99})).wait();
  EXPECT_EQ(failed.status().code(), StatusCode::kInternal);
  // The engine keeps working after errors.
  EXPECT_TRUE(engine->Submit(One({1})).wait().ok());
  // An empty batch is fine and gives no rows.
  auto empty = engine->Submit(RaggedBatch{}).wait();
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->rows, 0);
}

TEST(CpuEngineTest, SubmitReturnsAtOnceAndBatchesRunInOrder) {
  auto model = std::make_unique<FakeModel>();
  FakeModel* fake = model.get();
  fake->delay_ms = 20;
  auto engine = MakeCpuEngine(std::move(model), {.num_threads = 1});
  std::vector<LazyResult> results;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1; i <= 10; ++i) results.push_back(engine->Submit(One({i})));
  const auto submit_time = std::chrono::steady_clock::now() - start;
  EXPECT_LT(submit_time, std::chrono::milliseconds(100));  // 10 x 20 ms of work queued
  EXPECT_FALSE(results.back().ready());
  for (int i = 0; i < 10; ++i) {
    const auto& r = results[size_t(i)].wait();
    ASSERT_TRUE(r.ok());
    EXPECT_FLOAT_EQ(r->row(0)[0], float(i + 1));
  }
  std::lock_guard<std::mutex> lock(fake->mu);
  EXPECT_EQ(fake->order, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
}

TEST(CpuEngineTest, DestructionFinishesQueuedBatches) {
  std::vector<LazyResult> results;
  {
    auto model = std::make_unique<FakeModel>();
    model->delay_ms = 5;
    auto engine = MakeCpuEngine(std::move(model), {.num_threads = 2});
    for (int i = 1; i <= 8; ++i) results.push_back(engine->Submit(One({i, i})));
  }
  for (auto& r : results) {
    ASSERT_TRUE(r.ready());
    EXPECT_TRUE(r.wait().ok());
  }
}

TEST(CpuEngineTest, ConcurrentSubmitters) {
  auto engine = MakeCpuEngine(std::make_unique<FakeModel>(), {.num_threads = 2});
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const int32_t id = 1 + (t * 50 + i) % 90;
        auto r = engine->Submit(One({id, id}, Pooling::kCls)).wait();
        if (r.ok() && r->row(0)[0] == float(id)) ++good;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good.load(), 200);
}

TEST(CpuEngineTest, NullModelGivesNoEngine) { EXPECT_EQ(MakeCpuEngine(nullptr), nullptr); }

}  // namespace
}  // namespace orchid
