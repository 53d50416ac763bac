// orchid_cuda_check: the CUDA engine's driver for bench/gpu/device-check.sh.
//
//   orchid_cuda_check embed --model DIR --ids FILE --out FILE.npy
//                           [--pooling mean|cls|last] [--normalize 0|1] [--graphs MODE]
//     Embeds every sequence of FILE (one sequence a line, token ids separated by spaces) in
//     one Submit() and writes the pooled rows as a float32 .npy [rows, dim].
//
//   orchid_cuda_check bench --model DIR --name NAME [--graphs MODE] [--pooling P]
//                           [--latency 128,512,4096] [--throughput 512,4096x16] [--batch 100]
//                           [--sweep 16,32,...] [--iters N] [--batches N] [--vocab-limit N]
//     The seed's engine-level suites, one JSON object per line on stdout:
//     latency: batch 1, strictly sequential, submit + wait per request, p50/p90/p99/max ms;
//     throughput: batches of --batch sequences (LENxB: of B), two in flight (as the worker
//     pipelines them), embeddings/s; sweep: the batch-1 latency at more lengths (for the
//     graphs' turning point).
//     Token ids are drawn from a fixed seed in [1000, min(vocab, vocab-limit)).
//
//   orchid_cuda_check bench ... --profile [--profile-iters N]
//     Where the GPU time goes (graphs off: --graphs defaults to off, other modes are refused).
//     For each suite asked for (latency, sweep, throughput), after the same warm-up and one
//     profiled pass that is discarded, times N batches (default: 3 for throughput, 20 for
//     latency below 4096 tokens, else 5; throughput keeps two in flight, as its suite does)
//     with the backend's OpProfiler (op_profiler.h) installed, and prints one JSON object per
//     (suite, len, batch, label), biggest first:
//       {"impl", "suite": "profile", "of": SUITE, "len", "batch", "iters", "passes" (forward
//        passes per batch: chunks), "label", "calls" and "ms" (per batch), "share" (of the
//        summed op time), "tflops"}
//     tflops: Linear GEMMs 2 m n k / time (m: the bucket's rows); Attention 4 len^2 head_dim
//     heads per sequence and layer (halved when causal) / time; else null. Then one line
//     labelled "(all ops)": the summed op time, the batch's wall time ("wall_ms"), and the
//     GEMM and attention totals ("gemm_ms", "gemm_tflops", "attn_ms", "attn_tflops").
//
// Common: --max-batch-tokens N (default 16384), --device N.
// Exit status 0 on success; errors go to stderr with status 1.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#include "runtime/cuda/cuda_engine.h"

namespace orchid::cuda {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::map<std::string, std::string> kv;
  std::string Get(const std::string& k, const std::string& def = "") const {
    auto it = kv.find(k);
    return it == kv.end() ? def : it->second;
  }
  int Int(const std::string& k, int def) const {
    auto it = kv.find(k);
    return it == kv.end() ? def : std::atoi(it->second.c_str());
  }
};

std::vector<int> IntList(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) v.push_back(std::atoi(item.c_str()));
  }
  return v;
}

// --throughput entries: LEN (batches of --batch sequences) or LENxBATCH (e.g. 4096x16: a
// smaller batch for long sequences, so that the suite fits the device check's time).
std::vector<std::pair<int, int>> ThroughputList(const std::string& s, int default_batch) {
  std::vector<std::pair<int, int>> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t x = item.find('x');
    v.emplace_back(std::atoi(item.substr(0, x).c_str()),
                   x == std::string::npos ? default_batch : std::atoi(item.c_str() + x + 1));
  }
  return v;
}

Result<Pooling> ParsePooling(const std::string& s) {
  if (s == "mean") return Pooling::kMean;
  if (s == "cls") return Pooling::kCls;
  if (s == "last") return Pooling::kLastToken;
  return Status::InvalidArgument("--pooling must be mean, cls or last");
}

Status WriteNpy(const std::string& path, const Embeddings& e) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(e.rows) + ", " + std::to_string(e.dim) + "), }";
  // magic (6) + version (2) + header length (2) + header, padded with spaces to 64, ends '\n'.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream f(path, std::ios::binary);
  if (!f) return Status::IoError("cannot write " + path);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = uint16_t(header.size());
  f.put(char(len & 0xff));
  f.put(char(len >> 8));
  f.write(header.data(), std::streamsize(header.size()));
  f.write(reinterpret_cast<const char*>(e.data.data()),
          std::streamsize(e.data.size() * sizeof(float)));
  return f ? Status::Ok() : Status::IoError("short write to " + path);
}

