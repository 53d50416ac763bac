// orchid_linear_bench: times orchid's Linear() (backends/cpu/linear.h: y = x W^T + b on weights
// packed once) at given shapes, for bench/cpu/linear_vs_torch.py, which runs it alternately
// with PyTorch's torch.nn.functional.linear at the same shapes so both see the same machine.
//
// --shapes "name:k:n,...": an nn.Linear of k inputs and n outputs; --rows m (tokens). Each
// shape is run --warmup times, then --reps timed times; one JSON line per shape:
//   {"name", "k", "n", "m", "threads", "ms": [...]}
// x, W and b are seeded uniform random numbers (speed does not depend on the values).
// --peak instead prints {"peak_gflops", "vnni_peak_gops", "bf16_peak_gflops"}: one core's fp32 FMA rate,
// measured with twelve independent 8-wide AVX2 FMA chains (registers only), the ceiling any fp32
// GEMM here can approach, its AVX512-VNNI int8 rate and its AVX512-BF16 bf16 rate likewise (0
// where the CPU lacks them).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/linear.h"
#include "backends/cpu/thread_pool.h"

namespace {

struct Shape {
  std::string name;
  int k = 0, n = 0;
};

bool ParseShapes(const std::string& text, std::vector<Shape>* out) {
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    Shape s;
    const size_t a = item.find(':'), b = item.find(':', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos) return false;
    s.name = item.substr(0, a);
    s.k = std::atoi(item.substr(a + 1, b - a - 1).c_str());
    s.n = std::atoi(item.substr(b + 1).c_str());
    if (s.name.empty() || s.k <= 0 || s.n <= 0) return false;
    out->push_back(s);
  }
  return !out->empty();
}

std::vector<float> Random(size_t n, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// One thread's fp32 multiply-add rate in GFLOP/s: twelve independent vfmadd231ps chains on
// registers, enough to cover the FMA latency on every x86 core with two FMA pipes. 0 where the
// CPU lacks AVX2 + FMA.
double FmaPeakGflops() {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return 0.0;
  double best = 0.0;
  for (int round = 0; round < 3; ++round) {
    long iters = 100000000;
    const long total = iters;
    const auto t0 = std::chrono::steady_clock::now();
    __asm__ volatile(
        "vxorps %%ymm0, %%ymm0, %%ymm0\n\t"
        "vxorps %%ymm1, %%ymm1, %%ymm1\n\t"
        "vxorps %%ymm4, %%ymm4, %%ymm4\n\t"
        "vxorps %%ymm5, %%ymm5, %%ymm5\n\t"
        "vxorps %%ymm6, %%ymm6, %%ymm6\n\t"
        "vxorps %%ymm7, %%ymm7, %%ymm7\n\t"
        "vxorps %%ymm8, %%ymm8, %%ymm8\n\t"
        "vxorps %%ymm9, %%ymm9, %%ymm9\n\t"
        "vxorps %%ymm10, %%ymm10, %%ymm10\n\t"
        "vxorps %%ymm11, %%ymm11, %%ymm11\n\t"
        "vxorps %%ymm12, %%ymm12, %%ymm12\n\t"
        "vxorps %%ymm13, %%ymm13, %%ymm13\n\t"
        "vxorps %%ymm14, %%ymm14, %%ymm14\n\t"
        "vxorps %%ymm15, %%ymm15, %%ymm15\n"
        "1:\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm4\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm5\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm6\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm7\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm8\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm9\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm10\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm11\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm12\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm13\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm14\n\t"
        "vfmadd231ps %%ymm0, %%ymm1, %%ymm15\n\t"
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : [n] "+r"(iters)
        :
        : "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
          "xmm13", "xmm14", "xmm15", "cc");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(total) * 12 * 16 / s / 1e9);  // 12 FMAs x 8 lanes x 2 FLOP
  }
  return best;
#else
  return 0.0;
#endif
}

// Twelve independent chains of one zmm instruction (`insn` zmm0, zmm1, zmmN), registers only,
// the best of three rounds of `iters` iterations: the instruction's throughput ceiling, in
// iterations per second (times its operations per instruction and 12, the caller's rate).
#define ORCHID_ZMM_CHAINS(insn)                                                       \
  "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"                                                 \
  "vpxord %%zmm1, %%zmm1, %%zmm1\n"                                                   \
  "1:\n\t" insn " %%zmm0, %%zmm1, %%zmm4\n\t" insn " %%zmm0, %%zmm1, %%zmm5\n\t" insn \
  " %%zmm0, %%zmm1, %%zmm6\n\t" insn " %%zmm0, %%zmm1, %%zmm7\n\t" insn               \
  " %%zmm0, %%zmm1, %%zmm8\n\t" insn " %%zmm0, %%zmm1, %%zmm9\n\t" insn               \
  " %%zmm0, %%zmm1, %%zmm10\n\t" insn " %%zmm0, %%zmm1, %%zmm11\n\t" insn             \
  " %%zmm0, %%zmm1, %%zmm12\n\t" insn " %%zmm0, %%zmm1, %%zmm13\n\t" insn             \
  " %%zmm0, %%zmm1, %%zmm14\n\t" insn                                                 \
  " %%zmm0, %%zmm1, %%zmm15\n\t"                                                      \
  "dec %[n]\n\t"                                                                      \
  "jnz 1b\n\t"                                                                        \
  "vzeroupper\n\t"

