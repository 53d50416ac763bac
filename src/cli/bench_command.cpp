// `orchid bench`: the seed's benchmark suites (BRIEF §6) against an embedding endpoint.
//
//   latency      batch 1, strictly sequential, one client, per length (pre-tokenized unless
//                --text)
//   throughput   batches of 100, four concurrent clients, per length → embeddings/s
//   concurrency  batch 1, text input (tokenization and every hop included), 1/2/4/8/16
//                concurrent clients, per length
//   offline      no server: the same model on the in-process CPU engine, batches of
//                --offline-batch sequences back to back (two in flight) → the ceiling that
//                `serve` is compared with
// (The seed's scoring suite waits for rerankers.)
//
// Inputs are STS-B sentences joined and cut to exactly the length asked (special tokens
// included); lengths past the model's maximum are skipped and said so. Before timing, a
// warm-up embeds reference sentences (tests/fixtures/minilm: sentence-transformers' own output)
// and stops unless every cosine similarity reaches --min-cosine. Each row reports p50/p90/p99/max
// latency per request (ms) and embeddings/s; --out appends the rows as JSON lines.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <simdjson.h>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench_client.h"
#include "cli/commands.h"
#include "runtime/cpu_engine.h"
#include "gateway/json_writer.h"
#include "description/registry.h"
#include "tokenizer/tokenizer.h"

namespace orchid::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string target;
  std::string label;
  std::string model_dir = "models/all-MiniLM-L6-v2";
  std::string served_model_name;
  std::string api_key;
  std::string reference_dir = "tests/fixtures/minilm";
  std::string corpus = "tests/data/stsb/stsb-en-test.csv";
  std::vector<std::string> suites = {"latency", "throughput", "concurrency"};
  std::vector<int> latency_lengths = {128, 512, 4096};
  std::vector<int> throughput_lengths = {512, 1024, 4096};
  std::vector<int> concurrency_lengths = {512};
  std::vector<int> clients = {1, 2, 4, 8, 16};
  int latency_requests = 200;
  int concurrency_requests = 400;
  int throughput_batches = 6;  // per client
  int throughput_batch = 100;
  int throughput_clients = 4;
  int offline_batch = 16;
  int offline_batches = 60;
  int threads = 0;  // offline engine threads
  bool text = false;
  bool float_format = false;
  double min_cosine = 0.999;
  std::string out;
};

struct Input {
  std::vector<int32_t> ids;
  std::string text;
};

