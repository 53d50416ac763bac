// `orchid gateway --listen HOST:PORT --backend HOST:PORT [--backend …] | --backend-dns NAME:PORT`:
// the HTTP API (parsing, tokenization, chunking) in front of gRPC worker replicas. The
// tokenizer comes from --model DIR (or --tokenizer PATH) and must be the one the workers' model
// uses (checked by fingerprint); the model's width and limits come from the workers.
//
// Several models: `--model NAME=DIR` once per model and every backend named after its model
// (`--backend NAME=HOST:PORT`, `--backend-dns NAME=DNSNAME:PORT`): one replica pool per model,
// requests pick one with `model` (the first is the default), as with `orchid serve`.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/serving.h"
#include "gateway/gateway.h"
#include "gateway/replica_pool.h"
#include "description/registry.h"
#include "rpc/convert.h"
#include "tokenizer/tokenizer.h"

namespace orchid::cli {
namespace {

struct GatewayCommandOptions {
  std::string listen = "127.0.0.1:8080";
  std::vector<std::string> backends;     // HOST:PORT or MODEL=HOST:PORT
  std::vector<std::string> backend_dns;  // NAME:PORT or MODEL=NAME:PORT
  std::vector<std::string> models;       // DIR or NAME=DIR
  std::string tokenizer_path;
  std::string served_model_name;
  int64_t chunk_tokens = 8192;
  QueryThresholds query;
  double health_interval_s = 0.5;
  double dns_interval_s = 5;
  double request_timeout_s = 120;
  double startup_timeout_s = 60;
  HttpFrontFlags http;
};

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(int64_t(seconds * 1000));
}

// "MODEL=ADDRESS" → {MODEL, ADDRESS}; "ADDRESS" → {"", ADDRESS}. Addresses have no '='.
std::pair<std::string, std::string> SplitModelPrefix(const std::string& s) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos) return {"", s};
  return {s.substr(0, eq), s.substr(eq + 1)};
}

// One model of the gateway: where its tokenizer comes from and which replicas serve it.
struct FrontedModel {
  std::string name;  // empty: --served-model-name, else the name its workers report
  std::string dir;   // empty with --tokenizer
  std::string tokenizer_path;
  std::vector<std::string> backends;
  std::string backend_dns;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ReplicaPool> pool;
};

// Sorts --model / --backend / --backend-dns into models; an error message when they do not fit.
std::string PlanModels(const GatewayCommandOptions& o, std::vector<FrontedModel>* out) {
  std::vector<FrontedModel>& models = *out;
  if (o.models.empty()) {
    models.emplace_back();
    models.back().tokenizer_path = o.tokenizer_path;
  }
  for (const std::string& m : o.models) {
    const ModelSpec spec = ParseModelSpec(m);
    if (!std::filesystem::is_directory(spec.dir)) {
      return "--model " + m + ": " + spec.dir + " is not a directory";
    }
    models.emplace_back();
    models.back().name = spec.name;
    models.back().dir = spec.dir;
    models.back().tokenizer_path = TokenizerPath(spec.dir);
  }
  const bool several = models.size() > 1;
  if (several) {
    if (!o.served_model_name.empty()) {
      return "--served-model-name names a single model; with several --model, use "
             "--model NAME=DIR";
    }
    std::set<std::string> names;
    for (FrontedModel& m : models) {
      if (m.name.empty()) m.name = DefaultModelName(m.dir);
      if (!names.insert(m.name).second) {
        return "two models are named `" + m.name + "`; name them with --model NAME=DIR";
      }
    }
  } else if (models.front().name.empty()) {
    models.front().name = o.served_model_name;
  } else if (!o.served_model_name.empty()) {
    return "--served-model-name and --model NAME=DIR both name the model";
  }
  // Which model a backend belongs to: its prefix, or the only model.
  auto owner = [&](const std::string& flag, const std::string& value,
                   std::string* address) -> std::pair<FrontedModel*, std::string> {
    auto [name, addr] = SplitModelPrefix(value);
    *address = addr;
    if (name.empty()) {
      if (several) {
        return {nullptr, flag + " " + value + ": with several models, name its model (" + flag +
                             " MODEL=" + value + ")"};
      }
      return {&models.front(), ""};
    }
    for (FrontedModel& m : models) {
      if (m.name == name) return {&m, ""};
    }
    return {nullptr, flag + " " + value + ": no --model is named `" + name + "`"};
  };
  std::string address;
  for (const std::string& b : o.backends) {
    auto [m, err] = owner("--backend", b, &address);
    if (m == nullptr) return err;
    m->backends.push_back(address);
  }
  for (const std::string& d : o.backend_dns) {
    auto [m, err] = owner("--backend-dns", d, &address);
    if (m == nullptr) return err;
    if (!m->backend_dns.empty()) {
      return "--backend-dns " + d + ": one --backend-dns per model";
    }
    m->backend_dns = address;
  }
  for (const FrontedModel& m : models) {
    const std::string which = several ? "model `" + m.name + "`" : "the model";
    if (m.backends.empty() && m.backend_dns.empty()) {
      return which + " has no replicas: give --backend " + (several ? m.name + "=" : "") +
             "HOST:PORT or --backend-dns";
    }
    if (!m.backends.empty() && !m.backend_dns.empty()) {
      return which + " has both --backend and --backend-dns; give one kind";
    }
  }
  return "";
}

