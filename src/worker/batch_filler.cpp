#include "worker/batch_filler.h"

#include <limits>

namespace orchid {

BatchFiller::BatchFiller(int64_t budget, int64_t max_tokens, int max_sequences,
                         bool round_to_budget)
    : budget_(budget),
      max_tokens_(max_tokens),
      max_sequences_(max_sequences > 0 ? size_t(max_sequences)
                                       : std::numeric_limits<size_t>::max()),
      round_(round_to_budget) {}

bool BatchFiller::Take(const std::shared_ptr<PendingRequest>& entry) {
  PendingRequest& e = *entry;
  const int64_t n = e.NextTokens();
  const int64_t counted = round_ ? (n + 1) / 2 : n;
  if (sequences_ > 0 && (tokens_ + counted > budget_ || tokens_ + n > max_tokens_ ||
                         sequences_ >= max_sequences_ || e.request.images() != images_)) {
    return false;
  }
  if (sequences_ == 0) images_ = e.request.images();
  auto [it, fresh] = slice_of_.try_emplace(&e, slices_.size());
  if (fresh) slices_.push_back(BatchSlice{entry, e.next_seq, 0});
  ++slices_[it->second].count;
  ++e.next_seq;
  tokens_ += n;
  ++sequences_;
  return true;
}

bool BatchFiller::TakeAll(std::span<const std::shared_ptr<PendingRequest>> entries) {
  for (const auto& e : entries) {
    while (e->has_more()) {
      if (!Take(e)) return false;
    }
  }
  return true;
}

RaggedBatch MakeRaggedBatch(const std::vector<BatchSlice>& slices) {
  RaggedBatch batch;
  for (const BatchSlice& s : slices) {
    EmbedRequest& r = s.entry->request;
    for (size_t q = s.first; q < s.first + s.count; ++q) {
      std::vector<int32_t>& seq = r.sequences[q];
      if (r.images()) {
        std::vector<float>& rows = r.pixels[q];
        batch.AddImage(seq.data(), int(seq.size()), rows.data(),
                       seq.empty() ? 0 : int(rows.size() / seq.size()), r.normalize);
        std::vector<int32_t>().swap(seq);
        std::vector<float>().swap(rows);
        continue;
      }
      std::vector<int32_t>* seq_types = r.token_type_ids.empty() ? nullptr : &r.token_type_ids[q];
      const int32_t* type_ids =
          seq_types == nullptr || seq_types->empty() ? nullptr : seq_types->data();
      batch.Add(seq.data(), int(seq.size()), r.pooling, r.normalize, type_ids, r.pool_skip,
                r.attend_lens.empty() ? 0 : r.attend_lens[q], r.adapter);
      std::vector<int32_t>().swap(seq);  // the batch has its own copy now
      if (seq_types != nullptr) std::vector<int32_t>().swap(*seq_types);
    }
  }
  return batch;
}

}  // namespace orchid
