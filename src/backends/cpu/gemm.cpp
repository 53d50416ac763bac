#include "backends/cpu/gemm.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>

// OpenBLAS's run-time kernel selection (DYNAMIC_ARCH builds). Weak: absent in other BLASes.
extern "C" {
char* openblas_get_corename(void) __attribute__((weak));
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}

namespace orchid {
namespace {

// OpenBLAS releases older than the CPU they run on do not recognise it and fall back to their
// SSE3 "Prescott" kernels, about 4x slower (Debian 12's 0.3.21 on Sapphire/Emerald Rapids).
// When that happened and the user did not pick a core with OPENBLAS_CORETYPE, pick the newest
// kernel family the CPU's features allow and re-run OpenBLAS's selection.
void FixBlasCoreSelection() {
  if (openblas_get_corename == nullptr || gotoblas_dynamic_init == nullptr ||
      gotoblas_dynamic_quit == nullptr || std::getenv("OPENBLAS_CORETYPE") != nullptr) {
    return;
  }
  const char* core = openblas_get_corename();
  if (core == nullptr || std::strcmp(core, "Prescott") != 0) return;
  const char* better = nullptr;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    better = "SkylakeX";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    better = "Haswell";
  }
#endif
  if (better == nullptr) return;
  setenv("OPENBLAS_CORETYPE", better, 0);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
}

// Once per process, before the first GEMM (a function-local static: concurrent first callers
// wait for it).
void InitBlas() {
  static const bool done = [] {
    FixBlasCoreSelection();
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}

}  // namespace

void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  InitBlas();
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace orchid