Result<std::unique_ptr<Engine>> OpenEngine(const Args& a) {
  CudaEngineOptions o;
  const bool profile = a.Int("profile", 0) != 0;
  ORCHID_ASSIGN_OR_RETURN(o.graphs, ParseCudaGraphs(a.Get("graphs", profile ? "off" : "lazy")));
  if (profile && o.graphs != CudaGraphs::kOff) {
    // A replayed graph runs no backend code: nothing to time per op.
    return Status::InvalidArgument("--profile needs --graphs off");
  }
  o.max_batch_tokens = a.Int("max-batch-tokens", o.max_batch_tokens);
  o.device = a.Int("device", 0);
  auto e = MakeCudaEngine(a.Get("model"), o);
  if (e.ok()) {
    for (const ModelInfo::EngineFact& f : (*e)->info().engine_facts) {
      std::fprintf(stderr, "orchid_cuda_check: %s: %s\n", f.name.c_str(), f.value.c_str());
    }
  }
  return e;
}

Status Embed(const Args& a) {
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, OpenEngine(a));
  ORCHID_ASSIGN_OR_RETURN(Pooling pool, ParsePooling(a.Get("pooling", "mean")));
  const bool norm = a.Int("normalize", 1) != 0;
  std::ifstream in(a.Get("ids"));
  if (!in) return Status::NotFound("cannot read --ids " + a.Get("ids"));
  RaggedBatch batch;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<int32_t> ids;
    std::stringstream ss(line);
    int64_t v;
    while (ss >> v) ids.push_back(int32_t(v));
    if (ids.empty()) continue;
    batch.Add(ids.data(), int(ids.size()), pool, norm);
  }
  auto r = engine->Submit(batch).wait();
  if (!r.ok()) return r.status();
  std::fprintf(stderr, "embedded %d sequences (%d tokens), dim %d\n", r->rows,
               batch.num_tokens(), r->dim);
  return WriteNpy(a.Get("out"), *r);
}

RaggedBatch RandomBatch(std::mt19937& rng, int seqs, int len, int vocab, Pooling pool) {
  std::uniform_int_distribution<int32_t> id(std::min(1000, vocab - 1), vocab - 1);
  RaggedBatch b;
  std::vector<int32_t> ids(static_cast<size_t>(len));
  for (int s = 0; s < seqs; ++s) {
    for (int32_t& x : ids) x = id(rng);
    b.Add(ids.data(), len, pool, true);
  }
  return b;
}

double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, size_t(p / 100.0 * double(v.size() - 1) + 0.5));
  return v[i];
}

Status Latency(Engine& e, const Args& a, const std::string& suite, int len, int iters,
               Pooling pool, int vocab) {
  std::mt19937 rng(uint32_t(len) * 7919u);
  std::vector<RaggedBatch> inputs;
  for (int i = 0; i < 8; ++i) inputs.push_back(RandomBatch(rng, 1, len, vocab, pool));
  for (int i = 0; i < 5; ++i) {  // warm-up: eager, capture, replays
    auto r = e.Submit(inputs[size_t(i) % inputs.size()]).wait();
    if (!r.ok()) return r.status();
  }
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    auto r = e.Submit(inputs[size_t(i) % inputs.size()]).wait();
    const auto t1 = Clock::now();
    if (!r.ok()) return r.status();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  const CudaEngineStats s = GetCudaEngineStats(e);
  std::printf(
      "{\"impl\": \"%s\", \"suite\": \"%s\", \"len\": %d, \"batch\": 1, \"iters\": %d, "
      "\"p50_ms\": %.4f, \"p90_ms\": %.4f, \"p99_ms\": %.4f, \"max_ms\": %.4f, "
      "\"graphs\": %llu, \"replays\": %llu, \"capture_failures\": %llu}\n",
      a.Get("name").c_str(), suite.c_str(), len, iters, Pct(ms, 50), Pct(ms, 90), Pct(ms, 99),
      Pct(ms, 100), (unsigned long long)s.graphs, (unsigned long long)s.graph_replays,
      (unsigned long long)s.capture_failures);
  std::fflush(stdout);
  return Status::Ok();
}

