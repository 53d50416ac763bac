// EmbeddingService: turns a parsed embeddings request into rows — checks it against the model
// (served name, vocabulary, maximum length, dimension), tokenizes texts, queues the sequences
// on the TokenBudgetScheduler and, when they come back, applies `dimensions`.
//
// Thread safety: Embed() may be called from many threads at once. It tokenizes on the calling
// thread (so call it from a worker pool, not an io thread) and never waits for the engine.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "gateway/api_error.h"
#include "gateway/embeddings_request.h"
#include "gateway/embeddings_response.h"
#include "gateway/executor.h"
#include "tokenizer/tokenizer.h"
#include "worker/token_budget_scheduler.h"

namespace orchid {

struct EmbeddingReply {
  std::optional<ApiError> error;  // set → nothing else is
  EmbeddingMatrix embeddings;     // one row per input, in input order
  int64_t prompt_tokens = 0;      // tokens fed to the model, special tokens included
};

class EmbeddingService {
 public:
  // The tokenizer and scheduler must outlive the service. `completions` runs the second half
  // of each request (after the engine) off the scheduler thread.
  EmbeddingService(const Tokenizer* tokenizer, TokenBudgetScheduler* scheduler,
                   std::string served_model_name, Executor completions);

  const std::string& model_name() const { return model_name_; }
  int dim() const { return dim_; }
  int max_seq_length() const { return max_seq_length_; }

  // Calls `done` exactly once: inline when the request is rejected before queueing, otherwise
  // as a task on the completions executor.
  void Embed(EmbeddingsRequest request, std::function<void(EmbeddingReply)> done);

 private:
  std::optional<ApiError> Tokenize(EmbeddingsRequest* request,
                                   std::vector<std::vector<int32_t>>* sequences,
                                   int64_t* tokens) const;

  const Tokenizer* tokenizer_;
  TokenBudgetScheduler* scheduler_;
  std::string model_name_;
  Executor completions_;
  int dim_;
  int max_seq_length_;
  int32_t vocab_size_;
  Pooling pooling_;
  bool normalize_;
};

}  // namespace orchid
