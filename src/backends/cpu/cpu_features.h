// The CPU's instruction sets, detected once per process, in one description: what every kernel
// of this folder dispatches on (KernelIsa), what the int8 cache keys its results by and what
// the log prints (DescribeCpu). Tests and ORCHID_MAX_CPU_ISA cap the sets the kernels use
// (LimitIsa), never what is detected, so that one machine runs every code path.
//
// Thread safety: everything here may be called from any thread; LimitIsa is meant for start-up
// and tests, not for while ops run.
#pragma once

#include <cstdint>
#include <string>

namespace orchid {

// The kernels' instruction sets, each including the ones before it.
enum class Isa : uint8_t {
  kScalar = 0,
  kAvx2 = 1,        // AVX2 + FMA
  kAvx512 = 2,      // AVX-512 F / DQ / BW / VL
  kAvx512Bf16 = 3,  // + AVX512_BF16 (vdpbf16ps: Cooper Lake, Sapphire Rapids, Zen 4 and later)
};
const char* IsaName(Isa isa);  // "scalar", "avx2", "avx512", "avx512_bf16"

// What the CPU has (CPUID, through the compiler's builtins), whatever the cap.
struct CpuFeatures {
  bool avx2_fma = false;
  bool avx512 = false;  // F, DQ, BW and VL
  bool avx512_bf16 = false;
  bool avx512_vnni = false;
  bool amx_bf16 = false;
  bool amx_int8 = false;
  Isa best = Isa::kScalar;  // the highest Isa the CPU runs
};
const CpuFeatures& DetectedCpu();

// The instruction set the kernels use now: the best detected, at most the cap (none, or the
// environment's ORCHID_MAX_CPU_ISA = scalar | avx2 | avx512 | avx512_bf16 read at start-up, or
// LimitIsa's).
Isa KernelIsa();
void LimitIsa(Isa max);
inline bool UseAvx2() { return KernelIsa() >= Isa::kAvx2; }
inline bool UseAvx512() { return KernelIsa() >= Isa::kAvx512; }
inline bool UseAvx512Bf16() { return KernelIsa() >= Isa::kAvx512Bf16; }

// Whether this core's vdpbf16ps multiplies and adds faster than its fp32 FMAs (false without
// AVX512_BF16). They run at different rates on different cores (on a 2-core Emerald Rapids VM
// at half the FMAs' rate), so it is measured, once per process: 24 independent chains of each
// instruction, best of 3 alternating runs (~1.5 ms).
bool Bf16DotFasterThanFma();

// One line for the log and the int8 cache's key, e.g. "detected avx2+fma avx512 avx512_bf16
// avx512_vnni, no amx; kernels use avx512_bf16".
std::string DescribeCpu();

}  // namespace orchid
