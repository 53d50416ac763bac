#include "backends/cpu/onednn.h"

#include <omp.h>
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace orchid::onednn {

bool EnableAmx() {
  static const bool enabled = [] {
#if defined(__linux__) && defined(__x86_64__)
    constexpr long kReqXcompPerm = 0x1023, kGetXcompPerm = 0x1022, kXtileData = 18;
    if (syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) != 0) return false;
    unsigned long mask = 0;
    return syscall(SYS_arch_prctl, kGetXcompPerm, &mask) == 0 && (mask >> kXtileData & 1) != 0;
#else
    return false;
#endif
  }();
  return enabled;
}

const dnnl::engine& Engine() {
  static const dnnl::engine* e = [] {
    EnableAmx();
    return new dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return *e;
}

OneThread::OneThread() : team_(omp_get_max_threads()) { omp_set_num_threads(1); }
OneThread::~OneThread() { omp_set_num_threads(team_); }

void Execute(const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
             std::unordered_map<int, dnnl::memory> args) {
  if (omp_get_max_threads() != 1) omp_set_num_threads(1);
  const dnnl::engine& eng = Engine();
  thread_local dnnl::stream stream(eng);  // released when the thread ends
  thread_local std::vector<uint8_t> scratch_buf;
  const size_t size = scratchpad.get_size();
  if (scratch_buf.size() < size + 64) scratch_buf.resize(size + 64);
  uint8_t* base = scratch_buf.data();
  void* aligned = base + (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad, eng, size == 0 ? nullptr : aligned));
  primitive.execute(stream, args);
  stream.wait();
}

BlockedMatmul BlockedMatmul::Create(dnnl::memory::data_type src, dnnl::memory::data_type weights,
                                    dnnl::memory::data_type dst, int k, int n, bool bias, bool sum,
                                    bool gelu) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  static_assert(sizeof(kRows) / sizeof(kRows[0]) == kSizes && kRows[kSizes - 1] == kTail);
  BlockedMatmul out;
  if (k <= 0 || n <= 0) return out;
  const dnnl::engine& eng = Engine();
  OneThread one;  // the pool splits the rows (above)
  dnnl::memory::desc wts({k, n}, weights, tag::any);
  auto make = [&](int m, const dnnl::primitive_attr& a, Prim* p) {
    dnnl::memory::desc x({m, k}, src, tag::ab), y({m, n}, dst, tag::ab);
    dnnl::matmul::desc d =
        bias ? dnnl::matmul::desc(x, wts, dnnl::memory::desc({1, n}, dt::f32, tag::ab), y)
             : dnnl::matmul::desc(x, wts, y);
    dnnl::matmul::primitive_desc pd(d, a, eng);
    if (wts.data.format_kind == dnnl_format_kind_any) {
      wts = pd.weights_desc();  // every other primitive takes the weights in this layout
      out.impl_ = pd.impl_info_str();
    } else if (pd.weights_desc() != wts) {
      throw dnnl::error(dnnl_unimplemented, "weights layout differs between row counts");
    }
    p->matmul = dnnl::matmul(pd);
    p->scratchpad = pd.scratchpad_desc();
  };
  try {
    dnnl::primitive_attr plain;
    plain.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    for (int i = 0; i < kSizes; ++i) make(kRows[i], plain, &out.plain_[i]);
    if (sum) {
      dnnl::primitive_attr with_sum;
      with_sum.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      with_sum.set_post_ops(ops);
      for (int i = 0; i < kSizes; ++i) make(kRows[i], with_sum, &out.sum_[i]);
    }
    if (gelu) {
      dnnl::primitive_attr with_gelu;
      with_gelu.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
      with_gelu.set_post_ops(ops);
      for (int i = 0; i < kSizes; ++i) make(kRows[i], with_gelu, &out.gelu_[i]);
    }
  } catch (const dnnl::error&) {
    return BlockedMatmul();  // no such matmul on this CPU
  }
  // oneDNN's reference kernels would be far slower than orchid's own: no such fallback.
  if (out.impl_.find("ref") != std::string::npos) return BlockedMatmul();
  out.weights_desc_ = wts;
  out.src_ = src;
  out.dst_ = dst;
  out.src_row_bytes_ = size_t(k) * dnnl::memory::data_type_size(src);
  out.k_ = k;
  out.n_ = n;
  out.bias_ = bias;
  out.sum_ok_ = sum;
  out.gelu_ok_ = gelu;
  return out;
}

void BlockedMatmul::Run(const void* x, int rows, const dnnl::memory& weights, const float* bias,
                        void* y, bool accumulate, bool gelu) const {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  if (accumulate && !sum_ok_) throw std::logic_error("BlockedMatmul: made without sum");
  if (gelu && (!gelu_ok_ || accumulate)) {
    throw std::logic_error("BlockedMatmul: gelu needs the gelu primitives and no accumulation");
  }
  const dnnl::engine& eng = Engine();
  thread_local std::vector<float> pad_buf;  // 4-byte elements: f32 or s32
  const auto* src = static_cast<const uint8_t*>(x);
  const size_t row_bytes = size_t(n_) * 4;
  int r = 0;
  while (r < rows) {
    const int left = rows - r;
    int i = 0;
    while (i + 1 < kSizes && kRows[i] > left) ++i;
    const int m = kRows[i], valid = std::min(left, m);
    // A block short of rows (the last, padded) writes into scratch and its valid rows are
    // copied (or added) after.
    const bool padded = valid < m;
    const Prim& p = gelu ? gelu_[i] : accumulate && !padded ? sum_[i] : plain_[i];
    void* out = static_cast<uint8_t*>(y) + size_t(r) * row_bytes;
    if (padded) {
      if (pad_buf.size() < size_t(m) * size_t(n_)) pad_buf.resize(size_t(m) * size_t(n_));
      out = pad_buf.data();
    }
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, dnnl::memory({{m, k_}, src_, tag::ab}, eng,
                                    const_cast<uint8_t*>(src + size_t(r) * src_row_bytes_))},
        {DNNL_ARG_WEIGHTS, weights},
        {DNNL_ARG_DST, dnnl::memory({{m, n_}, dst_, tag::ab}, eng, out)}};
    if (bias_) {
      args.emplace(DNNL_ARG_BIAS,
                   dnnl::memory({{1, n_}, dt::f32, tag::ab}, eng, const_cast<float*>(bias)));
    }
    Execute(p.matmul, p.scratchpad, std::move(args));
    if (padded) {
      uint8_t* dst = static_cast<uint8_t*>(y) + size_t(r) * row_bytes;
      if (accumulate) {  // (sum_ok_: f32)
        auto* d = reinterpret_cast<float*>(dst);
        const size_t count = size_t(valid) * size_t(n_);
        for (size_t e = 0; e < count; ++e) d[e] += pad_buf[e];
      } else {
        std::memcpy(dst, out, size_t(valid) * row_bytes);
      }
    }
    r += valid;
  }
}

}  // namespace orchid::onednn
