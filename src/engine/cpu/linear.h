// The linear layer y = x W^T + b, on weights packed once at load time (packed_gemm.h).
#pragma once

#include "core/tensor.h"
#include "engine/cpu/packed_gemm.h"
#include "engine/cpu/thread_pool.h"

namespace orchid {

using LinearEpilogue = Epilogue;

// An nn.Linear weight [out, in] in the kernel's panel layout. Immutable once packed.
class PackedWeight {
 public:
  PackedWeight() = default;
  // w: [n, k] row-major (out x in), copied.
  static PackedWeight Pack(const float* w, int n, int k);

  int n() const { return n_; }
  int k() const { return k_; }
  int panels() const { return view().panels(); }
  PanelView view() const { return {buf_.data(), n_, k_}; }

 private:
  int n_ = 0, k_ = 0;
  Buffer<float> buf_;
};

// y[m, w.n()] from x[m, w.k()]; rows are ldx / ldy floats apart; bias (w.n() floats) may be
// null. Large m is split across the pool by row chunks, small m by output panels as well.
void Linear(ThreadPool* pool, const float* x, int m, int ldx, const PackedWeight& w,
            const float* bias, float* y, int ldy, LinearEpilogue epilogue);

}  // namespace orchid
