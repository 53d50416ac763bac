// BatchFiller: the next engine batch while the scheduler fills it, a sequence at a time, under
// its budgets: a token budget (the target), max_batch_tokens and max_batch_sequences (caps).
// The first sequence always goes in. MakeRaggedBatch then moves the chosen sequences into the
// RaggedBatch the engine runs.
//
// Thread safety: none; the scheduler thread's alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/ragged_batch.h"
#include "worker/pending_request.h"

namespace orchid {

class BatchFiller {
 public:
  // `budget` tokens (at most `max_tokens`), at most `max_sequences` sequences (0: no limit).
  // With `round_to_budget` the budget is a target, not a cap: a sequence goes in when at least
  // half of it fits, so that batches sized by time average their budget instead of falling
  // short of it by half a sequence (a 144-token document and a 512-token budget: 3.5
  // documents, not 3). max_tokens stays a cap.
  BatchFiller(int64_t budget, int64_t max_tokens, int max_sequences, bool round_to_budget);

  // Puts `entry`'s next sequence in the batch if it fits; false (nothing taken) when it does
  // not, or when it is an image and the batch holds text (or the other way round: a batch is
  // one tower's). entry->has_more() must hold.
  bool Take(const std::shared_ptr<PendingRequest>& entry);
  // Takes every remaining sequence of each entry in turn; false once the batch is full.
  bool TakeAll(std::span<const std::shared_ptr<PendingRequest>> entries);

  bool empty() const { return sequences_ == 0; }
  int64_t tokens() const { return tokens_; }
  size_t sequences() const { return sequences_; }
  // The batch's slices, one per request, in the order their requests were first taken.
  std::vector<BatchSlice> TakeSlices() { return std::move(slices_); }

 private:
  const int64_t budget_;
  const int64_t max_tokens_;
  const size_t max_sequences_;
  const bool round_;
  std::vector<BatchSlice> slices_;
  std::unordered_map<const PendingRequest*, size_t> slice_of_;  // request -> its slice
  int64_t tokens_ = 0;
  size_t sequences_ = 0;
  bool images_ = false;  // the batch's modality, set by its first sequence
};

// The engine batch of `slices`' sequences, in slice order. Each sequence's ids (and token
// types) are moved out of its request, which keeps only its bookkeeping.
RaggedBatch MakeRaggedBatch(const std::vector<BatchSlice>& slices);

}  // namespace orchid
