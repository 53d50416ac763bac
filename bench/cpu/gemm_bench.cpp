// orchid_gemm_bench: the linear layers of all-MiniLM-L6-v2 (y = x W^T + b with the layer's
// epilogue) on the GEMM back ends orchid has had or considered, at the model's real shapes, on 1
// and 2 threads:
//   packed      the former in-house kernel (backends/cpu/packed_gemm.h, which attention still
//               uses) driven as Linear used to drive it: weights packed once into 16-column
//               panels, row chunks x panel groups over orchid's ThreadPool
//   openblas    cblas_sgemm (bias pre-filled into y, beta = 1; GELU as a separate pass), on
//               OpenBLAS's own threads
//   onednn      oneDNN matmul, weights reordered once into the layout the primitive picks
//               (format_tag::any), one primitive per M, bias and epilogue fused as post-ops, on
//               oneDNN's OpenMP threads
//   onednn_rt   the same with M as a runtime dimension (one primitive for every M)
//   linear      orchid's Linear() (backends/cpu/linear.h) as built; the same kernel as `packed`
//               today. (A oneDNN Linear, one single-threaded matmul per ThreadPool piece, was
//               tried and measured 1.07-1.18x slower end to end at b1_l16/b1_l128:
//               bench/results/gemm-2026-12-01.md.)
// Shapes (K, N): (384, 1152) fused QKV, (384, 384) attention output (+ residual),
// (384, 1536) intermediate (+ GELU), (1536, 384) output (+ residual); M = tokens in the batch.
//
// Run with --benchmark_repetitions and --benchmark_enable_random_interleaving so that the back
// ends share the machine's noise; bench/cpu/gemm_compare.py turns the JSON into medians/ratios.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/tensor.h"
#include "backends/cpu/gelu.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/linear.h"
#include "backends/cpu/packed_gemm.h"
#include "backends/cpu/thread_pool.h"

extern "C" {
char* openblas_get_corename(void) __attribute__((weak));
}

