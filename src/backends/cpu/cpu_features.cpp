#include "backends/cpu/cpu_features.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>

#include "backends/cpu/vec_math.h"

#if ORCHID_HAVE_X86_SIMD
#include <cpuid.h>
#endif

namespace orchid {
namespace {

CpuFeatures Detect() {
  CpuFeatures f;
#if ORCHID_HAVE_X86_SIMD
  __builtin_cpu_init();
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
  f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
  // GCC 12's __builtin_cpu_supports knows no AMX: CPUID leaf 7, EDX bits 22 (AMX-BF16) and 25
  // (AMX-INT8). Whether the kernel lets a process use the tiles is onednn.h's EnableAmx.
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) != 0) {
    f.amx_bf16 = (d >> 22 & 1) != 0;
    f.amx_int8 = (d >> 25 & 1) != 0;
  }
#endif
  f.best = f.avx512_bf16 ? Isa::kAvx512Bf16
           : f.avx512    ? Isa::kAvx512
           : f.avx2_fma  ? Isa::kAvx2
                         : Isa::kScalar;
  return f;
}

// ORCHID_MAX_CPU_ISA=scalar|avx2|avx512|avx512_bf16 caps the kernels from the start, as
// ONEDNN_MAX_CPU_ISA does oneDNN's (to measure an AVX2 host's paths on an AVX-512 one).
Isa InitialLimit() {
  const char* env = std::getenv("ORCHID_MAX_CPU_ISA");
  if (env == nullptr) return Isa::kAvx512Bf16;
  const std::string v = env;
  if (v == "scalar") return Isa::kScalar;
  if (v == "avx2") return Isa::kAvx2;
  if (v == "avx512") return Isa::kAvx512;
  return Isa::kAvx512Bf16;
}

std::atomic<int> isa_limit{int(InitialLimit())};

#if ORCHID_HAVE_X86_SIMD
// The rate probe (Bf16DotFasterThanFma): vdpbf16ps does two multiply-adds a lane where an FMA
// does one, but cores issue it at different rates: on a 2-core Emerald Rapids VM (2026-12-03)
// 0.5 a cycle against the FMA's 2, so there it has half the FMAs' multiply-add rate, and
// DistilBERT-base at 8 x 512 ran at 0.6x float32's speed under --dtype bfloat16.
constexpr int kProbeChains = 24;
constexpr long kProbeIters = 20000;

template <class F>
double Seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

__attribute__((no_sanitize("address", "undefined"))) ORCHID_AVX512BF16 float DotChains(
    long iters) {
  __m512 acc[kProbeChains];
  for (auto& a : acc) a = _mm512_setzero_ps();
  __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80), w = x;
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (int c = 0; c < kProbeChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], x, w);
    asm volatile("" : "+v"(x));
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kProbeChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  return _mm512_reduce_add_ps(sum);
}

__attribute__((no_sanitize("address", "undefined"))) ORCHID_AVX512 float FmaChains(long iters) {
  __m512 acc[kProbeChains];
  for (auto& a : acc) a = _mm512_setzero_ps();
  __m512 x = _mm512_set1_ps(1.0f), w = x;
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (int c = 0; c < kProbeChains; ++c) acc[c] = _mm512_fmadd_ps(x, w, acc[c]);
    asm volatile("" : "+v"(x));
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kProbeChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  return _mm512_reduce_add_ps(sum);
}

// vdpbf16ps's multiply-add rate over the FMAs' (32 and 16 a 512-bit instruction), each the best
// of 3 alternating runs.
double DotOverFmaRate() {
  volatile float sink = 0;
  double dot = 0, fma = 0;
  for (int run = 0; run < 3; ++run) {
    dot = std::max(dot, 32.0 / Seconds([&] { sink = DotChains(kProbeIters); }));
    fma = std::max(fma, 16.0 / Seconds([&] { sink = FmaChains(kProbeIters); }));
  }
  (void)sink;
  return dot / fma;
}
#endif

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx512Bf16:
      return "avx512_bf16";
    case Isa::kScalar:
      break;
  }
  return "scalar";
}

const CpuFeatures& DetectedCpu() {
  static const CpuFeatures detected = Detect();
  return detected;
}

Isa KernelIsa() {
  return Isa(std::min(int(DetectedCpu().best), isa_limit.load(std::memory_order_relaxed)));
}

void LimitIsa(Isa max) { isa_limit.store(int(max), std::memory_order_relaxed); }

bool Bf16DotFasterThanFma() {
#if ORCHID_HAVE_X86_SIMD
  // The widened path (packed_gemm.h) spends issue slots beyond its FMAs on widening the weights
  // (4 integer ops beside 32 FMAs a pair in an 8 x 2 tile, on the same ports): vdpbf16ps is
  // taken when its multiply-add rate is at least 1.15x the FMAs'.
  static const bool faster = DetectedCpu().avx512_bf16 && DotOverFmaRate() >= 1.15;
  return faster;
#else
  return false;
#endif
}

std::string DescribeCpu() {
  const CpuFeatures& f = DetectedCpu();
  std::string s = "detected";
  if (f.avx2_fma) s += " avx2+fma";
  if (f.avx512) s += " avx512";
  if (f.avx512_bf16) s += " avx512_bf16";
  if (f.avx512_vnni) s += " avx512_vnni";
  if (f.amx_bf16) s += " amx_bf16";
  if (f.amx_int8) s += " amx_int8";
  if (!f.amx_bf16 && !f.amx_int8) s += ", no amx";
  s += "; kernels use ";
  s += IsaName(KernelIsa());
  return s;
}

}  // namespace orchid
