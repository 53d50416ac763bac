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
  ORCHID_ASSIGN_OR_RETURN(o.graphs, ParseCudaGraphs(a.Get("graphs", "lazy")));
  o.max_batch_tokens = a.Int("max-batch-tokens", o.max_batch_tokens);
  o.device = a.Int("device", 0);
  return MakeCudaEngine(a.Get("model"), o);
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
  std::printf(
      "{\"impl\": \"%s\", \"suite\": \"throughput\", \"len\": %d, \"batch\": %d, "
      "\"batches\": %d, \"emb_per_s\": %.2f, \"tokens_per_s\": %.1f}\n",
      a.Get("name").c_str(), len, batch, batches, double(batches) * batch / sec,
      double(batches) * batch * len / sec);
  std::fflush(stdout);
  return Status::Ok();
}

Status Bench(const Args& a) {
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, OpenEngine(a));
  ORCHID_ASSIGN_OR_RETURN(Pooling pool, ParsePooling(a.Get("pooling", "mean")));
  const int vocab = std::min(engine->info().vocab_size, a.Int("vocab-limit", 30000));
  const int iters = a.Int("iters", 50);
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
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) {
      std::fprintf(stderr, "expected --flag value pairs, got %s\n", argv[i]);
      return 2;
    }
    a.kv[k.substr(2)] = argv[i + 1];
  }
  if ((argc - 2) % 2 != 0) {
    std::fprintf(stderr, "flag %s has no value\n", argv[argc - 1]);
    return 2;
  }
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
