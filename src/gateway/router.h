// Router: the HTTP API, independent of the socket layer — a request (method, target, body) in, a
// response (status, headers, body) out through a callback. Which routes exist, whose API each
// is, which need the API key and which handler answers is the route table (route_table.h); the
// router is the middleware around it:
//
//  - CORS: with origins set (SetCorsOrigins), a request whose Origin is allowed gets
//    Access-Control-Allow-Origin on its reply, and an OPTIONS preflight to a path of the table
//    gets 204 with the allowed methods and headers (no API key needed for it);
//  - metrics (when a registry is given): requests and their latency by route (the table's
//    path, "other" for the rest: label sets stay bounded) and status;
//  - the API key (SetApiKey): a request answers 401 unless it carries `Authorization: Bearer
//    <key>` (what OpenAI's clients send), or the table's line for its method and path is open
//    (the browser pages), or its path is open to every method (/health, /metrics,
//    /openapi.json: route_table.h's Access);
//  - a path the table lacks answers 404, a method it lacks for a path 405 with Allow, always with
//    OpenAI's JSON error body;
//  - the routes that run the engine take the client's deadline from X-Request-Timeout or
//    X-Stainless-Timeout (seconds; the sooner of the two): work not started by then is dropped
//    and answered 504. A malformed X-Request-Timeout is a 400 in the route's error shape (a
//    malformed X-Stainless-Timeout, sent by a client library, is ignored); they also take the
//    connection's cancellation, and vLLM's `priority` from their body;
//  - an exception while handling becomes a 500 (route_call.h's Guarded).
//
// Several models can be served at once: the request's `model` field picks one (absent: the
// first); an unknown name answers 404 listing the served names. The routes without a model
// field (TEI's /embed, /tokenize, /decode, POST /) use the first model.
// Thread safety: Handle() may be called from many threads; call it from a worker pool (it
// parses JSON and tokenizes on the calling thread).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gateway/error_response.h"
#include "gateway/http_types.h"
#include "gateway/route_table.h"
#include "gateway/served_models.h"

namespace orchid {

class Router {
 public:
  static constexpr size_t kMaxClientBatchSize = ServedModels::kMaxClientBatchSize;

  // The services (and `metrics`, if given) must outlive the router. `models` is not empty. Set
  // the services' prompts (SetPrompts) first: the served OpenAPI document lists them.
  explicit Router(EmbeddingService* service, MetricsRegistry* metrics = nullptr,
                  ScoreService* score = nullptr);
  explicit Router(std::vector<RoutedModel> models, MetricsRegistry* metrics = nullptr);

  // Requires `Authorization: Bearer <key>` on every route but the table's open ones (/health,
  // /metrics, /openapi.json and the browser pages); an empty key requires nothing. Call before
  // the first Handle().
  void SetApiKey(std::string key);
  // Origins (e.g. "https://app.example.com") whose browser pages may call the API; "*": any.
  // Empty: no CORS headers (browsers then refuse cross-origin replies). Call before Handle().
  void SetCorsOrigins(std::vector<std::string> origins);

  // Calls `reply` exactly once, possibly on another thread (the service's completions executor).
  // An exception while handling becomes a 500 reply.
  void Handle(HttpRequest request, Reply reply);

  // The table this router answers from.
  const std::vector<Route>& routes() const { return routes_; }

 private:
  // Everything after the CORS and metrics wrappers: the key, the table, the handler.
  void Dispatch(HttpRequest request, const Reply& reply) const;
  // The Access-Control-Allow-Origin value for a request's Origin, or empty when not allowed.
  std::string CorsOrigin(const std::string& origin) const;

  std::vector<Route> routes_;
  ServedModels served_;
  std::string expected_authorization_;  // "Bearer <key>"; empty: no key required
  std::vector<std::string> cors_origins_;
};

}  // namespace orchid