#define ORCHID_ZMM_PEAK(insn, ops_per_insn)                                                       \
  [] {                                                                                            \
    double best = 0.0;                                                                            \
    for (int round = 0; round < 3; ++round) {                                                     \
      long iters = 50000000;                                                                      \
      const long total = iters;                                                                   \
      const auto t0 = std::chrono::steady_clock::now();                                           \
      __asm__ volatile(ORCHID_ZMM_CHAINS(insn)                                                    \
                       : [n] "+r"(iters)                                                          \
                       :                                                                          \
                       : "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
                         "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc");                      \
      const double s =                                                                            \
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();           \
      best = std::max(best, double(total) * 12 * (ops_per_insn) / s / 1e9);                       \
    }                                                                                             \
    return best;                                                                                  \
  }()

// One core's int8 multiply-add rate with AVX512-VNNI (vpdpbusd: 64 u8 x s8 products, 128 ops);
// 0 without AVX512-VNNI. The ceiling of the int8 GEMM on a VNNI CPU without AMX.
double VnniPeakGops() {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512vnni")) return 0.0;
  return ORCHID_ZMM_PEAK("vpdpbusd", 128);
#else
  return 0.0;
#endif
}

// One core's bf16 multiply-add rate with AVX512-BF16 (vdpbf16ps: 32 bf16 pairs, 64 FLOP); 0
// without AVX512-BF16. The ceiling of any bf16 GEMM (ours or oneDNN's) on a CPU without AMX.
double Bf16PeakGflops() {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512bf16")) return 0.0;
  return ORCHID_ZMM_PEAK("vdpbf16ps", 64);
#else
  return 0.0;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"orchid Linear() benchmark"};
  std::string shapes_text;
  bool peak = false;
  int rows = 4096, threads = 1, warmup = 1, reps = 5;
  std::string gemm = "packed";
  app.add_option("--shapes", shapes_text, "name:k:n,... (nn.Linear in and out features)");
  app.add_flag("--peak", peak, "print one core's measured fp32 FMA peak instead");
  app.add_option("--rows", rows, "rows of x (tokens)");
  app.add_option("--threads", threads, "threads (the caller counts)");
  app.add_option("--warmup", warmup, "untimed runs per shape");
  app.add_option("--reps", reps, "timed runs per shape");
  app.add_option("--gemm", gemm,
                 "packed (orchid's kernel), blas (OpenBLAS), bfloat16 (the packed kernel on "
                 "bfloat16 weights, as --dtype bfloat16) or int8 (oneDNN's int8 matmul with the "
                 "per-token quantization around it, as --dtype int8, without smoothing)")
      ->check(CLI::IsMember({"packed", "blas", "bfloat16", "int8"}));
  CLI11_PARSE(app, argc, argv);
  if (peak) {
    std::printf("{\"peak_gflops\":%.2f,\"vnni_peak_gops\":%.2f,\"bf16_peak_gflops\":%.2f}\n",
                FmaPeakGflops(), VnniPeakGops(), Bf16PeakGflops());
    return 0;
  }
  std::vector<Shape> shapes;
  if (!ParseShapes(shapes_text, &shapes) || rows <= 0 || threads <= 0 || reps <= 0) {
    std::fprintf(stderr,
                 "bad arguments: --shapes name:k:n,..., positive --rows/--threads/--reps\n");
    return 2;
  }
  orchid::ThreadPool pool(threads);
  for (const Shape& s : shapes) {
    const std::vector<float> x = Random(size_t(rows) * size_t(s.k), 1, 1.0f);
    const std::vector<float> w = Random(size_t(s.n) * size_t(s.k), 2, 0.05f);
    const std::vector<float> b = Random(size_t(s.n), 3, 0.1f);
    std::vector<float> y(size_t(rows) * size_t(s.n));
    const orchid::PackedWeight packed =
        orchid::PackedWeight::Pack(w.data(), s.n, s.k,
                                   gemm == "blas"       ? orchid::WeightType::kFloat32Blas
                                   : gemm == "bfloat16" ? orchid::WeightType::kBfloat16
                                   : gemm == "int8"     ? orchid::WeightType::kInt8
                                                        : orchid::WeightType::kFloat32);
    std::vector<double> ms;
    for (int i = 0; i < warmup + reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      orchid::Linear(&pool, x.data(), rows, s.k, packed, b.data(), y.data(), s.n,
                     orchid::LinearEpilogue::kNone);
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::printf("{\"name\":\"%s\",\"k\":%d,\"n\":%d,\"m\":%d,\"threads\":%d,\"ms\":[",
                s.name.c_str(), s.k, s.n, rows, threads);
    for (size_t i = 0; i < ms.size(); ++i) std::printf("%s%.4f", i ? "," : "", ms[i]);
    std::printf("]}\n");
    std::fflush(stdout);
  }
  return 0;
}
