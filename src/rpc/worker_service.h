// WorkerServer: `orchid worker` — the orchid.v1.Worker gRPC service in front of one
// TokenBudgetScheduler (BRIEF §2). Uses gRPC's callback API: no thread per call; a request is
// validated on a gRPC thread, queued on the scheduler, and answered from the scheduler's
// completion without blocking anyone.
//
//   Embed        one request, one reply (the gateway's path)
//   Score        rerankers: tokenized pairs in, logits and relevance scores out
//   EmbedStream  many requests over one stream, answered as they complete
//   Info         model, width, maximum input, tokenizer fingerprint
//   Health       SERVING, or NOT_SERVING once draining
//
// Shutdown(grace): Health turns NOT_SERVING, new calls are refused with UNAVAILABLE (so the
// gateway retries them elsewhere), calls in flight get up to `grace` to finish.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/metrics.h"
#include "core/status.h"
#include "rpc/convert.h"
#include "worker/token_budget_scheduler.h"

namespace orchid::rpc {

struct WorkerServerOptions {
  std::string listen = "127.0.0.1:50051";  // host:port; port 0 = any free port
  WorkerModel model;
  int max_message_bytes = 256 << 20;
  MetricsRegistry* metrics = nullptr;  // null: no metrics
};

class WorkerServer {
 public:
  // `scheduler` must outlive the server.
  WorkerServer(TokenBudgetScheduler* scheduler, WorkerServerOptions options);
  ~WorkerServer();  // Shutdown(0)
  WorkerServer(const WorkerServer&) = delete;
  WorkerServer& operator=(const WorkerServer&) = delete;

  // Binds and starts serving. IoError when the address cannot be bound.
  Status Start();
  int port() const;  // the bound port, after Start()
  // Idempotent; blocks until the server has stopped.
  void Shutdown(std::chrono::milliseconds grace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orchid::rpc
