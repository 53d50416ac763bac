// `orchid gateway --listen HOST:PORT --backend HOST:PORT [--backend …] | --backend-dns NAME:PORT`:
// the HTTP API (parsing, tokenization, chunking) in front of gRPC worker replicas. The
// tokenizer comes from --model DIR (or --tokenizer PATH) and must be the one the workers' model
// uses (checked by fingerprint); the model's width and limits come from the workers.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/serving.h"
#include "gateway/gateway.h"
#include "gateway/replica_pool.h"
#include "models/model_loader.h"
#include "rpc/convert.h"
#include "tokenizer/tokenizer.h"

namespace orchid::cli {
namespace {

struct GatewayCommandOptions {
  std::string listen = "127.0.0.1:8080";
  std::vector<std::string> backends;
  std::string backend_dns;
  std::string model_dir;
  std::string tokenizer_path;
  std::string served_model_name;
  int64_t chunk_tokens = 8192;
  double health_interval_s = 0.5;
  double dns_interval_s = 5;
  double request_timeout_s = 120;
  double startup_timeout_s = 60;
  HttpFrontFlags http;
};

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(int64_t(seconds * 1000));
}

int RunGateway(const GatewayCommandOptions& o) {
  const sigset_t stop_signals = BlockStopSignals();
  std::string host;
  uint16_t port = 0;
  if (!ParseHostPort(o.listen, &host, &port)) {
    spdlog::error("--listen `{}` is not HOST:PORT", o.listen);
    return 2;
  }
  const std::string tokenizer_path =
      !o.tokenizer_path.empty() ? o.tokenizer_path : TokenizerPath(o.model_dir);
  auto tokenizer = Tokenizer::FromFile(tokenizer_path);
  if (!tokenizer.ok()) {
    spdlog::error("cannot load tokenizer: {}", tokenizer.status().ToString());
    return 1;
  }
  auto fingerprint = rpc::FingerprintFile(tokenizer_path);
  if (!fingerprint.ok()) {
    spdlog::error("{}", fingerprint.status().ToString());
    return 1;
  }

  MetricsRegistry metrics;
  ReplicaPoolOptions po;
  po.backends = o.backends;
  po.backend_dns = o.backend_dns;
  po.chunk_tokens = o.chunk_tokens;
  po.health_interval = Ms(o.health_interval_s);
  po.dns_interval = Ms(o.dns_interval_s);
  po.request_timeout = Ms(o.request_timeout_s);
  po.tokenizer_fingerprint = *fingerprint;
  po.metrics = &metrics;
  spdlog::info("waiting up to {} s for a worker replica", o.startup_timeout_s);
  auto pool = ReplicaPool::Start(po, Ms(o.startup_timeout_s));
  if (!pool.ok()) {
    spdlog::error("{}", pool.status().ToString());
    return pool.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }

  GatewayOptions gw;
  gw.host = host;
  gw.port = port;
  gw.served_model_name =
      o.served_model_name.empty() ? (*pool)->model_name() : o.served_model_name;
  if (Status st = ApplyHttpFrontFlags(o.http, o.model_dir, &gw); !st.ok()) {
    spdlog::error("{}", st.ToString());
    return 1;
  }
  gw.metrics = &metrics;
  Gateway gateway(tokenizer->get(), pool->get(), gw);
  if (Status st = gateway.Start(); !st.ok()) {
    spdlog::error("{}", st.ToString());
    return 1;
  }
  const ModelInfo& info = (*pool)->model_info();
  spdlog::info(
      "orchid gateway for {} (dim {}, max {} tokens) on http://{} (port {}), {} replica(s)",
      gw.served_model_name, info.output_dim(), info.max_seq_length, o.listen, gateway.port(),
      (*pool)->replicas().size());

  spdlog::info("received {}, shutting down", WaitForStopSignal(stop_signals));
  gateway.Stop();
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
  auto* backend = cmd->add_option("--backend", opts->backends,
                                  "a worker replica's gRPC address, HOST:PORT (repeatable)");
  auto* dns = cmd->add_option("--backend-dns", opts->backend_dns,
                              "NAME:PORT; every address NAME resolves to is a replica "
                              "(re-resolved every --dns-interval)");
  backend->excludes(dns);
  dns->excludes(backend);
  auto* model = cmd->add_option("--model", opts->model_dir,
                                "model directory to take tokenizer.json from")
                    ->check(CLI::ExistingDirectory);
  auto* tok = cmd->add_option("--tokenizer", opts->tokenizer_path, "tokenizer.json path")
                  ->check(CLI::ExistingFile);
  model->excludes(tok);
  tok->excludes(model);
  cmd->add_option("--served-model-name", opts->served_model_name,
                  "model name in the API (default: the name the workers report)");
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
  cmd->callback([opts, exit_code] {
    if (opts->backends.empty() && opts->backend_dns.empty()) {
      spdlog::error("give --backend HOST:PORT (repeatable) or --backend-dns NAME:PORT");
      *exit_code = 2;
      return;
    }
    if (opts->model_dir.empty() && opts->tokenizer_path.empty()) {
      spdlog::error("give --model DIR or --tokenizer PATH: the gateway tokenizes");
      *exit_code = 2;
      return;
    }
    *exit_code = RunGateway(*opts);
  });
}

}  // namespace orchid::cli
