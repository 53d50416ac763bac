#include "backends/cuda/op_profiler.h"

#include <atomic>

#include "backends/cuda/cuda_check.h"

namespace orchid::cuda {
namespace {

std::atomic<OpProfiler*> g_profiler{nullptr};  // SetOpProfiler

}  // namespace

void SetOpProfiler(OpProfiler* p) { g_profiler.store(p); }

OpProfiler* InstalledOpProfiler() { return g_profiler.load(); }

OpProfiler::~OpProfiler() {
  std::lock_guard<std::mutex> lock(mu_);
  WaitRecords();
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
  for (cudaEvent_t e : {start_, stop_}) {
    if (e != nullptr) cudaEventDestroy(e);
  }
}

cudaEvent_t OpProfiler::TakeEvent() {
  if (!free_.empty()) {
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  const cudaError_t err = cudaEventCreate(&e);
  if (err != cudaSuccess && error_ == cudaSuccess) error_ = err;
  return err == cudaSuccess ? e : nullptr;
}

void OpProfiler::BeginPass(bool capturing) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(capturing ? skipped_ : passes_);
}

void OpProfiler::Start(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  // Both events are taken before anything is recorded, so that no host work (an event
  // creation) sits between the group's launches and its stop event.
  if (start_ == nullptr) start_ = TakeEvent();
  if (stop_ == nullptr) stop_ = TakeEvent();
  if (start_ == nullptr) return;
  const cudaError_t err = cudaEventRecord(start_, stream);
  if (err != cudaSuccess && error_ == cudaSuccess) error_ = err;
}

void OpProfiler::Stop(cudaStream_t stream, const std::string& label, double flops, double attn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (start_ == nullptr || stop_ == nullptr) return;  // Start failed (error_ says why)
  const cudaError_t err = cudaEventRecord(stop_, stream);
  if (err != cudaSuccess) {
    if (error_ == cudaSuccess) error_ = err;
    return;
  }
  auto [it, added] = index_.emplace(label, entries_.size());
  if (added) {
    entries_.emplace_back();
    entries_.back().label = label;
  }
  Entry& e = entries_[it->second];
  ++e.calls;
  e.flops += flops;
  e.attn_flops_per_len2 += attn;
  records_.push_back(Record{it->second, start_, stop_});
  start_ = stop_ = nullptr;
}

void OpProfiler::WaitRecords() {
  for (const Record& r : records_) {
    float ms = 0.f;
    cudaError_t err = cudaEventSynchronize(r.stop);
    if (err == cudaSuccess) err = cudaEventElapsedTime(&ms, r.start, r.stop);
    if (err != cudaSuccess && error_ == cudaSuccess) error_ = err;
    entries_[r.entry].ms += double(ms);
    free_.push_back(r.start);
    free_.push_back(r.stop);
  }
  records_.clear();
}

Status OpProfiler::Collect() {
  std::lock_guard<std::mutex> lock(mu_);
  WaitRecords();
  const cudaError_t err = error_;
  error_ = cudaSuccess;
  return CudaStatus(err, "OpProfiler");
}

void OpProfiler::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  WaitRecords();
  entries_.clear();
  index_.clear();
  passes_ = skipped_ = 0;
  error_ = cudaSuccess;
}

std::vector<OpProfiler::Entry> OpProfiler::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_;
}

int64_t OpProfiler::passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return passes_;
}

int64_t OpProfiler::skipped_passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return skipped_;
}

}  // namespace orchid::cuda
