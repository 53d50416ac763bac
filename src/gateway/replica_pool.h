// ReplicaPool: the gateway's side of split serving (BRIEF §2) — an EmbedBackend made of gRPC
// worker replicas (proto/orchid/v1/worker.proto).
//
// A request whose tokens exceed chunk_tokens is split into chunks of whole sequences; each chunk
// goes to the healthy replica with the fewest outstanding tokens and the rows are put back in
// input order. A chunk that fails for transport reasons (UNAVAILABLE: worker killed, connection
// broken, worker draining; CANCELLED by the worker's side, as a call that meets a shutting-down
// worker can be) marks that replica unhealthy and is retried once on another replica;
// one refused for load (RESOURCE_EXHAUSTED) tries every other healthy replica before the request
// gets ResourceExhausted (HTTP 429). No healthy replica → Unavailable (503).
//
// Every chunk carries the request's priority, its class (query or bulk, decided on the whole
// request) and one fair-share flow, so each worker puts query chunks ahead of bulk ones and
// shares out bulk work by client request. When the request's Cancellation fires (its client
// went away), its calls in flight are cancelled and the request fails with Cancelled; its
// deadline is each call's gRPC deadline.
//
// A health thread asks every replica for Health (and, when it first answers, Info) every
// health_interval: replicas leave and rejoin on their own. Replicas come from a static list,
// or from a DNS name re-resolved every dns_interval (a Kubernetes headless Service).
// Every replica must serve the same model with the same tokenizer as the first one that
// answered (and as the gateway's own tokenizer, when its fingerprint is given); others are
// kept out and logged.
//
// The parts, one file each: replica_set.h (the replicas, their load, DNS resolution),
// replica_health.h (the health thread, the model check), chunked_job.h (a request split into
// chunks and put back together), chunk_dispatcher.h (picking a replica, retries).
//
// Thread safety: Embed() from any thread; callbacks run on gRPC's threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/metrics.h"
#include "core/status.h"
#include "gateway/embed_backend.h"

namespace orchid {

struct ReplicaPoolOptions {
  std::vector<std::string> backends;  // host:port each
  std::string backend_dns;            // NAME:PORT; every address NAME resolves to is a replica
  std::chrono::milliseconds dns_interval{5000};
  std::chrono::milliseconds health_interval{500};
  std::chrono::milliseconds health_timeout{1000};
  std::chrono::milliseconds request_timeout{120000};  // deadline of one chunk call
  int64_t chunk_tokens = 8192;
  uint64_t tokenizer_fingerprint = 0;  // the gateway's tokenizer; 0 = do not check
  QueryThresholds query;  // what makes a request without a class a query (sent with each chunk)
  int max_message_bytes = 256 << 20;
  MetricsRegistry* metrics = nullptr;
  MetricLabels metric_labels;  // on every metric (model="…" when a gateway has several pools)
};

// What the pool knows of one replica, for tests and logs.
struct ReplicaState {
  std::string address;
  bool healthy = false;
  int64_t outstanding_tokens = 0;
  uint64_t chunks_done = 0;  // chunks this replica answered successfully
};

class ReplicaPool final : public EmbedBackend {
 public:
  // Resolves the replicas and starts the health thread, then waits up to `startup_wait` for
  // one replica to report its model. Unavailable when none did; InvalidArgument for bad options.
  static Result<std::unique_ptr<ReplicaPool>> Start(ReplicaPoolOptions options,
                                                    std::chrono::milliseconds startup_wait);
  ~ReplicaPool() override;  // Shutdown(0)

  const ModelInfo& model_info() const override;
  // The served model's name as the workers report it.
  const std::string& model_name() const;
  void Embed(EmbedRequest request, EmbedCallback done) override;
  bool healthy() const override;
  void Shutdown(std::chrono::milliseconds drain) override;

  std::vector<ReplicaState> replicas() const;

  struct Impl;

 private:
  explicit ReplicaPool(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace orchid
