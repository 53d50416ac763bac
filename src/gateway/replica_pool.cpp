#include "gateway/replica_pool.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "rpc/convert.h"

namespace orchid {
namespace {

using Clock = std::chrono::steady_clock;

struct Replica {
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Worker::Stub> stub;
  std::atomic<int64_t> outstanding{0};
  std::atomic<bool> healthy{false};
  std::atomic<bool> removed{false};
  std::atomic<uint64_t> chunks_done{0};
  // Scorers' chunks go to the Score RPC; false once the worker answered UNIMPLEMENTED (older
  // than Score): they go to Embed, which answers scorers with logit rows too.
  std::atomic<bool> score_rpc{true};
  bool info_checked = false;  // health thread only
  bool mismatch_logged = false;
  Gauge* outstanding_gauge = nullptr;
  Gauge* healthy_gauge = nullptr;
};

using ReplicaList = std::vector<std::shared_ptr<Replica>>;

// Splits "host:port" (host may be "[v6]"). False when malformed.
bool SplitHostPort(const std::string& s, std::string* host, std::string* port) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= s.size()) return false;
  *host = s.substr(0, colon);
  *port = s.substr(colon + 1);
  if (host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  for (char c : *port) {
    if (c < '0' || c > '9') return false;
  }
  return !host->empty();
}

// Every address `name` resolves to, as "ip:port" / "[ip6]:port", sorted.
std::vector<std::string> Resolve(const std::string& name, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::vector<std::string> out;
  if (getaddrinfo(name.c_str(), port.c_str(), &hints, &res) != 0) return out;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, buf, sizeof(buf));
      std::string addr(buf);
      addr.append(1, ':').append(port);
      out.push_back(std::move(addr));
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, buf,
                sizeof(buf));
      std::string addr(1, '[');
      addr.append(buf).append("]:").append(port);
      out.push_back(std::move(addr));
    }
  }
  freeaddrinfo(res);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct ChunkCall;

// One request, split into chunks; answered once.
struct Job {
  EmbedCallback done;
  int rows = 0;
  std::mutex mu;
  Embeddings out;
  int chunks_left = 0;
  bool finished = false;
  // The client went away (its HTTP connection closed): every attempt in flight is cancelled and
  // no new one starts. Guarded by mu, as the attempts' contexts in `calls` are.
  bool cancelled = false;
  std::vector<std::weak_ptr<ChunkCall>> calls;

  // Cancels the calls in flight; they end with CANCELLED, which answers the job.
  void Cancel();

  // Called once per chunk (rows at `first`), or with an error. The first error answers the job.
  void ChunkDone(size_t first, Result<Embeddings> part) {
    std::unique_lock<std::mutex> lock(mu);
    if (finished) return;
    if (!part.ok()) {
      finished = true;
      lock.unlock();
      done(part.status());
      return;
    }
    if (out.data.empty()) {
      out.rows = rows;
      out.dim = part->dim;
      out.data.resize(size_t(rows) * size_t(part->dim));
    }
    if (part->dim != out.dim || first + size_t(part->rows) > size_t(rows)) {
      finished = true;
      lock.unlock();
      done(Status::Internal("replicas answered with inconsistent shapes"));
      return;
    }
    std::copy(part->data.begin(), part->data.end(), out.data.begin() + first * size_t(out.dim));
    if (--chunks_left > 0) return;
    finished = true;
    Embeddings result = std::move(out);
    lock.unlock();
    done(std::move(result));
  }
};

// One chunk of a job and its current attempt.
struct ChunkCall {
  std::shared_ptr<Job> job;
  Clock::time_point deadline = Clock::time_point::max();  // the request's own, if any
  size_t first_row = 0;
  int64_t tokens = 0;
  v1::EmbedRequest request;
  v1::EmbedResponse response;
  bool scorer = false;     // the pool's model is a scorer
  bool via_score = false;  // the current attempt is a Score call
  v1::ScoreRequest score_request;
  v1::ScoreResponse score_response;
  std::unique_ptr<grpc::ClientContext> context;
  std::vector<std::unique_ptr<grpc::ClientContext>> spent_contexts;  // earlier attempts'
  std::shared_ptr<Replica> replica;  // of the current attempt
  std::set<const Replica*> tried;
  bool retried_transport = false;  // the one retry after a transport failure is used
  bool any_refused_for_load = false;
};

