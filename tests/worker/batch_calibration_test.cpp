#include "worker/batch_calibration.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "worker/fake_engine.h"

namespace orchid {
namespace {

using namespace std::chrono_literals;

// An engine whose batches take overhead + tokens * per_token (slept, so at least that long):
// small batches pay the overhead, large ones approach 1 / per_token tokens/s.
class SleepyEngine : public testing::FakeEngine {
 public:
  SleepyEngine(std::chrono::microseconds overhead, std::chrono::nanoseconds per_token)
      : FakeEngine(/*auto_complete=*/true, 30000, /*max_seq_length=*/512),
        overhead_(overhead),
        per_token_(per_token) {}
  LazyResult Submit(RaggedBatch batch) override {
    std::this_thread::sleep_for(overhead_ + per_token_ * batch.num_tokens());
    return FakeEngine::Submit(std::move(batch));
  }

 private:
  std::chrono::microseconds overhead_;
  std::chrono::nanoseconds per_token_;
};

// 2 ms + 10 us per token: 128 tokens 3.3 ms (39k tokens/s) ... 4096 tokens 43 ms (95k/s). The
// 95% knee lies at 2048-4096 tokens (22-43 ms); the target is twice its time, under a 200 ms
// ceiling.
TEST(BatchCalibrationTest, TargetsTwiceTheSmallestBatchNearThePeakRate) {
  SleepyEngine engine(2ms, 10us);
  BatchCalibrationOptions o;
  o.max_batch_tokens = 4096;
  o.ceiling = 200ms;
  auto c = CalibrateBatchTime(&engine, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->points.size(), 6u);  // 128 ... 4096 tokens
  EXPECT_EQ(c->points.front().tokens, 128);
  EXPECT_EQ(c->points.back().tokens, 4096);
  for (const auto& p : c->points) {
    EXPECT_GE(p.seconds, 0.002 + 1e-5 * p.tokens) << p.tokens;  // slept at least that long
  }
  EXPECT_FALSE(c->capped);
  // 1024 tokens (12.2 ms) reaches only 87% of the best rate: the knee is beyond it.
  EXPECT_TRUE(c->knee_tokens == 2048 || c->knee_tokens == 4096) << c->knee_tokens;
  EXPECT_NEAR(std::chrono::duration<double>(c->max_batch_time).count(), 2 * c->knee_seconds, 1e-5);
  EXPECT_GT(c->seconds_per_token, 0);
  EXPECT_NE(c->Describe().find("bulk batches sized for"), std::string::npos) << c->Describe();
  // With the default 50 ms ceiling, twice the knee (45-86 ms) is held at most at 50 ms.
  o.ceiling = BatchCalibrationOptions{}.ceiling;
  auto held = CalibrateBatchTime(&engine, o);
  ASSERT_TRUE(held.ok());
  EXPECT_LE(held->max_batch_time, 50ms);
  EXPECT_GE(held->max_batch_time, 40ms);
}

// A slow engine: even one sequence takes longer than the ceiling, which then sets the target;
// measuring stops at the probe limit instead of running every size.
TEST(BatchCalibrationTest, HeldAtTheCeilingForSlowEngines) {
  SleepyEngine engine(1ms, 100us);  // 128 tokens: 13.8 ms
  BatchCalibrationOptions o;
  o.max_batch_tokens = 16384;
  o.ceiling = 5ms;
  o.probe_limit = 20ms;
  auto c = CalibrateBatchTime(&engine, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->capped);
  EXPECT_EQ(c->max_batch_time, 5ms);
  EXPECT_LE(c->points.size(), 2u);  // 128 tokens (13.8 ms), 256 tokens (26.6 ms): stop
  EXPECT_NE(c->Describe().find("latency ceiling"), std::string::npos) << c->Describe();
}

TEST(BatchCalibrationTest, EngineErrorsAndBadOptionsAreReported) {
  testing::FakeEngine engine(/*auto_complete=*/true, /*vocab_size=*/0);  // every id out of range
  class Failing : public testing::FakeEngine {
   public:
    Failing() : FakeEngine(true) {}
    LazyResult Submit(RaggedBatch) override {
      auto [r, p] = LazyResult::Make();
      p.Set(Status::Internal("device lost"));
      return r;
    }
  } failing;
  auto c = CalibrateBatchTime(&failing, BatchCalibrationOptions{});
  EXPECT_EQ(c.status().code(), StatusCode::kInternal);
  BatchCalibrationOptions bad;
  bad.efficiency = 1.5;
  EXPECT_EQ(CalibrateBatchTime(&engine, bad).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace orchid
