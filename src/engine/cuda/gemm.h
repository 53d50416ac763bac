// LtGemm: the CUDA backend's dense layers through cuBLASLt, BF16 in and out, FP32 accumulate,
// with cuBLASLt's fused epilogues.
//
//   y[T, N] = x[T, K] . w[N, K]^T (+ bias[N]) (then GELU)         all row-major, bf16
//
// w is a PyTorch Linear weight ([out, in], row-major) as stored in the checkpoint. In cuBLAS's
// column-major terms this is D (N x T, ld N) = op(A) (N x K) * B (K x T), with A = w seen as a
// K x N column-major matrix (ld K) and op = transpose, B = x seen as K x T (ld K). The bias
// epilogue adds bias[i] to row i of D, i.e. to output feature i. GELU is cuBLASLt's, the tanh
// approximation (max |difference| to erf-GELU about 3e-4, below bf16 resolution at |x| ~ 1).
//
// One plan (descriptors + the heuristic's best algorithm) is cached per (T, N, K, epilogue);
// the engine only ever uses bucketed T, so the cache stays small. Bias pointers are set on the
// cached descriptor before each call. The workspace is allocated once, so calls are graph-safe.
// Thread safety: none; one LtGemm per engine, used under the engine's lock.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "core/status.h"

namespace orchid::cuda {

enum class GemmEpilogue : uint8_t { kNone, kBias, kBiasGelu };

class LtGemm {
 public:
  LtGemm() = default;
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // Creates the handle and a workspace of `workspace_bytes` on the current device.
  Status Init(size_t workspace_bytes = size_t(32) << 20);

  // Enqueues y = x w^T (+ bias) (GELU) on `stream`. bias must be non-null iff the epilogue
  // uses one (bf16, [N]). T, N, K > 0; all pointers 16-byte aligned device pointers.
  Status Run(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias,
             __nv_bfloat16* y, int T, int N, int K, GemmEpilogue epilogue, cudaStream_t stream);

  size_t cached_plans() const { return plans_.size(); }

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  Status MakePlan(int T, int N, int K, GemmEpilogue epilogue, Plan* plan);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<std::tuple<int, int, int, int>, Plan> plans_;
};

}  // namespace orchid::cuda
