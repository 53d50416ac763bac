#include "worker/batch_calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace orchid {
namespace {

using Clock = std::chrono::steady_clock;

RaggedBatch SyntheticBatch(const ModelInfo& info, int sequences, int length) {
  RaggedBatch b;
  std::vector<int32_t> ids(static_cast<size_t>(length));
  const int64_t vocab = std::max<int32_t>(1, info.vocab_size);
  for (int s = 0; s < sequences; ++s) {
    for (int t = 0; t < length; ++t) {
      ids[size_t(t)] = int32_t((17 + 31 * (int64_t(s) * length + t)) % vocab);
    }
    b.Add(ids.data(), length, info.default_pooling, info.default_normalize);
  }
  return b;
}

Result<double> TimeBatch(Engine* engine, const RaggedBatch& batch) {
  const auto start = Clock::now();
  Result<Embeddings> r = engine->Submit(batch).wait();
  if (!r.ok()) return r.status();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::string BatchCalibration::Describe() const {
  std::string sizes;
  for (const Point& p : points) {
    sizes +=
        fmt::format("{}{} tokens {:.1f} ms", sizes.empty() ? "" : ", ", p.tokens, p.seconds * 1e3);
  }
  const double target_s = std::chrono::duration<double>(max_batch_time).count();
  const double rate = seconds_per_token > 0 ? 1 / seconds_per_token : 0;
  return fmt::format(
      "bulk batches sized for {:.1f} ms ({:.0f} tokens at {:.0f} tokens/s, {:.0f}% of the "
      "engine's best measured {:.0f} tokens/s; {} tokens, {:.1f} ms, reach 95%{}); measured: {}",
      target_s * 1e3, target_s * rate, rate,
      peak_tokens_per_second > 0 ? 100 * rate / peak_tokens_per_second : 0, peak_tokens_per_second,
      knee_tokens, knee_seconds * 1e3, capped ? "; held at the latency ceiling" : "", sizes);
}

Result<BatchCalibration> CalibrateBatchTime(Engine* engine,
                                            const BatchCalibrationOptions& options) {
  if (options.max_batch_tokens < 1 || options.sequence_tokens < 1 || options.efficiency <= 0 ||
      options.efficiency > 1 || options.knee_multiple < 1 || options.ceiling.count() <= 0) {
    return Status::InvalidArgument("batch calibration: bad options");
  }
  const ModelInfo& info = engine->info();
  int max_len = info.max_seq_length > 0 ? info.max_seq_length : info.max_position_embeddings;
  if (max_len <= 0) max_len = options.sequence_tokens;
  const int length =
      std::max(1, std::min({options.sequence_tokens, max_len, options.max_batch_tokens}));
  const auto started = Clock::now();
  // Warm-up: first-touch allocations, kernel selection, lazy graph bookkeeping.
  ORCHID_ASSIGN_OR_RETURN(double warm, TimeBatch(engine, SyntheticBatch(info, 1, length)));
  (void)warm;

  BatchCalibration out;
  for (int n = 1; int64_t(n) * length <= options.max_batch_tokens; n *= 2) {
    const RaggedBatch batch = SyntheticBatch(info, n, length);
    double best = std::numeric_limits<double>::max();
    for (int run = 0; run < 2; ++run) {
      ORCHID_ASSIGN_OR_RETURN(double s, TimeBatch(engine, batch));
      best = std::min(best, s);
    }
    out.points.push_back({n * length, best});
    out.peak_tokens_per_second = std::max(out.peak_tokens_per_second, n * length / best);
    if (best >= std::chrono::duration<double>(options.probe_limit).count() ||
        Clock::now() - started >= options.budget) {
      break;
    }
  }
  const double ceiling = std::chrono::duration<double>(options.ceiling).count();
  // The smallest batch within `efficiency` of the peak.
  const BatchCalibration::Point* chosen = &out.points.back();
  for (const auto& p : out.points) {
    if (p.tokens / p.seconds >= options.efficiency * out.peak_tokens_per_second) {
      chosen = &p;
      break;
    }
  }
  out.knee_tokens = chosen->tokens;
  out.knee_seconds = chosen->seconds;
  // Twice the knee: the margin for what an engine alone on the machine does not show (serving
  // threads sharing its cores, batches of whole sequences that fall short of the budget).
  double target = options.knee_multiple * chosen->seconds;
  out.seconds_per_token = chosen->seconds / chosen->tokens;
  for (const auto& p : out.points) {  // the rate measured nearest below the target's size
    if (p.seconds <= target) out.seconds_per_token = p.seconds / p.tokens;
  }
  if (target > ceiling) {
    target = ceiling;
    out.capped = true;
    // The rate of the largest batch that still fits in the ceiling (else the smallest's).
    const BatchCalibration::Point* fit = &out.points.front();
    for (const auto& p : out.points) {
      if (p.seconds <= ceiling) fit = &p;
    }
    out.seconds_per_token = fit->seconds / fit->tokens;
  }
  out.max_batch_time =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(target));
  return out;
}

}  // namespace orchid