int RunGateway(const GatewayCommandOptions& o) {
  const sigset_t stop_signals = BlockStopSignals();
  std::string host;
  uint16_t port = 0;
  if (!ParseHostPort(o.listen, &host, &port)) {
    spdlog::error("--listen `{}` is not HOST:PORT", o.listen);
    return 2;
  }
  std::vector<FrontedModel> models;
  if (std::string err = PlanModels(o, &models); !err.empty()) {
    spdlog::error("{}", err);
    return 2;
  }
  const bool several = models.size() > 1;

  MetricsRegistry metrics;
  // Pools stop (draining their calls) before the tokenizers they were checked against go.
  auto shutdown_all = [&] {
    for (FrontedModel& m : models) {
      if (m.pool) m.pool->Shutdown(std::chrono::milliseconds(0));
    }
  };
  for (FrontedModel& m : models) {
    auto tokenizer = LoadModelTokenizer(m.dir, m.tokenizer_path);
    if (!tokenizer.ok()) {
      spdlog::error("cannot load tokenizer: {}", tokenizer.status().ToString());
      shutdown_all();
      return 1;
    }
    m.tokenizer = std::move(*tokenizer);
    auto fingerprint = rpc::FingerprintFile(m.tokenizer_path);
    if (!fingerprint.ok()) {
      spdlog::error("{}", fingerprint.status().ToString());
      shutdown_all();
      return 1;
    }
    ReplicaPoolOptions po;
    po.backends = m.backends;
    po.backend_dns = m.backend_dns;
    po.chunk_tokens = o.chunk_tokens;
    po.health_interval = Ms(o.health_interval_s);
    po.dns_interval = Ms(o.dns_interval_s);
    po.request_timeout = Ms(o.request_timeout_s);
    po.tokenizer_fingerprint = *fingerprint;
    po.query = o.query;
    po.metrics = &metrics;
    if (several) po.metric_labels = {{"model", m.name}};
    spdlog::info("waiting up to {} s for a worker replica{}", o.startup_timeout_s,
                 several ? " of " + m.name : "");
    auto pool = ReplicaPool::Start(po, Ms(o.startup_timeout_s));
    if (!pool.ok()) {
      spdlog::error("{}{}", several ? m.name + ": " : "", pool.status().ToString());
      shutdown_all();
      return pool.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
    }
    m.pool = std::move(*pool);
    if (m.name.empty()) m.name = m.pool->model_name();
  }

  GatewayOptions gw;
  gw.host = host;
  gw.port = port;
  gw.served_model_name = models.front().name;
  if (Status st = ApplyHttpFrontFlags(o.http, "", &gw); !st.ok()) {
    spdlog::error("{}", st.ToString());
    shutdown_all();
    return 1;
  }
  gw.metrics = &metrics;
  std::vector<GatewayModel> fronted;
  for (const FrontedModel& m : models) {
    auto g = FrontModel(m.name, m.tokenizer.get(), m.pool.get(), m.dir, o.http);
    if (!g.ok()) {
      spdlog::error("{}", g.status().ToString());
      shutdown_all();
      return 1;
    }
    fronted.push_back(std::move(*g));
  }
  Gateway gateway(std::move(fronted), gw);
  if (Status st = gateway.Start(); !st.ok()) {
    spdlog::error("{}", st.ToString());
    shutdown_all();
    return 1;
  }
  for (const FrontedModel& m : models) {
    const ModelInfo& info = m.pool->model_info();
    if (!info.max_seq_length_source.empty()) {
      spdlog::info("{}: maximum input length {} tokens ({})", m.name, info.max_seq_length,
                   info.max_seq_length_source);
    }
    const bool late = info.late_interaction.enabled;
    spdlog::info(
        "orchid gateway for {} ({}dim {}, max {} tokens) on http://{} (port {}), {} replica(s)",
        m.name, late ? "late interaction, token " : "", late ? info.token_dim() : info.output_dim(),
        info.max_seq_length, o.listen, gateway.port(), m.pool->replicas().size());
  }

  spdlog::info("received {}, shutting down", WaitForStopSignal(stop_signals));
  gateway.Stop();  // shuts the pools down too
  spdlog::info("stopped");
  return 0;
}

}  // namespace

void RegisterGatewayCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<GatewayCommandOptions>();
  auto* cmd = app.add_subcommand(
      "gateway", "HTTP API in front of gRPC worker replicas: tokenizes, chunks, load-balances");
  cmd->add_option("--listen", opts->listen, "HTTP address, HOST:PORT (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--backend", opts->backends,
                  "a worker replica's gRPC address, HOST:PORT, or MODEL=HOST:PORT with several "
                  "models (repeatable)");
  cmd->add_option("--backend-dns", opts->backend_dns,
                  "NAME:PORT (MODEL=NAME:PORT with several models); every address NAME resolves "
                  "to is a replica (re-resolved every --dns-interval)");
  auto* model = cmd->add_option("--model", opts->models,
                                "model directory to take tokenizer.json from, or NAME=DIR; repeat "
                                "to front several models (requests pick one with `model`; the "
                                "first is the default)");
  auto* tok = cmd->add_option("--tokenizer", opts->tokenizer_path, "tokenizer.json path")
                  ->check(CLI::ExistingFile);
  model->excludes(tok);
  tok->excludes(model);
  cmd->add_option("--served-model-name", opts->served_model_name,
                  "model name in the API of a single model (default: the name the workers "
                  "report)");
  cmd->add_option("--chunk-tokens", opts->chunk_tokens,
                  "requests with more tokens are split into chunks of at most this many, "
                  "spread over replicas")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--health-interval", opts->health_interval_s, "seconds between health checks")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--dns-interval", opts->dns_interval_s,
                  "seconds between re-resolutions of --backend-dns")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--request-timeout", opts->request_timeout_s,
                  "seconds a chunk may take on a worker")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--startup-timeout", opts->startup_timeout_s,
                  "seconds to wait for the first worker replica at startup")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddHttpFrontFlags(cmd, &opts->http);
  AddQueryFlags(cmd, &opts->query);
  cmd->callback([opts, exit_code] {
    if (opts->backends.empty() && opts->backend_dns.empty()) {
      spdlog::error("give --backend HOST:PORT (repeatable) or --backend-dns NAME:PORT");
      *exit_code = 2;
      return;
    }
    if (opts->models.empty() && opts->tokenizer_path.empty()) {
      spdlog::error("give --model DIR or --tokenizer PATH: the gateway tokenizes");
      *exit_code = 2;
      return;
    }
    *exit_code = RunGateway(*opts);
  });
}

}  // namespace orchid::cli
