// Gateway: the HTTP front of `orchid serve` and `orchid gateway` — an HttpServer whose requests
// are parsed, tokenized and answered on a worker pool, with embeddings (or rerank scores)
// computed by an EmbedBackend (the in-process scheduler, or gRPC worker replicas). It can serve
// several models, each with its own tokenizer and backend; requests pick one by name.
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
#include <vector>

#include "core/metrics.h"
#include "core/status.h"
#include "description/sentence_transformers.h"
#include "gateway/embed_backend.h"
#include "gateway/image_inputs.h"
#include "tokenizer/tokenizer.h"

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
  EncodeConfig prompts;                // the model's named prompts
  std::optional<std::string> default_prompt;  // --default-prompt
  std::string api_key;  // required as `Authorization: Bearer <key>` when not empty (--api-key)
  bool auto_truncate = false;  // requests that do not say `truncate` get it (--auto-truncate)
  // Rerank requests that do not say max_chunks_per_doc get it; 0: none (--max-chunks-per-doc).
  int64_t max_chunks_per_doc = 0;
  std::vector<std::string> cors_origins;  // browser origins allowed to call the API; "*": any
};

// One model of a multi-model gateway.
struct GatewayModel {
  std::string name;  // the `model` requests use to select it
  const Tokenizer* tokenizer = nullptr;
  EmbedBackend* backend = nullptr;
  EncodeConfig prompts;                       // the model's named prompts
  std::optional<std::string> default_prompt;  // --default-prompt
  // A static embedding model: texts without a token embed as zeros
  // (EmbeddingService::set_empty_text_is_zero).
  bool empty_text_is_zero = false;
  // A dual encoder's image inputs (EmbeddingService::SetImagePreparer); none: images refused.
  std::optional<ImagePreparer> images;
};

class Gateway {
 public:
  // `tokenizer`, `backend` and options.metrics must outlive the gateway. Serves one model named
  // options.served_model_name with options.prompts / default_prompt.
  Gateway(const Tokenizer* tokenizer, EmbedBackend* backend, GatewayOptions options);
  // Several models (at least one; the first answers requests that name none). Their tokenizers
  // and backends must outlive the gateway; options.served_model_name / prompts are unused.
  Gateway(std::vector<GatewayModel> models, GatewayOptions options);
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