Status Throughput(Engine& e, const Args& a, int len, int batch, int batches, Pooling pool,
                  int vocab) {
  std::mt19937 rng(uint32_t(len) * 104729u);
  std::vector<RaggedBatch> inputs;
  for (int i = 0; i < 2; ++i) inputs.push_back(RandomBatch(rng, batch, len, vocab, pool));
  for (int i = 0; i < 3; ++i) {  // warm-up (eager, capture, replay of every chunk bucket)
    auto r = e.Submit(inputs[size_t(i) % 2]).wait();
    if (!r.ok()) return r.status();
  }
  const auto t0 = Clock::now();
  std::deque<LazyResult> inflight;
  for (int i = 0; i < batches; ++i) {
    inflight.push_back(e.Submit(inputs[size_t(i) % 2]));
    if (inflight.size() >= 2) {
      if (!inflight.front().wait().ok()) return inflight.front().wait().status();
      inflight.pop_front();
    }
  }
  while (!inflight.empty()) {
    if (!inflight.front().wait().ok()) return inflight.front().wait().status();
    inflight.pop_front();
  }
  const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
  // Which attention ran (cuDNN or the own kernel, counted over warm-up, captures and eager
  // passes) and whether any cuDNN call fell back: the A/B rows are told apart by these too.
  const CudaEngineStats s = GetCudaEngineStats(e);
  std::printf(
      "{\"impl\": \"%s\", \"suite\": \"throughput\", \"len\": %d, \"batch\": %d, "
      "\"batches\": %d, \"emb_per_s\": %.2f, \"tokens_per_s\": %.1f, "
      "\"attn_cudnn_calls\": %llu, \"attn_own_calls\": %llu, \"attn_cudnn_fallbacks\": %llu, "
      "\"cudnn_plans\": %llu, \"capture_failures\": %llu}\n",
      a.Get("name").c_str(), len, batch, batches, double(batches) * batch / sec,
      double(batches) * batch * len / sec, (unsigned long long)s.attention_cudnn_calls,
      (unsigned long long)s.attention_own_calls, (unsigned long long)s.attention_cudnn_fallbacks,
      (unsigned long long)s.cudnn_plans, (unsigned long long)s.capture_failures);
  std::fflush(stdout);
  return Status::Ok();
}

