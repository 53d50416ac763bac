#include "rpc/worker_service.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <utility>

namespace orchid::rpc {
namespace {

using Clock = std::chrono::steady_clock;

// The gRPC deadline (system clock; max() = none) as a steady-clock time point.
Clock::time_point SteadyDeadline(const grpc::CallbackServerContext* ctx) {
  const auto d = ctx->deadline();
  if (d == std::chrono::system_clock::time_point::max()) return Clock::time_point::max();
  const auto left = d - std::chrono::system_clock::now();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(left);
}

struct RpcMetrics {
  Histogram* duration = nullptr;
  MetricsRegistry* registry = nullptr;

  void Done(const char* rpc, Clock::time_point start, grpc::StatusCode code) const {
    if (registry == nullptr) return;
    duration->Observe(std::chrono::duration<double>(Clock::now() - start).count());
    if (code != grpc::StatusCode::OK) {
      registry
          ->GetCounter("orchid_worker_errors_total", "Failed worker calls by method and code",
                       {{"method", rpc}, {"code", StatusCodeName(FromGrpc(grpc::Status(code, "")).code())}})
          ->Inc();
    }
  }
};

class Service final : public v1::Worker::CallbackService {
 public:
  Service(TokenBudgetScheduler* scheduler, const WorkerServerOptions& options)
      : scheduler_(scheduler), model_(options.model) {
    if (options.metrics != nullptr) {
      metrics_.registry = options.metrics;
      metrics_.duration = options.metrics->GetHistogram(
          "orchid_worker_request_seconds", "Embed and Score requests: arrival to reply",
          LatencyBuckets());
      requests_ = options.metrics->GetCounter(
          "orchid_worker_requests_total", "Requests received (Embed, Score and streamed Embed)");
    }
  }

  void StartDraining() { draining_.store(true); }
  bool draining() const { return draining_.load(); }

  grpc::ServerUnaryReactor* Embed(grpc::CallbackServerContext* ctx, const v1::EmbedRequest* req,
                                  v1::EmbedResponse* resp) override {
    return Unary("Embed", ctx, *req, [resp](const Embeddings& rows, int64_t tokens) {
      ToProto(rows, resp);
      resp->set_prompt_tokens(uint64_t(tokens));
    });
  }

  grpc::ServerUnaryReactor* Score(grpc::CallbackServerContext* ctx, const v1::ScoreRequest* req,
                                  v1::ScoreResponse* resp) override {
    const ScoreActivation activation = model_.info.score_activation;
    return Unary("Score", ctx, *req, [resp, activation](const Embeddings& rows, int64_t tokens) {
      ToProto(rows, activation, resp);
      resp->set_prompt_tokens(uint64_t(tokens));
    });
  }

