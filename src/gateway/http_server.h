// HttpServer: HTTP/1.1 with keep-alive on Boost.Beast, served by a small pool of io threads.
//
// Each complete request goes to the handler on an io thread; the handler must not block (hand
// the work to a worker pool) and must call the reply exactly once, from any thread. The server
// answers on its own, without the handler, what it cannot parse: malformed HTTP 400, a body over
// max_body_bytes 413 (then it drains what the client still sends, so the client sees the
// answer), oversized headers 431. Idle keep-alive connections close after idle_timeout.
// While a request is being handled the server watches its connection: when the client closes
// it or resets it before the reply, the request's Cancellation (HttpRequest::cancellation) is
// cancelled, so the work queued for it is dropped.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "gateway/http_types.h"

namespace orchid {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0 = any free port (see port())
  int io_threads = 2;
  size_t max_body_bytes = size_t(8) << 20;
  std::chrono::seconds idle_timeout{60};
};

using HttpHandler = std::function<void(HttpRequest, Reply)>;

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the io threads. IoError when the address cannot be bound.
  Status Start();
  // The bound port (useful with port 0). Valid after Start().
  uint16_t port() const;

  // Closes the listening socket; later responses carry "Connection: close".
  void StopAccepting();
  // Blocks until no request is between "read" and "response written", or `timeout` passes.
  // Returns whether the server went idle.
  bool WaitIdle(std::chrono::milliseconds timeout);
  // StopAccepting(), then stops the io threads and closes every connection. Replies that come
  // later are dropped. Idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orchid