// Runs `iters` batches of `batch` random sequences of `len` tokens with the OpProfiler on and
// prints the per-label totals per batch (the header has the format).
Status Profile(Engine& e, const Args& a, const std::string& suite, int len, int batch, int iters,
               Pooling pool, int vocab) {
  std::mt19937 rng(uint32_t(len) * 7919u + uint32_t(batch));
  std::vector<RaggedBatch> inputs;
  for (int i = 0; i < 2; ++i) inputs.push_back(RandomBatch(rng, batch, len, vocab, pool));
  for (int i = 0; i < 2; ++i) {  // warm-up: kernels loaded, GEMM plans made
    auto r = e.Submit(inputs[size_t(i) % 2]).wait();
    if (!r.ok()) return r.status();
  }
  OpProfiler prof;
  SetOpProfiler(&prof);
  Status st;
  // One profiled batch first, discarded: creates the events the measured ones reuse.
  if (auto r = e.Submit(inputs[0]).wait(); !r.ok()) st = r.status();
  if (st.ok()) prof.Reset();
  double sec = 0;
  if (st.ok()) {
    const size_t depth = batch > 1 ? 2 : 1;  // throughput: two in flight; latency: one
    const auto t0 = Clock::now();
    std::deque<LazyResult> inflight;
    for (int i = 0; i < iters; ++i) {
      inflight.push_back(e.Submit(inputs[size_t(i) % 2]));
      if (inflight.size() >= depth) {
        if (!inflight.front().wait().ok() && st.ok()) st = inflight.front().wait().status();
        inflight.pop_front();
      }
    }
    while (!inflight.empty()) {
      if (!inflight.front().wait().ok() && st.ok()) st = inflight.front().wait().status();
      inflight.pop_front();
    }
    sec = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  SetOpProfiler(nullptr);
  ORCHID_RETURN_IF_ERROR(st);
  ORCHID_RETURN_IF_ERROR(prof.Collect());
  if (prof.skipped_passes() > 0 || prof.passes() == 0) {
    return Status::Internal("profile: " + std::to_string(prof.skipped_passes()) +
                            " passes under graph capture, " + std::to_string(prof.passes()) +
                            " profiled (graphs must be off)");
  }
  std::vector<OpProfiler::Entry> entries = prof.entries();
  std::stable_sort(
      entries.begin(), entries.end(),
      [](const OpProfiler::Entry& x, const OpProfiler::Entry& y) { return x.ms > y.ms; });
  const double n = iters;
  const double passes = double(prof.passes()) / n;  // forward passes (chunks) per batch
  // Sum of len^2 over one batch's sequences: attention FLOPs = (attn_flops_per_len2 summed over
  // a batch's calls / its passes) x this.
  const double len2 = double(batch) * double(len) * double(len);
  double total = 0, gemm_ms = 0, gemm_flops = 0, attn_ms = 0, attn_flops = 0;
  for (const OpProfiler::Entry& x : entries) total += x.ms / n;
  auto tflops = [](double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0; };
  const std::string head =
      "{\"impl\": \"" + a.Get("name") + "\", \"suite\": \"profile\", \"of\": \"" + suite +
      "\", \"len\": " + std::to_string(len) + ", \"batch\": " + std::to_string(batch) +
      ", \"iters\": " + std::to_string(iters);
  for (const OpProfiler::Entry& x : entries) {
    const double ms = x.ms / n;
    double flops = x.flops / n;
    if (x.attn_flops_per_len2 > 0) flops = x.attn_flops_per_len2 / double(prof.passes()) * len2;
    if (x.flops > 0) {
      gemm_ms += ms;
      gemm_flops += flops;
    } else if (x.attn_flops_per_len2 > 0) {
      attn_ms += ms;
      attn_flops += flops;
    }
    char tail[256];
    if (flops > 0) {
      std::snprintf(tail, sizeof(tail), "%.3f", tflops(flops, ms));
    } else {
      std::snprintf(tail, sizeof(tail), "null");
    }
    std::printf(
        "%s, \"passes\": %.2f, \"label\": \"%s\", \"calls\": %.2f, \"ms\": %.4f, "
        "\"share\": %.4f, \"tflops\": %s}\n",
        head.c_str(), passes, x.label.c_str(), double(x.calls) / n, ms,
        total > 0 ? ms / total : 0.0, tail);
  }
  std::printf(
      "%s, \"passes\": %.2f, \"label\": \"(all ops)\", \"ms\": %.4f, \"share\": 1, "
      "\"tflops\": null, \"wall_ms\": %.4f, \"gemm_ms\": %.4f, \"gemm_tflops\": %.3f, "
      "\"attn_ms\": %.4f, \"attn_tflops\": %.3f}\n",
      head.c_str(), passes, total, sec * 1e3 / n, gemm_ms, tflops(gemm_flops, gemm_ms), attn_ms,
      tflops(attn_flops, attn_ms));
  std::fflush(stdout);
  return Status::Ok();
}

Status Bench(const Args& a) {
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, OpenEngine(a));
  ORCHID_ASSIGN_OR_RETURN(Pooling pool, ParsePooling(a.Get("pooling", "mean")));
  const int vocab = std::min(engine->info().vocab_size, a.Int("vocab-limit", 30000));
  const int iters = a.Int("iters", 50);
  if (a.Int("profile", 0) != 0) {
    const int fixed = a.Int("profile-iters", 0);
    for (const char* suite : {"latency", "sweep"}) {
      for (int len : IntList(a.Get(suite))) {
        const int n = fixed > 0 ? fixed : len >= 4096 ? 5 : 20;
        ORCHID_RETURN_IF_ERROR(Profile(*engine, a, suite, len, 1, n, pool, vocab));
      }
    }
    for (const auto& [len, batch] : ThroughputList(a.Get("throughput"), a.Int("batch", 100))) {
      ORCHID_RETURN_IF_ERROR(
          Profile(*engine, a, "throughput", len, batch, fixed > 0 ? fixed : 3, pool, vocab));
    }
    return Status::Ok();
  }
  for (int len : IntList(a.Get("latency"))) {
    ORCHID_RETURN_IF_ERROR(
        Latency(*engine, a, "latency", len, len >= 4096 ? std::max(5, iters / 4) : iters, pool,
                vocab));
  }
  for (int len : IntList(a.Get("sweep"))) {
    ORCHID_RETURN_IF_ERROR(Latency(*engine, a, "sweep", len, iters, pool, vocab));
  }
  for (const auto& [len, batch] : ThroughputList(a.Get("throughput"), a.Int("batch", 100))) {
    const int batches = a.Int("batches", int64_t(len) * batch >= 200000 ? 3 : 8);
    ORCHID_RETURN_IF_ERROR(Throughput(*engine, a, len, batch, batches, pool, vocab));
  }
  return Status::Ok();
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: orchid_cuda_check embed|bench --model DIR ... (see source)\n");
    return 2;
  }
  const std::string cmd = argv[1];
  Args a;
  for (int i = 2; i < argc;) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) {
      std::fprintf(stderr, "expected --flag value pairs, got %s\n", argv[i]);
      return 2;
    }
    if (k == "--profile") {  // the one flag without a value
      a.kv["profile"] = "1";
      i += 1;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "flag %s has no value\n", argv[i]);
      return 2;
    }
    a.kv[k.substr(2)] = argv[i + 1];
    i += 2;
  }
  std::fprintf(stderr, "orchid_cuda_check %s: attention kernel %s\n", cmd.c_str(),
               AttentionKernelName(DefaultAttentionKernel()));
  Status st = cmd == "embed"   ? Embed(a)
              : cmd == "bench" ? Bench(a)
                               : Status::InvalidArgument("unknown command " + cmd);
  if (!st.ok()) {
    std::fprintf(stderr, "orchid_cuda_check %s: %s\n", cmd.c_str(), st.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace orchid::cuda

int main(int argc, char** argv) { return orchid::cuda::Main(argc, argv); }
