// What the TokenBudgetScheduler records about its work: the histograms and counters it
// observes where each event happens (a batch launched, a batch done, a sequence dropped), and
// their registration under orchid_scheduler_* names. The scheduler's gauges (queue, batches in
// flight, bulk budget) are read from it at scrape time (TokenBudgetScheduler::ExportGauges).
//
// Thread safety: the metrics themselves are thread-safe (core/metrics.h); registration is a
// start-up step.
#pragma once

#include "core/metrics.h"

namespace orchid {

// Where the scheduler records what it does (all optional; null = not recorded).
struct SchedulerMetrics {
  Histogram* batch_sequences = nullptr;  // sequences per engine batch
  Histogram* batch_tokens = nullptr;     // tokens per engine batch
  // Enqueue → the request's first sequence is batched, by class.
  Histogram* queue_seconds_query = nullptr;
  Histogram* queue_seconds_bulk = nullptr;
  Histogram* engine_seconds = nullptr;  // submit → the batch's result is ready
  Histogram* batch_seconds = nullptr;   // the engine's time on one batch: start → ready
  // Sequences dropped before reaching a batch, by reason.
  Counter* cancelled_sequences = nullptr;
  Counter* expired_sequences = nullptr;   // deadline passed
  Counter* shutdown_sequences = nullptr;  // the server stopped before they ran
};

// Registers the scheduler's histograms and counters (orchid_scheduler_*) in `registry`, with
// `labels` (e.g. {"model", name} when one process runs several schedulers).
SchedulerMetrics RegisterSchedulerMetrics(MetricsRegistry* registry,
                                          const MetricLabels& labels = {});

// Observes `value` in `h` when it is registered (not null).
inline void ObserveMetric(Histogram* h, double value) {
  if (h != nullptr) h->Observe(value);
}
// Adds `n` to `c` when it is registered and n > 0.
inline void CountMetric(Counter* c, double n) {
  if (c != nullptr && n > 0) c->Inc(n);
}

}  // namespace orchid
