// Turning CUDA runtime / cuBLAS errors into orchid Statuses (kInternal, naming the call).
// Thread safety: stateless macros.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>

#include "core/status.h"

namespace orchid::cuda {

inline Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  return Status::Internal(std::string(what) + ": " + cudaGetErrorName(e) + " (" +
                          cudaGetErrorString(e) + ")");
}

inline Status CublasStatus(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Status::Internal(std::string(what) + ": cuBLAS status " + std::to_string(int(e)));
}

}  // namespace orchid::cuda

#define ORCHID_CUDA_STATUS(expr) ::orchid::cuda::CudaStatus((expr), #expr)
#define ORCHID_CUDA_TRY(expr) ORCHID_RETURN_IF_ERROR(ORCHID_CUDA_STATUS(expr))
#define ORCHID_CUBLAS_TRY(expr) \
  ORCHID_RETURN_IF_ERROR(::orchid::cuda::CublasStatus((expr), #expr))
