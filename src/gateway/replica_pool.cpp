#include "gateway/replica_pool.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "gateway/chunk_dispatcher.h"
#include "gateway/chunked_job.h"
#include "gateway/replica_health.h"
#include "gateway/replica_set.h"

namespace orchid {

struct ReplicaPool::Impl {
  Impl(ReplicaPoolOptions o, ReplicaHealthOptions health_options)
      : options(std::move(o)),
        replicas(options.max_message_bytes, options.metrics, options.metric_labels),
        health(&replicas, std::move(health_options)),
        chunks_total(options.metrics == nullptr
                         ? nullptr
                         : options.metrics->GetCounter("orchid_gateway_chunks_total",
                                                       "Chunks sent to worker replicas",
                                                       replicas.Labels({}))),
        dispatcher(&replicas, options.request_timeout,
                   options.metrics == nullptr
                       ? nullptr
                       : options.metrics->GetCounter(
                             "orchid_gateway_chunk_retries_total",
                             "Chunks retried on another replica after a transport failure",
                             replicas.Labels({}))) {}

  const ReplicaPoolOptions options;
  ReplicaSet replicas;
  ReplicaHealth health;
  Counter* const chunks_total;
  ChunkDispatcher dispatcher;

  std::mutex mu;  // guards jobs, stopping
  std::condition_variable jobs_cv;
  int64_t jobs = 0;       // accepted requests not yet answered
  bool stopping = false;  // no new requests

  // Fair-share flows: one per client request, unlikely to meet another gateway's (random base).
  const uint64_t flow_base =
      std::random_device{}() * 0x9E3779B97F4A7C15ull ^ uint64_t(std::random_device{}());
  std::atomic<uint64_t> flows{0};
  uint64_t NextFlow() {
    const uint64_t f = flow_base + 0xD1B54A32D192ED03ull * (++flows);
    return f != 0 ? f : 1;
  }
};

ReplicaPool::ReplicaPool(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ReplicaPool::~ReplicaPool() { Shutdown(std::chrono::milliseconds(0)); }

Result<std::unique_ptr<ReplicaPool>> ReplicaPool::Start(ReplicaPoolOptions options,
                                                        std::chrono::milliseconds startup_wait) {
  if (options.backends.empty() == options.backend_dns.empty()) {
    return Status::InvalidArgument("give either --backend addresses or --backend-dns, not both");
  }
  if (options.chunk_tokens < 1) return Status::InvalidArgument("chunk tokens must be positive");
  ReplicaHealthOptions health;
  health.health_interval = options.health_interval;
  health.health_timeout = options.health_timeout;
  health.dns_interval = options.dns_interval;
  health.tokenizer_fingerprint = options.tokenizer_fingerprint;
  std::string host, port;
  for (const std::string& b : options.backends) {
    if (!SplitHostPort(b, &host, &port)) {
      return Status::InvalidArgument("backend `" + b + "` is not HOST:PORT");
    }
  }
  if (!options.backend_dns.empty() &&
      !SplitHostPort(options.backend_dns, &health.dns_host, &health.dns_port)) {
    return Status::InvalidArgument("--backend-dns `" + options.backend_dns + "` is not NAME:PORT");
  }
  const bool static_list = health.dns_host.empty();
  auto impl = std::make_unique<Impl>(std::move(options), std::move(health));
  if (static_list) impl->replicas.SetAddresses(impl->options.backends);
  impl->health.Start();
  std::unique_ptr<ReplicaPool> pool(new ReplicaPool(std::move(impl)));
  if (!pool->impl_->health.WaitForModel(startup_wait)) {
    pool->Shutdown(std::chrono::milliseconds(0));
    return Status::Unavailable("no worker replica answered within " +
                               std::to_string(startup_wait.count()) + " ms");
  }
  return pool;
}

const ModelInfo& ReplicaPool::model_info() const { return impl_->health.model()->info; }

const std::string& ReplicaPool::model_name() const { return impl_->health.model()->name; }

void ReplicaPool::Embed(EmbedRequest request, EmbedCallback done) {
  if (Status st = CheckRequestShape(request); !st.ok()) return done(std::move(st));
  const rpc::WorkerModel* model = impl_->health.model();
  if (request.adapter < 0 ||
      (request.adapter > 0 && (!model || size_t(request.adapter) > model->info.tasks.size()))) {
    return done(Status::InvalidArgument("task adapter " + std::to_string(request.adapter) +
                                        " is out of range"));
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return done(Status::Unavailable("the gateway is shutting down"));
    ++impl_->jobs;
  }
  auto job = std::make_shared<ChunkedJob>();
  Impl* impl = impl_.get();
  // Counts the job out when it is answered, so that Shutdown() can wait for it.
  job->done = [impl, done = std::move(done)](Result<Embeddings> rows) {
    done(std::move(rows));
    std::lock_guard<std::mutex> lock(impl->mu);
    if (--impl->jobs == 0) impl->jobs_cv.notify_all();
  };
  // Every chunk carries the request's class (decided here, on the whole request: a small last
  // chunk of bulk work is still bulk), its priority, and one flow, so that workers share out
  // bulk work by client request, not by chunk.
  Scheduling& sched = request.scheduling;
  int64_t total_tokens = 0;
  for (const auto& seq : request.sequences) total_tokens += int64_t(seq.size());
  sched.request_class =
      Classify(sched.request_class, request.sequences.size(), total_tokens, impl_->options.query);
  sched.flow = impl_->NextFlow();
  const std::shared_ptr<const Cancellation> cancellation = sched.cancellation;
  std::vector<std::shared_ptr<ChunkCall>> chunks =
      SplitIntoChunks(std::move(request), impl_->options.chunk_tokens, model, job);
  if (impl_->chunks_total != nullptr) impl_->chunks_total->Inc(double(chunks.size()));
  if (cancellation != nullptr) {
    // Cancel the worker calls when the client goes away (at once if it already has). The job
    // may be answered and gone by then: hold it weakly.
    std::weak_ptr<ChunkedJob> weak = job;
    cancellation->OnCancel([weak] {
      if (auto j = weak.lock()) j->Cancel();
    });
  }
  for (auto& c : chunks) impl_->dispatcher.Send(std::move(c));
}

bool ReplicaPool::healthy() const { return impl_->replicas.AnyHealthy(); }

void ReplicaPool::Shutdown(std::chrono::milliseconds drain) {
  bool first = false;
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    if (!impl_->stopping) {
      impl_->stopping = first = true;
      impl_->jobs_cv.wait_for(lock, drain, [&] { return impl_->jobs == 0; });
    }
  }
  if (first) {
    impl_->dispatcher.CancelAll();
    std::unique_lock<std::mutex> lock(impl_->mu);
    impl_->jobs_cv.wait(lock, [&] { return impl_->jobs == 0; });
  }
  impl_->health.Stop();
}

std::vector<ReplicaState> ReplicaPool::replicas() const {
  std::vector<ReplicaState> out;
  for (const auto& r : *impl_->replicas.Snapshot()) {
    out.push_back(ReplicaState{r->address, r->healthy.load(), r->outstanding.load(),
                               r->chunks_done.load()});
  }
  return out;
}

}  // namespace orchid
