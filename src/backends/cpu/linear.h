// The linear layer y = x W^T + b, on weights packed once at load time (packed_gemm.h), or on
// the BLAS library (cblas_sgemm, gemm.h) where the weights are asked for as kFloat32Blas.
#pragma once

#include <string>

#include "backends/cpu/bf16_onednn.h"
#include "backends/cpu/int8_linear.h"
#include "backends/cpu/packed_gemm.h"
#include "backends/cpu/thread_pool.h"
#include "core/tensor.h"

namespace orchid {

using LinearEpilogue = Epilogue;

// How a linear layer's weights are stored and multiplied. kBfloat16 rounds the weights to
// bfloat16 at load time and the layer's input to bfloat16 on each call, accumulating in fp32
// (AVX512_BF16 where the CPU has it): half the weight memory and, on such CPUs, about twice
// the multiply rate, for roughly 3 significant digits per operand. Everything outside the
// linear layers (norms, attention, softmax, pooling) stays fp32.
//
// kFloat32Blas keeps the fp32 weights row-major as they were read and multiplies them with
// the BLAS library (OpenBLAS, single-threaded per piece, the pieces spread over the pool);
// models built with it run their attention products on BLAS too. It is the plain library
// path, selectable with `--gemm blas` and chosen by default on CPUs without AVX2 or AVX-512;
// elsewhere the packed kernel is the default because it measured faster
// (bench/results/gemm-*.md, cpu-engine-*.md).
//
// kInt8 quantizes the weights to int8 per output channel at load time and the layer's input to
// uint8 per row on each call, multiplying on oneDNN's int8 matmul (int8_linear.h); the heads
// (full_precision) stay float32. CpuBackend calibrates and checks it (cpu_backend.h).
enum class WeightType { kFloat32, kBfloat16, kFloat32Blas, kInt8 };

// "float32" / "bfloat16" / "int8" (also "fp32", "bf16"); false for anything else.
bool ParseWeightType(const std::string& name, WeightType* out);
// "float32", "bfloat16", "float32 (BLAS)", "int8".
const char* WeightTypeName(WeightType type);

// The weight type for a --dtype name ("" means float32) and a --gemm name: "packed", "blas",
// or "auto" / "" (packed where the CPU has AVX2 + FMA or AVX-512, else BLAS for float32).
// False, with *error set, for an unknown name or bfloat16 on BLAS.
bool ResolveWeightType(const std::string& dtype, const std::string& gemm, WeightType* out,
                       std::string* error);

// An nn.Linear weight [out, in] in the kernel's panel layout (row-major as given for
// kFloat32Blas). Immutable once packed.
class PackedWeight {
 public:
  PackedWeight() = default;
  // w: [n, k] row-major (out x in), copied (rounded to bfloat16 for kBfloat16, to int8 without
  // smoothing or outlier channels for kInt8).
  static PackedWeight Pack(const float* w, int n, int k, WeightType type = WeightType::kFloat32);
  // kInt8 of w with the smoothing factors (k of them, or null) and fp32 outlier input channels
  // (int8_linear.h), its columns in column_slices slices (Int8Weight::Quantize).
  static PackedWeight QuantizeInt8(const float* w, int n, int k, const float* smoothing,
                                   const std::vector<int>& outliers = {}, int column_slices = 1);

  int n() const { return n_; }
  int k() const { return k_; }
  WeightType type() const { return type_; }
  int panels() const { return (n_ + kPanelWidth - 1) / kPanelWidth; }
  // The packed operand: view() for kFloat32, bf16_view() for kBfloat16, rows() ([n, k]
  // row-major) for kFloat32Blas.
  PanelView view() const { return {buf_.data(), n_, k_}; }
  const float* rows() const { return buf_.data(); }
  Bf16PanelView bf16_view() const { return {buf16_.data(), n_, k_}; }
  const Int8Weight& int8() const { return int8_; }
  // kBfloat16 on oneDNN (bf16_onednn.h): empty when the packed kernel runs this layer.
  const OneDnnBf16Weight& onednn_bf16() const { return onednn_bf16_; }

 private:
  int n_ = 0, k_ = 0;
  WeightType type_ = WeightType::kFloat32;
  Buffer<float> buf_;
  Buffer<bf16> buf16_;
  Int8Weight int8_;
  OneDnnBf16Weight onednn_bf16_;
};

// y[m, w.n()] from x[m, w.k()]; rows are ldx / ldy floats apart; bias (w.n() floats) may be
// null. Large m is split across the pool by row chunks, small m by output panels as well.
void Linear(ThreadPool* pool, const float* x, int m, int ldx, const PackedWeight& w,
            const float* bias, float* y, int ldy, LinearEpilogue epilogue);

}  // namespace orchid
