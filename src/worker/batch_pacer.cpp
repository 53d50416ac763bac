#include "worker/batch_pacer.h"

#include <algorithm>

namespace orchid {
namespace {

// The next bulk batch may be queued behind the work in flight once this share of the
// batch-time target is left of it: the engine never idles between bulk batches, and a query
// that arrives waits at most about 1.1 batches.
constexpr double kBulkLeadFraction = 0.1;
// Weight of the newest bulk batch in the engine's observed seconds per token.
constexpr double kRateSmoothing = 0.25;

}  // namespace

BatchPacer::BatchPacer(std::chrono::microseconds target, int max_batch_tokens,
                       double initial_seconds_per_token)
    : target_(target),
      max_batch_tokens_(max_batch_tokens),
      seconds_per_token_(std::max(0.0, initial_seconds_per_token)) {}

int BatchPacer::BulkBudget() const {
  if (!paced()) return max_batch_tokens_;
  if (seconds_per_token_ <= 0) return 1;  // unknown speed: one sequence, then measure
  const double tokens = std::chrono::duration<double>(target_).count() / seconds_per_token_;
  return int(std::clamp(tokens, 1.0, double(max_batch_tokens_)));
}

void BatchPacer::Submitted(Clock::time_point now, bool engine_idle) {
  if (engine_idle) front_started_at_ = now;
}

double BatchPacer::FrontDone(Clock::time_point ready_at,
                             const Clock::time_point* next_submitted_at) {
  const double seconds =
      std::max(0.0, std::chrono::duration<double>(ready_at - front_started_at_).count());
  if (next_submitted_at != nullptr) front_started_at_ = std::max(*next_submitted_at, ready_at);
  return seconds;
}

bool BatchPacer::Learn(double seconds, int64_t tokens, bool bulk) {
  if (tokens <= 0 || !(bulk || seconds_per_token_ <= 0)) return false;
  const double sample = seconds / double(tokens);
  seconds_per_token_ = seconds_per_token_ <= 0
                           ? sample
                           : (1 - kRateSmoothing) * seconds_per_token_ + kRateSmoothing * sample;
  return true;
}

bool BatchPacer::BulkMayQueue(Clock::time_point now, double work_in_flight,
                              Clock::time_point* wake_at) const {
  const auto done_at = front_started_at_ + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(work_in_flight));
  const auto lead = std::chrono::duration_cast<Clock::duration>(target_ * kBulkLeadFraction);
  if (now >= done_at - lead) return true;
  *wake_at = done_at - lead;
  return false;
}

}  // namespace orchid
