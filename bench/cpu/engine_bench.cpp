// orchid_engine_bench: times the engine alone (no HTTP, no tokenizer) on pre-tokenized batches.
//
// Input: a JSONL file, one case per line: {"name": str, "seqs": [[ids...], ...]}.
// For each case: warm-up runs, then repeated Submit()+wait() until both --min-iters and
// --min-seconds are reached. Output: one JSON line per case with latency percentiles (ms),
// embeddings/s, and the first sequence's embedding (so the driver can check fidelity against
// the peer before trusting the timing). Driven by bench/run-cpu.sh.
#include <simdjson.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cpu/cpu_engine.h"
#include "models/model_loader.h"

namespace {

struct Case {
  std::string name;
  std::vector<std::vector<int32_t>> seqs;
};

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"orchid engine benchmark"};
  std::string model_dir, ids_path, dtype = "float32", gemm = "packed";
  int threads = 0, warmup = 3, min_iters = 10;
  double min_seconds = 3.0;
  app.add_option("--model", model_dir, "model directory")->required();
  app.add_option("--ids", ids_path, "JSONL file of cases")->required();
  app.add_option("--threads", threads, "engine threads (0 = all cores)");
  app.add_option("--dtype", dtype, "linear layers: float32 or bfloat16");
  app.add_option("--gemm", gemm, "float32 products: packed (orchid's kernel) or blas (OpenBLAS)");
  app.add_option("--warmup", warmup, "warm-up runs per case");
  app.add_option("--min-iters", min_iters, "minimum timed runs per case");
  app.add_option("--min-seconds", min_seconds, "minimum timed seconds per case");
  CLI11_PARSE(app, argc, argv);

  std::vector<Case> cases;
  {
    std::ifstream in(ids_path);
    if (!in) {
      std::fprintf(stderr, "cannot open %s\n", ids_path.c_str());
      return 1;
    }
    simdjson::dom::parser parser;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      simdjson::dom::element doc;
      if (parser.parse(line).get(doc) != simdjson::SUCCESS) {
        std::fprintf(stderr, "bad JSON line in %s\n", ids_path.c_str());
        return 1;
      }
      Case c;
      c.name = std::string(doc["name"].get_string().value());
      for (auto seq : doc["seqs"].get_array()) {
        std::vector<int32_t> ids;
        for (auto id : seq.get_array()) ids.push_back(int32_t(id.get_int64().value()));
        c.seqs.push_back(std::move(ids));
      }
      cases.push_back(std::move(c));
    }
  }

  orchid::LoadOptions load;
  std::string error;
  if (!orchid::ResolveWeightType(dtype, gemm, &load.linear_weights, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  auto model = orchid::LoadModel(model_dir, load);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  const orchid::ModelInfo info = (*model)->info();
  auto engine = orchid::MakeCpuEngine(std::move(model).value(), {.num_threads = threads});

  for (const Case& c : cases) {
    orchid::RaggedBatch batch;
    size_t tokens = 0;
    for (const auto& s : c.seqs) {
      batch.Add(s.data(), int(s.size()), info.default_pooling, info.default_normalize);
      tokens += s.size();
    }
    orchid::Embeddings first;
    for (int i = 0; i < warmup; ++i) {
      const auto& r = engine->Submit(batch).wait();
      if (!r.ok()) {
        std::fprintf(stderr, "%s: %s\n", c.name.c_str(), r.status().ToString().c_str());
        return 1;
      }
      first = *r;
    }
    std::vector<double> ms;
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto& r = engine->Submit(batch).wait();
      const auto t1 = std::chrono::steady_clock::now();
      if (!r.ok()) return 1;
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      const double elapsed = std::chrono::duration<double>(t1 - start).count();
      if (int(ms.size()) >= min_iters && elapsed >= min_seconds) break;
    }
    double total = 0;
    for (double x : ms) total += x;
    std::ostringstream out;
    out << "{\"name\":\"" << c.name << "\",\"batch\":" << c.seqs.size() << ",\"tokens\":" << tokens
        << ",\"iters\":" << ms.size() << ",\"p50_ms\":" << Percentile(ms, 0.5)
        << ",\"p90_ms\":" << Percentile(ms, 0.9) << ",\"p99_ms\":" << Percentile(ms, 0.99)
        << ",\"max_ms\":" << *std::max_element(ms.begin(), ms.end())
        << ",\"emb_per_s\":" << double(c.seqs.size()) * double(ms.size()) / (total / 1000.0)
        << ",\"first_embedding\":[";
    for (int d = 0; d < first.dim; ++d) out << (d ? "," : "") << first.row(0)[d];
    out << "]}\n";
    std::fputs(out.str().c_str(), stdout);
    std::fflush(stdout);
  }
  return 0;
}
