// FairShare: how bulk requests of one priority share the engine (start-time fair queueing by
// tokens). Requests belong to flows (Scheduling::flow: the chunks of one client request share
// one; 0 = the request is its own flow). Each flow's turn is the tokens it has had since it
// started; a new flow starts level with the least served flow of its priority, so a newcomer
// neither waits for old flows' history nor jumps ahead of them. A batch takes a sequence at a
// time from the flow whose turn is lowest; within a flow, its requests in arrival order.
//
// Thread safety: none; the scheduler thread's alone.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "worker/batch_filler.h"
#include "worker/pending_request.h"

namespace orchid {

class FairShare {
 public:
  using FlowKey = std::pair<int32_t, uint64_t>;  // (priority, flow)

  // Sets entry->flow: its request's flow, or a flow of its own. With `shares` (bulk work under
  // the priority policy) the entry joins that flow's share (entry->in_flow).
  void Admit(PendingRequest* entry, bool shares);
  // The entry leaves the pending list; its flow is forgotten with its last entry.
  void Retire(const PendingRequest& entry);
  // Fills `batch` from `group` (bulk requests of one priority, in arrival order), a sequence at
  // a time from the flow with the lowest turn, until every sequence is taken (true) or the
  // batch is full (false).
  bool Fill(std::span<const std::shared_ptr<PendingRequest>> group, BatchFiller* batch);

 private:
  std::map<FlowKey, double> turn_;  // tokens each flow has had since it started
  std::map<FlowKey, int> entries_;  // pending entries per flow
  uint64_t next_own_flow_ = 0;      // flows for requests without one (counting down from max)
};

}  // namespace orchid
