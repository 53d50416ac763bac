#include "backends/cpu/bf16_onednn.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/onednn.h"

namespace orchid {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Rows the probe multiplies: a 128-token text's layer on one thread, and a short query's.
constexpr int kProbeRows = 128;
constexpr int kShortRows = 16;
// oneDNN is kept when it takes less than this share of the packed kernel's time.
constexpr double kMargin = 0.85;

std::atomic<int> pinned{-1};  // SetBf16Gemm's; -1: none

Bf16Gemm FromEnvironment() {
  const char* v = std::getenv("ORCHID_BF16_GEMM");
  if (v == nullptr) return Bf16Gemm::kAuto;
  if (std::strcmp(v, "packed") == 0) return Bf16Gemm::kPacked;
  if (std::strcmp(v, "onednn") == 0) return Bf16Gemm::kOneDnn;
  return Bf16Gemm::kAuto;
}

template <typename T>
T* Scratch(std::vector<T>* v, size_t n) {
  if (v->size() < n) v->resize(n);
  return v->data();
}

struct Probe {
  bool onednn;
  double onednn_ms, packed_ms;              // kProbeRows
  double onednn_short_ms, packed_short_ms;  // kShortRows
  std::string kernel;                       // oneDNN's
};
std::mutex probe_mu;
std::map<std::pair<int, int>, Probe>& Probes() {  // by (k, n)
  static auto* m = new std::map<std::pair<int, int>, Probe>;
  return *m;
}

// Best of `runs` timed runs of a and of b, alternating a, b, a, b ... after one untimed run of
// each (caches, oneDNN's kernels): noise that lasts a moment lands on both, not on one side's
// whole sample.
template <typename A, typename B>
std::pair<double, double> BestMsOfEach(A&& a, B&& b, int runs = 5) {
  auto ms = [](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  a();
  b();
  double best_a = 1e30, best_b = 1e30;
  for (int i = 0; i < runs; ++i) {
    best_a = std::min(best_a, ms(a));
    best_b = std::min(best_b, ms(b));
  }
  return {best_a, best_b};
}

}  // namespace

void SetBf16Gemm(Bf16Gemm gemm) { pinned.store(int(gemm), std::memory_order_relaxed); }

Bf16Gemm Bf16GemmSetting() {
  const int p = pinned.load(std::memory_order_relaxed);
  if (p >= 0) return Bf16Gemm(p);
  static const Bf16Gemm env = FromEnvironment();
  return env;
}

struct OneDnnBf16Weight::Impl {
  onednn::BlockedMatmul matmul;  // with bias; sum (kAccumulate) and GELU (kGelu) post-ops
  dnnl::memory weights;          // in the primitives' layout
  std::vector<float> zero_bias;
};

OneDnnBf16Weight OneDnnBf16Weight::Pack(const float* w, int n, int k) {
  OneDnnBf16Weight out;
  if (n <= 0 || k <= 0 || k % 2 != 0) return out;
  auto impl = std::make_shared<Impl>();
  impl->matmul = onednn::BlockedMatmul::Create(dt::bf16, dt::bf16, dt::f32, k, n,
                                               /*bias=*/true, /*sum=*/true, /*gelu=*/true);
  if (impl->matmul.empty()) return out;  // no bfloat16 matmul on this CPU
  const dnnl::engine& eng = onednn::Engine();
  std::vector<bf16> rounded(size_t(n) * size_t(k));
  for (size_t i = 0; i < rounded.size(); ++i) rounded[i] = Bf16FromFloat(w[i]);
  // y = x W^T: W [n, k] row-major is W^T [k, n] in "ba" order.
  dnnl::memory rows({{k, n}, dt::bf16, tag::ba}, eng, rounded.data());
  impl->weights = dnnl::memory(impl->matmul.weights_desc(), eng);
  {
    onednn::OneThread one;
    dnnl::stream s(eng);
    dnnl::reorder(rows, impl->weights).execute(s, rows, impl->weights);
    s.wait();
  }
  impl->zero_bias.assign(size_t(n), 0.0f);
  out.n_ = n;
  out.k_ = k;
  out.impl_ = std::move(impl);
  return out;
}

const std::string& OneDnnBf16Weight::kernel() const { return impl_->matmul.impl(); }

void OneDnnBf16Weight::Run(ThreadPool* pool, const float* x, int m, int ldx, const float* bias,
                           float* y, int ldy, Epilogue epilogue) const {
  if (m <= 0 || n_ <= 0) return;
  constexpr int kTail = onednn::BlockedMatmul::kTail;
  const int k = k_, n = n_;
  const Impl& impl = *impl_;
  const int threads = PoolSize(pool);
  // One range per thread, in whole 16-row blocks, where that leaves each enough rows.
  const int64_t per_thread = std::clamp<int64_t>((m + threads - 1) / threads, kTail, 512);
  const int64_t grain = (per_thread + kTail - 1) / kTail * kTail;
  ParallelFor(pool, m, grain, [&](int, int64_t begin, int64_t end) {
    thread_local std::vector<bf16> xb_buf;
    thread_local std::vector<float> acc_buf;
    const int rows = int(end - begin);
    const int padded = (rows + kTail - 1) / kTail * kTail;
    bf16* xb = Scratch(&xb_buf, size_t(padded) * size_t(k));
    ConvertRowsBf16(x + size_t(begin) * size_t(ldx), ldx, k, xb, k, 0, rows);
    // The padding rows' results are dropped; zeros keep them from being NaNs or denormals.
    std::fill(xb + size_t(rows) * size_t(k), xb + size_t(padded) * size_t(k), bf16{0});
    // Straight into y when its rows are dense; else through scratch.
    const bool direct = ldy == n;
    float* out =
        direct ? y + size_t(begin) * size_t(n) : Scratch(&acc_buf, size_t(rows) * size_t(n));
    const bool accumulate = epilogue == Epilogue::kAccumulate;
    // GELU in the kernel's epilogue, on each tile as it is written (not a second pass over
    // rows that have left the cache by then).
    impl.matmul.Run(xb, rows, impl.weights, bias != nullptr ? bias : impl.zero_bias.data(), out,
                    accumulate && direct, epilogue == Epilogue::kGelu);
    if (direct) return;
    for (int r = 0; r < rows; ++r) {
      const float* o = out + size_t(r) * size_t(n);
      float* yr = y + size_t(begin + r) * size_t(ldy);
      if (accumulate) {
        for (int c = 0; c < n; ++c) yr[c] += o[c];
      } else {
        std::memcpy(yr, o, size_t(n) * sizeof(float));
      }
    }
  });
}

bool ChooseBf16Gemm(const OneDnnBf16Weight& onednn, Bf16PanelView packed) {
  if (onednn.empty()) return false;
  const int n = onednn.n(), k = onednn.k();
  switch (Bf16GemmSetting()) {
    case Bf16Gemm::kPacked:
      return false;
    case Bf16Gemm::kOneDnn:
      return true;
    case Bf16Gemm::kAuto:
      break;
  }
  {
    std::lock_guard<std::mutex> lock(probe_mu);
    auto it = Probes().find({k, n});
    if (it != Probes().end()) return it->second.onednn;
  }
  // Deterministic inputs of an activation's size; the weights are the layer's own.
  std::vector<float> x(size_t(kProbeRows) * size_t(k)), y(size_t(kProbeRows) * size_t(n));
  uint32_t state = 12345u;
  for (float& v : x) {
    state = state * 1664525u + 1013904223u;
    v = float(int32_t(state >> 8) % 2001 - 1000) / 1000.0f;
  }
  const int ldxb = 2 * ((k + 1) / 2);
  std::vector<bf16> xb(size_t(kProbeRows) * size_t(ldxb));
  // At a text's rows and at a short query's: oneDNN must win both, clearly. Where the two tie
  // (the Zen 4: 128 and 16 rows alike), one noisy measurement would otherwise pick oneDNN for a
  // shape now and then, and a short query pays for it: Run splits rows only, so 16 rows run on
  // one thread where the packed kernel shares their columns out (a probe that picked oneDNN
  // for one of all-mpnet-base-v2's shapes made its 16-token query 1.24x slower).
  auto time_both = [&](int rows) {
    return BestMsOfEach(
        [&] {
          ConvertRowsBf16(x.data(), k, k, xb.data(), ldxb, 0, rows);
          PackedGemmTilesBf16(xb.data(), ldxb, packed, nullptr, y.data(), n, Epilogue::kNone, 0,
                              rows, 0, packed.panels());
        },
        [&] { onednn.Run(nullptr, x.data(), rows, k, nullptr, y.data(), n, Epilogue::kNone); });
  };
  const auto [packed_ms, onednn_ms] = time_both(kProbeRows);
  const auto [packed_short_ms, onednn_short_ms] = time_both(kShortRows);
  // oneDNN only where it is clearly faster (AMX: several times): a near tie would flip between
  // processes with the machine's noise, and with it the last bits of the embeddings.
  const bool pick = onednn_ms < kMargin * packed_ms && onednn_short_ms < kMargin * packed_short_ms;
  const Probe p{pick, onednn_ms, packed_ms, onednn_short_ms, packed_short_ms, onednn.kernel()};
  std::lock_guard<std::mutex> lock(probe_mu);
  return Probes().emplace(std::make_pair(k, n), p).first->second.onednn;
}

std::string Bf16GemmChoices() {
  std::lock_guard<std::mutex> lock(probe_mu);
  std::string out;
  char buf[200];
  for (const auto& [shape, p] : Probes()) {
    std::snprintf(buf, sizeof buf,
                  "%s%d->%d %s (oneDNN %s %.2f ms, packed %.2f ms; at %d rows %.3f / %.3f ms)",
                  out.empty() ? "" : "; ", shape.first, shape.second,
                  p.onednn ? "oneDNN" : "packed", p.kernel.c_str(), p.onednn_ms, p.packed_ms,
                  kShortRows, p.onednn_short_ms, p.packed_short_ms);
    out += buf;
  }
  return out;
}

}  // namespace orchid
