// Router: the HTTP API's routes, independent of the socket layer — a request (method, target,
// body) in, a response (status, headers, body) out through a callback.
//
//   POST /v1/embeddings   OpenAI embeddings
//   POST /embed           text-embeddings-inference embeddings
//   POST /tokenize        TEI: tokens with ids, text and character offsets
//   POST /decode          TEI: ids back to text
//   GET  /v1/models       the one served model
//   GET  /health          {"status":"ok"}, or 503 while no worker can take requests
//   GET  /metrics         Prometheus text format (when a registry is given)
//
// Unknown paths answer 404, known paths with another method 405, always with a JSON error body.
// Thread safety: Handle() may be called from many threads; call it from a worker pool (it
// parses JSON and tokenizes on the calling thread).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "gateway/embedding_service.h"

namespace orchid {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and optional query, e.g. "/v1/embeddings?x=1"
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string allow;  // the Allow header of a 405, else empty
  std::string body;
};

using Reply = std::function<void(HttpResponse)>;

class Router {
 public:
  // Inputs per /tokenize or /decode request (OpenAI's limit for embeddings inputs).
  static constexpr size_t kMaxClientBatchSize = 2048;

  // `service` (and `metrics`, if given) must outlive the router.
  explicit Router(EmbeddingService* service, MetricsRegistry* metrics = nullptr);

  // Calls `reply` exactly once, possibly on another thread (the service's completions executor).
  // An exception while handling becomes a 500 reply.
  void Handle(HttpRequest request, Reply reply);

 private:
  void Route(HttpRequest request, const Reply& reply);
  void Embeddings(std::string body, const Reply& reply);
  void TeiEmbed(std::string body, const Reply& reply);
  HttpResponse Models() const;

  EmbeddingService* service_;
  MetricsRegistry* metrics_;
  int64_t created_;  // reported as the model's "created" time: when the server started
};

HttpResponse ErrorResponse(const ApiError& error);

}  // namespace orchid