struct Row {
  std::string suite, label, input;
  int length = 0, batch = 0, clients = 0, requests = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, emb_per_s = 0;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = size_t(std::ceil(p / 100.0 * double(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// Splits one CSV line with double-quoted fields.
std::vector<std::string> CsvFields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

Result<std::vector<std::string>> LoadCorpus(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status::IoError("cannot open corpus " + path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(f, line)) {
    auto fields = CsvFields(line);
    for (size_t i = 0; i + 1 < fields.size() && i < 2; ++i) {
      if (!fields[i].empty()) out.push_back(fields[i]);
    }
  }
  if (out.size() < 100) return Status::Corrupt("corpus " + path + " has too few sentences");
  return out;
}

// `count` inputs of exactly `length` tokens (special tokens included), each from a different
// starting sentence.
Result<std::vector<Input>> MakeInputs(const Tokenizer& tok, const std::vector<std::string>& corpus,
                                      int length, int count) {
  std::vector<Input> out;
  Encoding enc;
  EncodeOptions opt;
  opt.max_length = size_t(length);
  for (int i = 0; i < count; ++i) {
    std::string text;
    size_t k = (size_t(i) * 7919) % corpus.size();
    for (;;) {
      if (!text.empty()) text += ' ';
      text += corpus[k];
      k = (k + 1) % corpus.size();
      // ~4 characters per token is plenty to check; the encode below is exact.
      if (text.size() > size_t(length) * 8) break;
    }
    enc.clear();
    ORCHID_RETURN_IF_ERROR(tok.Encode(text, opt, &enc));
    if (enc.ids.size() != size_t(length)) return Status::Internal("could not build an input");
    // The text up to the end of the last kept text token re-encodes to about `length` tokens.
    uint32_t end = 0;
    for (size_t t = 0; t < enc.ids.size(); ++t) {
      if (!enc.special_tokens_mask.empty() && enc.special_tokens_mask[t]) continue;
      end = std::max(end, enc.offsets[t].second);
    }
    out.push_back(Input{enc.ids, text.substr(0, end)});
  }
  return out;
}

Result<Embeddings> Send(BenchClient& c, const std::vector<const Input*>& batch, bool text) {
  if (text) {
    std::vector<std::string> t;
    for (const Input* in : batch) t.push_back(in->text);
    return c.EmbedTexts(t);
  }
  std::vector<std::vector<int32_t>> ids;
  for (const Input* in : batch) ids.push_back(in->ids);
  return c.EmbedIds(ids);
}

// The warm-up: reference sentences through the endpoint, every cosine ≥ min_cosine.
Status CheckFidelity(const BenchTarget& target, const BenchOptions& o, double* worst) {
  std::ifstream f(o.reference_dir + "/inputs.json");
  std::stringstream ss;
  ss << f.rdbuf();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (!f || parser.parse(ss.str()).get(doc)) {
    return Status::IoError("cannot read " + o.reference_dir + "/inputs.json");
  }
  const int dim = int(int64_t(doc["dim"]));
  std::vector<Input> refs;
  for (simdjson::dom::element s : simdjson::dom::array(doc["sentences"])) {
    Input in;
    in.text = std::string(std::string_view(s["text"]));
    for (simdjson::dom::element id : simdjson::dom::array(s["ids"])) in.ids.push_back(int32_t(int64_t(id)));
    refs.push_back(std::move(in));
    if (refs.size() == 64) break;
  }
  std::ifstream ef(o.reference_dir + "/embeddings.f32", std::ios::binary);
  std::vector<float> expected(refs.size() * size_t(dim));
  ef.read(reinterpret_cast<char*>(expected.data()), std::streamsize(expected.size() * 4));
  if (!ef) return Status::IoError("cannot read " + o.reference_dir + "/embeddings.f32");
  auto client = MakeBenchClient(target);
  *worst = 1;
  for (size_t b = 0; b < refs.size(); b += 16) {
    std::vector<const Input*> batch;
    for (size_t i = b; i < std::min(refs.size(), b + 16); ++i) batch.push_back(&refs[i]);
    ORCHID_ASSIGN_OR_RETURN(Embeddings got, Send(*client, batch, o.text));
    if (got.dim != dim) return Status::FailedPrecondition("endpoint's width differs from the reference");
    for (int r = 0; r < got.rows; ++r) {
      const float* x = got.row(r);
      const float* y = expected.data() + (b + size_t(r)) * size_t(dim);
      double xy = 0, xx = 0, yy = 0;
      for (int d = 0; d < dim; ++d) {
        xy += double(x[d]) * y[d];
        xx += double(x[d]) * x[d];
        yy += double(y[d]) * y[d];
      }
      *worst = std::min(*worst, xy / std::sqrt(xx * yy));
    }
  }
  if (*worst < o.min_cosine) {
    return Status::FailedPrecondition("warm-up fidelity check failed: cosine " +
                                      std::to_string(*worst) + " < " +
                                      std::to_string(o.min_cosine));
  }
  return Status::Ok();
}

// `clients` threads, each sending `per_client` requests of `batch` inputs (cycling through
// `inputs`), after `warmup` untimed requests each.
Result<Row> RunLoad(const BenchTarget& target, const std::vector<Input>& inputs, int batch,
                    int clients, int per_client, bool text, int warmup) {
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::vector<Status> errors(static_cast<size_t>(clients));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point start;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto client = MakeBenchClient(target);
      size_t next = size_t(c) * 31;
      auto make = [&] {
        std::vector<const Input*> b;
        for (int i = 0; i < batch; ++i) b.push_back(&inputs[next++ % inputs.size()]);
        return b;
      };
      for (int i = 0; i < warmup; ++i) {
        if (auto r = Send(*client, make(), text); !r.ok()) {
          errors[size_t(c)] = r.status();
          break;
        }
      }
      ++ready;
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < per_client && errors[size_t(c)].ok(); ++i) {
        auto b = make();
        const auto t0 = Clock::now();
        auto r = Send(*client, b, text);
        if (!r.ok()) {
          errors[size_t(c)] = r.status();
          break;
        }
        lat[size_t(c)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
    });
  }
  while (ready.load() < clients) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  start = Clock::now();
  go = true;
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  for (const Status& e : errors) {
    if (!e.ok()) return e;
  }
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  Row row;
  row.batch = batch;
  row.clients = clients;
  row.requests = int(all.size());
  row.p50 = Percentile(all, 50);
  row.p90 = Percentile(all, 90);
  row.p99 = Percentile(all, 99);
  row.max = Percentile(all, 100);
  row.emb_per_s = double(all.size()) * batch / wall;
  return row;
}

Result<Row> RunOffline(Engine& engine, const std::vector<Input>& inputs, int batch, int batches) {
  auto make = [&](size_t* next) {
    RaggedBatch b;
    for (int i = 0; i < batch; ++i) {
      const Input& in = inputs[(*next)++ % inputs.size()];
      b.Add(in.ids.data(), int(in.ids.size()), engine.info().default_pooling,
            engine.info().default_normalize);
    }
    return b;
  };
  size_t next = 0;
  for (int i = 0; i < 3; ++i) ORCHID_RETURN_IF_ERROR(engine.Submit(make(&next)).wait().status());
  std::vector<double> lat;
  const auto start = Clock::now();
  // Two in flight, as the worker's pipeline keeps them.
  std::deque<std::pair<LazyResult, Clock::time_point>> q;
  auto retire = [&]() -> Status {
    ORCHID_RETURN_IF_ERROR(q.front().first.wait().status());
    lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - q.front().second).count());
    q.pop_front();
    return Status::Ok();
  };
  for (int i = 0; i < batches; ++i) {
    q.emplace_back(engine.Submit(make(&next)), Clock::now());
    if (q.size() == 2) ORCHID_RETURN_IF_ERROR(retire());
  }
  while (!q.empty()) ORCHID_RETURN_IF_ERROR(retire());
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  Row row;
  row.batch = batch;
  row.clients = 0;
  row.requests = int(lat.size());
  row.p50 = Percentile(lat, 50);
  row.p90 = Percentile(lat, 90);
  row.p99 = Percentile(lat, 99);
  row.max = Percentile(lat, 100);
  row.emb_per_s = double(batches) * batch / wall;
  return row;
}