void Job::Cancel() {
  std::lock_guard<std::mutex> lock(mu);
  if (cancelled || finished) return;
  cancelled = true;
  for (const auto& weak : calls) {
    if (auto call = weak.lock(); call && call->context) call->context->TryCancel();
  }
}

}  // namespace

struct ReplicaPool::Impl {
  ReplicaPoolOptions options;
  std::string dns_host, dns_port;

  mutable std::mutex mu;  // guards replicas, model, calls, stopping
  std::shared_ptr<const ReplicaList> replicas = std::make_shared<ReplicaList>();
  std::optional<rpc::WorkerModel> model;
  std::condition_variable model_cv;
  std::set<ChunkCall*> calls;  // attempts in flight
  int64_t jobs = 0;            // accepted requests not yet answered
  std::condition_variable jobs_cv;
  bool stopping = false;       // no new requests
  bool cancelling = false;     // past the drain: no new attempts either

  std::mutex health_mu;
  std::condition_variable health_cv;
  bool health_stop = false;
  std::thread health_thread;

  Counter* chunks_total = nullptr;
  Counter* retries_total = nullptr;

  // Fair-share flows: one per client request, unlikely to meet another gateway's (random base).
  const uint64_t flow_base =
      std::random_device{}() * 0x9E3779B97F4A7C15ull ^ uint64_t(std::random_device{}());
  std::atomic<uint64_t> flows{0};
  uint64_t NextFlow() {
    const uint64_t f = flow_base + 0xD1B54A32D192ED03ull * (++flows);
    return f != 0 ? f : 1;
  }

  std::shared_ptr<const ReplicaList> Snapshot() const {
    std::lock_guard<std::mutex> lock(mu);
    return replicas;
  }

  std::shared_ptr<Replica> MakeReplica(const std::string& address) {
    auto r = std::make_shared<Replica>();
    r->address = address;
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(options.max_message_bytes);
    args.SetMaxSendMessageSize(options.max_message_bytes);
    // Find a restarted worker quickly; notice a silently dead one within seconds.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
    r->channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
    r->stub = v1::Worker::NewStub(r->channel);
    if (options.metrics != nullptr) {
      r->outstanding_gauge = options.metrics->GetGauge(
          "orchid_gateway_replica_outstanding_tokens",
          "Tokens sent to a replica and not yet answered", Labels({{"replica", address}}));
      r->healthy_gauge = options.metrics->GetGauge("orchid_gateway_replica_healthy",
                                                   "1 while the replica takes requests",
                                                   Labels({{"replica", address}}));
    }
    return r;
  }

  // `own` after options.metric_labels.
  MetricLabels Labels(MetricLabels own) const {
    MetricLabels all = options.metric_labels;
    all.insert(all.end(), own.begin(), own.end());
    return all;
  }

  void SetHealthy(Replica& r, bool h) {
    const bool was = r.healthy.exchange(h);
    if (r.healthy_gauge != nullptr) r.healthy_gauge->Set(h ? 1 : 0);
    if (was != h) spdlog::info("replica {} is {}", r.address, h ? "healthy" : "out of rotation");
  }

  void CountError(const Replica& r, grpc::StatusCode code) {
    if (options.metrics == nullptr) return;
    options.metrics
        ->GetCounter(
            "orchid_gateway_replica_errors_total", "Failed chunk calls by replica and gRPC code",
            Labels({{"replica", r.address},
                    {"code", StatusCodeName(rpc::FromGrpc(grpc::Status(code, "")).code())}}))
        ->Inc();
  }

