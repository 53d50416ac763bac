// ChunkDispatcher: sends a ReplicaPool's chunks to replicas and decides what a failure means.
// Each attempt goes to the healthy, untried replica with the fewest outstanding tokens, under
// the chunk's deadline (the request's own, at most request_timeout). A scorer's chunk is a
// Score call (an Embed call on a worker older than Score). On failure:
//   UNAVAILABLE, or CANCELLED by the worker's side  the replica is taken out of rotation and
//       the chunk is retried once on another replica;
//   RESOURCE_EXHAUSTED  the chunk tries every other healthy replica before the request gets
//       ResourceExhausted;
//   CANCELLED because the client went away  the request fails with Cancelled, nothing retried;
//   anything else  the request fails with that error.
// No healthy replica left: Unavailable. After CancelAll() (the pool's shutdown, past its
// drain) no attempt starts and those in flight are cancelled.
//
// Thread safety: every method may be called from any thread; attempts end on gRPC's threads.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <set>

#include "core/metrics.h"
#include "gateway/chunked_job.h"
#include "gateway/replica_set.h"

namespace orchid {

class ChunkDispatcher {
 public:
  // `replicas` must outlive the dispatcher; `retries` (may be null) counts transport retries.
  ChunkDispatcher(ReplicaSet* replicas, std::chrono::milliseconds request_timeout,
                  Counter* retries);

  // Starts (or restarts) the chunk on the best replica; answers its job when none is left.
  void Send(std::shared_ptr<ChunkCall> call);
  // Refuses every later attempt and cancels those in flight. Does not wait for them.
  void CancelAll();

 private:
  void OnDone(const std::shared_ptr<ChunkCall>& call, grpc::Status s);
  bool cancelling() const;

  ReplicaSet* const replicas_;
  const std::chrono::milliseconds request_timeout_;
  Counter* const retries_;

  mutable std::mutex mu_;       // guards calls_ and cancelling_
  std::set<ChunkCall*> calls_;  // attempts in flight
  bool cancelling_ = false;     // past the drain: no new attempts
};

}  // namespace orchid
