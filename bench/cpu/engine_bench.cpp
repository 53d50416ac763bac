// orchid_engine_bench: times the engine alone (no HTTP, no tokenizer) on pre-tokenized batches.
//
// Input: a JSONL file, one case per line: {"name": str, "seqs": [[ids...], ...]} and, for a
// model with task adapters, optionally "adapters": [each sequence's adapter, 1-based; 0 none].
// For each case: warm-up runs, then repeated Submit()+wait() until both --min-iters and
// --min-seconds are reached. Output: one JSON line per case with latency percentiles (ms),
// embeddings/s, and the first sequence's embedding (so the driver can check fidelity against
// the peer before trusting the timing). Driven by bench/run-cpu.sh.
//
// --per-token: every token's vector instead of the pooled one (no pooling: TEI's /embed_all; a
// ColBERT model's projected token vectors, before their normalisation); "first_embedding" is
// then the first sequence's token vectors, one array per token.
//
// --interactive: load once, then read case names from stdin, one per line; for each, time one
// run (after the warm-up runs, the first time a case is asked for) and print
// {"name", "ms", "first_embedding"} (the embedding the first time only). A driver can so
// alternate single runs with its peer's (bench/cpu/families_vs_torch.py), which keeps the
// machine's drift from landing on one side only.
#include <simdjson.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "description/registry.h"
#include "runtime/cpu_engine.h"
#include "tokenizer/tokenizer.h"

namespace {

struct Case {
  std::string name;
  std::vector<std::vector<int32_t>> seqs;
  std::vector<int32_t> adapters;  // empty: none
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
  bool interactive = false, per_token = false;
  app.add_option("--model", model_dir, "model directory")->required();
  app.add_option("--ids", ids_path, "JSONL file of cases")->required();
  app.add_option("--threads", threads, "engine threads (0 = all cores)");
  app.add_option("--dtype", dtype, "linear layers: float32, bfloat16 or int8");
  app.add_option("--gemm", gemm, "float32 products: packed (orchid's kernel) or blas (OpenBLAS)");
  app.add_option("--warmup", warmup, "warm-up runs per case");
  app.add_option("--min-iters", min_iters, "minimum timed runs per case");
  app.add_option("--min-seconds", min_seconds, "minimum timed seconds per case");
  app.add_flag("--per-token", per_token, "every token's vector, not pooled ones (see above)");
  app.add_flag("--interactive", interactive,
               "time one run per case name read from stdin (see the file's comment)");
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
      simdjson::dom::array adapters;
      if (!doc["adapters"].get_array().get(adapters)) {
        for (auto a : adapters) c.adapters.push_back(int32_t(a.get_int64().value()));
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
  // --dtype int8 calibrates and checks itself on the built-in texts, as `orchid serve` does
  // (the gate's verdict is printed, not enforced: the driver measures fidelity itself).
  std::unique_ptr<orchid::Tokenizer> tokenizer;
  load.num_threads = threads;
  if (load.linear_weights == orchid::WeightType::kInt8) {
    auto tok = orchid::Tokenizer::FromFile(model_dir + "/tokenizer.json");
    if (!tok.ok()) {
      std::fprintf(stderr, "%s\n", tok.status().ToString().c_str());
      return 1;
    }
    tokenizer = std::move(*tok);
    load.int8.tokenizer = tokenizer.get();
    load.int8.serve_anyway = true;
  }
  auto model = orchid::LoadModel(model_dir, load);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  const orchid::ModelInfo info = (*model)->info();
  if (info.fidelity.samples > 0) {
    std::fprintf(stderr, "int8 against float32 on %d built-in texts: mean cosine %.6f, min %.6f\n",
                 info.fidelity.samples, info.fidelity.mean_cosine, info.fidelity.min_cosine);
  }
  auto engine = orchid::MakeCpuEngine(std::move(model).value(), {.num_threads = threads});

  auto make_batch = [&](const Case& c) {
    orchid::RaggedBatch batch;
    for (size_t i = 0; i < c.seqs.size(); ++i) {
      const auto& s = c.seqs[i];
      batch.Add(s.data(), int(s.size()), per_token ? orchid::Pooling::kNone : info.default_pooling,
                !per_token && info.default_normalize, nullptr, 0, 0,
                i < c.adapters.size() ? c.adapters[i] : 0);
    }
    return batch;
  };
  // Runs the batch `runs` times; returns false on an error. *first: the last result.
  auto run = [&](const std::string& name, const orchid::RaggedBatch& batch, int runs,
                 orchid::Embeddings* first, std::vector<double>* ms) {
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto& r = engine->Submit(batch).wait();
      const auto t1 = std::chrono::steady_clock::now();
      if (!r.ok()) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), r.status().ToString().c_str());
        return false;
      }
      if (first != nullptr) *first = *r;
      if (ms != nullptr) ms->push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    return true;
  };
  auto embedding_json = [per_token](const orchid::Embeddings& e) {
    auto row = [](std::ostringstream& out, const float* x, int n) {
      out << "[";
      for (int d = 0; d < n; ++d) out << (d ? "," : "") << x[d];
      out << "]";
    };
    std::ostringstream out;
    out.precision(9);
    if (!per_token) {
      row(out, e.row(0), e.dim);
      return out.str();
    }
    out << "[";
    const int tokens = e.has_tokens() ? e.token_offsets[1] - e.token_offsets[0] : 0;
    for (int t = 0; t < tokens; ++t) {
      if (t) out << ",";
      row(out, e.tokens.data() + size_t(t) * size_t(e.token_dim), e.token_dim);
    }
    out << "]";
    return out.str();
  };

  if (interactive) {
    std::map<std::string, const Case*> by_name;
    for (const Case& c : cases) by_name[c.name] = &c;
    std::map<std::string, orchid::RaggedBatch> warm;  // cases already warmed up
    std::string name;
    while (std::getline(std::cin, name)) {
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        std::fprintf(stderr, "no case named \"%s\"\n", name.c_str());
        return 1;
      }
      const bool first_time = warm.count(name) == 0;
      if (first_time) warm[name] = make_batch(*it->second);
      const orchid::RaggedBatch& batch = warm[name];
      orchid::Embeddings first;
      std::vector<double> ms;
      if (first_time && !run(name, batch, warmup, nullptr, nullptr)) return 1;
      if (!run(name, batch, 1, &first, &ms)) return 1;
      std::ostringstream out;
      out << "{\"name\":\"" << name << "\",\"ms\":" << ms[0];
      if (first_time) out << ",\"first_embedding\":" << embedding_json(first);
      out << "}\n";
      std::fputs(out.str().c_str(), stdout);
      std::fflush(stdout);
    }
    return 0;
  }

  for (const Case& c : cases) {
    const orchid::RaggedBatch batch = make_batch(c);
    size_t tokens = 0;
    for (const auto& s : c.seqs) tokens += s.size();
    orchid::Embeddings first;
    if (!run(c.name, batch, warmup, &first, nullptr)) return 1;
    std::vector<double> ms;
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      if (!run(c.name, batch, 1, warmup > 0 ? nullptr : &first, &ms)) return 1;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
        << ",\"first_embedding\":" << embedding_json(first) << "}\n";
    std::fputs(out.str().c_str(), stdout);
    std::fflush(stdout);
  }
  return 0;
}
