// Gateway: the HTTP front of `orchid serve` and `orchid gateway` — an HttpServer whose requests
// are parsed, tokenized and answered on a worker pool, with embeddings computed by an
// EmbedBackend (the in-process scheduler, or gRPC worker replicas).
//
// Threads: io threads (sockets only), worker threads (JSON, tokenization, reply formatting),
// and the backend's own. Start() once. Stop() (also run by the destructor) stops accepting
// connections, refuses new requests with 503, gives the requests in progress up to
// shutdown_grace to be answered, then shuts the backend down (what still waits gets 503;
// batches on an engine finish), and stops every thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "tokenizer/tokenizer.h"
#include "core/metrics.h"
#include "gateway/embed_backend.h"
#include "models/sentence_transformers.h"

namespace orchid {

struct GatewayOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0 = any free port
  std::string served_model_name;
  int io_threads = 2;
  int worker_threads = 2;
  size_t max_body_bytes = size_t(8) << 20;
  std::chrono::milliseconds shutdown_grace{20000};
  MetricsRegistry* metrics = nullptr;  // serves GET /metrics when set
  PromptConfig prompts;                 // the model's named prompts
  std::optional<std::string> default_prompt;  // --default-prompt
};

class Gateway {
 public:
  // `tokenizer`, `backend` and options.metrics must outlive the gateway.
  Gateway(const Tokenizer* tokenizer, EmbedBackend* backend, GatewayOptions options);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  Status Start();
  uint16_t port() const;  // the bound port, after Start()
  void Stop();            // idempotent

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orchid