namespace {

using orchid::LinearEpilogue;

struct Shape {
  const char* name;
  int k, n;
  LinearEpilogue epilogue;
};

constexpr Shape kShapes[] = {
    {"qkv", 384, 1152, LinearEpilogue::kNone},
    {"attn_out", 384, 384, LinearEpilogue::kAccumulate},
    {"inter", 384, 1536, LinearEpilogue::kGelu},
    {"out", 1536, 384, LinearEpilogue::kAccumulate},
};
constexpr int kRows[] = {16, 128, 512, 4096};

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-0.5f, 0.5f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// One shape's operands, shared by every back end.
struct Operands {
  int m, k, n;
  std::vector<float> x, w, bias, y0;  // w: [n, k] (nn.Linear)
  Operands(int m_, int k_, int n_)
      : m(m_), k(k_), n(n_), x(Random(size_t(m) * k, 1)), w(Random(size_t(n) * k, 2)),
        bias(Random(size_t(n), 3)), y0(Random(size_t(m) * n, 4)) {
    for (auto& v : w) v *= 0.1f;
  }
};

orchid::ThreadPool* Pool(int threads) {
  static std::map<int, std::unique_ptr<orchid::ThreadPool>> pools;
  auto& p = pools[threads];
  if (!p) p = std::make_unique<orchid::ThreadPool>(threads);
  return p.get();
}

void SetCounters(benchmark::State& state, const Operands& o) {
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * o.m * o.k * o.n,
                                                benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

// ---- packed (the former in-house Linear) ---------------------------------------------------

// Linear() before oneDNN: rows per work item 64 (k = 384) or 128 (k = 1536); for few row
// chunks the 16-column panels are split too, in groups of 3, four pieces per thread.
void PackedLinear(orchid::ThreadPool* pool, const float* x, int m, int ldx,
                  const orchid::PanelView& view, const float* bias, float* y, int ldy,
                  LinearEpilogue epilogue) {
  const int panels = view.panels();
  const int threads = orchid::PoolSize(pool);
  const int chunk = view.k >= 1024 ? 128 : 64;
  const int row_chunks = (m + chunk - 1) / chunk;
  const int panel_splits =
      threads > 1 && row_chunks < 2 * threads ? std::min(4 * threads, (panels + 2) / 3) : 1;
  const int64_t items = int64_t(row_chunks) * panel_splits;
  orchid::ParallelFor(pool, items, 1, [&](int, int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int rc = int(item / panel_splits), ps = int(item % panel_splits);
      int64_t p0, p1;
      orchid::SplitRange(panels, panel_splits, ps, 3, &p0, &p1);
      orchid::PackedGemmTiles(x, ldx, view, 1.0f, bias, y, ldy, epilogue, rc * chunk,
                              std::min(m, (rc + 1) * chunk), int(p0), int(p1));
    }
  });
}

struct PanelWeight {
  orchid::Buffer<float> buf;
  orchid::PanelView view;
  PanelWeight(const float* w, int n, int k) {
    buf.Reserve(orchid::PackedSize(n, k));
    orchid::PackRows(w, n, k, k, buf.data());
    view = {buf.data(), n, k};
  }
};

void BM_Packed(benchmark::State& state, Shape s, int m, int threads) {
  Operands o(m, s.k, s.n);
  const PanelWeight packed(o.w.data(), s.n, s.k);
  orchid::ThreadPool* pool = threads > 1 ? Pool(threads) : nullptr;
  std::vector<float> y = o.y0;
  for (auto _ : state) {
    PackedLinear(pool, o.x.data(), m, s.k, packed.view, o.bias.data(), y.data(), s.n, s.epilogue);
    benchmark::ClobberMemory();
  }
  SetCounters(state, o);
}

// ---- orchid's Linear (oneDNN on the ThreadPool) --------------------------------------------

void BM_Linear(benchmark::State& state, Shape s, int m, int threads) {
  omp_set_num_threads(1);  // undo BM_Dnnl's setting on this thread: Linear's primitives are 1-thread
  Operands o(m, s.k, s.n);
  const auto w = orchid::PackedWeight::Pack(o.w.data(), s.n, s.k);
  orchid::ThreadPool* pool = threads > 1 ? Pool(threads) : nullptr;
  std::vector<float> y = o.y0;
  for (auto _ : state) {
    orchid::Linear(pool, o.x.data(), m, s.k, w, o.bias.data(), y.data(), s.n, s.epilogue);
    benchmark::ClobberMemory();
  }
  SetCounters(state, o);
}

// ---- OpenBLAS -------------------------------------------------------------------------------

void BM_OpenBlas(benchmark::State& state, Shape s, int m, int threads) {
  Operands o(m, s.k, s.n);
  orchid::ThreadPool* pool = threads > 1 ? Pool(threads) : nullptr;
  std::vector<float> y = o.y0;
  // Gemm() once so that orchid's core-type repair runs; then let OpenBLAS use `threads`.
  float dummy = 0;
  orchid::Gemm(false, false, 1, 1, 1, 1.0f, &dummy, 1, &dummy, 1, 0.0f, &dummy, 1);
  openblas_set_num_threads(threads);
  for (auto _ : state) {
    float beta = 1.0f;
    if (s.epilogue == LinearEpilogue::kAccumulate) {
      for (int r = 0; r < m; ++r) {
        float* yr = y.data() + size_t(r) * s.n;
        for (int c = 0; c < s.n; ++c) yr[c] += o.bias[size_t(c)];
      }
    } else {
      for (int r = 0; r < m; ++r) {
        std::copy(o.bias.begin(), o.bias.end(), y.begin() + long(r) * s.n);
      }
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, s.n, s.k, 1.0f, o.x.data(), s.k,
                o.w.data(), s.k, beta, y.data(), s.n);
    if (s.epilogue == LinearEpilogue::kGelu) orchid::Gelu(pool, y.data(), size_t(m) * s.n);
    benchmark::ClobberMemory();
  }
  openblas_set_num_threads(1);
  SetCounters(state, o);
}

// ---- oneDNN ---------------------------------------------------------------------------------

dnnl::engine& Engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

struct DnnlLinear {
  dnnl::matmul prim;
  dnnl::memory weights, bias;
  dnnl::matmul::primitive_desc pd;
  std::string weights_format;
};

std::string DescribeFormat(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& c = md.data;
  std::string s;
  if (c.format_kind == dnnl_blocked) {
    s = "strides[";
    for (int i = 0; i < c.ndims; ++i) s += std::to_string(c.format_desc.blocking.strides[i]) + ",";
    s += "] blocks[";
    for (int i = 0; i < c.format_desc.blocking.inner_nblks; ++i) {
      s += std::to_string(c.format_desc.blocking.inner_idxs[i]) + ":" +
           std::to_string(c.format_desc.blocking.inner_blks[i]) + ",";
    }
    s += "]";
  } else {
    s = "format_kind " + std::to_string(int(c.format_kind));
  }
  return s;
}

// m < 0: M is a runtime dimension.
DnnlLinear MakeDnnl(const Operands& o, int m, LinearEpilogue epilogue) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::dim M = m < 0 ? DNNL_RUNTIME_DIM_VAL : m, K = o.k, N = o.n;
  dnnl::memory::desc src_md({M, K}, dt::f32, {K, 1});
  dnnl::memory::desc wei_md({K, N}, dt::f32, tag::any);
  dnnl::memory::desc bias_md({1, N}, dt::f32, tag::ab);
  dnnl::memory::desc dst_md({M, N}, dt::f32, {N, 1});
  dnnl::post_ops po;
  if (epilogue == LinearEpilogue::kAccumulate) po.append_sum(1.0f);
  if (epilogue == LinearEpilogue::kGelu) {
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  DnnlLinear d;
  d.pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, wei_md, bias_md, dst_md), attr,
                                      Engine());
  d.prim = dnnl::matmul(d.pd);
  // The nn.Linear weight [N, K] row-major is W^T [K, N] in "ba" order; reorder it once.
  dnnl::memory user_w({{K, N}, dt::f32, tag::ba}, Engine(), const_cast<float*>(o.w.data()));
  d.weights = dnnl::memory(d.pd.weights_desc(), Engine());
  dnnl::stream st(Engine());
  dnnl::reorder(user_w, d.weights).execute(st, user_w, d.weights);
  d.bias = dnnl::memory(bias_md, Engine());
  std::copy(o.bias.begin(), o.bias.end(), static_cast<float*>(d.bias.get_data_handle()));
  st.wait();
  d.weights_format = DescribeFormat(d.pd.weights_desc());
  return d;
}

