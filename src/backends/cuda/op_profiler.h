// OpProfiler: per-op GPU times of the CUDA backend's eager passes (off by default). The
// backend calls it from one place, CudaBackend::Launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace orchid::cuda {

// OpProfiler: where a pass's GPU time goes, for bench/gpu/cuda_check.cpp's `bench --profile`
// (the device machine has no nsys/ncu). While one is installed (SetOpProfiler), each pass that
// CudaBackend::Begin() sees outside a stream capture records a pair of timing events around
// each group of launches of each op, under a label naming the op and what matters of its shape:
// "Linear n=3072 k=768 gelu: gemm" and, separately, "...: gelu" (the exact-GELU kernel after
// the GEMM), "...: f32->bf16" (an fp32 input converted first), "...: copy cols" (a padded
// width); "Norm LayerNorm +res" (a norm that fuses the deferred residual add),
// "ResidualAdd (flush)" (one it could not fuse), "Attention h=16 kv=8 d=128 causal", "Embed
// LayerNorm", ... Collect() waits for the recorded events and adds their elapsed times into the
// per-label totals. A pass under a stream capture (CUDA graphs) records nothing and is counted
// in skipped_passes(): a replayed graph runs no backend code, so profile with graphs off.
// Uninstalled (the default) it costs one pointer test per op and records no event; installed,
// the events change no result (they only add timestamps to the stream). An op's time includes
// the host's launch gap when the GPU waits for the host (launch-bound passes: batch-1 latency
// at short lengths); in throughput passes the queue is full and it is the kernels' time.
// Thread safety: all members lock; install or uninstall between passes only.
class OpProfiler {
 public:
  struct Entry {
    std::string label;
    int64_t calls = 0;  // timed launch groups
    double ms = 0;      // summed GPU time (after Collect)
    double flops = 0;   // Linear GEMMs: 2 m n k summed over the calls (m: the bucket's rows)
    // Attention: 4 head_dim num_heads (halved when causal) summed over the calls; times the sum
    // of len^2 over a pass's sequences, divided by passes(), it is the attention FLOPs.
    double attn_flops_per_len2 = 0;
  };

  OpProfiler() = default;
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // Waits for every recorded event pair, adds the elapsed times into the totals, and keeps
  // the events for reuse. A failed record or timing since the last Collect is reported here.
  Status Collect();
  // Drops the totals and the pass counters (after waiting for the events recorded so far).
  void Reset();
  // The totals, one entry per label in the order first seen.
  std::vector<Entry> entries() const;
  int64_t passes() const;          // passes recorded
  int64_t skipped_passes() const;  // passes under a stream capture (nothing recorded)

 private:
  friend class CudaBackend;
  struct Record {
    size_t entry;
    cudaEvent_t start, stop;
  };
  void BeginPass(bool capturing);
  // Start() before a group of launches, Stop() after it: one Record.
  void Start(cudaStream_t stream);
  void Stop(cudaStream_t stream, const std::string& label, double flops, double attn);
  cudaEvent_t TakeEvent();  // (mu_ held)
  void WaitRecords();       // (mu_ held) elapsed times into the entries, events back to free_

  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  std::map<std::string, size_t> index_;           // label -> entries_ index
  std::vector<Record> records_;                   // recorded, not yet collected
  std::vector<cudaEvent_t> free_;                 // timing events for reuse
  cudaEvent_t start_ = nullptr, stop_ = nullptr;  // the open group's pair (Start .. Stop)
  int64_t passes_ = 0, skipped_ = 0;
  cudaError_t error_ = cudaSuccess;  // the first failure since the last Collect
};

// Installs `p` for the passes that begin from now on, process-wide (nullptr: profiling off).
// The caller keeps `p` alive until it uninstalls it and the last profiled pass has been
// collected.
void SetOpProfiler(OpProfiler* p);
// The installed profiler, or null (what CudaBackend::Begin reads).
OpProfiler* InstalledOpProfiler();

}  // namespace orchid::cuda
