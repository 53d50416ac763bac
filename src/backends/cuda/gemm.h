// LtGemm: the CUDA backend's dense layers through cuBLASLt, BF16 in, BF16 or FP32 out, FP32
// accumulate, with cuBLASLt's fused epilogues.
//
//   y[T, N] = x[T, K] . w[N, K]^T (+ bias[N]) (then GELU)         all row-major
//
// x and w are bf16. y and bias have one type, the output type: bf16 (the layers' activations),
// or fp32 (the heads' outputs: the fp32 accumulator is written as is, never rounded to bf16,
// and the bias is added in fp32). cuBLASLt's bias vector has the output's type by default
// (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE); it is set explicitly to that type.
//
// w is a PyTorch Linear weight ([out, in], row-major) as stored in the checkpoint. In cuBLAS's
// column-major terms this is D (N x T, ld N) = op(A) (N x K) * B (K x T), with A = w seen as a
// K x N column-major matrix (ld K) and op = transpose, B = x seen as K x T (ld K). The bias
// epilogue adds bias[i] to row i of D, i.e. to output feature i. GELU is cuBLASLt's, the tanh
// approximation (max |difference| to erf-GELU about 3e-4, below bf16 resolution at |x| ~ 1).
//
// One plan (descriptors + the heuristic's best algorithm) is cached per (T, N, K, epilogue,
// output type); the engine only ever uses bucketed T, so the cache stays small. Bias pointers
// are set on the cached descriptor before each call. The workspace is allocated once, so calls
// are graph-safe.
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
  // uses one ([N], the output's type). T, N, K > 0; all pointers 16-byte aligned device
  // pointers. bf16 output:
  Status Run(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias,
             __nv_bfloat16* y, int T, int N, int K, GemmEpilogue epilogue, cudaStream_t stream);
  // fp32 output (and an fp32 bias), straight from the fp32 accumulator:
  Status Run(const __nv_bfloat16* x, const __nv_bfloat16* w, const float* bias, float* y, int T,
             int N, int K, GemmEpilogue epilogue, cudaStream_t stream);

  size_t cached_plans() const { return plans_.size(); }

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  // out_type (CUDA_R_16BF or CUDA_R_32F) is the type of y (C = D) and of the bias.
  Status MakePlan(int T, int N, int K, GemmEpilogue epilogue, cudaDataType_t out_type, Plan* plan);
  Status RunTyped(const __nv_bfloat16* x, const __nv_bfloat16* w, const void* bias, void* y, int T,
                  int N, int K, GemmEpilogue epilogue, cudaDataType_t out_type,
                  cudaStream_t stream);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<std::tuple<int, int, int, int, int>, Plan> plans_;  // (T, N, K, epilogue, out type)
};

}  // namespace orchid::cuda