  // Replaces the replica list with `addresses`, keeping the replicas that stay.
  void SetAddresses(const std::vector<std::string>& addresses) {
    std::lock_guard<std::mutex> lock(mu);
    auto next = std::make_shared<ReplicaList>();
    for (const std::string& a : addresses) {
      std::shared_ptr<Replica> keep;
      for (const auto& r : *replicas) {
        if (r->address == a) keep = r;
      }
      if (!keep) {
        keep = MakeReplica(a);
        spdlog::info("replica {} added", a);
      }
      next->push_back(std::move(keep));
    }
    for (const auto& r : *replicas) {
      if (std::find(next->begin(), next->end(), r) == next->end()) {
        r->removed = true;
        r->healthy = false;
        if (r->healthy_gauge != nullptr) r->healthy_gauge->Set(0);
        spdlog::info("replica {} removed", r->address);
      }
    }
    replicas = std::move(next);
  }

  // Checks a replica's Info against the pool's model (adopting it if it is the first).
  bool CheckInfo(Replica& r, const v1::InfoResponse& info) {
    Result<rpc::WorkerModel> m = rpc::FromProto(info);
    auto refuse = [&](const std::string& why) {
      if (!r.mismatch_logged) spdlog::error("replica {} kept out: {}", r.address, why);
      r.mismatch_logged = true;
      return false;
    };
    if (!m.ok()) return refuse(m.status().ToString());
    if (options.tokenizer_fingerprint != 0 && m->tokenizer_fingerprint != 0 &&
        m->tokenizer_fingerprint != options.tokenizer_fingerprint) {
      return refuse("its tokenizer differs from the gateway's");
    }
    std::lock_guard<std::mutex> lock(mu);
    if (!model) {
      model = *m;
      model_cv.notify_all();
      const bool late = m->info.late_interaction.enabled;
      spdlog::info(
          "model {} ({}, {} dim {}, max {} tokens) from replica {}", m->name, m->info.architecture,
          late ? "late-interaction embedder"
               : (m->info.task == ModelTask::kScore ? "scorer" : "embedder"),
          late ? m->info.token_dim() : m->info.output_dim(), m->max_input_tokens, r.address);
      return true;
    }
    if (m->name != model->name || m->info.hidden_size != model->info.hidden_size ||
        m->info.task != model->info.task || m->info.output_dim() != model->info.output_dim() ||
        m->info.pair_format != model->info.pair_format ||
        m->max_input_tokens != model->max_input_tokens ||
        m->info.vocab_size != model->info.vocab_size ||
        m->tokenizer_fingerprint != model->tokenizer_fingerprint) {
      return refuse("it serves " + m->name + " (dim " + std::to_string(m->info.output_dim()) +
                    "), not the pool's " + model->name);
    }
    if (!(m->info.late_interaction == model->info.late_interaction) ||
        m->info.token_dim() != model->info.token_dim()) {
      return refuse(std::string("its late-interaction (ColBERT) settings or token width differ "
                                "from the pool's model's (which is ") +
                    (model->info.late_interaction.enabled ? "" : "not ") + "a ColBERT)");
    }
    if (m->info.tasks != model->info.tasks ||
        m->info.matryoshka_dimensions != model->info.matryoshka_dimensions) {
      // A task or a width would be taken or refused by whichever replica a chunk lands on.
      return refuse("its task adapters or Matryoshka widths differ from the pool's model's");
    }
    return true;
  }

