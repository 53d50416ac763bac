// PendingRequest: one accepted EmbedRequest inside the TokenBudgetScheduler, from its arrival
// until its last row is delivered or it fails: the request, its callback, where it stands
// (sequences batched, rows routed back) and the answer being assembled. BatchSlice names the
// sequences of one request that went into one engine batch.
//
// Thread safety: none. Owned by the scheduler thread (shared_ptr between the pending list and
// the batches in flight); only that thread reads or writes it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/status.h"
#include "engine/lazy_result.h"
#include "worker/embed_request.h"

namespace orchid {

// Calls `cb` with `result`, logging and dropping what it throws: a callback must not take the
// scheduler thread down with it.
void InvokeCallback(EmbedCallback& cb, Result<Embeddings> result);

struct PendingRequest {
  using Clock = std::chrono::steady_clock;

  EmbedRequest request;
  EmbedCallback done;
  Clock::time_point enqueued_at;
  uint64_t arrival = 0;               // arrival order
  bool query = false;                 // class (scheduling.h), decided at Enqueue
  std::pair<int32_t, uint64_t> flow;  // (priority, flow): the bulk fair-share key
  bool in_flow = false;               // counted by FairShare (bulk, priority policy)
  size_t next_seq = 0;                // first sequence not yet put in a batch
  size_t rows_done = 0;               // rows routed back so far
  Embeddings out;                     // sized when the first rows arrive
  std::vector<size_t> token_start;    // kNone: each sequence's first token row, and the total
  bool failed = false;
  bool retired = false;  // out of the pending list (wholly batched or failed)

  // Answers the request with `status`, once; later calls (and rows) are ignored.
  void Fail(const Status& status);
  // Answers the request with its assembled rows.
  void Succeed();
  bool has_more() const { return next_seq < request.sequences.size(); }
  // Tokens, and sequences, not yet put in a batch.
  int64_t TokensLeft() const;
  size_t SequencesLeft() const { return request.sequences.size() - next_seq; }
  // Tokens of the next sequence to batch (has_more() must hold).
  int64_t NextTokens() const { return int64_t(request.sequences[next_seq].size()); }
};

// Sequences [first, first + count) of one request, in one engine batch.
struct BatchSlice {
  std::shared_ptr<PendingRequest> entry;
  size_t first = 0;
  size_t count = 0;
};

}  // namespace orchid
