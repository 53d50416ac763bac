#include "gateway/replica_set.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "rpc/convert.h"

namespace orchid {

void Replica::AddOutstanding(int64_t tokens) {
  outstanding += tokens;
  if (outstanding_gauge == nullptr) return;
  if (tokens >= 0) {
    outstanding_gauge->Inc(double(tokens));
  } else {
    outstanding_gauge->Dec(double(-tokens));
  }
}

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

std::vector<std::string> ResolveAddresses(const std::string& name, const std::string& port) {
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

ReplicaSet::ReplicaSet(int max_message_bytes, MetricsRegistry* metrics, MetricLabels labels)
    : max_message_bytes_(max_message_bytes), metrics_(metrics), labels_(std::move(labels)) {}

std::shared_ptr<const ReplicaList> ReplicaSet::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return replicas_;
}

MetricLabels ReplicaSet::Labels(MetricLabels own) const {
  MetricLabels all = labels_;
  all.insert(all.end(), own.begin(), own.end());
  return all;
}

std::shared_ptr<Replica> ReplicaSet::MakeReplica(const std::string& address) const {
  auto r = std::make_shared<Replica>();
  r->address = address;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(max_message_bytes_);
  args.SetMaxSendMessageSize(max_message_bytes_);
  // Find a restarted worker quickly; notice a silently dead one within seconds.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  r->channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  r->stub = v1::Worker::NewStub(r->channel);
  if (metrics_ != nullptr) {
    r->outstanding_gauge = metrics_->GetGauge("orchid_gateway_replica_outstanding_tokens",
                                              "Tokens sent to a replica and not yet answered",
                                              Labels({{"replica", address}}));
    r->healthy_gauge =
        metrics_->GetGauge("orchid_gateway_replica_healthy", "1 while the replica takes requests",
                           Labels({{"replica", address}}));
  }
  return r;
}

void ReplicaSet::SetAddresses(const std::vector<std::string>& addresses) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<ReplicaList>();
  for (const std::string& a : addresses) {
    std::shared_ptr<Replica> keep;
    for (const auto& r : *replicas_) {
      if (r->address == a) keep = r;
    }
    if (!keep) {
      keep = MakeReplica(a);
      spdlog::info("replica {} added", a);
    }
    next->push_back(std::move(keep));
  }
  for (const auto& r : *replicas_) {
    if (std::find(next->begin(), next->end(), r) == next->end()) {
      r->removed = true;
      r->healthy = false;
      if (r->healthy_gauge != nullptr) r->healthy_gauge->Set(0);
      spdlog::info("replica {} removed", r->address);
    }
  }
  replicas_ = std::move(next);
}

void ReplicaSet::SetHealthy(Replica& r, bool healthy) const {
  const bool was = r.healthy.exchange(healthy);
  if (r.healthy_gauge != nullptr) r.healthy_gauge->Set(healthy ? 1 : 0);
  if (was != healthy) {
    spdlog::info("replica {} is {}", r.address, healthy ? "healthy" : "out of rotation");
  }
}

std::shared_ptr<Replica> ReplicaSet::Pick(const std::set<const Replica*>& tried) const {
  auto list = Snapshot();
  std::shared_ptr<Replica> best;
  int64_t best_load = 0;
  for (const auto& r : *list) {
    if (!r->healthy || r->removed || tried.count(r.get()) != 0) continue;
    const int64_t load = r->outstanding.load();
    if (!best || load < best_load) {
      best = r;
      best_load = load;
    }
  }
  return best;
}

bool ReplicaSet::AnyHealthy() const {
  auto list = Snapshot();
  for (const auto& r : *list) {
    if (r->healthy && !r->removed) return true;
  }
  return false;
}

void ReplicaSet::CountError(const Replica& r, grpc::StatusCode code) const {
  if (metrics_ == nullptr) return;
  metrics_
      ->GetCounter("orchid_gateway_replica_errors_total",
                   "Failed chunk calls by replica and gRPC code",
                   Labels({{"replica", r.address},
                           {"code", StatusCodeName(rpc::FromGrpc(grpc::Status(code, "")).code())}}))
      ->Inc();
}

}  // namespace orchid
