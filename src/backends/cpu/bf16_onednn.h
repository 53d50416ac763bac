// bfloat16 linear layers on oneDNN's matmul: AMX-BF16 tiles where the CPU has them (Sapphire,
// Emerald, Granite Rapids), its AVX512-BF16 kernels elsewhere (Zen 4, Cooper Lake); oneDNN
// picks at run time and ONEDNN_MAX_CPU_ISA caps it. The numbers are those of orchid's packed
// bfloat16 kernel (packed_gemm.h): weights and each call's input rounded to bfloat16 (nearest
// even), exact products, fp32 accumulation, fp32 bias and epilogue; only the order of the sums
// differs, and exact GELU is oneDNN's (its erf approximation, applied in the kernel's epilogue).
//
// Which of the two runs a layer is decided per CPU and layer shape, once per process, by a
// probe (ChooseBf16Gemm): both multiply the layer's own weights on one thread, 128 rows (a
// text) and 16 rows (a short query), alternating runs, best of five each; oneDNN is kept only
// where it is clearly faster at both (under 0.85x the packed kernel's time, so that a near tie
// cannot flip between processes; the other's copy of the weights is dropped). The choices are
// logged (Bf16GemmChoices). ORCHID_BF16_GEMM=packed|onednn|auto in the environment, or
// SetBf16Gemm (tests), pins it.
//
// Threads, scratchpads and row blocks as in onednn.h (BlockedMatmul): the pool splits the rows,
// each thread runs fixed-size blocks of them single-threaded.
#pragma once

#include <memory>
#include <string>

#include "backends/cpu/packed_gemm.h"
#include "backends/cpu/thread_pool.h"

namespace orchid {

enum class Bf16Gemm { kAuto, kPacked, kOneDnn };
// Pins the choice for weights packed from now on (kAuto: probe). Overrides ORCHID_BF16_GEMM.
void SetBf16Gemm(Bf16Gemm gemm);
// The setting now: SetBf16Gemm's, else ORCHID_BF16_GEMM's, else kAuto.
Bf16Gemm Bf16GemmSetting();

class OneDnnBf16Weight {
 public:
  OneDnnBf16Weight() = default;
  // w: [n, k] row-major (out x in), rounded to bfloat16. Empty where oneDNN makes no bfloat16
  // matmul on this CPU (it has none below AVX-512), or k is odd.
  static OneDnnBf16Weight Pack(const float* w, int n, int k);

  bool empty() const { return impl_ == nullptr; }
  int n() const { return n_; }
  int k() const { return k_; }
  // oneDNN's kernel for it, e.g. "brg:avx512_core_amx" (not empty()).
  const std::string& kernel() const;

  // y[m, n] (rows ldy floats apart) from x[m, k] (ldx floats apart); bias (n floats) may be
  // null; epilogue kNone, kGelu (exact: oneDNN's gelu_erf post-op) or kAccumulate (y += ...). Rows
  // are split over pool.
  void Run(ThreadPool* pool, const float* x, int m, int ldx, const float* bias, float* y, int ldy,
           Epilogue epilogue) const;

 private:
  struct Impl;
  int n_ = 0, k_ = 0;
  std::shared_ptr<const Impl> impl_;
};

// Whether a bfloat16 layer runs on oneDNN: false when `onednn` is empty, else the setting, and
// under kAuto the probe (once per shape and process). `onednn` and `packed` hold the same
// weights.
bool ChooseBf16Gemm(const OneDnnBf16Weight& onednn, Bf16PanelView packed);

// The probe's choices so far, one per shape, for the log: "768->3072 oneDNN (brg:... 1.21 ms,
// packed 3.40 ms; at 16 rows ...); ..." (empty when no probe ran).
std::string Bf16GemmChoices();

}  // namespace orchid
