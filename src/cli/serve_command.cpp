// `orchid serve --model DIR`: gateway and worker in one process, no network hop — the HTTP API
// in front of a TokenBudgetScheduler in front of a CPU engine. Runs until SIGINT or SIGTERM.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "cli/commands.h"
#include "cli/serving.h"
#include "gateway/embed_backend.h"
#include "gateway/gateway.h"
#include "models/model_loader.h"
#include "tokenizer/tokenizer.h"

namespace orchid::cli {
namespace {

struct ServeOptions {
  std::string model_dir;
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string served_model_name;
  SchedulerFlags scheduler;
  HttpFrontFlags http;
};

int RunServe(const ServeOptions& o) {
  const sigset_t stop_signals = BlockStopSignals();
  MetricsRegistry metrics;
  auto serving = LoadServingModel(o.model_dir, o.served_model_name, o.scheduler, &metrics);
  if (!serving.ok()) {
    spdlog::error("{}", serving.status().ToString());
    return serving.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  auto tokenizer = Tokenizer::FromFile(TokenizerPath(o.model_dir));
  if (!tokenizer.ok()) {
    spdlog::error("cannot load tokenizer: {}", tokenizer.status().ToString());
    return 1;
  }
  LocalBackend backend(serving->scheduler.get());

  GatewayOptions gw;
  gw.host = o.host;
  gw.port = o.port;
  gw.served_model_name = serving->model.name;
  if (Status st = ApplyHttpFrontFlags(o.http, o.model_dir, &gw); !st.ok()) {
    spdlog::error("{}", st.ToString());
    return 1;
  }
  gw.metrics = &metrics;
  Gateway gateway(tokenizer->get(), &backend, gw);
  if (Status st = gateway.Start(); !st.ok()) {
    spdlog::error("{}", st.ToString());
    serving->scheduler->Shutdown();
    return 1;
  }
  const ModelInfo& info = serving->model.info;
  const bool v6 = o.host.find(':') != std::string::npos;
  spdlog::info("orchid serving {} ({}, dim {}, max {} tokens, {} pooling{}) on http://{}{}{}:{}",
               gw.served_model_name, info.architecture, info.hidden_size,
               serving->model.max_input_tokens, PoolingName(info.default_pooling),
               info.default_normalize ? ", normalized" : "", v6 ? "[" : "", o.host, v6 ? "]" : "",
               gateway.port());

  spdlog::info("received {}, shutting down", WaitForStopSignal(stop_signals));
  gateway.Stop();  // drains the scheduler too
  spdlog::info("stopped");
  return 0;
}

}  // namespace

void RegisterServeCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<ServeOptions>();
  auto* cmd = app.add_subcommand(
      "serve",
      "Serve a model over HTTP (gateway and worker in one process): OpenAI POST /v1/embeddings, "
      "TEI POST /embed, GET /metrics");
  cmd->add_option("--model", opts->model_dir, "Hugging Face model directory")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--host", opts->host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", opts->port, "port to listen on (0: any free port)")
      ->capture_default_str();
  cmd->add_option("--served-model-name", opts->served_model_name,
                  "model name in the API (default: the model directory's name)");
  AddSchedulerFlags(cmd, &opts->scheduler);
  AddHttpFrontFlags(cmd, &opts->http);
  cmd->callback([opts, exit_code] { *exit_code = RunServe(*opts); });
}

}  // namespace orchid::cli
