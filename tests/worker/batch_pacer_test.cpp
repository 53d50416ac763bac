// BatchPacer (batch_pacer.h) alone: the bulk budget from the batch-time target and the learned
// rate, and when a bulk batch may be queued behind the work in flight.
#include "worker/batch_pacer.h"

#include <gtest/gtest.h>

#include <chrono>

namespace orchid {
namespace {

using namespace std::chrono_literals;
using Clock = BatchPacer::Clock;

TEST(BatchPacerTest, WithoutATargetBulkBatchesAreTheTokenBudget) {
  BatchPacer pacer(0us, 4096, 1e-6);
  EXPECT_FALSE(pacer.paced());
  EXPECT_EQ(pacer.BulkBudget(), 4096);
  EXPECT_FALSE(pacer.Learn(0.5, 100, /*bulk=*/false));  // a known rate learns from bulk only
  EXPECT_TRUE(pacer.Learn(0.5, 100, /*bulk=*/true));
  EXPECT_EQ(pacer.BulkBudget(), 4096);  // learned, but nothing to pace
}

TEST(BatchPacerTest, BudgetIsTheTargetAtTheObservedRate) {
  // Powers of two, so that the budgets are exact: a 2^-6 s target.
  BatchPacer pacer(15625us, 4096, 0);
  EXPECT_TRUE(pacer.paced());
  EXPECT_EQ(pacer.BulkBudget(), 1);  // rate unknown: one sequence, then measure
  // The first batch (of any class) sets the rate: 2^-10 s for 128 tokens, 2^-17 s a token.
  EXPECT_TRUE(pacer.Learn(1.0 / 1024, 128, /*bulk=*/false));
  EXPECT_EQ(pacer.BulkBudget(), 2048);
  // Once known, query batches teach nothing; a bulk one moves it by a quarter of the way:
  // 0.75 * 2^-17 + 0.25 * 2^-15 = 1.75 * 2^-17 s a token, 2048 / 1.75 = 1170.3 tokens.
  EXPECT_FALSE(pacer.Learn(1.0 / 256, 128, /*bulk=*/false));
  EXPECT_EQ(pacer.BulkBudget(), 2048);
  EXPECT_TRUE(pacer.Learn(1.0 / 256, 128, /*bulk=*/true));
  EXPECT_EQ(pacer.BulkBudget(), 1170);
  EXPECT_DOUBLE_EQ(pacer.EstimateSeconds(1024), 1.75 / 128);
  // Held within [1, max_batch_tokens].
  BatchPacer fast(15625us, 4096, 1e-9);
  EXPECT_EQ(fast.BulkBudget(), 4096);
  BatchPacer slow(15625us, 4096, 1.0);
  EXPECT_EQ(slow.BulkBudget(), 1);
}

TEST(BatchPacerTest, BatchTimeRunsFromWhenTheEngineStartedIt) {
  BatchPacer pacer(10ms, 4096, 0);
  const Clock::time_point t0 = Clock::now();
  pacer.Submitted(t0, /*engine_idle=*/true);
  pacer.Submitted(t0 + 1ms, /*engine_idle=*/false);  // queued behind the first
  const Clock::time_point second_submitted = t0 + 1ms;
  EXPECT_DOUBLE_EQ(pacer.FrontDone(t0 + 4ms, &second_submitted), 0.004);
  // The second started when the first finished, not when it was submitted.
  EXPECT_DOUBLE_EQ(pacer.FrontDone(t0 + 7ms, nullptr), 0.003);
}

TEST(BatchPacerTest, BulkWaitsUntilTheLastTenthOfTheWorkInFlight) {
  BatchPacer pacer(10ms, 4096, 1e-5);
  const Clock::time_point t0 = Clock::now();
  pacer.Submitted(t0, /*engine_idle=*/true);
  Clock::time_point wake = Clock::time_point::max();
  // 20 ms of work in flight: done at t0 + 20 ms; the lead is a tenth of the 10 ms target.
  EXPECT_FALSE(pacer.BulkMayQueue(t0 + 5ms, 0.020, &wake));
  EXPECT_EQ(wake, t0 + 19ms);
  EXPECT_TRUE(pacer.BulkMayQueue(t0 + 19ms, 0.020, &wake));
}

}  // namespace
}  // namespace orchid
