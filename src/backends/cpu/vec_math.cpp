#include "backends/cpu/vec_math.h"

#include <atomic>

namespace orchid::simd {
namespace {

std::atomic<int> isa_limit{int(Isa::kAvx512Bf16)};

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
