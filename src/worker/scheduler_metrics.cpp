#include "worker/scheduler_metrics.h"

#include <chrono>

#include "worker/token_budget_scheduler.h"

namespace orchid {

SchedulerMetrics RegisterSchedulerMetrics(MetricsRegistry* registry, const MetricLabels& labels) {
  auto with = [&labels](const char* key, const char* value) {
    MetricLabels l = labels;
    l.emplace_back(key, value);
    return l;
  };
  SchedulerMetrics m;
  m.batch_sequences =
      registry->GetHistogram("orchid_scheduler_batch_sequences", "Sequences per engine batch",
                             ExponentialBuckets(1, 2, 14), labels);
  m.batch_tokens =
      registry->GetHistogram("orchid_scheduler_batch_tokens", "Tokens per engine batch",
                             ExponentialBuckets(16, 2, 14), labels);
  const char* queue_help =
      "Time from a request's arrival until its first sequence is put in a batch, by class "
      "(query: small or marked input_type query; bulk: the rest)";
  m.queue_seconds_query = registry->GetHistogram("orchid_scheduler_queue_seconds", queue_help,
                                                 LatencyBuckets(), with("class", "query"));
  m.queue_seconds_bulk = registry->GetHistogram("orchid_scheduler_queue_seconds", queue_help,
                                                LatencyBuckets(), with("class", "bulk"));
  m.engine_seconds = registry->GetHistogram(
      "orchid_scheduler_engine_seconds", "Time from submitting a batch until its result is ready",
      LatencyBuckets(), labels);
  m.batch_seconds = registry->GetHistogram(
      "orchid_scheduler_batch_seconds",
      "The engine's time on one batch: from when it starts (submitted to an idle engine, or the "
      "previous batch done) until its result is ready",
      LatencyBuckets(), labels);
  const char* dropped_help =
      "Sequences dropped before reaching a batch, by reason (cancelled: the client went away; "
      "deadline: its deadline passed; shutdown: the server stopped first)";
  m.cancelled_sequences = registry->GetCounter("orchid_scheduler_dropped_sequences_total",
                                               dropped_help, with("reason", "cancelled"));
  m.expired_sequences = registry->GetCounter("orchid_scheduler_dropped_sequences_total",
                                             dropped_help, with("reason", "deadline"));
  m.shutdown_sequences = registry->GetCounter("orchid_scheduler_dropped_sequences_total",
                                              dropped_help, with("reason", "shutdown"));
  return m;
}

void TokenBudgetScheduler::ExportGauges(MetricsRegistry* registry,
                                        const MetricLabels& labels) const {
  registry->AddGaugeCallback("orchid_scheduler_queued_tokens", "Tokens waiting for a batch", labels,
                             [this] { return double(queued_tokens()); });
  registry->AddGaugeCallback("orchid_scheduler_queued_requests",
                             "Requests with sequences waiting for a batch", labels,
                             [this] { return double(queued_requests()); });
  registry->AddGaugeCallback("orchid_scheduler_batches_in_flight",
                             "Batches submitted to the engine and not yet returned", labels,
                             [this] { return double(batches_in_flight()); });
  registry->AddGaugeCallback(
      "orchid_scheduler_batch_time_target_seconds",
      "Engine time a batch of bulk work is sized for (0: no bound, batches up to the token budget)",
      labels, [this] { return std::chrono::duration<double>(options_.max_batch_time).count(); });
  registry->AddGaugeCallback(
      "orchid_scheduler_bulk_batch_tokens",
      "Token budget of the next bulk batch: the batch-time target at the engine's observed rate",
      labels, [this] { return double(bulk_batch_tokens()); });
}

}  // namespace orchid
