// How a request competes for the engine: its priority, whether it is a query a person waits for
// or bulk work, which fair-share flow it belongs to, its deadline and its cancellation. Set by
// the HTTP layer (from the request's `priority` and `input_type`, the client's timeout headers
// and its connection) or by the worker's gRPC service (from the proto and the call's deadline),
// and read by the TokenBudgetScheduler.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "core/cancellation.h"

namespace orchid {

enum class RequestClass : uint8_t {
  kAuto,   // decided by size (QueryThresholds) where the request is queued
  kQuery,  // a person is waiting: goes ahead of bulk work of the same priority
  kBulk,   // indexing and other throughput work: shares the engine fairly with other bulk work
};

const char* RequestClassName(RequestClass c);  // "auto", "query", "bulk"

// What makes an unmarked request a query: few inputs and few tokens (both at most these).
struct QueryThresholds {
  int max_inputs = 8;
  int64_t max_tokens = 1024;
};

struct Scheduling {
  // vLLM's `priority`: lower goes first; requests of equal priority are ordered by class
  // (queries first), then bulk requests share by tokens.
  int32_t priority = 0;
  RequestClass request_class = RequestClass::kAuto;
  // Bulk fair sharing is per flow: requests with the same non-zero flow share one turn (the
  // chunks of one client request split by a gateway); 0 = the request is its own flow.
  uint64_t flow = 0;
  // Sequences not put in a batch by then are dropped and the request fails (DeadlineExceeded).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Null = never cancelled. Once cancelled, sequences not yet in a batch are dropped and the
  // request fails (Cancelled).
  std::shared_ptr<const Cancellation> cancellation;

  bool cancelled() const { return cancellation != nullptr && cancellation->cancelled(); }
};

// kQuery or kBulk: `request_class` when set, else by size.
RequestClass Classify(RequestClass request_class, size_t inputs, int64_t tokens,
                      const QueryThresholds& thresholds);

}  // namespace orchid
