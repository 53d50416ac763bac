// Int8 linear layers, y = x W^T + b, on oneDNN's int8 matmul (AMX-INT8, AVX512-VNNI or AVX2's
// vpmaddubsw: whichever the CPU has, oneDNN picks at run time; ONEDNN_MAX_CPU_ISA caps it):
//
//   smoothing   optional per input channel factors c[k] > 0 (SmoothQuant: they move the
//               activations' outlier channels into the weights, which quantize per channel):
//               W' = W diag(c), x' = x diag(1 / c), so that x' W'^T = x W^T
//   weights     symmetric int8 per output channel, quantized once at load:
//               s_w[n] = max_k |W'[n,k]| / 127,  W_q[n,k] = round(W'[n,k] / s_w[n])
//   activations asymmetric uint8 per row (token), quantized on every call, over the row's own
//               range [lo, hi]: s_x[m] = (hi - lo) / L, q[m,k] = round((x'[m,k] - lo) / s_x[m]),
//               so that x' = s_x q + lo; L = 255, or 127 where oneDNN multiplies with
//               vpmaddubsw (no VNNI: its int16 pair sums would saturate at 255 * 127 * 2)
//   product     int32 accumulation of q Wq^T; then in fp32
//               y[m,n] = s_x[m] s_w[n] acc[m,n] + lo[m] s_w[n] sum_k Wq[n,k] + b[n],
//               and the epilogue (GELU, or the add into a residual stream).
//
// Per row, so a text's embedding never depends on the batch it shares (no per-tensor scale).
// Rounding is to nearest, ties to even (nearbyint), as torch's quantize_per_channel does.
// The weights are reordered once into the layout the primitive prefers; one primitive per
// layer shape serves every row count (oneDNN's run-time M).
//
// Threads: the engine's pool splits the rows; each thread quantizes its rows, runs oneDNN's
// primitive on them single-threaded (its OpenMP team is never more than the calling thread)
// and finishes them in fp32, so no second set of threads competes for the cores. A short query
// (fewer 16-row blocks than threads) is split by output columns instead (column_slices).
//
// Thread safety: an Int8Weight is immutable after Quantize and may be used from several
// threads at once (each call uses the calling thread's scratch).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/packed_gemm.h"
#include "backends/cpu/thread_pool.h"

namespace orchid {

class Int8Weight {
 public:
  Int8Weight() = default;
  // w: [n, k] row-major (out x in); smoothing: k factors c (null: none).
  // outliers: input channels kept out of int8 (their products run in fp32; empty: none).
  // column_slices: the output columns go in this many slices (at least 64 columns each; fewer
  // where n is small), each with its own matmul over a piece of the layer's weights: the
  // engine's thread count, so that a batch of too few rows to share out by rows (a short query)
  // is shared out by columns. None where oneDNN's weight layout does not keep the slices'
  // columns together (checked at load; AVX512-VNNI does, AVX2's gemm:jit does not).
  static Int8Weight Quantize(const float* w, int n, int k, const float* smoothing = nullptr,
                             const std::vector<int>& outliers = {}, int column_slices = 1);

  int n() const { return n_; }
  int k() const { return k_; }
  bool empty() const { return impl_ == nullptr; }
  // The per-channel scales (n floats) and the int8 weights as quantized ([n, k] row-major,
  // read back from oneDNN's layout, the only copy kept), for tests.
  const float* scales() const;
  std::vector<int8_t> quantized() const;
  // oneDNN's kernel for it, e.g. "brg:avx512_core_vnni" (not empty()).
  const std::string& kernel() const;
  int column_slices() const;  // 1: none

  // y[m, n] (rows ldy floats apart) from x[m, k] (ldx floats apart); bias (n floats) may be
  // null; epilogue kNone, kGelu (exact) or kAccumulate (y += ...). Rows are split over pool;
  // fewer 16-row blocks than threads: the column slices are.
  void Run(ThreadPool* pool, const float* x, int m, int ldx, const float* bias, float* y, int ldy,
           Epilogue epilogue) const;

 private:
  struct Impl;
  struct Slice;
  // Rows [0, rows) (at most one piece: PieceRows(n) in the .cpp) of the columns of `count`
  // slices (Impl's), on the calling thread.
  void RunPiece(const float* x, int rows, int ldx, const float* bias, float* y, int ldy,
                Epilogue epilogue, const Slice* slices, int count) const;
  int n_ = 0, k_ = 0;
  std::shared_ptr<const Impl> impl_;
};

// One row's activation quantization as Run does it (x times `mul`, k factors, when given):
// q[k] in [0, levels], returns s and *lo with x * mul ~ s q + lo. levels: Int8ActivationLevels().
float QuantizeActivationRow(const float* x, int k, const float* mul, int levels, uint8_t* q,
                            float* lo);
// 255, or 127 where oneDNN's int8 kernels lack VNNI (above).
int Int8ActivationLevels();

// Which instruction set oneDNN's int8 and bf16 kernels use on this CPU (e.g. "avx512_core_vnni",
// "avx512_core_amx", "avx2"), for the log.
const char* OneDnnIsa();

}  // namespace orchid
