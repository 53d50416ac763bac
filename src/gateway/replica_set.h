// ReplicaSet: the worker replicas a ReplicaPool knows, each with its gRPC channel, its load
// (tokens sent and not yet answered) and whether it takes requests. The list is replaced
// wholesale (SetAddresses: a static list at start, or every re-resolution of a DNS name)
// keeping the replicas that stay; readers take a snapshot and never see a list change under
// them. A replica dropped from the list is marked removed and unhealthy; chunks already on it
// finish.
//
// Thread safety: every method may be called from any thread. A Replica's atomics are read and
// written lock-free; its info_checked and mismatch_logged belong to the health thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/metrics.h"
#include "orchid/v1/worker.grpc.pb.h"

namespace orchid {

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

  // Tokens sent to it (positive) or answered (negative).
  void AddOutstanding(int64_t tokens);
};

using ReplicaList = std::vector<std::shared_ptr<Replica>>;

// Splits "host:port" (host may be "[v6]"). False when malformed.
bool SplitHostPort(const std::string& s, std::string* host, std::string* port);

// Every address `name` resolves to, as "ip:port" / "[ip6]:port", sorted; empty when it does
// not resolve. Blocks on the resolver.
std::vector<std::string> ResolveAddresses(const std::string& name, const std::string& port);

class ReplicaSet {
 public:
  // Channels allow messages up to `max_message_bytes`. With `metrics`, each replica gets
  // outstanding-token and healthy gauges, and errors a counter, labelled with `labels` and its
  // address. `metrics` must outlive the set.
  ReplicaSet(int max_message_bytes, MetricsRegistry* metrics, MetricLabels labels);

  // The current list; it never changes under its holder.
  std::shared_ptr<const ReplicaList> Snapshot() const;
  // Replaces the list with `addresses`, keeping the replicas that stay (and their load).
  void SetAddresses(const std::vector<std::string>& addresses);
  // Puts `r` in rotation or takes it out (logged when that changes).
  void SetHealthy(Replica& r, bool healthy) const;
  // The healthy replica not in `tried` with the fewest outstanding tokens; null when none.
  std::shared_ptr<Replica> Pick(const std::set<const Replica*>& tried) const;
  bool AnyHealthy() const;
  // Counts a failed chunk call on `r` by its gRPC code.
  void CountError(const Replica& r, grpc::StatusCode code) const;
  // `own` after the set's labels.
  MetricLabels Labels(MetricLabels own) const;

 private:
  std::shared_ptr<Replica> MakeReplica(const std::string& address) const;

  const int max_message_bytes_;
  MetricsRegistry* const metrics_;
  const MetricLabels labels_;
  mutable std::mutex mu_;  // guards replicas_ (the pointer; the list itself is immutable)
  std::shared_ptr<const ReplicaList> replicas_ = std::make_shared<ReplicaList>();
};

}  // namespace orchid
