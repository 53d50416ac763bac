// FakeEngine: an Engine for scheduler and gateway tests. It records every batch and completes it
// either at once (auto_complete) or when the test says so. Row i of a batch is
// {first id, length, last id} of sequence i (dim 3), scaled to unit length when the batch asks
// for normalisation — enough to check routing and order. As a scorer (MakeScorer()), row i is
// one logit: 0.1 * length + sum of the sequence's token type ids. Sequences pooled kNone get
// per-token rows {token id, position, 7}.
#pragma once

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace orchid::testing {

class FakeEngine : public Engine {
 public:
  explicit FakeEngine(bool auto_complete, int32_t vocab_size = 1000, int max_seq_length = 16)
      : auto_complete_(auto_complete) {
    info_.architecture = "FakeModel";
    info_.vocab_size = vocab_size;
    info_.type_vocab_size = 2;
    info_.hidden_size = kDim;
    info_.max_position_embeddings = max_seq_length;
    info_.max_seq_length = max_seq_length;
    info_.default_pooling = Pooling::kMean;
    info_.default_normalize = false;
  }
  static constexpr int kDim = 3;

  const ModelInfo& info() const override { return info_; }
  // Turns the engine into a one-label scorer (call before handing it to a scheduler).
  void MakeScorer(PairFormat format = PairFormat::kTokenizerPair) {
    info_.task = ModelTask::kScore;
    info_.num_labels = 1;
    info_.pair_format = format;
    info_.default_pooling = Pooling::kCls;
  }
  static float ScorerLogit(int length, int type_id_sum) {
    return 0.1f * float(length) + float(type_id_sum);
  }
  // Turns the engine into a classifier with named labels (call before handing it to a
  // scheduler); label k's logit is ClassifierLogit(length, type id sum, k).
  void MakeClassifier(std::vector<std::string> labels, bool multi_label = false) {
    MakeScorer();
    info_.num_labels = int(labels.size());
    info_.labels = std::move(labels);
    info_.multi_label = multi_label;
  }
  // Turns the engine into a late-interaction (ColBERT) embedder with these settings; its
  // per-token rows stay {token id, position, 7} (call before handing it to a scheduler).
  void MakeLateInteraction(LateInteraction settings) {
    info_.late_interaction = std::move(settings);
    info_.late_interaction.enabled = true;
    info_.token_embedding_dim = kDim;
  }
  // Gives the model task adapters (ModelInfo::tasks; call before handing it to a scheduler).
  void SetTasks(std::vector<std::string> tasks) { info_.tasks = std::move(tasks); }
  static float ClassifierLogit(int length, int type_id_sum, int k) {
    return k == 0 ? ScorerLogit(length, type_id_sum) : 0.5f * float(k) * float(length - 4);
  }

  LazyResult Submit(RaggedBatch batch) override {
    auto [result, promise] = LazyResult::Make();
    size_t index;
    {
      std::lock_guard<std::mutex> lock(mu_);
      batches_.push_back(std::move(batch));
      promises_.push_back(std::move(promise));
      index = batches_.size() - 1;
    }
    cv_.notify_all();
    if (auto_complete_) Complete(index);
    return result;
  }

  Embeddings Rows(const RaggedBatch& b) const {
    Embeddings e;
    e.rows = b.num_sequences();
    e.dim = info_.output_dim();
    for (int s = 0; s < b.num_sequences(); ++s) {
      const int begin = b.cu_seqlens[s], end = b.cu_seqlens[s + 1];
      if (info_.task == ModelTask::kScore) {
        int types = 0;
        for (int t = begin; t < end && !b.token_type_ids.empty(); ++t) types += b.token_type_ids[t];
        for (int k = 0; k < info_.num_labels; ++k) {
          e.data.push_back(ClassifierLogit(end - begin, types, k));
        }
        continue;
      }
      if (b.pooling[s] == Pooling::kNone) {
        // Per-token output: token t's row is {id, position, 7}; the pooled row is zeros.
        if (e.token_offsets.empty()) {
          e.token_dim = kDim;
          e.token_offsets.assign(size_t(s) + 1, 0);
        }
        for (int t = begin; t < end; ++t) {
          const float row[kDim] = {float(b.token_ids[t]), float(b.positions[t]), 7.0f};
          e.tokens.insert(e.tokens.end(), row, row + kDim);
        }
        e.data.insert(e.data.end(), kDim, 0.0f);
        e.token_offsets.push_back(int32_t(e.tokens.size() / kDim));
        continue;
      }
      if (!e.token_offsets.empty()) e.token_offsets.push_back(e.token_offsets.back());
      float v[kDim] = {float(b.token_ids[begin]), float(end - begin), float(b.token_ids[end - 1])};
      if (b.normalize[s]) {
        const float n = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        for (float& x : v) x /= n;
      }
      e.data.insert(e.data.end(), v, v + kDim);
    }
    return e;
  }

  void Complete(size_t i) {
    std::unique_lock<std::mutex> lock(mu_);
    Embeddings e = Rows(batches_[i]);
    LazyResult::Promise p = promises_[i];
    lock.unlock();
    p.Set(std::move(e));
  }

  void Fail(size_t i, Status st) {
    std::unique_lock<std::mutex> lock(mu_);
    LazyResult::Promise p = promises_[i];
    lock.unlock();
    p.Set(std::move(st));
  }

  bool WaitForBatches(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return batches_.size() >= n; });
  }

  size_t num_batches() {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_.size();
  }

  RaggedBatch batch(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_[i];
  }

 private:
  const bool auto_complete_;
  ModelInfo info_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RaggedBatch> batches_;
  std::vector<LazyResult::Promise> promises_;
};

}  // namespace orchid::testing