  // One health round: every replica's Health (and Info until it has passed), in parallel.
  void HealthRound() {
    auto list = Snapshot();
    struct Probe {
      std::shared_ptr<Replica> replica;
      grpc::ClientContext health_ctx, info_ctx;
      v1::HealthRequest health_req;
      v1::HealthResponse health_resp;
      v1::InfoRequest info_req;
      v1::InfoResponse info_resp;
      grpc::Status health_status, info_status;
    };
    std::vector<std::unique_ptr<Probe>> probes;
    std::mutex pm;
    std::condition_variable pcv;
    int pending = 0;
    const auto deadline = std::chrono::system_clock::now() + options.health_timeout;
    for (const auto& r : *list) {
      auto p = std::make_unique<Probe>();
      p->replica = r;
      p->health_ctx.set_deadline(deadline);
      p->info_ctx.set_deadline(deadline);
      probes.push_back(std::move(p));
    }
    for (auto& p : probes) {
      Probe* probe = p.get();
      const bool need_info = !probe->replica->info_checked;
      {
        std::lock_guard<std::mutex> lock(pm);
        pending += need_info ? 2 : 1;
      }
      auto one_done = [&pm, &pcv, &pending] {
        std::lock_guard<std::mutex> lock(pm);
        if (--pending == 0) pcv.notify_all();
      };
      probe->replica->stub->async()->Health(&probe->health_ctx, &probe->health_req,
                                            &probe->health_resp,
                                            [probe, one_done](grpc::Status s) {
                                              probe->health_status = std::move(s);
                                              one_done();
                                            });
      if (need_info) {
        probe->replica->stub->async()->Info(&probe->info_ctx, &probe->info_req,
                                            &probe->info_resp, [probe, one_done](grpc::Status s) {
                                              probe->info_status = std::move(s);
                                              one_done();
                                            });
      }
    }
    {
      std::unique_lock<std::mutex> lock(pm);
      pcv.wait(lock, [&] { return pending == 0; });  // every call ends by its deadline
    }
    for (auto& p : probes) {
      Replica& r = *p->replica;
      if (r.removed) continue;
      if (!r.info_checked && p->info_status.ok()) r.info_checked = CheckInfo(r, p->info_resp);
      const bool serving = p->health_status.ok() &&
                           p->health_resp.status() == v1::HealthResponse::SERVING;
      if (!serving) r.info_checked = false;  // a restarted worker may serve something else
      SetHealthy(r, serving && r.info_checked);
    }
  }

  void RunHealth() {
    auto next_dns = Clock::now();
    for (;;) {
      if (!dns_host.empty() && Clock::now() >= next_dns) {
        SetAddresses(Resolve(dns_host, dns_port));
        next_dns = Clock::now() + options.dns_interval;
      }
      HealthRound();
      std::unique_lock<std::mutex> lock(health_mu);
      if (health_cv.wait_for(lock, options.health_interval, [&] { return health_stop; })) return;
    }
  }

  // Picks the healthy, untried replica with the fewest outstanding tokens.
  std::shared_ptr<Replica> Pick(const ChunkCall& call) const {
    auto list = Snapshot();
    std::shared_ptr<Replica> best;
    int64_t best_load = 0;
    for (const auto& r : *list) {
      if (!r->healthy || r->removed || call.tried.count(r.get()) != 0) continue;
      const int64_t load = r->outstanding.load();
      if (!best || load < best_load) {
        best = r;
        best_load = load;
      }
    }
    return best;
  }

