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

}  // namespace orchid
