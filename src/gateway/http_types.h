// The HTTP request and response as the routes see them, apart from the socket layer: the HTTP
// server (http_server.h) fills in a request and writes out the response a route replies.
//
// Thread safety: plain data. A Reply may be called from any thread, once.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cancellation.h"

namespace orchid {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and optional query, e.g. "/v1/embeddings?x=1"
  std::string body;
  std::string authorization;  // the Authorization header, if any
  std::string origin;         // the Origin header, if any (browsers' cross-origin requests)
  // The client's timeout in seconds: X-Request-Timeout (orchid's), X-Stainless-Timeout (what
  // OpenAI's Python client sends by default). Work not started by then is dropped (504).
  std::optional<std::string> request_timeout;  // unset: no such header (empty: a bad one)
  std::string stainless_timeout;
  // Cancelled by the HTTP server when the client disconnects before its reply (null: never).
  std::shared_ptr<const Cancellation> cancellation;
  std::string accept;  // the Accept header, if any (GET / serves HTML to browsers)
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string allow;             // the Allow header of a 405, else empty
  std::string www_authenticate;  // the WWW-Authenticate header of a 401, else empty
  std::vector<std::pair<std::string, std::string>> headers;  // any others (CORS)
  std::string body;
};

using Reply = std::function<void(HttpResponse)>;

}  // namespace orchid
