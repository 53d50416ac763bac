// General GEMM on BLAS (cblas_sgemm), single-threaded (callers split work over ThreadPool, so
// BLAS's own threads never compete with the ops for the cores).
//
// By default the forward passes do not use it: linear layers and attention run on
// packed_gemm.h, which was 2.5x faster than OpenBLAS at 16 rows and about as fast at 4096
// (OpenBLAS re-packs the weights on every call). Models loaded with WeightType::kFloat32Blas
// (`--gemm blas`) run every product here instead (linear.cpp, attention.cpp). On first use it
// also repairs OpenBLAS's CPU detection (see gemm.cpp).
#pragma once

namespace orchid {

// Row-major C[m, n] = alpha * op(A) * op(B) + beta * C, on the calling thread.
// op(A) is [m, k] (A is [k, m] when trans_a); op(B) is [k, n] (B is [n, k] when trans_b).
void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace orchid
