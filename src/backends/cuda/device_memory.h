// DeviceMemory: the CUDA backend's device allocations (weights, the activation arena), freed
// together when it goes, and the host-to-device uploads of weights: fp32 values converted to
// bf16 or kept fp32, each optionally zero-padded to a longer length.
//
// Thread safety: none; the backend loads weights and allocates its arena from one thread.
// Uploads block until the copy is done (cudaMemcpy).
#pragma once

#include <cstddef>
#include <vector>

#include "backends/cuda/ops.h"
#include "core/status.h"
#include "core/tensor.h"

namespace orchid::cuda {

class DeviceMemory {
 public:
  DeviceMemory() = default;
  ~DeviceMemory();  // frees every allocation
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // `bytes` of device memory (at least one byte), owned by this.
  Result<void*> Alloc(size_t bytes);
  // src[0, n) as bf16, then zeros up to padded_n (>= n) elements.
  Result<bf16*> UploadBf16(const float* src, size_t n, size_t padded_n);
  // src[0, n) as fp32, then zeros up to padded_n (>= n) elements.
  Result<float*> UploadF32(const float* src, size_t n, size_t padded_n);
  Result<float*> UploadF32(const Tensor& t) { return UploadF32(t.data(), t.numel(), t.numel()); }

 private:
  std::vector<void*> allocations_;
};

}  // namespace orchid::cuda