void BM_Dnnl(benchmark::State& state, Shape s, int m, int threads, bool runtime_m) {
  omp_set_num_threads(threads);
  Operands o(m, s.k, s.n);
  const DnnlLinear d = MakeDnnl(o, runtime_m ? -1 : m, s.epilogue);
  std::vector<float> y = o.y0;
  using dt = dnnl::memory::data_type;
  dnnl::memory src({{m, s.k}, dt::f32, {s.k, 1}}, Engine(), o.x.data());
  dnnl::memory dst({{m, s.n}, dt::f32, {s.n, 1}}, Engine(), y.data());
  dnnl::stream st(Engine());
  const std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, src},
                                                      {DNNL_ARG_WEIGHTS, d.weights},
                                                      {DNNL_ARG_BIAS, d.bias},
                                                      {DNNL_ARG_DST, dst}};
  for (auto _ : state) {
    d.prim.execute(st, args);
    st.wait();
    benchmark::ClobberMemory();
  }
  state.SetLabel(d.pd.impl_info_str());
  SetCounters(state, o);
}

// Checks every back end against the packed kernel once, and prints which oneDNN
// implementation and weight layout each M gets (a layout that changed with M would mean one
// copy of the weights per M in the engine).
bool CheckAndDescribe() {
  bool ok = true;
  std::printf("openblas core: %s\n",
              openblas_get_corename != nullptr ? openblas_get_corename() : "(unknown)");
  {
    float dummy = 0;
    orchid::Gemm(false, false, 1, 1, 1, 1.0f, &dummy, 1, &dummy, 1, 0.0f, &dummy, 1);
  }
  std::printf("openblas core after orchid's repair: %s\n",
              openblas_get_corename != nullptr ? openblas_get_corename() : "(unknown)");
  for (const Shape& s : kShapes) {
    for (int m : {16, 512}) {
      Operands o(m, s.k, s.n);
      const PanelWeight packed(o.w.data(), s.n, s.k);
      std::vector<float> want = o.y0;
      PackedLinear(nullptr, o.x.data(), m, s.k, packed.view, o.bias.data(), want.data(), s.n,
                   s.epilogue);
      {
        omp_set_num_threads(1);
        const auto w = orchid::PackedWeight::Pack(o.w.data(), s.n, s.k);
        std::vector<float> y = o.y0;
        orchid::Linear(Pool(2), o.x.data(), m, s.k, w, o.bias.data(), y.data(), s.n, s.epilogue);
        double max_diff = 0;
        for (size_t i = 0; i < y.size(); ++i) {
          max_diff = std::max(max_diff, double(std::abs(y[i] - want[i])));
        }
        std::printf("%-8s M=%-5d linear (2 threads) max|diff vs packed|=%.2e\n", s.name, m,
                    max_diff);
        if (max_diff > 1e-4) ok = false;
      }
      for (bool rt : {false, true}) {
        omp_set_num_threads(2);
        const DnnlLinear d = MakeDnnl(o, rt ? -1 : m, s.epilogue);
        std::vector<float> y = o.y0;
        using dt = dnnl::memory::data_type;
        dnnl::memory src({{m, s.k}, dt::f32, {s.k, 1}}, Engine(), o.x.data());
        dnnl::memory dst({{m, s.n}, dt::f32, {s.n, 1}}, Engine(), y.data());
        dnnl::stream st(Engine());
        d.prim.execute(st, {{DNNL_ARG_SRC, src},
                            {DNNL_ARG_WEIGHTS, d.weights},
                            {DNNL_ARG_BIAS, d.bias},
                            {DNNL_ARG_DST, dst}});
        st.wait();
        double max_diff = 0;
        for (size_t i = 0; i < y.size(); ++i) {
          max_diff = std::max(max_diff, double(std::abs(y[i] - want[i])));
        }
        std::printf("%-8s M=%-5d onednn%s impl=%s weights=%s max|diff vs packed|=%.2e\n", s.name,
                    m, rt ? "_rt" : "   ", d.pd.impl_info_str(), d.weights_format.c_str(),
                    max_diff);
        if (max_diff > 1e-4) ok = false;
      }
    }
  }
  std::fflush(stdout);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (!CheckAndDescribe()) {
    std::fprintf(stderr, "oneDNN results differ from the packed kernel\n");
    return 1;
  }
  // Registered shape-major, back end innermost, so neighbours in the listing share conditions.
  for (const Shape& s : kShapes) {
    for (int m : kRows) {
      for (int threads : {1, 2}) {
        const std::string base = std::string(s.name) + "/K" + std::to_string(s.k) + "_N" +
                                 std::to_string(s.n) + "/M" + std::to_string(m) + "/t" +
                                 std::to_string(threads);
        benchmark::RegisterBenchmark(("packed/" + base).c_str(), BM_Packed, s, m, threads)
            ->UseRealTime()->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("openblas/" + base).c_str(), BM_OpenBlas, s, m, threads)
            ->UseRealTime()->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("onednn/" + base).c_str(), BM_Dnnl, s, m, threads, false)
            ->UseRealTime()->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("onednn_rt/" + base).c_str(), BM_Dnnl, s, m, threads, true)
            ->UseRealTime()->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("linear/" + base).c_str(), BM_Linear, s, m, threads)
            ->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
