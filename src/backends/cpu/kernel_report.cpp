#include "backends/cpu/kernel_report.h"

#include "backends/cpu/bf16_onednn.h"
#include "backends/cpu/cpu_features.h"
#include "backends/cpu/int8_linear.h"
#include "backends/cpu/packed_gemm.h"

namespace orchid {

std::vector<KernelNote> DescribeCpuKernels(WeightType type) {
  std::vector<KernelNote> notes;
  notes.push_back({false, "CPU: " + DescribeCpu()});
  if (type == WeightType::kInt8) {
    notes.push_back({false, std::string("--dtype int8: the linear layers multiply int8 on "
                                        "oneDNN's ") +
                                OneDnnIsa() + " kernels"});
  } else if (type == WeightType::kBfloat16) {
    // Bf16DotInUse() runs the once-per-process rate probe now rather than in the first request.
    const char* how = UseAvx512Bf16()
                          ? (Bf16DotInUse() ? "AVX512_BF16's vdpbf16ps"
                                            : "AVX-512 FMAs (this CPU's vdpbf16ps measured slower)")
                      : UseAvx512() ? "AVX-512 FMAs"
                      : UseAvx2()   ? "AVX2 FMAs"
                                    : nullptr;
    if (how != nullptr) {
      notes.push_back({false, std::string("--dtype bfloat16: the linear layers multiply with ") +
                                  how});
    } else {
      notes.push_back({true, "--dtype bfloat16: this CPU has no AVX2; the linear layers run "
                             "scalar code, much slower than --dtype float32"});
    }
  }
  return notes;
}

std::vector<KernelNote> DescribeCpuKernelChoices(WeightType type) {
  std::vector<KernelNote> notes;
  if (type != WeightType::kBfloat16) return notes;
  if (const std::string choices = Bf16GemmChoices(); !choices.empty()) {
    // Per layer shape (k->n), which kernel the load-time probe kept (bf16_onednn.h).
    notes.push_back({false, std::string("--dtype bfloat16: oneDNN's ") + OneDnnIsa() +
                                " against orchid's packed kernel: " + choices});
  }
  return notes;
}

}  // namespace orchid
