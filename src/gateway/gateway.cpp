#include "gateway/gateway.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <mutex>
#include <utility>

#include "gateway/embedding_service.h"
#include "gateway/http_server.h"
#include "gateway/router.h"
#include "gateway/score_service.h"

namespace orchid {

// Members are declared so that the server (and its io_context) is destroyed last: tasks still
// queued on the pool hold connections, which must be released while the io_context exists.
struct Gateway::Impl {
  Impl(std::vector<GatewayModel> ms, GatewayOptions opts)
      : options(std::move(opts)),
        models(std::move(ms)),
        server(HttpServerOptions{options.host, options.port, options.io_threads,
                                 options.max_body_bytes, std::chrono::seconds(60)},
               [this](HttpRequest request, Reply reply) {
                 Dispatch(std::move(request), std::move(reply));
               }),
        pool(size_t(std::max(1, options.worker_threads))),
        router(MakeServices(), options.metrics) {
    router.SetApiKey(options.api_key);
    router.SetCorsOrigins(options.cors_origins);
  }

  // One embeddings and one scoring service per model, in order (the router's list).
  std::vector<RoutedModel> MakeServices() {
    std::vector<RoutedModel> routed;
    auto completions = [this](Task t) { boost::asio::post(pool, std::move(t)); };
    for (const GatewayModel& m : models) {
      embed_services.push_back(std::make_unique<EmbeddingService>(
          m.tokenizer, m.backend, m.name, completions, options.metrics, options.worker_threads));
      embed_services.back()->SetPrompts(m.prompts, m.default_prompt);
      embed_services.back()->set_auto_truncate(options.auto_truncate);
      embed_services.back()->set_empty_text_is_zero(m.empty_text_is_zero);
      if (m.images) embed_services.back()->SetImagePreparer(*m.images);
      score_services.push_back(
          std::make_unique<ScoreService>(m.tokenizer, m.backend, m.name, completions,
                                         options.worker_threads));
      score_services.back()->set_auto_truncate(options.auto_truncate);
      score_services.back()->set_max_chunks_per_doc(options.max_chunks_per_doc);
      routed.push_back(RoutedModel{embed_services.back().get(), score_services.back().get()});
    }
    return routed;
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
  std::vector<GatewayModel> models;
  HttpServer server;
  boost::asio::thread_pool pool;
  std::vector<std::unique_ptr<EmbeddingService>> embed_services;
  std::vector<std::unique_ptr<ScoreService>> score_services;
  Router router;
  std::mutex mu;
  bool pool_closed = false;
  bool stopped = false;
};

namespace {

std::vector<GatewayModel> OneModel(const Tokenizer* tokenizer, EmbedBackend* backend,
                                   const GatewayOptions& options) {
  std::vector<GatewayModel> models(1);
  models[0].name = options.served_model_name;
  models[0].tokenizer = tokenizer;
  models[0].backend = backend;
  models[0].prompts = options.prompts;
  models[0].default_prompt = options.default_prompt;
  return models;
}

}  // namespace

Gateway::Gateway(const Tokenizer* tokenizer, EmbedBackend* backend, GatewayOptions options)
    : Gateway(OneModel(tokenizer, backend, options), options) {}

Gateway::Gateway(std::vector<GatewayModel> models, GatewayOptions options)
    : impl_(std::make_unique<Impl>(std::move(models), std::move(options))) {}

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
  for (const GatewayModel& m : impl_->models) m.backend->Shutdown(std::chrono::milliseconds(0));
  impl_->pool.join();
  impl_->server.WaitIdle(std::chrono::seconds(5));
  impl_->server.Stop();
}

}  // namespace orchid
