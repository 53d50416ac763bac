// Batch-time calibration: how long a batch of bulk work should take, measured on the engine
// itself before serving starts (TokenBudgetSchedulerOptions::max_batch_time).
//
// Batches of 1, 2, 4, ... sequences of `sequence_tokens` tokens are timed (the best of two runs
// each, after a warm-up) until one takes `probe_limit`, the budget is spent, or max_batch_tokens
// is reached. The engine's best rate (tokens/s) is the peak; the knee is the smallest batch that
// reaches `efficiency` of that peak, and the target is `knee_multiple` times its time — a
// margin for what the engine alone does not show: while serving, HTTP, JSON and tokenizing
// threads share its cores (on two cores all-MiniLM-L6-v2 batches at the knee ran ~10% slower
// per token than full ones), and whole sequences fill a budget only to within one of them — but
// never more than `ceiling`, the latency a query may wait behind one bulk batch. Small models on
// fast devices land well under the ceiling; a large model on a CPU is held at it (and pays for
// it in bulk throughput).
//
// Blocks for the duration (well under a second for all-MiniLM-L6-v2 on two CPU cores). Call it
// before the scheduler takes the engine: it submits batches and waits for each.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"

namespace orchid {

struct BatchCalibrationOptions {
  int max_batch_tokens = 16384;
  int sequence_tokens = 128;  // capped at the model's maximum input
  double efficiency = 0.95;
  double knee_multiple = 2;
  std::chrono::microseconds ceiling = std::chrono::milliseconds(50);
  std::chrono::microseconds probe_limit = std::chrono::milliseconds(150);
  std::chrono::microseconds budget = std::chrono::seconds(3);
};

struct BatchCalibration {
  struct Point {
    int tokens = 0;
    double seconds = 0;  // the faster of the timed runs
  };
  std::vector<Point> points;  // in increasing size
  std::chrono::microseconds max_batch_time{0};
  double seconds_per_token = 0;  // the rate the target was set at
  double peak_tokens_per_second = 0;
  int knee_tokens = 0;  // the smallest batch within `efficiency` of the peak
  double knee_seconds = 0;
  bool capped = false;  // the ceiling, not the efficiency, set the target

  // One line for the log: the target, the size it stands for, its share of the peak.
  std::string Describe() const;
};

// InvalidArgument for bad options; the engine's error if a calibration batch fails.
Result<BatchCalibration> CalibrateBatchTime(Engine* engine, const BatchCalibrationOptions& options);

}  // namespace orchid
