#include "backends/cpu/packed_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/packed_gemm_tiles.h"
#include "core/tensor.h"

namespace orchid {
namespace {

using tiles::Bf16Job;
using tiles::Job;
using tiles::kPanel;

#if ORCHID_HAVE_X86_SIMD
// Which AVX-512 bfloat16 tiles run: vdpbf16ps's or the widened FMAs'.
// The faster of the two gives the same sums bit for bit (CpuOpsTest.
// LinearBfloat16IsBitwiseTheSameOnEveryPath; only denormal inputs, which vdpbf16ps reads as
// zero, could differ): cpu_features.h's Bf16DotFasterThanFma measures which, once per process.
std::atomic<int> bf16_kernel{int(Bf16Kernel::kAuto)};

bool UseBf16Dot() {
  if (!UseAvx512Bf16()) return false;
  switch (Bf16Kernel(bf16_kernel.load(std::memory_order_relaxed))) {
    case Bf16Kernel::kDot:
      return true;
    case Bf16Kernel::kFma:
      return false;
    case Bf16Kernel::kAuto:
      break;
  }
  return Bf16DotFasterThanFma();
}
#endif  // ORCHID_HAVE_X86_SIMD

}  // namespace

void PackedGemmTiles(const float* x, int ldx, PanelView w, float alpha, const float* bias, float* y,
                     int ldy, Epilogue epilogue, int r0, int r1, int p0, int p1) {
  const Job j{x, ldx, w, alpha, bias, y, ldy, epilogue};
  if (r0 >= r1 || p0 >= p1) return;
#if ORCHID_HAVE_X86_SIMD
  if (UseAvx512()) return tiles::TilesAvx512(j, r0, r1, p0, p1);
  if (UseAvx2()) return tiles::TilesAvx2(j, r0, r1, p0, p1);
#endif
  tiles::TilesScalar(j, r0, r1, p0, p1);
}

void PackedGemmTilesBf16(const bf16* x, int ldx, Bf16PanelView w, const float* bias, float* y,
                         int ldy, Epilogue epilogue, int r0, int r1, int p0, int p1) {
  const Bf16Job j{x, ldx, w, bias, y, ldy, epilogue};
  if (r0 >= r1 || p0 >= p1) return;
#if ORCHID_HAVE_X86_SIMD
  if (UseBf16Dot()) return tiles::TilesBf16Dot(j, r0, r1, p0, p1);
  if (UseAvx512()) return tiles::TilesBf16Widened(j, r0, r1, p0, p1);
  if (UseAvx2()) return tiles::TilesBf16Avx2(j, r0, r1, p0, p1);
#endif
  tiles::TilesScalarBf16(j, r0, r1, p0, p1);
}

void SetBf16Kernel(Bf16Kernel kernel) {
#if ORCHID_HAVE_X86_SIMD
  bf16_kernel.store(int(kernel), std::memory_order_relaxed);
#else
  (void)kernel;
#endif
}

bool Bf16DotInUse() {
#if ORCHID_HAVE_X86_SIMD
  return UseBf16Dot();
#else
  return false;
#endif
}

void ConvertRowsBf16(const float* x, int ldx, int k, bf16* dst, int ld_dst, int r0, int r1) {
#if ORCHID_HAVE_X86_SIMD
  if (UseAvx512()) return tiles::ConvertRowsBf16Avx512(x, ldx, k, dst, ld_dst, r0, r1);
#endif
  for (int r = r0; r < r1; ++r) {
    const float* xr = x + size_t(r) * ldx;
    bf16* out = dst + size_t(r) * ld_dst;
    for (int i = 0; i < k; ++i) out[i] = Bf16FromFloat(xr[i]);
    if (k % 2 != 0) out[k] = 0;
  }
}

// Both bfloat16 packings convert 16 floats at a time (ConvertRowsBf16) into a thread-local
// copy first and then only move 16-bit values into the panel layout: per element that is a
// fraction of the scalar rounding they did before, which attention pays for every sequence and
// head (its K and V^T; issue 31: 12% of an int8 MiniLM pass at 8 x 512 went to packing).
void PackRowsBf16(const float* w, int n, int k, int ldw, bf16* dst) {
  const int panels = (n + kPanel - 1) / kPanel, pairs = (k + 1) / 2, ldr = 2 * pairs;
  thread_local std::vector<bf16> rows;
  rows.resize(size_t(n) * size_t(ldr));
  ConvertRowsBf16(w, ldw, k, rows.data(), ldr, 0, n);  // an odd k ends each row with a zero
  for (int p = 0; p < panels; ++p) {
    bf16* out = dst + size_t(p) * size_t(pairs) * 2 * kPanel;
    const int cols = std::min(kPanel, n - p * kPanel);
    if (cols < kPanel) std::memset(out, 0, size_t(pairs) * 2 * kPanel * sizeof(bf16));
    for (int c = 0; c < cols; ++c) {
      const bf16* src = rows.data() + size_t(p * kPanel + c) * size_t(ldr);
      for (int u = 0; u < pairs; ++u) {
        out[size_t(u) * 2 * kPanel + 2 * c] = src[2 * u];
        out[size_t(u) * 2 * kPanel + 2 * c + 1] = src[2 * u + 1];
      }
    }
  }
}

void PackColumnsBf16(const float* v, int n, int k, int ldv, bf16* dst) {
  const int panels = (n + kPanel - 1) / kPanel, pairs = (k + 1) / 2;
  const int ldr = 2 * ((n + 1) / 2);
  thread_local std::vector<bf16> rows;
  rows.resize(size_t(2 * pairs) * size_t(ldr));
  ConvertRowsBf16(v, ldv, n, rows.data(), ldr, 0, k);
  if (k % 2 != 0) std::fill_n(rows.data() + size_t(k) * size_t(ldr), size_t(ldr), bf16(0));
  for (int p = 0; p < panels; ++p) {
    bf16* out = dst + size_t(p) * size_t(pairs) * 2 * kPanel;
    const int cols = std::min(kPanel, n - p * kPanel);
    for (int u = 0; u < pairs; ++u) {
      const bf16* a = rows.data() + size_t(2 * u) * size_t(ldr) + size_t(p) * kPanel;
      const bf16* b = a + ldr;
      bf16* o = out + size_t(u) * 2 * kPanel;
      for (int c = 0; c < cols; ++c) {
        o[2 * c] = a[c];
        o[2 * c + 1] = b[c];
      }
      for (int c = cols; c < kPanel; ++c) o[2 * c] = o[2 * c + 1] = 0;
    }
  }
}

void UnpackRows(const PanelView& packed, int r0, int r1, float* w) {
  for (int r = r0; r < r1; ++r) {
    const float* src = packed.panel(r / kPanel) + r % kPanel;
    float* out = w + size_t(r - r0) * size_t(packed.k);
    for (int i = 0; i < packed.k; ++i) out[i] = src[size_t(i) * kPanel];
  }
}

void PackRows(const float* w, int n, int k, int ldw, float* dst) {
  const int panels = (n + kPanel - 1) / kPanel;
  for (int p = 0; p < panels; ++p) {
    float* out = dst + size_t(p) * size_t(k) * kPanel;
    const int cols = std::min(kPanel, n - p * kPanel);
    if (cols < kPanel) std::memset(out, 0, size_t(k) * kPanel * sizeof(float));
    for (int c = 0; c < cols; ++c) {
      const float* src = w + size_t(p * kPanel + c) * size_t(ldw);
      for (int i = 0; i < k; ++i) out[size_t(i) * kPanel + c] = src[i];
    }
  }
}

void PackColumns(const float* w, int n, int k, int ldw, float* dst) {
  const int panels = (n + kPanel - 1) / kPanel;
  for (int p = 0; p < panels; ++p) {
    float* out = dst + size_t(p) * size_t(k) * kPanel;
    const int cols = std::min(kPanel, n - p * kPanel);
    for (int i = 0; i < k; ++i) {
      const float* src = w + size_t(i) * size_t(ldw) + p * kPanel;
      std::memcpy(out + size_t(i) * kPanel, src, size_t(cols) * sizeof(float));
      if (cols < kPanel) {
        std::memset(out + size_t(i) * kPanel + cols, 0, size_t(kPanel - cols) * sizeof(float));
      }
    }
  }
}

}  // namespace orchid
