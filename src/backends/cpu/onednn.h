// What the layers that run on oneDNN share (int8_linear.cpp, bf16_onednn.cpp): the CPU engine,
// primitive creation for one thread, and execution on the calling thread with its own
// scratchpad.
//
// Threads: orchid's pool splits a layer's rows and each pool thread runs a primitive on its
// rows single-threaded, so no OpenMP team competes with the pool for the cores. oneDNN sizes
// a primitive's work for the OpenMP team it sees when the primitive is created (OneThread
// below), and Execute keeps the calling thread's team at one.
//
// Scratchpads: Debian's oneDNN is built without DNNL_ENABLE_CONCURRENT_EXEC, so the library's
// own scratchpad is shared by every primitive and ties a primitive to the thread that created
// it. Primitives made here take scratchpad_mode::user, and every execution brings the calling
// thread's own (64-byte aligned, grown as needed).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

namespace orchid::onednn {

// The CPU engine (made once). Before it, the process asks Linux for the AMX tile state
// (EnableAmx), so that oneDNN may use AMX where the CPU has it.
const dnnl::engine& Engine();

// arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA), once per process (Linux >= 5.16 traps the first
// tile instruction without it). True when AMX tiles may be used; false on CPUs or kernels
// without AMX, where nothing changes. Call before asking oneDNN which ISA it runs.
bool EnableAmx();

// While alive, oneDNN primitives are created for a team of one thread (the previous team size
// is restored at the end).
class OneThread {
 public:
  OneThread();
  ~OneThread();
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int team_;
};

// Runs `primitive` on the calling thread with `args` plus the thread's scratchpad (of the
// primitive descriptor's scratchpad_desc(), passed as `scratchpad`), and waits for it.
void Execute(const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
             std::unordered_map<int, dnnl::memory> args);

// y[rows, n] = x[rows, k] W^T (+ bias) (+ y) for any row count, on matmul primitives of FIXED
// row counts: oneDNN 2.6 runs its brgemm kernels (AMX tiles, AVX512-BF16, AVX512-VNNI) only
// for a fixed M (and no run-time output scales); with a run-time M it falls back to its older
// gemm:jit kernels, which have no AMX and are slower on VNNI. So rows go in blocks of
// kRows[0], then kRows[1], ..., the last one padded to kRows.back(): the caller's x holds its
// rows rounded up to a multiple of kTail (what the extra rows hold does not matter; their
// results are dropped), and a padded block's results go through the thread's scratch. On the
// kernels measured (brg:avx512_core_bf16 / _vnni, gemm:jit) a row gives the same bits in a
// block of any of these sizes at any position, so a text's result never depends on the batch
// it shares (tests/engine/bf16_onednn_test.cpp checks it on every ISA it runs on). oneDNN's
// primitive cache shares the kernels between layers of one shape.
class BlockedMatmul {
 public:
  static constexpr int kRows[] = {256, 128, 64, 32, 16};
  static constexpr int kTail = 16;

  BlockedMatmul() = default;
  // x of type `src`, W of type `weights` in the layout the primitives prefer (weights_desc()),
  // y of type `dst` (f32, or s32 for integer products); `bias`: an fp32 bias operand; `sum`:
  // Run may accumulate into y (a sum post-op); `gelu`: Run may apply exact GELU to x W^T + b in
  // the kernel's epilogue (an eltwise_gelu_erf post-op, f32 dst: no second pass over y). Empty
  // where oneDNN makes no such matmul, or only its reference kernel.
  static BlockedMatmul Create(dnnl::memory::data_type src, dnnl::memory::data_type weights,
                              dnnl::memory::data_type dst, int k, int n, bool bias, bool sum,
                              bool gelu = false);

  bool empty() const { return n_ == 0; }
  const dnnl::memory::desc& weights_desc() const { return weights_desc_; }
  // oneDNN's name for the kernel, e.g. "brg:avx512_core_amx".
  const std::string& impl() const { return impl_; }

  // y (rows dense, n elements apart) = x W^T (+ bias, n floats, when made with bias) (+ y when
  // accumulate, which needs `sum`), or gelu(x W^T + bias) when `gelu` (made with gelu; not with
  // accumulate). x: rows rounded up to a multiple of kTail, dense.
  void Run(const void* x, int rows, const dnnl::memory& weights, const float* bias, void* y,
           bool accumulate, bool gelu = false) const;

 private:
  static constexpr int kSizes = 5;
  struct Prim {
    dnnl::matmul matmul;
    dnnl::memory::desc scratchpad;
  };
  Prim plain_[kSizes], sum_[kSizes], gelu_[kSizes];
  dnnl::memory::desc weights_desc_;
  dnnl::memory::data_type src_ = dnnl::memory::data_type::undef;
  dnnl::memory::data_type dst_ = dnnl::memory::data_type::undef;
  size_t src_row_bytes_ = 0;
  int k_ = 0, n_ = 0;
  bool bias_ = false, sum_ok_ = false, gelu_ok_ = false;
  std::string impl_;
};

}  // namespace orchid::onednn
