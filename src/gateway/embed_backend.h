// EmbedBackend: where the gateway sends token ids to be embedded. Two implementations:
//   LocalBackend  the TokenBudgetScheduler in the same process (`orchid serve`, no network hop)
//   ReplicaPool   gRPC worker replicas (`orchid gateway`): chunking, least-outstanding-tokens
//                 balancing, retry on another replica, health checks
// The HTTP layer (EmbeddingService, Router) does not know which one it talks to.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "core/status.h"
#include "engine/engine.h"
#include "worker/token_budget_scheduler.h"

namespace orchid {

class EmbedBackend {
 public:
  virtual ~EmbedBackend() = default;
  // The model behind the backend (width, maximum input, vocabulary, default pooling).
  virtual const ModelInfo& model_info() const = 0;
  // Calls `done` exactly once with one row per sequence in request order, or the error:
  // inline when refused at once, otherwise from a backend thread (keep it quick).
  virtual void Embed(EmbedRequest request, EmbedCallback done) = 0;
  // False while no replica can take requests (for /health).
  virtual bool healthy() const = 0;
  // Stops taking requests; what still waits after `drain` fails with Unavailable. Blocks until
  // every accepted request has been answered.
  virtual void Shutdown(std::chrono::milliseconds drain) = 0;
};

// `orchid serve`: the scheduler in this process.
class LocalBackend final : public EmbedBackend {
 public:
  explicit LocalBackend(TokenBudgetScheduler* scheduler) : scheduler_(scheduler) {}
  const ModelInfo& model_info() const override { return scheduler_->model_info(); }
  void Embed(EmbedRequest request, EmbedCallback done) override {
    // Enqueue() leaves `done` untouched when it refuses, so it can still be called here.
    auto shared = std::make_shared<EmbedCallback>(std::move(done));
    Status st = scheduler_->Enqueue(std::move(request),
                                    [shared](Result<Embeddings> rows) { (*shared)(std::move(rows)); });
    if (!st.ok()) (*shared)(std::move(st));
  }
  bool healthy() const override { return true; }
  void Shutdown(std::chrono::milliseconds drain) override { scheduler_->Shutdown(drain); }

 private:
  TokenBudgetScheduler* scheduler_;
};

}  // namespace orchid