  // Starts (or restarts) a chunk on the best replica; answers the job when none is left.
  void Send(std::shared_ptr<ChunkCall> call) {
    std::shared_ptr<Replica> r = Pick(*call);
    if (!r) {
      Status st = call->any_refused_for_load
                      ? Status::ResourceExhausted("every worker replica is at capacity; retry later")
                      : Status::Unavailable("no healthy worker replica");
      call->job->ChunkDone(call->first_row, st);
      return;
    }
    call->tried.insert(r.get());
    call->replica = r;
    bool cancelled = false;
    {
      // Under the job's lock: Job::Cancel() cancels the context from another thread.
      std::lock_guard<std::mutex> lock(call->job->mu);
      cancelled = call->job->cancelled;
      if (!cancelled) {
        // A retry is sent from the callback of the attempt before it: that attempt's context is
        // kept (not destroyed inside its own callback) until the chunk call itself goes.
        if (call->context) call->spent_contexts.push_back(std::move(call->context));
        call->context = std::make_unique<grpc::ClientContext>();
      }
    }
    if (cancelled) {
      call->job->ChunkDone(call->first_row, Status::Cancelled("the client went away"));
      return;
    }
    auto timeout = std::chrono::duration_cast<std::chrono::system_clock::duration>(
        options.request_timeout);
    if (call->deadline != Clock::time_point::max()) {
      timeout = std::min(timeout, std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                      call->deadline - Clock::now()));
    }
    call->context->set_deadline(std::chrono::system_clock::now() + timeout);
    call->response.Clear();
    bool refused = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      refused = cancelling;
      if (!refused) calls.insert(call.get());
    }
    if (refused) {  // answered outside the lock: the job's callback takes it
      call->job->ChunkDone(call->first_row, Status::Unavailable("the gateway is shutting down"));
      return;
    }
    r->outstanding += call->tokens;
    if (r->outstanding_gauge != nullptr) r->outstanding_gauge->Inc(double(call->tokens));
    call->via_score = call->scorer && r->score_rpc;
    if (call->via_score) {
      if (call->score_request.pairs_size() == 0) {
        *call->score_request.mutable_pairs() = call->request.sequences();
        call->score_request.set_model(call->request.model());
        call->score_request.set_tokenizer_fingerprint(call->request.tokenizer_fingerprint());
        call->score_request.set_priority(call->request.priority());
        call->score_request.set_request_class(call->request.request_class());
        call->score_request.set_flow(call->request.flow());
      }
      call->score_response.Clear();
      r->stub->async()->Score(call->context.get(), &call->score_request, &call->score_response,
                              [this, call](grpc::Status s) { OnChunkDone(call, std::move(s)); });
      return;
    }
    r->stub->async()->Embed(call->context.get(), &call->request, &call->response,
                            [this, call](grpc::Status s) { OnChunkDone(call, std::move(s)); });
  }

  void OnChunkDone(const std::shared_ptr<ChunkCall>& call, grpc::Status s) {
    Replica& r = *call->replica;
    r.outstanding -= call->tokens;
    if (r.outstanding_gauge != nullptr) r.outstanding_gauge->Dec(double(call->tokens));
    {
      std::lock_guard<std::mutex> lock(mu);
      calls.erase(call.get());
    }
    if (s.ok()) {
      ++r.chunks_done;
      Embeddings rows;
      Status st = call->via_score ? rpc::FromProto(call->score_response, &rows)
                                  : rpc::FromProto(call->response, &rows);
      call->job->ChunkDone(call->first_row, st.ok() ? Result<Embeddings>(std::move(rows))
                                                    : Result<Embeddings>(st));
      return;
    }
    if (call->via_score && s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      // A worker older than Score: this chunk, and the replica's next ones, go to Embed.
      if (r.score_rpc.exchange(false)) {
        spdlog::info("replica {} has no Score RPC; scoring through Embed", r.address);
      }
      call->tried.erase(&r);
      return Send(call);
    }
    if (s.error_code() == grpc::StatusCode::CANCELLED) {
      bool ours = false;
      {
        std::lock_guard<std::mutex> lock(call->job->mu);
        ours = call->job->cancelled;
      }
      if (ours) {  // the client went away: not the replica's fault, nothing to retry
        call->job->ChunkDone(call->first_row, Status::Cancelled("the client went away"));
        return;
      }
    }
    CountError(r, s.error_code());
    const bool stopping_now = [&] {
      std::lock_guard<std::mutex> lock(mu);
      return cancelling;
    }();
    // CANCELLED is not ours unless the pool is stopping (or the job was cancelled, above): it
    // is the worker's side, e.g. a call that reached a worker as its server was shutting down.
    const bool transport = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                           s.error_code() == grpc::StatusCode::CANCELLED;
    if (transport && !stopping_now) {
      // Worker gone, connection broken, or draining: take it out until Health says otherwise.
      SetHealthy(r, false);
      if (!call->retried_transport) {
        call->retried_transport = true;
        if (retries_total != nullptr) retries_total->Inc();
        spdlog::warn("chunk failed on {} ({}); retrying on another replica", r.address,
                     s.error_message());
        return Send(call);
      }
    } else if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED && !stopping_now) {
      call->any_refused_for_load = true;
      return Send(call);
    }
    call->job->ChunkDone(call->first_row, rpc::FromGrpc(s));
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
  auto impl = std::make_unique<Impl>();
  std::string host, port;
  for (const std::string& b : options.backends) {
    if (!SplitHostPort(b, &host, &port)) {
      return Status::InvalidArgument("backend `" + b + "` is not HOST:PORT");
    }
  }
  if (!options.backend_dns.empty() &&
      !SplitHostPort(options.backend_dns, &impl->dns_host, &impl->dns_port)) {
    return Status::InvalidArgument("--backend-dns `" + options.backend_dns + "` is not NAME:PORT");
  }
  impl->options = std::move(options);
  if (MetricsRegistry* m = impl->options.metrics) {
    impl->chunks_total = m->GetCounter("orchid_gateway_chunks_total",
                                       "Chunks sent to worker replicas", impl->Labels({}));
    impl->retries_total = m->GetCounter("orchid_gateway_chunk_retries_total",
                                        "Chunks retried on another replica after a transport "
                                        "failure",
                                        impl->Labels({}));
  }
  if (impl->dns_host.empty()) impl->SetAddresses(impl->options.backends);
  Impl* raw = impl.get();
  impl->health_thread = std::thread([raw] { raw->RunHealth(); });
  std::unique_ptr<ReplicaPool> pool(new ReplicaPool(std::move(impl)));
  {
    std::unique_lock<std::mutex> lock(raw->mu);
    raw->model_cv.wait_for(lock, startup_wait, [&] { return raw->model.has_value(); });
    if (!raw->model) {
      lock.unlock();
      pool->Shutdown(std::chrono::milliseconds(0));
      return Status::Unavailable("no worker replica answered within " +
                                 std::to_string(startup_wait.count()) + " ms");
    }
  }
  return pool;
}