void Print(const Row& r, std::FILE* out) {
  std::fprintf(out, "%-12s %-16s %-5s %6d %6d %4d %6d %9.3f %9.3f %9.3f %9.3f %10.1f\n",
               r.suite.c_str(), r.label.c_str(), r.input.c_str(), r.length, r.batch, r.clients,
               r.requests, r.p50, r.p90, r.p99, r.max, r.emb_per_s);
  std::fflush(out);
}

std::string Json(const Row& r) {
  std::string s;
  JsonWriter w(&s);
  w.BeginObject()
      .Key("suite").String(r.suite)
      .Key("label").String(r.label)
      .Key("input").String(r.input)
      .Key("length").Int(r.length)
      .Key("batch").Int(r.batch)
      .Key("clients").Int(r.clients)
      .Key("requests").Int(r.requests);
  auto num = [&w](const char* key, double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.4f", v);
    w.Key(key).Raw(buf);
  };
  num("p50_ms", r.p50);
  num("p90_ms", r.p90);
  num("p99_ms", r.p99);
  num("max_ms", r.max);
  num("embeddings_per_s", r.emb_per_s);
  w.EndObject();
  return s;
}

int RunBench(const BenchOptions& o) {
  auto tokenizer = Tokenizer::FromFile(TokenizerPath(o.model_dir));
  if (!tokenizer.ok()) {
    spdlog::error("{}", tokenizer.status().ToString());
    return 1;
  }
  auto model = LoadModel(o.model_dir);
  if (!model.ok()) {
    spdlog::error("{}", model.status().ToString());
    return 1;
  }
  const ModelInfo info = (*model)->info();
  const int max_len = info.max_seq_length > 0 ? info.max_seq_length : info.max_position_embeddings;
  auto corpus = LoadCorpus(o.corpus);
  if (!corpus.ok()) {
    spdlog::error("{}", corpus.status().ToString());
    return 1;
  }
  const bool offline_only =
      o.suites.size() == 1 && o.suites[0] == "offline";
  BenchTarget target;
  if (!offline_only) {
    auto t = ParseBenchTarget(o.target);
    if (!t.ok()) {
      spdlog::error("{}", t.status().ToString());
      return 2;
    }
    target = *t;
    target.model = o.served_model_name;
    target.base64 = !o.float_format;
    target.api_key = o.api_key;
    double worst = 0;
    if (o.reference_dir == "none") {
      // A model without reference embeddings (the device check's random-weight BERT-base).
      spdlog::warn("no warm-up fidelity check (--reference none)");
    } else if (Status st = CheckFidelity(target, o, &worst); !st.ok()) {
      spdlog::error("{}", st.ToString());
      return 1;
    } else {
      spdlog::info("warm-up fidelity: min cosine {:.7f} over 64 reference sentences", worst);
    }
  }
  const std::string label = o.label.empty() ? o.target : o.label;
  std::FILE* json = o.out.empty() ? nullptr : std::fopen(o.out.c_str(), "a");
  std::printf("%-12s %-16s %-5s %6s %6s %4s %6s %9s %9s %9s %9s %10s\n", "suite", "target", "input",
              "len", "batch", "cli", "n", "p50_ms", "p90_ms", "p99_ms", "max_ms", "emb/s");
  auto emit = [&](Row r) {
    Print(r, stdout);
    if (json) std::fprintf(json, "%s\n", Json(r).c_str());
  };
  auto lengths_ok = [&](const std::vector<int>& ls) {
    std::vector<int> out;
    for (int l : ls) {
      if (l <= max_len) {
        out.push_back(l);
      } else {
        spdlog::warn("length {} is past the model's maximum of {}: skipped", l, max_len);
      }
    }
    if (out.empty() || out.back() != max_len) {
      bool any_over = std::any_of(ls.begin(), ls.end(), [&](int l) { return l > max_len; });
      if (any_over) out.push_back(max_len);  // the longest the model takes, instead
    }
    return out;
  };
  std::unique_ptr<Engine> engine;
  int rc = 0;
  for (const std::string& suite : o.suites) {
    if (suite == "latency") {
      for (int len : lengths_ok(o.latency_lengths)) {
        auto inputs = MakeInputs(**tokenizer, *corpus, len, 64);
        if (!inputs.ok()) return spdlog::error("{}", inputs.status().ToString()), 1;
        auto r = RunLoad(target, *inputs, 1, 1, o.latency_requests, o.text, 10);
        if (!r.ok()) { spdlog::error("latency {}: {}", len, r.status().ToString()); rc = 1; continue; }
        r->suite = suite; r->label = label; r->input = o.text ? "text" : "ids"; r->length = len;
        emit(*r);
      }
    } else if (suite == "throughput") {
      for (int len : lengths_ok(o.throughput_lengths)) {
        auto inputs = MakeInputs(**tokenizer, *corpus, len, 256);
        if (!inputs.ok()) return spdlog::error("{}", inputs.status().ToString()), 1;
        auto r = RunLoad(target, *inputs, o.throughput_batch, o.throughput_clients,
                         o.throughput_batches, o.text, 1);
        if (!r.ok()) { spdlog::error("throughput {}: {}", len, r.status().ToString()); rc = 1; continue; }
        r->suite = suite; r->label = label; r->input = o.text ? "text" : "ids"; r->length = len;
        emit(*r);
      }
    } else if (suite == "concurrency") {
      for (int len : lengths_ok(o.concurrency_lengths)) {
        auto inputs = MakeInputs(**tokenizer, *corpus, len, 256);
        if (!inputs.ok()) return spdlog::error("{}", inputs.status().ToString()), 1;
        for (int c : o.clients) {
          const int per_client = std::max(1, o.concurrency_requests / c);
          auto r = RunLoad(target, *inputs, 1, c, per_client, /*text=*/true, 3);
          if (!r.ok()) { spdlog::error("concurrency {}x{}: {}", c, len, r.status().ToString()); rc = 1; continue; }
          r->suite = suite; r->label = label; r->input = "text"; r->length = len;
          emit(*r);
        }
      }
    } else if (suite == "offline") {
      if (!engine) engine = MakeCpuEngine(std::move(*model), CpuEngineOptions{o.threads});
      for (int len : lengths_ok(o.concurrency_lengths)) {
        auto inputs = MakeInputs(**tokenizer, *corpus, len, 256);
        if (!inputs.ok()) return spdlog::error("{}", inputs.status().ToString()), 1;
        auto r = RunOffline(*engine, *inputs, o.offline_batch, o.offline_batches);
        if (!r.ok()) { spdlog::error("offline {}: {}", len, r.status().ToString()); rc = 1; continue; }
        r->suite = suite; r->label = "engine"; r->input = "ids"; r->length = len;
        emit(*r);
      }
    } else {
      spdlog::error("unknown suite `{}` (latency, throughput, concurrency, offline)", suite);
      return 2;
    }
  }
  if (json) std::fclose(json);
  return rc;
}

}  // namespace

void RegisterBenchCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand("bench", "The seed's benchmark suites against an endpoint");
  cmd->add_option("--target", o->target,
                  "http://HOST:PORT (serve, gateway or a peer's OpenAI API) or grpc://HOST:PORT "
                  "(a worker)");
  cmd->add_option("--label", o->label, "name of the target in the table");
  cmd->add_option("--model", o->model_dir, "model directory (tokenizer, maximum length, offline engine)")
      ->capture_default_str();
  cmd->add_option("--served-model-name", o->served_model_name, "\"model\" sent in requests");
  cmd->add_option("--api-key", o->api_key, "HTTP targets: sent as `Authorization: Bearer KEY`")
      ->envname("ORCHID_API_KEY");
  cmd->add_option("--reference", o->reference_dir,
                  "reference embeddings for the warm-up check (inputs.json + embeddings.f32); "
                  "none: no check")
      ->capture_default_str();
  cmd->add_option("--corpus", o->corpus, "CSV whose first two columns are sentences")
      ->capture_default_str();
  cmd->add_option("--suite", o->suites, "latency, throughput, concurrency, offline (repeatable)")
      ->capture_default_str();
  cmd->add_option("--latency-lengths", o->latency_lengths)->capture_default_str();
  cmd->add_option("--throughput-lengths", o->throughput_lengths)->capture_default_str();
  cmd->add_option("--concurrency-lengths", o->concurrency_lengths,
                  "lengths of the concurrency and offline suites")->capture_default_str();
  cmd->add_option("--clients", o->clients, "client counts of the concurrency suite")
      ->capture_default_str();
  cmd->add_option("--latency-requests", o->latency_requests)->capture_default_str();
  cmd->add_option("--concurrency-requests", o->concurrency_requests,
                  "requests per client count")->capture_default_str();
  cmd->add_option("--throughput-batches", o->throughput_batches, "batches per client")
      ->capture_default_str();
  cmd->add_option("--offline-batch", o->offline_batch)->capture_default_str();
  cmd->add_option("--offline-batches", o->offline_batches)->capture_default_str();
  cmd->add_option("--threads", o->threads, "offline engine threads (0: all cores)")
      ->capture_default_str();
  cmd->add_flag("--text", o->text, "send texts instead of token ids (peers take only text)");
  cmd->add_flag("--float", o->float_format, "ask for encoding_format float instead of base64");
  cmd->add_option("--min-cosine", o->min_cosine, "warm-up fidelity bar")->capture_default_str();
  cmd->add_option("--out", o->out, "append rows as JSON lines to this file");
  cmd->callback([o, exit_code] { *exit_code = RunBench(*o); });
}

}  // namespace orchid::cli
