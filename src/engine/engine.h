// Engine: runs forward passes on ragged batches. It knows nothing of HTTP, gRPC or text.
//
// submit() returns at once with a LazyResult; the work happens on the engine's own thread(s)
// (CPU) or stream (CUDA). Batches submitted by one caller complete in submission order.
// Thread safety: submit() and info() may be called from any thread.
//
// This folder is the interface only (no kernels): the worker and the gateway include it. The
// engines themselves are in src/runtime/ (a family from src/families/ on a backend from
// src/backends/).
#pragma once

#include "description/model_info.h"
#include "engine/lazy_result.h"
#include "engine/ragged_batch.h"

namespace orchid {

class Engine {
 public:
  virtual ~Engine() = default;
  virtual const ModelInfo& info() const = 0;
  // Queues the batch and returns immediately. Invalid batches complete with an error.
  virtual LazyResult Submit(RaggedBatch batch) = 0;
};

}  // namespace orchid
