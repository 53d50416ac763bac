#include "backends/cpu/vec_math.h"

#include <atomic>
#include <cstdlib>
#include <string>

namespace orchid::simd {
namespace {

// ORCHID_MAX_CPU_ISA=scalar|avx2|avx512|avx512_bf16 caps the kernels from the start, as
// ONEDNN_MAX_CPU_ISA does oneDNN's (to measure an AVX2 host's paths on an AVX-512 one).
int InitialLimit() {
  const char* env = std::getenv("ORCHID_MAX_CPU_ISA");
  if (env == nullptr) return int(Isa::kAvx512Bf16);
  const std::string v = env;
  if (v == "scalar") return int(Isa::kScalar);
  if (v == "avx2") return int(Isa::kAvx2);
  if (v == "avx512") return int(Isa::kAvx512);
  return int(Isa::kAvx512Bf16);
}

std::atomic<int> isa_limit{InitialLimit()};

bool Allowed(Isa isa) { return int(isa) <= isa_limit.load(std::memory_order_relaxed); }

}  // namespace

void LimitIsa(Isa max) { isa_limit.store(int(max), std::memory_order_relaxed); }

bool HasAvx2Fma() {
#if ORCHID_HAVE_X86_SIMD
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has && Allowed(Isa::kAvx2);
#else
  return false;
#endif
}

bool HasAvx512() {
#if ORCHID_HAVE_X86_SIMD
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return has && Allowed(Isa::kAvx512);
#else
  return false;
#endif
}

bool HasAvx512Bf16() {
#if ORCHID_HAVE_X86_SIMD
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has && HasAvx512() && Allowed(Isa::kAvx512Bf16);
#else
  return false;
#endif
}

}  // namespace orchid::simd
