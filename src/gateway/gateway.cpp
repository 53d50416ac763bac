#include "gateway/gateway.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <mutex>
#include <utility>

#include "gateway/embedding_service.h"
#include "gateway/http_server.h"
#include "gateway/router.h"

namespace orchid {

// Members are declared so that the server (and its io_context) is destroyed last: tasks still
// queued on the pool hold connections, which must be released while the io_context exists.
struct Gateway::Impl {
  Impl(const Tokenizer* tokenizer, EmbedBackend* be, GatewayOptions opts)
      : options(std::move(opts)),
        backend(be),
        server(HttpServerOptions{options.host, options.port, options.io_threads,
                                 options.max_body_bytes, std::chrono::seconds(60)},
               [this](HttpRequest request, Reply reply) {
                 Dispatch(std::move(request), std::move(reply));
               }),
        pool(size_t(std::max(1, options.worker_threads))),
        service(tokenizer, backend, options.served_model_name,
                [this](Task t) { boost::asio::post(pool, std::move(t)); }, options.metrics,
                options.worker_threads),
        router(&service, options.metrics) {
    service.SetPrompts(options.prompts, options.default_prompt);
  }

  // Runs on an io thread: hands the request to the pool, or refuses it once the pool is closing.
  void Dispatch(HttpRequest request, Reply reply) {
    std::unique_lock<std::mutex> lock(mu);
    if (pool_closed) {
      lock.unlock();
      ApiError e = ApiError::FromStatus(Status::Unavailable("the server is shutting down"));
      return reply(ErrorResponse(e));
    }
    boost::asio::post(pool,
                      [this, request = std::move(request), reply = std::move(reply)]() mutable {
                        router.Handle(std::move(request), std::move(reply));
                      });
  }

  GatewayOptions options;
  EmbedBackend* backend;
  HttpServer server;
  boost::asio::thread_pool pool;
  EmbeddingService service;
  Router router;
  std::mutex mu;
  bool pool_closed = false;
  bool stopped = false;
};

Gateway::Gateway(const Tokenizer* tokenizer, EmbedBackend* backend, GatewayOptions options)
    : impl_(std::make_unique<Impl>(tokenizer, backend, std::move(options))) {}

Gateway::~Gateway() { Stop(); }

Status Gateway::Start() { return impl_->server.Start(); }

uint16_t Gateway::port() const { return impl_->server.port(); }

void Gateway::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  // Requests already read get up to shutdown_grace to be answered normally; new requests on
  // open connections are refused with 503 at once.
  impl_->server.StopAccepting();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->pool_closed = true;
  }
  impl_->server.WaitIdle(impl_->options.shutdown_grace);
  // Past the grace, what still waits for a batch gets 503; batches on the engine finish. Their
  // replies go through the pool to the io threads, which get a moment to write them.
  impl_->backend->Shutdown(std::chrono::milliseconds(0));
  impl_->pool.join();
  impl_->server.WaitIdle(std::chrono::seconds(5));
  impl_->server.Stop();
}

}  // namespace orchid