const ModelInfo& ReplicaPool::model_info() const { return impl_->model->info; }

const std::string& ReplicaPool::model_name() const { return impl_->model->name; }

void ReplicaPool::Embed(EmbedRequest request, EmbedCallback done) {
  if (request.sequences.empty()) return done(Status::InvalidArgument("request has no sequences"));
  if (!request.token_type_ids.empty() &&
      request.token_type_ids.size() != request.sequences.size()) {
    return done(Status::InvalidArgument("token_type_ids must have one entry per sequence"));
  }
  if (!request.attend_lens.empty() && request.attend_lens.size() != request.sequences.size()) {
    return done(Status::InvalidArgument("attend_lens must have one entry per sequence"));
  }
  if (request.adapter < 0 ||
      (request.adapter > 0 &&
       (!impl_->model || size_t(request.adapter) > impl_->model->info.tasks.size()))) {
    return done(Status::InvalidArgument("task adapter " + std::to_string(request.adapter) +
                                        " is out of range"));
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return done(Status::Unavailable("the gateway is shutting down"));
    ++impl_->jobs;
  }
  auto job = std::make_shared<Job>();
  Impl* impl = impl_.get();
  // Counts the job out when it is answered, so that Shutdown() can wait for it.
  job->done = [impl, done = std::move(done)](Result<Embeddings> rows) {
    done(std::move(rows));
    std::lock_guard<std::mutex> lock(impl->mu);
    if (--impl->jobs == 0) impl->jobs_cv.notify_all();
  };
  // Per-token output (kNone): one row per token; each chunk's rows start at its first token.
  const bool per_token = request.pooling == Pooling::kNone;
  // Every chunk carries the request's class (decided here, on the whole request: a small last
  // chunk of bulk work is still bulk), its priority, and one flow, so that workers share out
  // bulk work by client request, not by chunk.
  Scheduling& sched = request.scheduling;
  int64_t total_tokens = 0;
  for (const auto& seq : request.sequences) total_tokens += int64_t(seq.size());
  sched.request_class =
      Classify(sched.request_class, request.sequences.size(), total_tokens, impl_->options.query);
  sched.flow = impl_->NextFlow();
  job->rows = per_token ? int(total_tokens) : int(request.sequences.size());
  // Whole sequences, in order, until a chunk would pass chunk_tokens.
  std::vector<std::shared_ptr<ChunkCall>> chunks;
  size_t i = 0;
  size_t tokens_before = 0;
  while (i < request.sequences.size()) {
    auto call = std::make_shared<ChunkCall>();
    call->job = job;
    call->first_row = per_token ? tokens_before : i;
    call->deadline = sched.deadline;
    EmbedRequest part;
    part.pooling = request.pooling;
    part.pool_skip = request.pool_skip;
    part.normalize = request.normalize;
    part.dimensions = request.dimensions;
    part.scheduling.priority = sched.priority;
    part.scheduling.request_class = sched.request_class;
    part.scheduling.flow = sched.flow;
    const bool typed = !request.token_type_ids.empty();
    const bool limited = !request.attend_lens.empty();
    while (i < request.sequences.size()) {
      const int64_t n = int64_t(request.sequences[i].size());
      if (!part.sequences.empty() && call->tokens + n > impl_->options.chunk_tokens) break;
      call->tokens += n;
      part.sequences.push_back(std::move(request.sequences[i]));
      if (typed) part.token_type_ids.push_back(std::move(request.token_type_ids[i]));
      if (limited) part.attend_lens.push_back(request.attend_lens[i]);
      ++i;
    }
    tokens_before += size_t(call->tokens);
    rpc::ToProto(std::move(part), &call->request);
    if (impl_->model) {
      // The task travels by name: the worker numbers its adapters itself.
      if (request.adapter > 0) {
        call->request.set_task(impl_->model->info.tasks[size_t(request.adapter) - 1]);
      }
      call->request.set_model(impl_->model->name);
      call->request.set_tokenizer_fingerprint(impl_->model->tokenizer_fingerprint);
      call->scorer = impl_->model->info.task == ModelTask::kScore;
    }
    chunks.push_back(std::move(call));
  }
  job->chunks_left = int(chunks.size());
  for (const auto& c : chunks) job->calls.push_back(c);
  if (impl_->chunks_total != nullptr) impl_->chunks_total->Inc(double(chunks.size()));
  if (sched.cancellation != nullptr) {
    // Cancel the worker calls when the client goes away (at once if it already has). The job
    // may be answered and gone by then: hold it weakly.
    std::weak_ptr<Job> weak = job;
    sched.cancellation->OnCancel([weak] {
      if (auto j = weak.lock()) j->Cancel();
    });
  }
  for (auto& c : chunks) impl_->Send(std::move(c));
}

bool ReplicaPool::healthy() const {
  auto list = impl_->Snapshot();
  for (const auto& r : *list) {
    if (r->healthy && !r->removed) return true;
  }
  return false;
}

void ReplicaPool::Shutdown(std::chrono::milliseconds drain) {
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    if (!impl_->stopping) {
      impl_->stopping = true;
      impl_->jobs_cv.wait_for(lock, drain, [&] { return impl_->jobs == 0; });
      impl_->cancelling = true;
      for (ChunkCall* c : impl_->calls) c->context->TryCancel();
      impl_->jobs_cv.wait(lock, [&] { return impl_->jobs == 0; });
    }
  }
  {
    std::lock_guard<std::mutex> lock(impl_->health_mu);
    impl_->health_stop = true;
  }
  impl_->health_cv.notify_all();
  if (impl_->health_thread.joinable()) impl_->health_thread.join();
}

std::vector<ReplicaState> ReplicaPool::replicas() const {
  std::vector<ReplicaState> out;
  for (const auto& r : *impl_->Snapshot()) {
    out.push_back(ReplicaState{r->address, r->healthy.load(), r->outstanding.load(),
                               r->chunks_done.load()});
  }
  return out;
}

}  // namespace orchid
