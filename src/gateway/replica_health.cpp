#include "gateway/replica_health.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <utility>
#include <vector>

namespace orchid {

std::optional<std::string> ReplicaMismatch(const rpc::WorkerModel& pool,
                                           const rpc::WorkerModel& replica) {
  const rpc::WorkerModel& m = replica;
  if (m.name != pool.name || m.info.hidden_size != pool.info.hidden_size ||
      m.info.task != pool.info.task || m.info.output_dim() != pool.info.output_dim() ||
      m.info.pair_format != pool.info.pair_format || m.max_input_tokens != pool.max_input_tokens ||
      m.info.vocab_size != pool.info.vocab_size || !(m.info.image == pool.info.image) ||
      !(m.info.text == pool.info.text) || m.tokenizer_fingerprint != pool.tokenizer_fingerprint) {
    return "it serves " + m.name + " (dim " + std::to_string(m.info.output_dim()) +
           "), not the pool's " + pool.name;
  }
  if (!(m.info.late_interaction == pool.info.late_interaction) ||
      m.info.token_dim() != pool.info.token_dim()) {
    return std::string(
               "its late-interaction (ColBERT) settings or token width differ "
               "from the pool's model's (which is ") +
           (pool.info.late_interaction.enabled ? "" : "not ") + "a ColBERT)";
  }
  if (m.info.tasks != pool.info.tasks ||
      m.info.matryoshka_dimensions != pool.info.matryoshka_dimensions) {
    // A task or a width would be taken or refused by whichever replica a chunk lands on.
    return "its task adapters or Matryoshka widths differ from the pool's model's";
  }
  return std::nullopt;
}

ReplicaHealth::ReplicaHealth(ReplicaSet* replicas, ReplicaHealthOptions options)
    : replicas_(replicas), options_(std::move(options)) {}

ReplicaHealth::~ReplicaHealth() { Stop(); }

void ReplicaHealth::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ReplicaHealth::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ReplicaHealth::WaitForModel(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(model_mu_);
  return model_cv_.wait_for(lock, wait, [&] { return model_.has_value(); });
}

const rpc::WorkerModel* ReplicaHealth::model() const {
  std::lock_guard<std::mutex> lock(model_mu_);
  return model_ ? &*model_ : nullptr;
}

void ReplicaHealth::Run() {
  using Clock = std::chrono::steady_clock;
  auto next_dns = Clock::now();
  for (;;) {
    if (!options_.dns_host.empty() && Clock::now() >= next_dns) {
      replicas_->SetAddresses(ResolveAddresses(options_.dns_host, options_.dns_port));
      next_dns = Clock::now() + options_.dns_interval;
    }
    Round();
    std::unique_lock<std::mutex> lock(stop_mu_);
    if (stop_cv_.wait_for(lock, options_.health_interval, [&] { return stop_; })) return;
  }
}

bool ReplicaHealth::CheckInfo(Replica& r, const v1::InfoResponse& info) {
  Result<rpc::WorkerModel> m = rpc::FromProto(info);
  auto refuse = [&](const std::string& why) {
    if (!r.mismatch_logged) spdlog::error("replica {} kept out: {}", r.address, why);
    r.mismatch_logged = true;
    return false;
  };
  if (!m.ok()) return refuse(m.status().ToString());
  if (options_.tokenizer_fingerprint != 0 && m->tokenizer_fingerprint != 0 &&
      m->tokenizer_fingerprint != options_.tokenizer_fingerprint) {
    return refuse("its tokenizer differs from the gateway's");
  }
  std::lock_guard<std::mutex> lock(model_mu_);
  if (!model_) {
    model_ = *m;
    model_cv_.notify_all();
    const bool late = m->info.late_interaction.enabled;
    spdlog::info("model {} ({}, {} dim {}, max {} tokens) from replica {}", m->name,
                 m->info.architecture,
                 late ? "late-interaction embedder"
                      : (m->info.task == ModelTask::kScore ? "scorer" : "embedder"),
                 late ? m->info.token_dim() : m->info.output_dim(), m->max_input_tokens, r.address);
    return true;
  }
  if (std::optional<std::string> why = ReplicaMismatch(*model_, *m)) return refuse(*why);
  return true;
}

void ReplicaHealth::Round() {
  auto list = replicas_->Snapshot();
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
  const auto deadline = std::chrono::system_clock::now() + options_.health_timeout;
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
                                          &probe->health_resp, [probe, one_done](grpc::Status s) {
                                            probe->health_status = std::move(s);
                                            one_done();
                                          });
    if (need_info) {
      probe->replica->stub->async()->Info(&probe->info_ctx, &probe->info_req, &probe->info_resp,
                                          [probe, one_done](grpc::Status s) {
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
    const bool serving =
        p->health_status.ok() && p->health_resp.status() == v1::HealthResponse::SERVING;
    if (!serving) r.info_checked = false;  // a restarted worker may serve something else
    replicas_->SetHealthy(r, serving && r.info_checked);
  }
}

}  // namespace orchid
