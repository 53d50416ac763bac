// LtGemm (gemm.h): cuBLASLt plans cached per shape. See gemm.h for the layout mapping.
#include "backends/cuda/gemm.h"

#include <cuda_runtime.h>

#include <string>

#include "backends/cuda/cuda_check.h"

namespace orchid::cuda {

LtGemm::~LtGemm() {
  for (auto& [key, p] : plans_) {
    (void)key;
    if (p.a != nullptr) cublasLtMatrixLayoutDestroy(p.a);
    if (p.b != nullptr) cublasLtMatrixLayoutDestroy(p.b);
    if (p.d != nullptr) cublasLtMatrixLayoutDestroy(p.d);
    if (p.desc != nullptr) cublasLtMatmulDescDestroy(p.desc);
  }
  if (workspace_ != nullptr) cudaFree(workspace_);
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

Status LtGemm::Init(size_t workspace_bytes) {
  ORCHID_CUBLAS_TRY(cublasLtCreate(&handle_));
  workspace_bytes_ = workspace_bytes;
  ORCHID_CUDA_TRY(cudaMalloc(&workspace_, workspace_bytes_));
  return Status::Ok();
}

Status LtGemm::MakePlan(int T, int N, int K, GemmEpilogue epilogue, cudaDataType_t out_type,
                        Plan* plan) {
  ORCHID_CUBLAS_TRY(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  ORCHID_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                   &trans_a, sizeof(trans_a)));
  ORCHID_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                   &trans_b, sizeof(trans_b)));
  cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_DEFAULT;
  if (epilogue == GemmEpilogue::kBias) ep = CUBLASLT_EPILOGUE_BIAS;
  if (epilogue == GemmEpilogue::kBiasGelu) ep = CUBLASLT_EPILOGUE_GELU_BIAS;
  ORCHID_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                   &ep, sizeof(ep)));
  if (epilogue != GemmEpilogue::kNone) {
    // The bias has the output's type (bf16 bias for bf16 y, fp32 bias for fp32 y).
    const cudaDataType_t bias_type = out_type;
    ORCHID_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(
        plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
  }
  // A = w as K x N column-major (ld K), transposed by the op; B = x as K x T (ld K);
  // D = y as N x T (ld N), bf16 or fp32 (C = D, with beta = 0).
  ORCHID_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, uint64_t(K), uint64_t(N), K));
  ORCHID_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, uint64_t(K), uint64_t(T), K));
  ORCHID_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&plan->d, out_type, uint64_t(N), uint64_t(T), N));

  cublasLtMatmulPreference_t pref = nullptr;
  ORCHID_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&pref));
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_, sizeof(workspace_bytes_));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->d, plan->d,
                                        pref, 1, &result, &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  ORCHID_CUBLAS_TRY(st);
  if (found == 0) {
    return Status::Internal(std::string("cuBLASLt found no algorithm for a bf16 GEMM into ") +
                            (out_type == CUDA_R_32F ? "fp32" : "bf16") + " T=" + std::to_string(T) +
                            " N=" + std::to_string(N) + " K=" + std::to_string(K));
  }
  plan->algo = result.algo;
  return Status::Ok();
}

Status LtGemm::Run(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias,
                   __nv_bfloat16* y, int T, int N, int K, GemmEpilogue epilogue,
                   cudaStream_t stream) {
  return RunTyped(x, w, bias, y, T, N, K, epilogue, CUDA_R_16BF, stream);
}

Status LtGemm::Run(const __nv_bfloat16* x, const __nv_bfloat16* w, const float* bias, float* y,
                   int T, int N, int K, GemmEpilogue epilogue, cudaStream_t stream) {
  return RunTyped(x, w, bias, y, T, N, K, epilogue, CUDA_R_32F, stream);
}

Status LtGemm::RunTyped(const __nv_bfloat16* x, const __nv_bfloat16* w, const void* bias, void* y,
                        int T, int N, int K, GemmEpilogue epilogue, cudaDataType_t out_type,
                        cudaStream_t stream) {
  if (T <= 0 || N <= 0 || K <= 0) return Status::InvalidArgument("LtGemm: empty shape");
  if ((epilogue != GemmEpilogue::kNone) != (bias != nullptr)) {
    return Status::InvalidArgument("LtGemm: bias must be given iff the epilogue adds one");
  }
  const auto key = std::make_tuple(T, N, K, int(epilogue), int(out_type));
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    Plan plan;
    const Status s = MakePlan(T, N, K, epilogue, out_type, &plan);
    it = plans_.emplace(key, plan).first;  // destroyed with the others even on failure
    if (!s.ok()) {
      plans_.erase(it);
      if (plan.a != nullptr) cublasLtMatrixLayoutDestroy(plan.a);
      if (plan.b != nullptr) cublasLtMatrixLayoutDestroy(plan.b);
      if (plan.d != nullptr) cublasLtMatrixLayoutDestroy(plan.d);
      if (plan.desc != nullptr) cublasLtMatmulDescDestroy(plan.desc);
      return s;
    }
  }
  Plan& p = it->second;
  if (bias != nullptr) {
    ORCHID_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                     &bias, sizeof(bias)));
  }
  const float alpha = 1.f, beta = 0.f;
  ORCHID_CUBLAS_TRY(cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.d, y, p.d,
                                   &p.algo, workspace_, workspace_bytes_, stream));
  return Status::Ok();
}

}  // namespace orchid::cuda
