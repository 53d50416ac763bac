// Engine: runs forward passes on ragged batches. It knows nothing of HTTP, gRPC or text.
//
// submit() returns at once with a LazyResult; the work happens on the engine's own thread(s)
// (CPU) or stream (CUDA). Batches submitted by one caller complete in submission order.
// Thread safety: submit() and info() may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/lazy_result.h"
#include "engine/ragged_batch.h"

namespace orchid {

class ThreadPool;  // engine/cpu/thread_pool.h

struct ModelInfo {
  std::string architecture;       // e.g. "BertModel"
  int32_t vocab_size = 0;
  int hidden_size = 0;            // dimension of the pooled output
  int max_position_embeddings = 0;
  int max_seq_length = 0;         // the longest input the model accepts (sentence-transformers)
  Pooling default_pooling = Pooling::kMean;
  bool default_normalize = false;  // sentence-transformers' 2_Normalize module present
};

// A model's forward pass, as the engine sees it: token ids in, one hidden vector per token out.
// Implementations live in src/models/ and are built from the ops in src/engine/cpu/.
// Forward() is called from one engine thread at a time.
class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelInfo& info() const = 0;
  // hidden: output, [batch.num_tokens(), info().hidden_size], row-major.
  virtual Status Forward(const RaggedBatch& batch, float* hidden) = 0;
  // CPU models: the threads Forward() may use (null: the calling thread only). The CPU engine
  // sets it before the first Forward() and keeps the pool alive while the model runs.
  virtual void SetThreadPool(ThreadPool* pool) { (void)pool; }
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual const ModelInfo& info() const = 0;
  // Queues the batch and returns immediately. Invalid batches complete with an error.
  virtual LazyResult Submit(RaggedBatch batch) = 0;
};

}  // namespace orchid
