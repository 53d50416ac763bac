// GEMM against a pre-packed right-hand operand: the kernel under Linear and attention.
//
// The right-hand operand W (an nn.Linear weight [n, k]: out x in) is stored as panels of 16
// output columns, each [k][16] contiguous, the order the kernel reads it in. BLAS re-packs
// its operand on every call, which at the small row counts of online embedding costs more
// than the multiplication; here weights are packed once at load time (PackedWeight) and
// per-call operands (attention's K and V) are packed into scratch by the caller.
// Each output element sums over k in one fixed order whatever m is, so a row's result does
// not depend on the other rows of the call (batch composition never changes embeddings).
#pragma once

#include <cstddef>
#include <cstdint>

namespace orchid {

inline constexpr int kPanelWidth = 16;

// A packed operand: n output columns, k inputs; panel p at data + p * k * kPanelWidth.
struct PanelView {
  const float* data = nullptr;
  int n = 0;
  int k = 0;
  int panels() const { return (n + kPanelWidth - 1) / kPanelWidth; }
  const float* panel(int p) const { return data + size_t(p) * size_t(k) * kPanelWidth; }
};

// Floats a packed [n, k] operand takes.
inline size_t PackedSize(int n, int k) {
  return size_t((n + kPanelWidth - 1) / kPanelWidth) * size_t(k) * kPanelWidth;
}

// Packs W given as rows: w[c * ldw + i] is W[c][i] (an nn.Linear weight, or K in Q K^T).
void PackRows(const float* w, int n, int k, int ldw, float* dst);
// PackRows undone: W's rows [r0, r1) from the packed operand into w (row-major, k apart).
void UnpackRows(const PanelView& packed, int r0, int r1, float* w);
// Packs W given as columns: w[i * ldw + c] is W[c][i] (V in P V).
void PackColumns(const float* w, int n, int k, int ldw, float* dst);

enum class Epilogue {
  kNone,        // y = alpha * x W^T + b
  kGelu,        // y = gelu(alpha * x W^T + b)
  kAccumulate,  // y += alpha * x W^T + b   (a residual connection)
};

// y[r, c] for rows [r0, r1) and panels [p0, p1) (columns [16 p0, min(16 p1, n))), on the
// calling thread. x rows are ldx floats apart, y rows ldy; bias (n floats) may be null.
void PackedGemmTiles(const float* x, int ldx, PanelView w, float alpha, const float* bias, float* y,
                     int ldy, Epilogue epilogue, int r0, int r1, int p0, int p1);

// The whole product on the calling thread.
inline void PackedGemm(const float* x, int m, int ldx, PanelView w, float alpha, const float* bias,
                       float* y, int ldy, Epilogue epilogue) {
  PackedGemmTiles(x, ldx, w, alpha, bias, y, ldy, epilogue, 0, m, 0, w.panels());
}

// ---- bfloat16 operands, fp32 accumulation ---------------------------------------------------
//
// The same panels holding bfloat16 (the top half of an fp32, rounded to nearest even), with
// each pair of consecutive k interleaved: panel p is [ceil(k / 2)][16 columns][2], the operand
// order of AVX512_BF16's vdpbf16ps, which multiplies pairs and accumulates in fp32 (two
// multiply-adds a lane per instruction; how many a cycle depends on the core). x is converted to
// bfloat16 per call (ConvertRowsBf16), k padded to even with a zero. Where the CPU lacks
// AVX512_BF16, or its vdpbf16ps is slower than its FMAs (measured once per process), the same
// numbers are multiplied with fp32 FMAs (bfloat16 products are exact in fp32) in vdpbf16ps's
// order: the same sums, bit for bit. As with fp32, each output sums over k in a fixed order
// whatever m is.

using bf16 = uint16_t;

// Round to nearest even; NaN stays a (quiet) NaN.
inline bf16 Bf16FromFloat(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16((u >> 16) | 0x40u);
  return bf16((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float FloatFromBf16(bf16 h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

struct Bf16PanelView {
  const bf16* data = nullptr;
  int n = 0;
  int k = 0;
  int pairs() const { return (k + 1) / 2; }
  int panels() const { return (n + kPanelWidth - 1) / kPanelWidth; }
  const bf16* panel(int p) const {
    return data + size_t(p) * size_t(pairs()) * 2 * kPanelWidth;
  }
};

// bfloat16 elements a packed [n, k] operand takes.
inline size_t PackedSizeBf16(int n, int k) {
  return size_t((n + kPanelWidth - 1) / kPanelWidth) * size_t((k + 1) / 2) * 2 * kPanelWidth;
}

// Packs W given as rows (w[c * ldw + i] is W[c][i]), rounding to bfloat16.
void PackRowsBf16(const float* w, int n, int k, int ldw, bf16* dst);
// Packs W given as columns (v[i * ldv + c] is W[c][i]: W = V^T for V [k, n]), rounding to
// bfloat16: the same packed operand as PackRowsBf16 of V^T, without transposing V first.
void PackColumnsBf16(const float* v, int n, int k, int ldv, bf16* dst);

// dst[r * ld_dst + i] = bf16(x[r * ldx + i]) for rows [r0, r1), i < k, and a zero at i = k
// when k is odd. ld_dst must be even and at least k + 1 (k even: k).
void ConvertRowsBf16(const float* x, int ldx, int k, bf16* dst, int ld_dst, int r0, int r1);

// y[r, c] = epilogue(x W^T + b) for rows [r0, r1) and panels [p0, p1), x in bfloat16 as
// ConvertRowsBf16 wrote it (ldx even).
void PackedGemmTilesBf16(const bf16* x, int ldx, Bf16PanelView w, const float* bias, float* y,
                         int ldy, Epilogue epilogue, int r0, int r1, int p0, int p1);

// On a CPU with AVX512_BF16: whether PackedGemmTilesBf16 runs vdpbf16ps (kAuto: where a probe,
// run once per process, finds it faster than fp32 FMAs) or the FMAs. Tests pin one or the other.
enum class Bf16Kernel { kAuto, kDot, kFma };
void SetBf16Kernel(Bf16Kernel kernel);
// Whether PackedGemmTilesBf16 runs vdpbf16ps now (false without AVX512_BF16).
bool Bf16DotInUse();

}  // namespace orchid