  grpc::ServerBidiReactor<v1::EmbedRequest, v1::EmbedResponse>* EmbedStream(
      grpc::CallbackServerContext* ctx) override;

  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* ctx, const v1::InfoRequest*,
                                 v1::InfoResponse* resp) override {
    ToProto(model_, scheduler_->options().max_batch_tokens, resp);
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* Health(grpc::CallbackServerContext* ctx, const v1::HealthRequest*,
                                   v1::HealthResponse* resp) override {
    resp->set_status(draining() ? v1::HealthResponse::NOT_SERVING
                                : v1::HealthResponse::SERVING);
    resp->set_queued_tokens(uint64_t(scheduler_->queued_tokens()));
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  TokenBudgetScheduler* scheduler() const { return scheduler_; }
  const WorkerModel& model() const { return model_; }

 private:
  // A unary call: validated into an EmbedRequest on this gRPC thread, queued on the scheduler,
  // answered from its completion by `fill(rows, tokens)`.
  template <class Request, class Fill>
  grpc::ServerUnaryReactor* Unary(const char* rpc, grpc::CallbackServerContext* ctx,
                                  const Request& req, Fill fill) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    const auto start = Clock::now();
    if (requests_ != nullptr) requests_->Inc();
    auto finish = [this, rpc, reactor, start](const grpc::Status& st) {
      metrics_.Done(rpc, start, st.error_code());
      reactor->Finish(st);
    };
    if (draining()) {
      finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker is shutting down"));
      return reactor;
    }
    EmbedRequest job;
    int64_t tokens = 0;
    if (Status st = FromProto(req, model_, &job, &tokens); !st.ok()) {
      finish(ToGrpc(st));
      return reactor;
    }
    job.scheduling.deadline = SteadyDeadline(ctx);
    // Polled by the scheduler while the call waits (the reactor, and so ctx, outlives that).
    job.scheduling.cancellation =
        std::make_shared<Cancellation>([ctx] { return ctx->IsCancelled(); });
    const Status st = scheduler_->Enqueue(
        std::move(job), [tokens, finish, fill = std::move(fill)](Result<Embeddings> rows) {
          if (!rows.ok()) return finish(ToGrpc(rows.status()));
          fill(*rows, tokens);
          finish(grpc::Status::OK);
        });
    if (!st.ok()) finish(ToGrpc(st));
    return reactor;
  }

 public:
  const RpcMetrics& metrics() const { return metrics_; }
  Counter* requests() const { return requests_; }

 private:
  TokenBudgetScheduler* scheduler_;
  WorkerModel model_;
  RpcMetrics metrics_;
  Counter* requests_ = nullptr;
  std::atomic<bool> draining_{false};
};

// One EmbedStream call. Reads requests one after another, queues each on the scheduler and
// writes each answer when it completes (one write in flight at a time). Finishes once the client
// has closed its side and every request has been answered; it never finishes while a scheduler
// callback is still to come, so the reactor outlives every callback that refers to it.
class StreamReactor final : public grpc::ServerBidiReactor<v1::EmbedRequest, v1::EmbedResponse> {
 public:
  StreamReactor(Service* service, grpc::CallbackServerContext* ctx)
      : service_(service), ctx_(ctx), cancelled_(std::make_shared<Cancellation>()) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::lock_guard<std::mutex> lock(mu_);
      reads_done_ = true;
      MaybeFinishLocked();
      return;
    }
    if (service_->requests() != nullptr) service_->requests()->Inc();
    const uint64_t id = request_.request_id();
    const auto start = Clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++outstanding_;
    }
    EmbedRequest job;
    int64_t tokens = 0;
    Status st = service_->draining() ? Status::Unavailable("the worker is shutting down")
                                     : FromProto(request_, service_->model(), &job, &tokens);
    if (st.ok()) {
      job.scheduling.deadline = SteadyDeadline(ctx_);
      job.scheduling.cancellation = cancelled_;
      st = service_->scheduler()->Enqueue(
          std::move(job), [this, id, tokens, start](Result<Embeddings> rows) {
            Complete(id, tokens, start, std::move(rows));
          });
    }
    if (!st.ok()) Complete(id, 0, start, st);
    StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ok) write_failed_ = true;
    to_write_.pop_front();
    --outstanding_;
    if (!to_write_.empty() && !write_failed_) {
      StartWrite(&to_write_.front());
    } else {
      // After a failed write the client is gone: drop what is left unwritten.
      if (write_failed_) {
        outstanding_ -= int(to_write_.size());
        to_write_.clear();
      }
      writing_ = false;
      MaybeFinishLocked();
    }
  }

  void OnCancel() override { cancelled_->Cancel(); }

  void OnDone() override { delete this; }

 private:
  void Complete(uint64_t id, int64_t tokens, Clock::time_point start, Result<Embeddings> rows) {
    v1::EmbedResponse resp;
    resp.set_request_id(id);
    grpc::StatusCode code = grpc::StatusCode::OK;
    if (rows.ok()) {
      ToProto(*rows, &resp);
      resp.set_prompt_tokens(uint64_t(tokens));
    } else {
      const grpc::Status g = ToGrpc(rows.status());
      code = g.error_code();
      resp.set_error_code(int32_t(code));
      resp.set_error_message(g.error_message());
    }
    service_->metrics().Done("EmbedStream", start, code);
    std::lock_guard<std::mutex> lock(mu_);
    if (write_failed_) {
      --outstanding_;
      MaybeFinishLocked();
      return;
    }
    to_write_.push_back(std::move(resp));
    if (!writing_) {
      writing_ = true;
      StartWrite(&to_write_.front());
    }
  }

  void MaybeFinishLocked() {
    if (finished_ || !reads_done_ || outstanding_ > 0 || writing_) return;
    finished_ = true;
    Finish(cancelled_->cancelled() ? grpc::Status::CANCELLED : grpc::Status::OK);
  }

  Service* service_;
  grpc::CallbackServerContext* ctx_;
  std::shared_ptr<Cancellation> cancelled_;
  v1::EmbedRequest request_;  // the read in progress; only the reading side touches it

  std::mutex mu_;
  std::deque<v1::EmbedResponse> to_write_;  // front: being written
  int outstanding_ = 0;  // read and not yet written (or dropped)
  bool reads_done_ = false;
  bool writing_ = false;
  bool write_failed_ = false;
  bool finished_ = false;
};

grpc::ServerBidiReactor<v1::EmbedRequest, v1::EmbedResponse>* Service::EmbedStream(
    grpc::CallbackServerContext* ctx) {
  return new StreamReactor(this, ctx);
}

}  // namespace

struct WorkerServer::Impl {
  Impl(TokenBudgetScheduler* s, WorkerServerOptions o)
      : options(std::move(o)), service(s, options) {}
  WorkerServerOptions options;
  Service service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::mutex mu;
  bool stopped = false;
};

WorkerServer::WorkerServer(TokenBudgetScheduler* scheduler, WorkerServerOptions options)
    : impl_(std::make_unique<Impl>(scheduler, std::move(options))) {}

WorkerServer::~WorkerServer() { Shutdown(std::chrono::milliseconds(0)); }

Status WorkerServer::Start() {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(impl_->options.listen, grpc::InsecureServerCredentials(), &impl_->port);
  builder.SetMaxReceiveMessageSize(impl_->options.max_message_bytes);
  builder.SetMaxSendMessageSize(impl_->options.max_message_bytes);
  builder.RegisterService(&impl_->service);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || impl_->port == 0) {
    impl_->server.reset();
    return Status::IoError("cannot listen on " + impl_->options.listen);
  }
  return Status::Ok();
}

int WorkerServer::port() const { return impl_->port; }

void WorkerServer::Shutdown(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->service.StartDraining();
  if (impl_->server) {
    // Refuses new calls at once; calls in flight get until the deadline, then are cancelled.
    impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
    impl_->server->Wait();
  }
}

}  // namespace orchid::rpc
