// LazyResult: the engine's answer to submit(), handed back before the work is done.
//
// On the CPU backend it is completed by the engine thread; on the CUDA backend (later) it will
// own a pinned host buffer, the device-to-host copy and an event. Either way the contract is:
// ready() never blocks; wait() blocks until the result is readable and returns it. A LazyResult
// is a cheap shared handle: copies refer to the same result; any thread may wait on it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "core/status.h"

namespace orchid {

// One pooled (and possibly normalised) vector per sequence of the batch, in batch order.
//
// Sequences pooled Pooling::kNone (per-token output: TEI's /embed_all) keep a row of zeros in
// `data` and have every token's last hidden state in `tokens`: rows [token_offsets[s],
// token_offsets[s + 1]) of token_dim (hidden_size) values; the range is empty for the other
// sequences. `tokens` and `token_offsets` are empty when no sequence asked for them.
struct Embeddings {
  int rows = 0;
  int dim = 0;
  std::vector<float> data;  // row-major [rows, dim]
  const float* row(int i) const { return data.data() + size_t(i) * size_t(dim); }

  int token_dim = 0;
  std::vector<float> tokens;           // row-major [token_offsets.back(), token_dim]
  std::vector<int32_t> token_offsets;  // [rows + 1] when tokens are present
  bool has_tokens() const { return !token_offsets.empty(); }
  // A per-token (Pooling::kNone) answer of a model that also pools in that pass
  // (ModelInfo::bge_m3): the sequences' pooled rows, output_dim() wide, in order; else empty.
  std::vector<float> pooled;
};

class LazyResult {
 public:
  // A pending result and the handle the producer uses to complete it.
  class Promise;
  static std::pair<LazyResult, Promise> Make();

  LazyResult() = default;
  bool valid() const { return state_ != nullptr; }
  // True once the result (value or error) is available. Never blocks.
  bool ready() const;
  // Blocks until ready, then returns the result. May be called many times, from any thread.
  // The reference lives as long as some LazyResult copy of this result does.
  const Result<Embeddings>& wait() const&;
  // On a temporary (`engine->Submit(b).wait()`) the result is returned by value: a reference
  // into a handle destroyed at the end of the statement would dangle.
  Result<Embeddings> wait() &&;
  // Runs `callback` once the result is ready: at once, on this thread, if it already is; else on
  // the thread that completes it, right after waking the waiters. Keep it short (hand real work
  // to another thread); it must not wait for this result's producer.
  void OnReady(std::function<void()> callback) const;

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Result<Embeddings> result{Status::Internal("lazy result not completed")};
    std::vector<std::function<void()>> on_ready;  // until done
  };
  explicit LazyResult(std::shared_ptr<State> s) : state_(std::move(s)) {}
  std::shared_ptr<State> state_;
};

class LazyResult::Promise {
 public:
  Promise() = default;
  // Completes the result exactly once; later calls are ignored.
  void Set(Result<Embeddings> r);

 private:
  friend class LazyResult;
  explicit Promise(std::shared_ptr<State> s) : state_(std::move(s)) {}
  std::shared_ptr<State> state_;
};

}  // namespace orchid
