#include "backends/cuda/device_memory.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/bf16_host.h"
#include "backends/cuda/cuda_check.h"

namespace orchid::cuda {

DeviceMemory::~DeviceMemory() {
  for (void* p : allocations_) cudaFree(p);
}

Result<void*> DeviceMemory::Alloc(size_t bytes) {
  void* p = nullptr;
  ORCHID_CUDA_TRY(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  allocations_.push_back(p);
  return p;
}

Result<bf16*> DeviceMemory::UploadBf16(const float* src, size_t n, size_t padded_n) {
  std::vector<uint16_t> h(padded_n, 0);  // the padding is zero
  for (size_t i = 0; i < n; ++i) h[i] = FloatToBf16Bits(src[i]);
  ORCHID_ASSIGN_OR_RETURN(void* p, Alloc(h.size() * sizeof(uint16_t)));
  ORCHID_CUDA_TRY(cudaMemcpy(p, h.data(), h.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
  return static_cast<bf16*>(p);
}

Result<float*> DeviceMemory::UploadF32(const float* src, size_t n, size_t padded_n) {
  std::vector<float> h(padded_n, 0.f);  // the padding is zero
  std::copy(src, src + n, h.begin());
  ORCHID_ASSIGN_OR_RETURN(void* p, Alloc(h.size() * sizeof(float)));
  ORCHID_CUDA_TRY(cudaMemcpy(p, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  return static_cast<float*>(p);
}

}  // namespace orchid::cuda
