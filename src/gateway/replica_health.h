// ReplicaHealth: the health thread of a ReplicaPool. Every health_interval it asks every
// replica of the set for Health and, until the replica has passed, Info; a replica is in
// rotation while it answers SERVING and serves the pool's model. With a DNS name it first
// re-resolves the name every dns_interval and hands the addresses to the ReplicaSet.
//
// The pool's model is the first one a replica reports; every later replica must match it (and
// the gateway's tokenizer, when its fingerprint is given): the same name, widths, task, pair
// format, input limit, vocabulary, tokenizer, late-interaction settings, task adapters and
// Matryoshka widths (ReplicaMismatch). A replica that differs is kept out and logged once.
//
// Thread safety: every method may be called from any thread. model() is set once and then
// constant; callers read it after WaitForModel() has seen it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gateway/replica_set.h"
#include "rpc/convert.h"

namespace orchid {

// Why a replica serving `replica` cannot join a pool serving `pool`; nullopt when it can.
std::optional<std::string> ReplicaMismatch(const rpc::WorkerModel& pool,
                                           const rpc::WorkerModel& replica);

struct ReplicaHealthOptions {
  std::chrono::milliseconds health_interval{500};
  std::chrono::milliseconds health_timeout{1000};
  std::string dns_host, dns_port;  // empty host: a static list, not re-resolved
  std::chrono::milliseconds dns_interval{5000};
  uint64_t tokenizer_fingerprint = 0;  // the gateway's tokenizer; 0 = do not check
};

class ReplicaHealth {
 public:
  // `replicas` must outlive this. Start() starts the thread.
  ReplicaHealth(ReplicaSet* replicas, ReplicaHealthOptions options);
  ~ReplicaHealth();  // Stop()
  ReplicaHealth(const ReplicaHealth&) = delete;
  ReplicaHealth& operator=(const ReplicaHealth&) = delete;

  void Start();
  // Stops the thread; blocks until its round in progress (at most health_timeout) ends.
  // Idempotent.
  void Stop();
  // Blocks up to `wait` for the first replica to report its model; true when one has.
  bool WaitForModel(std::chrono::milliseconds wait);
  // The pool's model; null until a replica reported it.
  const rpc::WorkerModel* model() const;

 private:
  void Run();
  // Every replica's Health (and Info until it has passed), in parallel; blocks until every
  // call has ended (by health_timeout).
  void Round();
  // Checks a replica's Info against the pool's model, adopting it if it is the first.
  bool CheckInfo(Replica& r, const v1::InfoResponse& info);

  ReplicaSet* const replicas_;
  const ReplicaHealthOptions options_;

  mutable std::mutex model_mu_;
  std::condition_variable model_cv_;
  std::optional<rpc::WorkerModel> model_;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace orchid
